//! Every dependency a Cargo.toml of the workspace declares is used by the code it is
//! declared for (what `cargo machete` checks, without installing it on a fresh machine):
//! `[dependencies]` by the package's `src/`, `[build-dependencies]` by its `build.rs`,
//! `[dev-dependencies]` by its `tests/` or `src/`. A dependency linked only for a feature
//! it switches on is named in `[package.metadata.cargo-machete] ignored`, as for machete.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The dependencies of each kind a manifest declares (`[dependencies]` → names), and the
/// names its machete metadata ignores. A hand-read of the few forms this workspace uses:
/// `name = …`, `name.workspace = true`, and `[target.….dependencies]` tables.
fn declared(manifest: &str) -> (BTreeMap<&'static str, Vec<String>>, Vec<String>) {
    let mut kinds: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut ignored = Vec::new();
    let mut section: Option<&'static str> = None;
    let mut in_machete = false;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            let table = line.trim_matches(|c| c == '[' || c == ']');
            section = if table.ends_with("build-dependencies") {
                Some("build")
            } else if table.ends_with("dev-dependencies") {
                Some("dev")
            } else if table == "dependencies" || table.ends_with(".dependencies") {
                Some("normal")
            } else {
                None
            };
            if table == "workspace.dependencies" {
                section = None;
            }
            in_machete = table == "package.metadata.cargo-machete";
            continue;
        }
        if in_machete {
            if let Some(list) = line.strip_prefix("ignored") {
                ignored.extend(
                    list.split('"')
                        .skip(1)
                        .step_by(2)
                        .map(|s| s.replace('-', "_")),
                );
            }
            continue;
        }
        let Some(kind) = section else { continue };
        let name: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if !name.is_empty() {
            kinds.entry(kind).or_default().push(name.replace('-', "_"));
        }
    }
    (kinds, ignored)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of the files, without `//` comments (a crate named only in prose is not used).
fn code_of(files: &[PathBuf]) -> String {
    let mut code = String::new();
    for file in files {
        for line in fs_err::read_to_string(file).unwrap().lines() {
            code.push_str(line.split("//").next().unwrap_or(""));
            code.push('\n');
        }
    }
    code
}

/// Whether `code` names crate `name` as a path root (`name::…`) or a `use`/`extern crate`.
fn uses(code: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = &code[at + name.len()..];
        if before.is_some_and(|c| ident(c) || c == ':') {
            return false;
        }
        if after.starts_with("::") {
            return true;
        }
        let lead = code[..at].trim_end();
        after.starts_with(|c: char| !ident(c))
            && (lead.ends_with("use") || lead.ends_with("extern crate"))
    })
}

/// The unused dependencies of the package at `dir`, as `Cargo.toml: [kind] name` lines.
fn unused(dir: &Path) -> Vec<String> {
    let manifest = fs_err::read_to_string(dir.join("Cargo.toml")).unwrap();
    let (kinds, ignored) = declared(&manifest);
    let files = |subdirs: &[&str]| {
        let mut out = Vec::new();
        for sub in subdirs {
            let p = dir.join(sub);
            if p.is_file() {
                out.push(p);
            } else {
                rust_files(&p, &mut out);
            }
        }
        out
    };
    let mut found = Vec::new();
    for (kind, names) in &kinds {
        let code = code_of(&match *kind {
            "build" => with_path_modules(dir, files(&["build.rs"])),
            "dev" => files(&["src", "tests", "benches", "examples"]),
            _ => files(&["src"]),
        });
        for name in names {
            if !ignored.contains(name) && !uses(&code, name) {
                found.push(format!(
                    "{}: [{kind}] {name} is declared and not used: remove it",
                    dir.join("Cargo.toml").display()
                ));
            }
        }
    }
    found
}

/// The files plus those they include as `#[path = "…"] mod x;` (build.rs shares the
/// facts schema with the core this way).
fn with_path_modules(dir: &Path, mut files: Vec<PathBuf>) -> Vec<PathBuf> {
    for file in files.clone() {
        let text = fs_err::read_to_string(&file).unwrap();
        for (at, _) in text.match_indices("#[path = \"") {
            let rest = &text[at + 10..];
            if let Some(end) = rest.find('"') {
                files.push(dir.join(&rest[..end]));
            }
        }
    }
    files
}

fn packages() -> Vec<PathBuf> {
    let mut dirs = vec![root()];
    let mut crates: Vec<PathBuf> = fs_err::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    crates.sort();
    dirs.extend(crates);
    dirs
}

#[test]
fn every_declared_dependency_is_used() {
    let dirs = packages();
    assert!(dirs.len() >= 5, "found only {dirs:?}");
    let found: Vec<String> = dirs.iter().flat_map(|d| unused(d)).collect();
    assert!(found.is_empty(), "\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_an_unused_dependency_and_a_used_one() {
    let (kinds, ignored) = declared(
        "[package]\nname = \"x\"\n[dependencies]\nfs-err.workspace = true\nserde = { version = \"1\" }\n\
         [dev-dependencies]\ninsta = \"1\"\n[package.metadata.cargo-machete]\nignored = [\"lib-z\"]\n",
    );
    assert_eq!(kinds["normal"], ["fs_err", "serde"]);
    assert_eq!(kinds["dev"], ["insta"]);
    assert_eq!(ignored, ["lib_z"]);
    assert!(uses("let f = fs_err::File::open(p);", "fs_err"));
    assert!(uses("use serde;\n", "serde"));
    assert!(!uses("let s = my_serde::x();", "serde"));
    assert!(!uses("let p = \"gpuenv.toml\";", "toml"));
    let dir = std::env::temp_dir().join(format!("deps-used-{}", std::process::id()));
    fs_err::create_dir_all(dir.join("src")).unwrap();
    fs_err::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"x\"\n[dependencies]\nfs-err = \"3\"\ntoml = \"0.8\"\n",
    )
    .unwrap();
    fs_err::write(
        dir.join("src/lib.rs"),
        "pub fn f() { fs_err::read(\"a.toml\").ok(); }\n",
    )
    .unwrap();
    let found = unused(&dir);
    fs_err::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("[normal] toml"), "{found:?}");
}
