//! After an upgrade (`cargo install --locked --path .` put a newer gpuenv and gpuenv-shim in
//! place), `$GPUENV_HOME/bin/gpuenv-shim`, which every shim and view's compiler links to,
//! is still the older build's file: gpuenv's next command replaces it, and the doctor,
//! which changes nothing, reports it.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::common::*;

fn inode(p: &Path) -> u64 {
    fs_err::metadata(p).unwrap().ino()
}

fn both(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_first_command_after_an_upgrade_replaces_the_older_proxy_and_doctor_reports_it() {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let installed = sb.gpuenv_home().join("bin/gpuenv-shim");
    let view_nvcc = sb.gpuenv_home().join("views/cuda-12.4/bin/nvcc");
    assert_eq!(fs_err::read_link(&view_nvcc).unwrap(), installed);

    // The older build's proxy: other bytes (an ELF file still runs with bytes appended).
    let old = sb.gpuenv_home().join("bin/old-build");
    fs_err::copy(proxy_bin(), &old).unwrap();
    fs_err::OpenOptions::new()
        .append(true)
        .open(&old)
        .unwrap()
        .write_all(b"an older build")
        .unwrap();
    fs_err::rename(&old, &installed).unwrap();
    let old_inode = inode(&installed);

    // The doctor names it and the fix, and leaves it in place.
    let out = sb.gpuenv().args(["doctor"]).output().unwrap();
    let said = both(&out);
    assert!(
        said.contains(&format!(
            "the proxy {} is an older gpuenv's",
            installed.display()
        )),
        "{said}"
    );
    assert!(said.contains("gpuenv reshim"), "{said}");
    assert_eq!(inode(&installed), old_inode);

    // Any other command replaces it with the proxy beside the running gpuenv, by a rename
    // (a compile running the old one keeps its file).
    let out = sb.gpuenv().args(["list"]).output().unwrap();
    succeeded(&out);
    let said = both(&out);
    assert!(said.contains("replaced the proxy"), "{said}");
    assert_ne!(inode(&installed), old_inode);
    let new = fs_err::read(&installed).unwrap();
    assert!(
        new == fs_err::read(proxy_bin()).unwrap(),
        "not the new proxy"
    );
    assert_eq!(fs_err::read_link(&view_nvcc).unwrap(), installed);
    let out = std::process::Command::new(&view_nvcc)
        .arg("--version")
        .env("HOME", sb.home())
        .env("GPUENV_HOME", sb.gpuenv_home())
        .output()
        .unwrap();
    assert!(both(&out).contains("12.4"), "{}", both(&out));

    // Then it is current: nothing more is said, by either.
    let out = sb.gpuenv().args(["list"]).output().unwrap();
    succeeded(&out);
    assert!(!both(&out).contains("replaced the proxy"), "{}", both(&out));
    let out = sb.gpuenv().args(["doctor"]).output().unwrap();
    assert!(!both(&out).contains("older gpuenv"), "{}", both(&out));
}
