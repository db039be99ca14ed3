//! Records of retired toolchains (`toolchains/.<name>.retired.toml`) that gpuenv did not
//! write: one naming a tree outside the home, a malformed one, one that is a link, one
//! left for a name that is registered. None makes gpuenv delete or run anything outside its
//! own directories; each is named in a warning.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::common::*;
use fs_err as fs;

fn record(root: &Path, source: &str) -> String {
    let r = root.display();
    format!(
        "since = 0\n\n[toolchain]\nkind = \"cuda\"\nversion = \"12.4.1\"\nroot = \"{r}\"\nsource = \"{source}\"\nversion_from = \"version.json\"\ninclude_dir = \"{r}/include\"\nlib_dir = \"{r}/lib64\"\n"
    )
}

/// A home (CUDA 11.8 linked), and a victim toolkit outside it whose nvcc leaves a marker.
fn world() -> (Sandbox, PathBuf, PathBuf) {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-11.8", "cuda-11.8", "11.8.89");
    let victim = cuda_runfile(&sb.path("victim"), "12.4.1");
    let marker = sb.path("ran");
    write_exe(
        &victim.join("bin/nvcc"),
        &format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    );
    (sb, victim, marker)
}

#[test]
fn a_retired_record_naming_a_tree_outside_the_home_deletes_and_runs_nothing() {
    let (sb, victim, marker) = world();
    let home = sb.gpuenv_home();
    let toolchains = home.join("toolchains");
    fs::create_dir_all(&toolchains).unwrap();
    fs::write(
        toolchains.join(".cuda-12.4.1.retired.toml"),
        record(&victim, "installed"),
    )
    .unwrap();
    // Its view, as a retired one would be: the proxy as nvcc, the rest linking to the tree.
    let view = home.join("views/cuda-12.4.1");
    fs::create_dir_all(view.join("bin")).unwrap();
    symlink(home.join("bin/gpuenv-shim"), view.join("bin/nvcc")).unwrap();
    symlink(victim.join("include"), view.join("include")).unwrap();
    // Malformed, a link, and a record left for a registered name.
    fs::write(toolchains.join(".cuda-12.4.2.retired.toml"), "since = [").unwrap();
    fs::create_dir_all(toolchains.join("cuda-12.4.2/bin")).unwrap();
    let elsewhere = sb.path("elsewhere.toml");
    fs::write(
        &elsewhere,
        record(&toolchains.join("cuda-12.4.3"), "installed"),
    )
    .unwrap();
    symlink(&elsewhere, toolchains.join(".cuda-12.4.3.retired.toml")).unwrap();
    fs::create_dir_all(toolchains.join("cuda-12.4.3/bin")).unwrap();
    fs::write(
        toolchains.join(".cuda-11.8.retired.toml"),
        record(&toolchains.join("cuda-11.8"), "installed"),
    )
    .unwrap();
    let victim_before = fs_tree(&victim);

    let out = sb.gpuenv().args(["uninstall", "--reap"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "names {}, not {}",
            victim.display(),
            toolchains.join("cuda-12.4.1").display()
        )),
        "{said}"
    );
    assert!(said.contains("is not a record gpuenv wrote"), "{said}");
    assert!(
        said.contains("is a link, not the file gpuenv writes there"),
        "{said}"
    );
    assert!(said.contains("gpuenv deletes nothing for it"), "{said}");
    assert!(!said.contains("deleted the retired"), "{said}");
    assert_eq!(fs_tree(&victim), victim_before, "the victim was touched");
    assert!(view.join("bin/nvcc").is_symlink(), "the view was removed");
    assert!(toolchains.join("cuda-12.4.2/bin").is_dir());
    assert!(toolchains.join("cuda-12.4.3/bin").is_dir());
    assert!(elsewhere.is_file());
    // The registered name's stale record went, and only it: the linked tree is in use.
    assert!(!toolchains.join(".cuda-11.8.retired.toml").exists());
    assert!(sb.path("opt/cuda-11.8/bin/nvcc").is_file());
    assert!(sb.settings().unwrap().contains("cuda-11.8"));

    // The proxy of the planted view does not run the tree the record names.
    let out = std::process::Command::new(view.join("bin/nvcc"))
        .arg("--version")
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .current_dir(sb.dir.path())
        .output()
        .unwrap();
    assert!(!marker.exists(), "the proxy ran {}", victim.display());
    drop(out);

    // `uninstall --now` of the name refuses with the same reason; `list` names it.
    let out = sb
        .gpuenv()
        .args(["uninstall", "--now", "cuda-12.4.1"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("gpuenv retires only trees it installed there"),
        "{said}"
    );
    assert!(
        said.contains("hint: gpuenv deletes nothing for it"),
        "{said}"
    );
    let out = sb.gpuenv().args(["list"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        said.contains("gpuenv retires only trees it installed there"),
        "{said}"
    );
    assert_eq!(fs_tree(&victim), victim_before, "the victim was touched");
    assert!(victim.join("bin/nvcc").is_file());
}

/// Every path under `dir` and what it is (links not followed).
fn fs_tree(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let meta = fs::symlink_metadata(&p).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("-> {}", fs::read_link(&p).unwrap().display())
            } else if meta.is_dir() {
                todo.push(p.clone());
                "dir".into()
            } else {
                format!("{} bytes", meta.len())
            };
            out.push((p, what));
        }
    }
    out.sort();
    out
}
