//! A cache shared by a group, set up as docs/store.md says: root makes it and its parts
//! group-writable and sticky. Root, nobody (65534) and a user with no account (4242), all
//! in group nogroup, install from it through the real binary, each as themselves.

use std::process::{Command, Output};

use super::*;

const OTHER: u32 = 4242;
const GROUP: u32 = 65534;

/// `gpuenv` run as `uid` (group nogroup, no other groups) in a home of its own.
fn as_user(sb: &Sandbox, uid: u32, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let home = sb.path(&format!("user-{uid}"));
    if !home.exists() {
        fs_err::create_dir_all(&home).unwrap();
        std::os::unix::fs::lchown(&home, Some(uid), Some(GROUP)).unwrap();
    }
    let (uid, gid) = (uid.to_string(), GROUP.to_string());
    Command::new("setpriv")
        .args(["--reuid", &uid, "--regid", &gid, "--clear-groups", "--"])
        .arg(assert_cmd::cargo::cargo_bin("gpuenv"))
        .args(args)
        .env_clear()
        .env("HOME", &home)
        .env("PATH", system_path())
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .envs(vars.iter().copied())
        .current_dir(&home)
        .output()
        .unwrap()
}

#[test]
fn a_sticky_group_cache_serves_roots_files_to_all_and_keeps_each_users_files_their_own() {
    if !root() || !have_tool("setpriv") {
        return;
    }
    let (_server, sb, mirror) = world();
    // The other users may enter the sandbox (a private temp dir).
    fs_err::set_permissions(sb.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = sb.path("shared");
    for part in [
        "", "archives", "unpacked", "objects", "partial", "meta", "locks",
    ] {
        let dir = shared.join(part);
        fs_err::create_dir_all(&dir).unwrap();
        std::os::unix::fs::lchown(&dir, Some(0), Some(GROUP)).unwrap();
        fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o3775)).unwrap();
    }
    let vars = [
        ("GPUENV_DOWNLOAD_CACHE", shared.to_str().unwrap()),
        ("GPUENV_CUDA_MIRROR", mirror.as_str()),
    ];
    let minimal = |release| ["install", release, "--profile", "minimal"];
    let owner = |p: PathBuf| fs_err::symlink_metadata(p).unwrap().uid();

    // What root unpacked, every user reuses.
    ok(&sb, &vars, &minimal("cuda-12.4.1"));
    let (root_key, _) = nvcc_tree_in(&shared);
    succeeded(&as_user(&sb, NOBODY, &vars, &minimal("cuda-12.4.1")));
    assert_eq!(owner(shared.join("unpacked").join(&root_key)), 0);

    // What nobody unpacked is nobody's: another user neither reuses nor replaces it, and is
    // told whose it is and what to do.
    succeeded(&as_user(&sb, NOBODY, &vars, &minimal("cuda-12.6.3")));
    let unpacked = shared.join("unpacked");
    let nobodys = fs_err::read_dir(&unpacked)
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir() && owner(e.path()) == NOBODY)
        .unwrap()
        .path();
    let out = as_user(&sb, OTHER, &vars, &minimal("cuda-12.6.3"));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains(&format!(
            "{} belongs to user 65534, not to you or root",
            nobodys.display()
        )),
        "{t}"
    );
    assert!(t.contains("hint: use a download cache of your own"), "{t}");
    assert_eq!(owner(nobodys.clone()), NOBODY);

    // Root does not reuse it either: unpacked again, root's own.
    let t = ok(&sb, &vars, &minimal("cuda-12.6.3"));
    assert!(
        t.contains("is not reused:") && t.contains("belongs to user 65534"),
        "{t}"
    );
    assert_eq!(owner(nobodys), 0);
    let nvcc = sb.gpuenv_home().join("toolchains/cuda-12.6.3/bin/nvcc");
    assert_eq!(fs_err::metadata(&nvcc).unwrap().uid(), 0);

    // A user's prune removes their own entries and leaves everyone else's.
    let out = as_user(&sb, NOBODY, &[vars[0]], &["cache", "prune", "--all"]);
    let t = succeeded(&out) + &text(&out);
    assert!(t.contains("entries of other users alone"), "{t}");
    assert_eq!(owner(shared.join("unpacked").join(&root_key)), 0);
    assert!(view_nvcc_version(&sb, "cuda-12.6.3").contains("release 12.6"));
}
