//! What both hostile groups start from: a linked toolkit and a project pinned to it, and a
//! real shell running a script with the built binary.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Output;

use crate::common::shells;
use crate::common::Sandbox;
use fs_err as fs;

/// CUDA 12.4 linked, and `proj/` pinned to it.
pub fn pinned_project() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let proj = sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n");
    (sb, proj)
}

/// Runs `script` in `shell` with the hook's binary in `$GPUENV_BIN`, the project in `$P`,
/// `$OUT` for results, and `env` on top; fails the test if the shell fails.
pub fn shell(sb: &Sandbox, shell: &str, script: &str, env: &[(&str, &OsStr)]) -> Output {
    let bin = assert_cmd::cargo::cargo_bin("gpuenv");
    let (home, proj, out) = (sb.home(), sb.path("proj"), sb.path("out"));
    fs::create_dir_all(&out).unwrap();
    let mut all: Vec<(&str, &OsStr)> = vec![
        ("HOME", home.as_os_str()),
        ("PATH", "/usr/bin:/bin".as_ref()),
        ("LANG", "C.UTF-8".as_ref()),
        ("GPUENV_BIN", bin.as_os_str()),
        ("P", proj.as_os_str()),
        ("OUT", out.as_os_str()),
    ];
    for (k, v) in env {
        all.retain(|(key, _)| key != k);
        all.push((k, v));
    }
    let output = shells::run(shell, script, &home, &all);
    assert!(
        output.status.success(),
        "{shell}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The text of a registry copy (`cache/registry/`) with its check line made to match the
/// rest again, as whoever owns the copy could: a copy forged on purpose, which only the rule
/// a test is about may refuse (a copy merely damaged is refused by its check).
pub fn resealed(copy: &str) -> String {
    let mut at = 0;
    for _ in 0..3 {
        at += copy[at..].find('\n').unwrap() + 1;
    }
    let body = &copy[at + 17..];
    let check = gpuenv_core::fsutil::checksum(body.as_bytes());
    format!("{}{check:016x}\n{body}", &copy[..at])
}
