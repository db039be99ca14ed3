//! Disk: identical files of different toolkits are stored once (the download cache's
//! content-addressed objects, hard-linked into every tree), and the cache keeps what a
//! reinstall needs and no more. Network only to 127.0.0.1.

use crate::common::install_fixtures as fixtures;
use crate::common::server;

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::common::*;
use fixtures::*;
use server::Server;

/// Bytes of the regular files below `dirs`, each inode once (what `du` says).
fn disk(dirs: &[&Path]) -> u64 {
    let mut seen = HashSet::new();
    let mut bytes = 0;
    for dir in dirs {
        for entry in walkdir::WalkDir::new(dir) {
            let meta = entry.unwrap().path().symlink_metadata().unwrap();
            if meta.is_file() && seen.insert((meta.dev(), meta.ino())) {
                bytes += meta.len();
            }
        }
    }
    bytes
}

fn inode(p: &Path) -> u64 {
    fs_err::metadata(p).unwrap().ino()
}

fn installed_side_by_side() -> (Server, Sandbox, String) {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1", "12.6.3"]));
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    for release in ["cuda-12.4.1", "cuda-12.6.3"] {
        ok(
            &sb,
            &[("GPUENV_CUDA_MIRROR", mirror.as_str())],
            &["install", release, "--profile", "minimal"],
        );
    }
    (server, sb, mirror)
}

#[test]
fn two_toolkits_store_their_identical_files_once() {
    let (_server, sb, _) = installed_side_by_side();
    let toolchains = sb.gpuenv_home().join("toolchains");
    let (old, new) = (
        toolchains.join("cuda-12.4.1"),
        toolchains.join("cuda-12.6.3"),
    );
    // The same header ships in both releases' cudart archives: one inode, read-only.
    let header = "include/cuda_runtime.h";
    assert_eq!(inode(&old.join(header)), inode(&new.join(header)));
    assert_eq!(
        fs_err::metadata(new.join(header)).unwrap().mode() & 0o222,
        0
    );
    // Each release's nvcc says its own version: two files.
    assert_ne!(inode(&old.join("bin/nvcc")), inode(&new.join("bin/nvcc")));
    assert!(fs_err::read_to_string(new.join("bin/nvcc"))
        .unwrap()
        .contains("12.6"));

    let together = disk(&[&old, &new]);
    let apart = disk(&[&old]) + disk(&[&new]);
    assert!(together < apart, "{together} bytes vs {apart} apart");
    // The cache adds only its lists (and its tag): its objects are the installed files, and
    // no archive is kept.
    let cache = sb.gpuenv_home().join("downloads");
    let seals: u64 = fs_err::read_dir(cache.join("unpacked"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".seal"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    let meta = disk(&[&cache.join("meta")]);
    let tag = fs_err::metadata(cache.join("CACHEDIR.TAG")).unwrap().len();
    assert_eq!(disk(&[&old, &new, &cache]) - together, seals + meta + tag);
    assert_eq!(fs_err::read_dir(cache.join("archives")).unwrap().count(), 0);
}

#[test]
fn uninstalling_one_toolkit_leaves_the_files_it_shared_with_another() {
    let (_server, sb, _) = installed_side_by_side();
    let new = sb.gpuenv_home().join("toolchains/cuda-12.6.3");
    let header = fs_err::read(new.join("include/cuda_runtime.h")).unwrap();
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    ok(&sb, &[], &["cache", "prune"]);
    assert_eq!(
        fs_err::read(new.join("include/cuda_runtime.h")).unwrap(),
        header
    );
    assert!(view_nvcc_version(&sb, "cuda-12.6.3").contains("release 12.6"));
    // The uninstalled toolkit's own files are gone from the cache, the shared ones stay.
    let objects = sb.gpuenv_home().join("downloads/objects");
    let mut kept = 0;
    for entry in walkdir::WalkDir::new(&objects) {
        let meta = entry.unwrap().path().symlink_metadata().unwrap();
        if meta.is_file() {
            assert!(meta.nlink() > 1, "an object nothing uses is left");
            kept += 1;
        }
    }
    assert!(
        kept > 0,
        "the objects cuda-12.6.3 links are gone from {}",
        objects.display()
    );
}

#[test]
fn keep_archives_keeps_a_mirror_of_what_was_fetched() {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1"]));
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    ok(
        &sb,
        &[
            ("GPUENV_CUDA_MIRROR", mirror.as_str()),
            ("GPUENV_KEEP_ARCHIVES", "1"),
        ],
        &["install", "cuda-12.4.1", "--profile", "minimal"],
    );
    let archives = sb.gpuenv_home().join("downloads/archives");
    assert_eq!(fs_err::read_dir(&archives).unwrap().count(), 3);
    // A default prune drops them: a reinstall needs only the unpacked files.
    ok(&sb, &[], &["cache", "prune"]);
    assert_eq!(fs_err::read_dir(&archives).unwrap().count(), 0);
}

#[test]
fn a_shared_file_someone_edited_is_not_linked_into_the_next_toolkit() {
    use std::os::unix::fs::PermissionsExt;
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1", "12.6.3"]));
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    ok(
        &sb,
        &vars,
        &["install", "cuda-12.4.1", "--profile", "minimal"],
    );
    let toolchains = sb.gpuenv_home().join("toolchains");
    let edited = toolchains.join("cuda-12.4.1/include/cuda_runtime.h");
    let original = fs_err::read(&edited).unwrap();
    // The file is read-only; someone makes it writable again and edits it in place, which
    // also edits the stored copy (one inode).
    fs_err::set_permissions(&edited, std::fs::Permissions::from_mode(0o644)).unwrap();
    fs_err::write(&edited, "#error tampered\n").unwrap();

    ok(
        &sb,
        &vars,
        &["install", "cuda-12.6.3", "--profile", "minimal"],
    );
    let fresh = toolchains.join("cuda-12.6.3/include/cuda_runtime.h");
    assert_eq!(fs_err::read(&fresh).unwrap(), original);
    assert_ne!(inode(&fresh), inode(&edited));
    assert_eq!(fs_err::metadata(&fresh).unwrap().mode() & 0o222, 0);
}

#[test]
fn a_cache_from_before_the_store_joins_it_when_reused() {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1", "12.6.3"]));
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    let minimal = |release| ["install", release, "--profile", "minimal"];
    ok(&sb, &vars, &minimal("cuda-12.4.1"));
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    // What an older gpuenv left: sealed unpacked trees, no objects.
    let objects = sb.gpuenv_home().join("downloads/objects");
    fs_err::remove_dir_all(&objects).unwrap();

    ok(
        &sb,
        &vars,
        &[&minimal("cuda-12.4.1")[..], &["--offline"]].concat(),
    );
    ok(&sb, &vars, &minimal("cuda-12.6.3"));
    let toolchains = sb.gpuenv_home().join("toolchains");
    let header = "include/cuda_runtime.h";
    assert_eq!(
        inode(&toolchains.join("cuda-12.4.1").join(header)),
        inode(&toolchains.join("cuda-12.6.3").join(header))
    );
}

#[test]
fn cache_size_and_prune_free_space_without_breaking_installed_toolkits() {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1"]));
    let url = server.url("redist/");
    let sb = Sandbox::new();
    let vars = [("GPUENV_CUDA_MIRROR", url.as_str())];
    ok(
        &sb,
        &vars,
        &["install", "cuda-12.4.1", "--profile", "minimal"],
    );
    let cache = sb.gpuenv_home().join("downloads");

    let out = gpuenv(&sb, &[], &["cache", "size"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(&format!("{}: ", cache.display())),
        "{stdout}"
    );
    let line = |part: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(part))
            .unwrap()
            .to_string()
    };
    // Once unpacked, an archive is not kept: the installed files are the cache's objects.
    assert!(line("archives").contains("(0 files)"), "{stdout}");
    assert!(
        line("objects").contains("shared with installed toolchains"),
        "{stdout}"
    );
    assert_eq!(fs_err::read_dir(cache.join("archives")).unwrap().count(), 0);

    // What the installed toolkit uses stays: a reinstall works offline.
    let t = ok(&sb, &[], &["cache", "prune"]);
    assert!(t.contains("removed "), "{t}");
    assert_eq!(fs_err::read_dir(cache.join("unpacked")).unwrap().count(), 6);
    assert!(view_nvcc_version(&sb, "cuda-12.4.1").contains("release 12.4"));
    let minimal = ["install", "cuda-12.4.1", "--profile", "minimal"];
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    ok(&sb, &vars, &[&minimal[..], &["--offline"]].concat());

    // Uninstalled, its unpacked archives and stored files are what a prune frees.
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    let t = ok(&sb, &[], &["cache", "prune"]);
    assert!(t.contains("removed 14 files"), "{t}");
    assert_eq!(fs_err::read_dir(cache.join("unpacked")).unwrap().count(), 0);
    let objects: usize = fs_err::read_dir(cache.join("objects"))
        .unwrap()
        .flatten()
        .map(|d| fs_err::read_dir(d.path()).unwrap().count())
        .sum();
    assert_eq!(objects, 0);
    let out = gpuenv(&sb, &vars, &[&minimal[..], &["--offline"]].concat());
    assert!(text(&out).contains("--offline forbids fetching it"));
    ok(&sb, &vars, &minimal);

    ok(&sb, &[], &["cache", "prune", "--all"]);
    let out = gpuenv(&sb, &[], &["cache", "size"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&format!("{}: 0 B", cache.display())));
    assert!(view_nvcc_version(&sb, "cuda-12.4.1").contains("release 12.4"));
}

#[test]
fn a_link_planted_in_the_cache_is_removed_by_a_prune_and_never_followed() {
    let sb = Sandbox::new();
    let outside = sb.path("precious");
    fs_err::create_dir_all(&outside).unwrap();
    fs_err::write(outside.join("thesis.tex"), "years of work").unwrap();
    fs_err::write(outside.join("data.csv"), "1,2,3").unwrap();
    let unpacked = sb.gpuenv_home().join("downloads/unpacked");
    fs_err::create_dir_all(&unpacked).unwrap();
    let planted = unpacked.join("a".repeat(64));
    std::os::unix::fs::symlink(&outside, &planted).unwrap();

    // The link itself is what goes; the files it leads to are neither counted nor touched.
    let t = ok(&sb, &[], &["cache", "prune"]);
    assert!(t.contains("removed 1 files"), "{t}");
    assert!(planted.symlink_metadata().is_err());
    assert_eq!(
        fs_err::read_to_string(outside.join("thesis.tex")).unwrap(),
        "years of work"
    );
    assert!(outside.join("data.csv").exists());
}

/// `cache size` says what a prune frees, and the prune frees that much and says so: the
/// bytes that leave the disk. Measured on a cache with kept archives, a toolkit's trees in
/// use and another's not, files two toolkits share, and a partial download.
#[test]
fn cache_size_and_prune_agree_on_what_a_prune_frees() {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1", "12.6.3"]));
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    let vars = [
        ("GPUENV_CUDA_MIRROR", mirror.as_str()),
        ("GPUENV_KEEP_ARCHIVES", "1"),
    ];
    for release in ["cuda-12.4.1", "cuda-12.6.3"] {
        ok(&sb, &vars, &["install", release, "--profile", "minimal"]);
    }
    ok(&sb, &[], &["uninstall", "cuda-12.6.3"]);
    let home = sb.gpuenv_home();
    let cache = home.join("downloads");
    write(&cache.join("partial/0123abcd.part"), &"x".repeat(5000));
    for all in [false, true] {
        let out = gpuenv(&sb, &[], &["cache", "size", "--json"]);
        let size: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let said = size[if all {
            "prune_all_frees"
        } else {
            "prune_frees"
        }]
        .as_u64()
        .unwrap();
        let text = ok(&sb, &[], &["cache", "size"]);
        assert!(
            text.contains(
                "installed toolchains are not the cache: their files are hard links to its objects"
            ),
            "{text}"
        );
        let before = disk(&[&home]);
        let args: &[&str] = if all {
            &["cache", "prune", "--all"]
        } else {
            &["cache", "prune"]
        };
        let pruned = ok(&sb, &[], args);
        let freed = before - disk(&[&home]);
        assert_eq!(
            said, freed,
            "all: {all}; size said {said}, the disk has {freed} more\n{pruned}"
        );
        assert!(freed > 0, "{pruned}");
        // Both in the same words.
        let lead = if all {
            "`--all` frees "
        } else {
            "`gpuenv cache prune` frees "
        };
        let human = text
            .split(lead)
            .nth(1)
            .map(|t| t.split([' ', '\n']).take(2).collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        assert!(
            pruned.contains(&format!("({human} freed;")),
            "{human}: {pruned}"
        );
    }
    assert!(view_nvcc_version(&sb, "cuda-12.4.1").contains("release 12.4"));
}
