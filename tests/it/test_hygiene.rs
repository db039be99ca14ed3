//! Rules for the tests themselves: one CI gate (`in_ci()` in tests/it/common, which accepts
//! `CI=1` and `CI=yes` as well as `CI=true`), and the captured outputs the unit tests read
//! stay out of the libraries' public API.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
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

/// `file:line` of each line of the files under `dir` that `hit` matches, but `except`.
fn lines_where(dir: &Path, except: &[&str], hit: impl Fn(&str) -> bool) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(root()).unwrap().display().to_string();
        if except.contains(&rel.as_str()) {
            continue;
        }
        let text = fs_err::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if hit(line.split("//").next().unwrap_or("")) {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn every_ci_gate_of_the_tests_goes_through_in_ci() {
    let found = lines_where(&root().join("tests"), &["tests/it/common/mod.rs"], |code| {
        code.contains("var(\"CI\")") || code.contains("var_os(\"CI\")")
    });
    assert!(
        found.is_empty(),
        "read CI through common::in_ci() (or cannot_run):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_library_exposes_the_test_captures_in_its_public_api() {
    for krate in fs_err::read_dir(root().join("crates")).unwrap() {
        let lib = krate.unwrap().path().join("src/lib.rs");
        let text = fs_err::read_to_string(&lib).unwrap();
        let mut cfg_test = false;
        for line in text.lines() {
            let line = line.trim();
            assert!(
                cfg_test || !line.starts_with("pub mod test_support"),
                "{}: test_support is public: make it a #[cfg(test)] module",
                lib.display()
            );
            cfg_test = line == "#[cfg(test)]";
        }
    }
}
