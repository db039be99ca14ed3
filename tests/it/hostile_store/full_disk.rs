//! A full disk in the middle of a change, and a read-only home: gpuenv's home on a tmpfs.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use fs_err as fs;

use super::{run, stderr, tree};
use crate::common::*;

/// A tmpfs mounted at a directory for the test's lifetime.
struct Mounted(PathBuf);

impl Mounted {
    /// None when mounting is impossible here (not root, no tmpfs); under CI that fails.
    fn tmpfs(dir: &Path, options: &str) -> Option<Mounted> {
        fs::create_dir_all(dir).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status();
        if status.is_ok_and(|s| s.success()) {
            return Some(Mounted(dir.to_path_buf()));
        }
        cannot_run(format!(
            "cannot mount a tmpfs at {} (needs root); the full-disk case is not tested",
            dir.display()
        ));
        None
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Fills the file system holding `dir` with one file; returns it and its length.
fn fill(dir: &Path) -> (fs::File, u64) {
    use std::io::Write;
    let mut f = fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    let mut len = 0;
    while f.write_all(&chunk).is_ok() {
        len += 4096;
    }
    f.set_len(len).unwrap();
    (f, len)
}

#[test]
fn on_a_full_disk_link_and_unlink_complete_or_change_nothing() {
    let sb = Sandbox::new();
    let home = sb.gpuenv_home();
    let Some(_mounted) = Mounted::tmpfs(&home, "size=1m") else {
        return;
    };
    // The proxy binary is large; it stays on the roomy disk (gpuenv follows a bin/ link
    // the user made; only the last part of a path is never followed).
    fs::create_dir_all(sb.path("proxy-bin")).unwrap();
    symlink(sb.path("proxy-bin"), home.join("bin")).unwrap();
    let a = cuda_runfile(&sb.path("a"), "12.1.105");
    let b = cuda_runfile(&sb.path("b"), "11.8.89");
    sb.ok(&["link", "cuda-12.1", a.to_str().unwrap()]);

    let (filler, full) = fill(&home);
    // Everything but the filler and the backup (which always holds a valid older state).
    let state = || {
        let mut t = tree(&home);
        t.retain(|p, _| p != Path::new("filler") && p != Path::new("settings.toml.bak"));
        t
    };
    let before = state();
    let mut failures = 0;
    let mut linked = false;
    for free_pages in 0..8u64 {
        filler.set_len(full - free_pages * 4096).unwrap();
        let out = run(
            &sb,
            sb.dir.path(),
            &["link", "cuda-11.8", b.to_str().unwrap()],
        );
        if out.status.success() {
            linked = true;
            break;
        }
        failures += 1;
        assert!(
            stderr(&out).contains("No space left on device"),
            "{}",
            stderr(&out)
        );
        assert_eq!(state(), before, "a failed link left something behind");
    }
    assert!(failures > 0, "the disk was never full enough to fail");
    assert!(linked, "with room to spare the link succeeds");
    assert!(home.join("views/cuda-11.8/bin/nvcc").is_symlink());

    // Forgetting on a full disk: done, or nothing changed.
    filler.set_len(full).unwrap();
    let _ = fs::remove_file(home.join("settings.toml.bak"));
    let (more, _) = fill(&home);
    let before = state();
    let out = run(&sb, sb.dir.path(), &["unlink", "cuda-11.8"]);
    match out.status.success() {
        true => assert!(!home.join("views/cuda-11.8").exists()),
        false => assert_eq!(state(), before, "{}", stderr(&out)),
    }
    drop(more);
}

#[test]
fn a_read_only_home_is_named_as_such() {
    let sb = Sandbox::new();
    let home = sb.gpuenv_home();
    let Some(_mounted) = Mounted::tmpfs(&home, "ro,size=64k") else {
        return;
    };
    let tk = cuda_runfile(&sb.path("tk"), "12.1.105");
    let out = run(
        &sb,
        sb.dir.path(),
        &["link", "cuda-12.1", tk.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("GPUENV_HOME {} is read-only", home.display())),
        "{err}"
    );
    assert!(err.contains("hint: make it writable"), "{err}");
}
