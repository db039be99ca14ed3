//! Two rules of the core that a reader must be able to trust, checked over the source:
//! every program gpuenv starts goes through `gpuenv_core::ask` (a deadline, a process group
//! of its own, capped output), and nothing below the edges prints (the layers below hand
//! what should be said to the edge that asked).

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

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

/// The production lines of `file` (1-based number, code without its `//` comment): up to
/// its `#[cfg(test)]` module, which by this codebase's convention comes last.
fn production_lines(file: &Path) -> Vec<(usize, String)> {
    let text = fs_err::read_to_string(file).unwrap();
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .map(|(n, l)| {
            let code = match l.find("//") {
                Some(i) => &l[..i],
                None => l,
            };
            (n + 1, code.to_string())
        })
        .collect()
}

/// Every production source file of the workspace: the root package's and each crate's.
fn production_files() -> Vec<PathBuf> {
    let ws = workspace();
    let mut files = Vec::new();
    rust_files(&ws.join("src"), &mut files);
    for entry in fs_err::read_dir(ws.join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    files.retain(|f| !f.ends_with("test_support.rs"));
    files.sort();
    files
}

fn shown(file: &Path) -> String {
    file.strip_prefix(workspace())
        .unwrap()
        .display()
        .to_string()
}

#[test]
fn every_program_gpuenv_starts_goes_through_ask() {
    let ask = workspace().join("crates/core/src/ask");
    let mut bare = Vec::new();
    for file in production_files() {
        if file.starts_with(&ask) {
            continue;
        }
        let lines = production_lines(&file);
        // Only a file that names std's Command can start a program (reqwest's
        // `response.status()` is not one).
        if !lines.iter().any(|(_, l)| l.contains("Command")) {
            continue;
        }
        for (n, line) in &lines {
            if [".output()", ".status()", ".spawn()"]
                .iter()
                .any(|call| line.contains(call))
            {
                bare.push(format!("{}:{n}: {}", shown(&file), line.trim()));
            }
        }
    }
    assert!(
        bare.is_empty(),
        "programs started without gpuenv_core::ask (use ask::output / output_within, or \
         ask::attached for the one attached install):\n{}",
        bare.join("\n")
    );
}

#[test]
fn the_checks_see_the_rule_broken() {
    // The scan above on a file written as the rule forbids: it must be found.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.rs");
    fs_err::write(
        &file,
        "use std::process::Command;\nfn f() { let _ = Command::new(\"nvcc\").output(); }\n#[cfg(test)]\nmod tests { fn g() { let _ = std::process::Command::new(\"x\").status(); } }\n",
    )
    .unwrap();
    let lines = production_lines(&file);
    assert_eq!(lines.len(), 2, "the test module is not production code");
    assert!(lines[1].1.contains(".output()"));
    assert!(printing(&lines).is_empty());
    let printer = dir.path().join("print.rs");
    fs_err::write(
        &printer,
        "fn f() { eprintln!(\"hi\"); crate::ui::warn(\"x\"); }\n",
    )
    .unwrap();
    assert_eq!(
        printing(&production_lines(&printer)).len(),
        1,
        "one line, two ways"
    );
}

/// The lines of `lines` that write for people: print macros, `ui`'s sayers, std's handles.
fn printing(lines: &[(usize, String)]) -> Vec<(usize, String)> {
    const SAYS: &[&str] = &[
        "print!(",
        "println!(",
        "eprint!(",
        "eprintln!(",
        "ui::info",
        "ui::warn",
        "ui::verbose",
        "ui::hook_note",
        "ui::error",
        "io::stderr()",
        "io::stdout()",
    ];
    lines
        .iter()
        .filter(|(_, l)| SAYS.iter().any(|s| l.contains(s)))
        .cloned()
        .collect()
}

#[test]
fn nothing_below_the_edges_prints() {
    let core = workspace().join("crates/core/src");
    let mut said = Vec::new();
    for layer in ["facts", "store", "project", "plan"] {
        let mut files = Vec::new();
        rust_files(&core.join(layer), &mut files);
        files.sort();
        for file in files {
            for (n, line) in printing(&production_lines(&file)) {
                said.push(format!("{}:{n}: {}", shown(&file), line.trim()));
            }
        }
    }
    assert!(
        said.is_empty(),
        "below the edges nothing prints; return what should be said, or take a function \
         from the edge:\n{}",
        said.join("\n")
    );
}
