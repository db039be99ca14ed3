//! The download cache against everyone but its owner: a directory gpuenv did not make named
//! as the cache, links planted where gpuenv keeps directories (`objects/<xx>`, `objects/.tmp`,
//! `unpacked/<sha256>`, a whole part), files of the user's inside it, and objects, trees and
//! seals of another user. The tests run as root, like an admin installing a site's
//! toolkit; "another user" is nobody (uid 65534), whose files the test plants and chowns.

use crate::common::archives;
use crate::common::install_fixtures as fixtures;
use crate::common::server;
#[path = "hostile_cache/shared.rs"]
mod shared;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::common::*;
use archives::sha256;
use fixtures::*;
use server::Server;

const NOBODY: u32 = 65534;

/// A mirror of 12.4.1 and 12.6.3, a sandbox, and the variables that point at the mirror.
fn world() -> (Server, Sandbox, String) {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1", "12.6.3"]));
    let mirror = server.url("redist/");
    (server, Sandbox::new(), mirror)
}

fn install(sb: &Sandbox, mirror: &str, release: &str, extra: &[&str]) -> std::process::Output {
    let args = [&["install", release, "--profile", "minimal"][..], extra].concat();
    gpuenv(sb, &[("GPUENV_CUDA_MIRROR", mirror)], &args)
}

fn cache(sb: &Sandbox) -> PathBuf {
    sb.gpuenv_home().join("downloads")
}

/// The user's own files: each path gets "mine", two hours old (older than any temp link a
/// running install keeps).
fn precious(dir: &Path, files: &[&str]) {
    for f in files {
        write(&dir.join(f), "mine");
        let old = std::process::Command::new("touch")
            .args(["-h", "-d", "2 hours ago"])
            .arg(dir.join(f))
            .status()
            .unwrap();
        assert!(old.success());
    }
}

#[track_caller]
fn untouched(dir: &Path, files: &[&str]) {
    for f in files {
        let got = fs_err::read_to_string(dir.join(f));
        assert_eq!(
            got.ok().as_deref(),
            Some("mine"),
            "{f} was changed or removed"
        );
    }
}

/// Another user's files need root to plant (chown); CI runs the suite as root.
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        cannot_run("planting another user's files needs root");
    }
    root
}

/// The unpacked tree of the nvcc archive (its sha256 is its name) and the path of its nvcc.
fn nvcc_tree(sb: &Sandbox) -> (String, PathBuf) {
    nvcc_tree_in(&cache(sb))
}

fn nvcc_tree_in(cache: &Path) -> (String, PathBuf) {
    let unpacked = cache.join("unpacked");
    for e in fs_err::read_dir(&unpacked).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".seal") || !e.path().is_dir() {
            continue;
        }
        let top = fs_err::read_dir(e.path()).unwrap().next().unwrap().unwrap();
        if top.path().join("bin/nvcc").exists() {
            return (name, top.path().join("bin/nvcc"));
        }
    }
    panic!("no unpacked nvcc in {}", unpacked.display())
}

/// Appends to `nvcc` (made writable and read-only again) and rewrites its line in `seal`
/// so that the list matches the tree again, as anyone who can write both can.
fn tamper(nvcc: &Path, seal: &Path) {
    let perms = |mode| std::fs::Permissions::from_mode(mode);
    fs_err::set_permissions(nvcc, perms(0o755)).unwrap();
    let mut bytes = fs_err::read(nvcc).unwrap();
    bytes.extend_from_slice(b"echo pwned > /tmp/gpuenv-pwned\n");
    fs_err::write(nvcc, &bytes).unwrap();
    fs_err::set_permissions(nvcc, perms(0o555)).unwrap();
    let text = fs_err::read_to_string(seal).unwrap();
    let fixed: Vec<String> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            if f[0] == "f" && f[4].ends_with("/bin/nvcc") {
                format!("f 555 {} {} {}", bytes.len(), sha256(&bytes), f[4])
            } else {
                l.to_string()
            }
        })
        .collect();
    fs_err::write(seal, fixed.join("\n") + "\n").unwrap();
}

fn chown_tree(path: &Path, uid: u32) {
    for e in walkdir::WalkDir::new(path) {
        std::os::unix::fs::lchown(e.unwrap().path(), Some(uid), Some(uid)).unwrap();
    }
}

fn installed_nvcc(sb: &Sandbox, name: &str) -> Vec<u8> {
    fs_err::read(
        sb.gpuenv_home()
            .join("toolchains")
            .join(name)
            .join("bin/nvcc"),
    )
    .unwrap()
}

#[test]
fn a_directory_gpuenv_did_not_make_is_refused_as_the_cache_and_nothing_in_it_is_touched() {
    let (_server, sb, mirror) = world();
    let home = sb.home();
    // The user's files, some in the very places a prune empties.
    let mine = [
        ".bashrc",
        "archives/taxes.pdf",
        "partial/draft.txt",
        "meta/notes",
        "unpacked/photos/cat.jpg",
    ];
    precious(&home, &mine);
    let vars = [
        ("GPUENV_DOWNLOAD_CACHE", home.to_str().unwrap()),
        ("GPUENV_CUDA_MIRROR", mirror.as_str()),
    ];
    let install = ["install", "cuda-12.4.1", "--profile", "minimal"];
    for args in [
        &["cache", "prune", "--all"][..],
        &["cache", "prune"],
        &["cache", "size"],
        &install,
    ] {
        let out = gpuenv(&sb, &vars, args);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {t}");
        assert!(
            t.contains(&format!(
                "{} is not a gpuenv download cache",
                home.display()
            )) && t.contains("which gpuenv did not make"),
            "{args:?}: {t}"
        );
        assert!(t.contains("hint: point GPUENV_DOWNLOAD_CACHE at a new or empty directory"));
        hint_last(&t);
    }
    untouched(&home, &mine);
    for made in ["CACHEDIR.TAG", "objects", "locks"] {
        assert!(!home.join(made).exists(), "{made} was created in $HOME");
    }
    // A new directory, or an empty one, is made gpuenv's: marked with the standard tag.
    let fresh = sb.path("fresh/cache");
    let vars = [
        ("GPUENV_DOWNLOAD_CACHE", fresh.to_str().unwrap()),
        ("GPUENV_CUDA_MIRROR", mirror.as_str()),
    ];
    ok(&sb, &vars, &install);
    let tag = fs_err::read_to_string(fresh.join("CACHEDIR.TAG")).unwrap();
    assert!(
        tag.starts_with("Signature: 8a477f597d28d172789f06886806bc55\n"),
        "{tag}"
    );
}

#[test]
fn a_cache_from_the_last_release_without_a_tag_keeps_working_and_is_tagged() {
    let (_server, sb, mirror) = world();
    succeeded(&install(&sb, &mirror, "cuda-12.4.1", &[]));
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    // What the last release left: gpuenv's layout and no tag.
    let tag = cache(&sb).join("CACHEDIR.TAG");
    fs_err::remove_file(&tag).unwrap();
    succeeded(&install(&sb, &mirror, "cuda-12.4.1", &["--offline"]));
    assert!(tag.exists());
    fs_err::remove_file(&tag).unwrap();
    ok(&sb, &[], &["cache", "prune"]);
    assert!(tag.exists());
}

#[test]
fn prune_never_follows_a_link_planted_at_a_shard_the_objects_temp_dir_or_a_part() {
    let (_server, sb, mirror) = world();
    succeeded(&install(&sb, &mirror, "cuda-12.4.1", &[]));
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    let objects = cache(&sb).join("objects");
    let mine = ["a.txt", "b.txt"];
    let mut victims = Vec::new();
    let mut plant = |at: PathBuf| {
        let victim = sb.path(&format!("victim-{}", victims.len()));
        precious(&victim, &mine);
        if at.is_dir() {
            fs_err::remove_dir_all(&at).unwrap();
        }
        std::os::unix::fs::symlink(&victim, &at).unwrap();
        victims.push(victim);
    };
    // A shard name no object uses yet, the store's temp dir, and the whole meta part.
    let free = (0..=255u8)
        .map(|i| format!("{i:02x}"))
        .find(|n| !objects.join(n).exists())
        .unwrap();
    plant(objects.join(free));
    plant(objects.join(".tmp"));
    plant(cache(&sb).join("meta"));

    ok(&sb, &[], &["cache", "size"]);
    ok(&sb, &[], &["cache", "prune"]);
    ok(&sb, &[], &["cache", "prune", "--all"]);
    for v in &victims {
        untouched(v, &mine);
    }
    succeeded(&install(&sb, &mirror, "cuda-12.4.1", &[]));

    // The whole store a link to files laid out like objects, each linked once.
    let lookalike = sb.path("lookalike");
    let object = format!("ab/{}-444", "ab".repeat(32));
    precious(&lookalike, &[&object]);
    fs_err::remove_dir_all(&objects).unwrap();
    std::os::unix::fs::symlink(&lookalike, &objects).unwrap();
    ok(&sb, &[], &["cache", "prune"]);
    untouched(&lookalike, &[&object]);
    ok(&sb, &[], &["cache", "prune", "--all"]);
    untouched(&lookalike, &[&object]);
    assert!(
        objects.symlink_metadata().is_err(),
        "the planted link stays"
    );
}

#[test]
fn an_install_never_links_a_file_through_a_link_planted_at_a_shard_or_the_objects_temp_dir() {
    let (_server, sb, mirror) = world();
    let (victim, tmp_victim) = (sb.path("victim"), sb.path("tmp-victim"));
    fs_err::create_dir_all(&victim).unwrap();
    fs_err::create_dir_all(&tmp_victim).unwrap();
    let objects = cache(&sb).join("objects");
    fs_err::create_dir_all(&objects).unwrap();
    for i in 0..=255u8 {
        std::os::unix::fs::symlink(&victim, objects.join(format!("{i:02x}"))).unwrap();
    }
    std::os::unix::fs::symlink(&tmp_victim, objects.join(".tmp")).unwrap();

    // The second install links the headers both releases ship through the temp dir.
    succeeded(&install(&sb, &mirror, "cuda-12.4.1", &[]));
    succeeded(&install(&sb, &mirror, "cuda-12.6.3", &[]));
    for dir in [&victim, &tmp_victim] {
        let left: Vec<_> = fs_err::read_dir(dir).unwrap().flatten().collect();
        assert!(left.is_empty(), "written through a link: {left:?}");
    }
    // The links were replaced by the store's own directories, and sharing works.
    let toolchains = sb.gpuenv_home().join("toolchains");
    let header = |t: &str| fs_err::metadata(toolchains.join(t).join("include/cuda_runtime.h"));
    assert_eq!(
        header("cuda-12.4.1").unwrap().ino(),
        header("cuda-12.6.3").unwrap().ino()
    );
}

#[test]
fn an_unpacked_tree_or_lock_behind_a_link_is_never_used_even_with_a_seal_that_matches_it() {
    let (_server, sb, mirror) = world();
    succeeded(&install(&sb, &mirror, "cuda-12.4.1", &[]));
    let original = installed_nvcc(&sb, "cuda-12.4.1");
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    let (key, nvcc) = nvcc_tree(&sb);
    let unpacked = cache(&sb).join("unpacked");
    // The tree moves out, gets an nvcc of someone's choosing and a seal to match, and a
    // link takes its place.
    let elsewhere = sb.path("elsewhere");
    fs_err::create_dir_all(&elsewhere).unwrap();
    fs_err::rename(unpacked.join(&key), elsewhere.join(&key)).unwrap();
    std::os::unix::fs::symlink(elsewhere.join(&key), unpacked.join(&key)).unwrap();
    let moved = elsewhere
        .join(&key)
        .join(nvcc.strip_prefix(unpacked.join(&key)).unwrap());
    tamper(&moved, &unpacked.join(format!("{key}.seal")));
    let planted = fs_err::read(&moved).unwrap();

    // Offline there is nothing to install from: the link is not a tree of the cache.
    let out = install(&sb, &mirror, "cuda-12.4.1", &["--offline"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("--offline forbids fetching it"), "{t}");
    assert!(!sb.gpuenv_home().join("toolchains/cuda-12.4.1").exists());
    // Its lock is a link too: taken at its own name, never through the link.
    let victim = sb.home().join(".bashrc");
    precious(&sb.home(), &[".bashrc"]);
    let lock = cache(&sb).join("locks").join(format!("{key}.lock"));
    fs_err::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    // Online the archive is fetched and unpacked again; the link went, what it led to stays.
    succeeded(&install(&sb, &mirror, "cuda-12.4.1", &[]));
    untouched(&sb.home(), &[".bashrc"]);
    assert!(lock.symlink_metadata().unwrap().is_file());
    assert_eq!(installed_nvcc(&sb, "cuda-12.4.1"), original);
    assert!(unpacked.join(&key).symlink_metadata().unwrap().is_dir());
    assert_eq!(fs_err::read(&moved).unwrap(), planted);
}

#[test]
fn prune_removes_only_names_gpuenv_makes_and_says_what_it_left() {
    let (_server, sb, mirror) = world();
    succeeded(&install(&sb, &mirror, "cuda-12.4.1", &[]));
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    let dir = cache(&sb);
    let shard = fs_err::read_dir(dir.join("objects"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.len() == 2)
        .unwrap();
    let shard_file = format!("objects/{shard}/notes.txt");
    let mine = [
        "unpacked/notes.txt",
        "unpacked/my-project/src/main.rs",
        "archives/README",
        "partial/keep-me.iso",
        "meta/bookmarks.html",
        "objects/mine/a.txt",
        &shard_file,
        "my-own-dir/x",
    ];
    precious(&dir, &mine);

    let t = ok(&sb, &[], &["cache", "prune", "--all"]);
    untouched(&dir, &mine);
    assert!(
        t.contains("left 7 entries gpuenv did not make in its download cache alone"),
        "{t}"
    );
    // gpuenv's own are gone: no unpacked tree, seal or object is left.
    let seals = fs_err::read_dir(dir.join("unpacked"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".seal"))
        .count();
    assert_eq!(seals, 0);
    assert_eq!(
        fs_err::read_dir(dir.join("objects").join(&shard))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn an_object_of_another_user_is_never_linked_into_a_toolkit() {
    if !root() {
        return;
    }
    let (_server, sb, mirror) = world();
    succeeded(&install(&sb, &mirror, "cuda-12.4.1", &[]));
    let toolchains = sb.gpuenv_home().join("toolchains");
    let header = "include/cuda_runtime.h";
    // The stored header (the same inode as the installed one) now belongs to someone else,
    // who may change its bytes whenever they like.
    let object = walkdir::WalkDir::new(cache(&sb).join("objects"))
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .find(|p| {
            let (a, b) = (
                p.symlink_metadata().unwrap(),
                fs_err::metadata(toolchains.join("cuda-12.4.1").join(header)).unwrap(),
            );
            a.is_file() && a.ino() == b.ino()
        })
        .unwrap();
    std::os::unix::fs::lchown(&object, Some(NOBODY), Some(NOBODY)).unwrap();

    succeeded(&install(&sb, &mirror, "cuda-12.6.3", &[]));
    let fresh = fs_err::metadata(toolchains.join("cuda-12.6.3").join(header)).unwrap();
    assert_ne!(fresh.ino(), object.symlink_metadata().unwrap().ino());
    assert_eq!(fresh.uid(), 0);
    // Its owner edits it: the admin's new toolkit does not change.
    let before = fs_err::read(toolchains.join("cuda-12.6.3").join(header)).unwrap();
    fs_err::set_permissions(&object, std::fs::Permissions::from_mode(0o644)).unwrap();
    fs_err::write(&object, "#error pwned\n").unwrap();
    assert_eq!(
        fs_err::read(toolchains.join("cuda-12.6.3").join(header)).unwrap(),
        before
    );
}

#[test]
fn an_unpacked_archive_and_seal_of_another_user_are_not_reused_even_when_they_match() {
    if !root() {
        return;
    }
    let (_server, sb, mirror) = world();
    succeeded(&install(&sb, &mirror, "cuda-12.4.1", &[]));
    let original = installed_nvcc(&sb, "cuda-12.4.1");
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    // Another user of a shared cache edits the tree and writes a seal that matches it.
    let (key, nvcc) = nvcc_tree(&sb);
    let unpacked = cache(&sb).join("unpacked");
    let seal = unpacked.join(format!("{key}.seal"));
    tamper(&nvcc, &seal);
    chown_tree(&unpacked.join(&key), NOBODY);
    chown_tree(&seal, NOBODY);

    let out = install(&sb, &mirror, "cuda-12.4.1", &[]);
    let t = succeeded(&out) + &text(&out);
    assert!(
        t.contains("is not reused:") && t.contains("belongs to user 65534, not to you or root"),
        "{t}"
    );
    assert_eq!(
        installed_nvcc(&sb, "cuda-12.4.1"),
        original,
        "another user's nvcc was installed"
    );
    assert_eq!(fs_err::metadata(&seal).unwrap().uid(), 0);
}

#[test]
fn a_download_cache_that_belongs_to_another_user_is_refused_with_the_reason() {
    if !root() {
        return;
    }
    let (_server, sb, mirror) = world();
    let shared = sb.path("shared-cache");
    fs_err::create_dir_all(&shared).unwrap();
    std::os::unix::fs::lchown(&shared, Some(NOBODY), Some(NOBODY)).unwrap();
    let vars = [
        ("GPUENV_DOWNLOAD_CACHE", shared.to_str().unwrap()),
        ("GPUENV_CUDA_MIRROR", mirror.as_str()),
    ];
    let out = gpuenv(
        &sb,
        &vars,
        &["install", "cuda-12.4.1", "--profile", "minimal"],
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains(&format!(
            "{} belongs to user 65534, not to you or root",
            shared.display()
        )),
        "{t}"
    );
    assert!(t.contains("hint: use a download cache of your own"), "{t}");
    hint_last(&t);
    assert_eq!(fs_err::read_dir(&shared).unwrap().count(), 0);
}
