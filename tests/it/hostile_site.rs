//! What another user, or a careless admin, does to what a site shares, and what gpuenv
//! does about it: an upstream store owned by another non-root user, writable by every user,
//! or with its settings replaced by a link while in use is refused with one line naming why,
//! and nothing is written outside gpuenv's own directories; module export never writes out
//! of `--dir` and removes only its own home's files; `pin` never writes through a link out
//! of the project; a shared compiler cache that others control is named by the doctor.

use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;

use fs_err as fs;

use crate::common::*;

/// A uid no account has: "another non-root user".
const STRANGER: u32 = 54_321;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        cannot_run("changing a file's owner needs root");
    }
    root
}

/// A site store (its own GPUENV_HOME) with CUDA 12.4 linked, and a fresh user's sandbox.
fn store_and_user() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let root = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    let store = sb.path("shared/gpuenv");
    let out = sb
        .gpuenv()
        .env("GPUENV_HOME", &store)
        .args(["link", "cuda-12.4", root.to_str().unwrap()])
        .output()
        .unwrap();
    succeeded(&out);
    (sb, store)
}

fn as_user(sb: &Sandbox, store: &Path, args: &[&str]) -> Output {
    sb.gpuenv()
        .env("GPUENV_UPSTREAMS", store)
        .args(args)
        .output()
        .unwrap()
}

/// Every path under `dir` with its owner, mode and size: what "nothing written" compares.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u32, u32, u64)> {
    let mut all: Vec<_> = walk(dir)
        .into_iter()
        .map(|p| {
            let m = fs::symlink_metadata(&p).unwrap();
            (p, m.uid(), m.mode(), m.len())
        })
        .collect();
    all.sort();
    all
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    if fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        for e in fs::read_dir(dir).unwrap() {
            out.extend(walk(&e.unwrap().path()));
        }
    }
    out
}

/// Everything under `dir` but hard links (the store's proxy shares its inode with the
/// build's gpuenv-shim, which other tests run).
fn chown_all(dir: &Path, uid: u32) {
    for p in walk(dir) {
        let m = fs::symlink_metadata(&p).unwrap();
        if m.is_file() && m.nlink() > 1 {
            continue;
        }
        std::os::unix::fs::lchown(&p, Some(uid), None).unwrap();
    }
}

#[track_caller]
fn refused_upstream(sb: &Sandbox, store: &Path, why: &str) {
    let before = snapshot(store);
    let out = as_user(sb, store, &["list"]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "the upstream {} cannot be used: ",
            store.display()
        )),
        "{err}"
    );
    assert!(err.contains(why), "{err}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("cuda-12.4"),
        "{err}"
    );
    assert_eq!(snapshot(store), before, "the store was written");
    // Nothing of its toolchains in the user's home either.
    assert!(!sb.gpuenv_home().join("views/cuda-12.4").exists());
}

#[test]
fn an_upstream_owned_by_another_non_root_user_is_refused() {
    if !is_root() {
        return;
    }
    let (sb, store) = store_and_user();
    chown_all(&store, STRANGER);
    refused_upstream(
        &sb,
        &store,
        &format!("the directory belongs to uid {STRANGER}, not to you or root"),
    );
    // Its view's nvcc, run by path (a stale CUDA_HOME), does not take the store's word for
    // which toolchain it is: the proxy resolves as anywhere else (nothing is active here).
    let out = std::process::Command::new(store.join("views/cuda-12.4/bin/nvcc"))
        .arg("--version")
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("GPUENV_UPSTREAMS", &store)
        .current_dir(sb.home())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(!out.status.success(), "{text}");
    assert!(!text.contains("release 12.4"), "{text}");
    assert!(text.contains("cannot be used"), "{text}");
    // Only its settings another user's: the same.
    chown_all(&store, 0);
    std::os::unix::fs::lchown(store.join("settings.toml"), Some(STRANGER), None).unwrap();
    refused_upstream(
        &sb,
        &store,
        "it belongs to another user, not to you or root",
    );
}

#[test]
fn an_upstream_every_user_may_write_is_refused_unless_sticky() {
    let (sb, store) = store_and_user();
    fs::set_permissions(&store, std::fs::Permissions::from_mode(0o777)).unwrap();
    refused_upstream(&sb, &store, "every user may write to it (mode 0777)");
    // A sticky directory lets nobody replace another's settings: used.
    fs::set_permissions(&store, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let out = as_user(&sb, &store, &["list"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("cuda-12.4"),
        "{}",
        stderr(&out)
    );
    fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(
        store.join("settings.toml"),
        std::fs::Permissions::from_mode(0o646),
    )
    .unwrap();
    refused_upstream(&sb, &store, "other users can write to it");
}

#[test]
fn an_upstreams_settings_replaced_by_a_link_while_in_use_are_refused() {
    let (sb, store) = store_and_user();
    // In use: listed and given views in the user's home.
    let out = as_user(&sb, &store, &["list"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("cuda-12.4"));
    // Someone swaps the settings for a link to a file of theirs.
    let elsewhere = sb.path("elsewhere.toml");
    fs::copy(store.join("settings.toml"), &elsewhere).unwrap();
    fs::remove_file(store.join("settings.toml")).unwrap();
    symlink(&elsewhere, store.join("settings.toml")).unwrap();
    if is_root() {
        std::os::unix::fs::lchown(&elsewhere, Some(STRANGER), None).unwrap();
    } else {
        fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    let before = fs::read(&elsewhere).unwrap();
    // The one rule for files that steer gpuenv: a link is followed once, and what it leads
    // to must pass as the settings themselves would.
    refused_upstream(
        &sb,
        &store,
        if is_root() {
            "it belongs to another user, not to you or root"
        } else {
            "other users can write to it"
        },
    );
    assert_eq!(fs::read(&elsewhere).unwrap(), before);
}

/// `gpuenv module export` in the sandbox's own home (CUDA 12.4 linked).
fn export(sb: &Sandbox, dir: &Path) -> Output {
    sb.gpuenv()
        .args(["module", "export", "--format", "lmod", "--dir"])
        .arg(dir)
        .output()
        .unwrap()
}

#[test]
fn module_export_never_follows_a_kind_dir_link_out_of_its_dir() {
    let (sb, _proj) = linked();
    let modules = sb.path("modules");
    let outside = sb.path("outside");
    fs::create_dir_all(&modules).unwrap();
    fs::create_dir_all(&outside).unwrap();
    symlink(&outside, modules.join("cuda")).unwrap();
    let out = export(&sb, &modules);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{} is a link", modules.join("cuda").display())),
        "{err}"
    );
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "written outside --dir"
    );
}

#[test]
fn module_export_to_a_dangling_dir_link_names_it() {
    let (sb, _proj) = linked();
    let modules = sb.path("modules");
    symlink(sb.path("gone"), &modules).unwrap();
    let out = export(&sb, &modules);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("which is not a directory"), "{err}");
    assert!(!err.contains("File exists"), "{err}");
    assert!(!sb.path("gone").exists());
}

#[test]
fn module_export_removes_only_what_its_own_home_wrote() {
    let (sb, _proj) = linked();
    let modules = sb.path("modules");
    // A second home exports its toolchain to the same directory.
    let other = sb.path("other-home");
    let root = cuda_runfile(&sb.path("opt/cuda-13.0"), "13.0.88");
    for args in [
        vec!["link", "cuda-13.0", root.to_str().unwrap()],
        vec![
            "module",
            "export",
            "--format",
            "lmod",
            "--dir",
            modules.to_str().unwrap(),
        ],
    ] {
        succeeded(
            &sb.gpuenv()
                .env("GPUENV_HOME", &other)
                .args(&args)
                .output()
                .unwrap(),
        );
    }
    let theirs = modules.join("cuda/13.0.lua");
    assert!(theirs.is_file());
    succeeded(&export(&sb, &modules));
    assert!(theirs.is_file(), "another home's module file was removed");
    assert!(modules.join("cuda/12.4.lua").is_file());
    // Unlinked here, this home's own file goes; the other's stays.
    sb.ok(&["unlink", "cuda-12.4"]);
    succeeded(&export(&sb, &modules));
    assert!(!modules.join("cuda/12.4.lua").exists());
    assert!(theirs.is_file());
    assert_eq!(fs::metadata(&theirs).unwrap().mode() & 0o777, 0o644);
}

fn linked() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let proj = sb.path("proj");
    fs::create_dir_all(&proj).unwrap();
    (sb, proj)
}

#[test]
fn pin_never_writes_through_a_link_out_of_the_project() {
    let (sb, proj) = linked();
    let victim = sb.path("victim.toml");
    let text = "[toolchain]\ncuda = \"12.4\"\n# someone else's\n";
    write(&victim, text);
    symlink(&victim, proj.join("gpuenv.toml")).unwrap();
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["pin", "--arch", "9.0"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("outside the project"), "{err}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), text);
    assert!(proj.join("gpuenv.toml").is_symlink());

    // A link to a file inside the project (shared between its checkouts) is edited there.
    fs::remove_file(proj.join("gpuenv.toml")).unwrap();
    write(
        &proj.join("common/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    symlink("common/gpuenv.toml", proj.join("gpuenv.toml")).unwrap();
    sb.gpuenv()
        .current_dir(&proj)
        .args(["pin", "--arch", "9.0"])
        .assert()
        .success();
    assert!(proj.join("gpuenv.toml").is_symlink());
    assert!(fs::read_to_string(proj.join("common/gpuenv.toml"))
        .unwrap()
        .contains("cuda-arch"));
}

/// `gpuenv doctor --json`'s shared-cache finding with this site config.
fn shared_cache_finding(sb: &Sandbox, dir: &Path) -> serde_json::Value {
    let config = sb.path("etc/config.toml");
    write(
        &config,
        &format!(
            "[build]\ncache = \"ccache\"\nshared = \"file://{}\"\n",
            dir.display()
        ),
    );
    let out = sb
        .gpuenv()
        .env("GPUENV_SYSTEM_CONFIG", &config)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "shared-cache")
        .unwrap()
        .clone()
}

#[test]
fn the_doctor_names_a_shared_cache_that_others_control_or_that_is_not_there() {
    let (sb, _proj) = linked();
    let cache = sb.path("shared/ccache");
    let f = shared_cache_finding(&sb, &cache);
    assert_eq!(f["status"], "error", "{f}");
    assert!(f.to_string().contains("cannot be reached"), "{f}");
    assert!(f.to_string().contains("chmod 2775"), "{f}");

    fs::create_dir_all(&cache).unwrap();
    fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let f = shared_cache_finding(&sb, &cache);
    assert_eq!(f["status"], "warn", "{f}");
    assert!(f.to_string().contains("every user may write"), "{f}");

    fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o775)).unwrap();
    let f = shared_cache_finding(&sb, &cache);
    assert!(f.to_string().contains("without the setgid bit"), "{f}");

    fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o2775)).unwrap();
    let f = shared_cache_finding(&sb, &cache);
    assert_eq!(f["status"], "ok", "{f}");

    // Replaced by a link while in use.
    fs::rename(&cache, sb.path("shared/real")).unwrap();
    symlink(sb.path("shared/real"), &cache).unwrap();
    let f = shared_cache_finding(&sb, &cache);
    assert_eq!(f["status"], "error", "{f}");
    assert!(f.to_string().contains("is a link"), "{f}");

    if is_root() {
        fs::remove_file(&cache).unwrap();
        fs::rename(sb.path("shared/real"), &cache).unwrap();
        std::os::unix::fs::lchown(&cache, Some(STRANGER), None).unwrap();
        let f = shared_cache_finding(&sb, &cache);
        assert!(f.to_string().contains("belongs to user 54321"), "{f}");
    }
}
