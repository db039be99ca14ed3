//! Errors are typed: no `Result<_, String>` in the workspace's code (a `thiserror` type
//! in the libraries, `anyhow` at the CLI edge), so a message cannot lose its file, line or
//! hint on the way up.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs_err::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The second argument of each `Result<…>` in `code` (top level of the angle brackets).
fn error_types(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("Result<") {
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue; // `ParseResult<`, `MyResult<`
        }
        let mut depth = 0;
        let mut comma = None;
        for (i, c) in code[at + 6..].char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        if let Some(from) = comma {
                            out.push(code[at + 6 + from + 1..at + 6 + i].trim().to_string());
                        }
                        break;
                    }
                }
                ',' if depth == 1 => comma = Some(i),
                _ => {}
            }
        }
    }
    out
}

/// `file:line: …` for each `Result<_, String>` under `dirs`.
fn string_errors(dirs: &[PathBuf]) -> Vec<String> {
    let mut files = Vec::new();
    for d in dirs {
        rust_files(d, &mut files);
    }
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let text = fs_err::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if error_types(code).iter().any(|t| t == "String") {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn no_code_returns_a_string_as_its_error() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src")];
    for entry in fs_err::read_dir(root.join("crates")).unwrap() {
        dirs.push(entry.unwrap().path().join("src"));
    }
    assert!(dirs.len() >= 5, "{dirs:?}");
    let found = string_errors(&dirs);
    assert!(
        found.is_empty(),
        "{} Result<_, String> (give each a thiserror type):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_check_reads_the_error_type_of_each_result() {
    assert_eq!(error_types("fn f() -> Result<(), String> {"), ["String"]);
    assert_eq!(
        error_types("fn f() -> Result<Vec<(u8, String)>, Bad> {"),
        ["Bad"]
    );
    assert_eq!(
        error_types("fn f() -> io::Result<String> { Ok(x) } fn g() -> ParseResult<u8, String>"),
        Vec::<String>::new()
    );
    assert_eq!(
        error_types("type R = std::result::Result<BTreeMap<String, u8>, String>;"),
        ["String"]
    );
}
