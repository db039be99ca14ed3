//! Installs that go wrong: a bad hash, a body cut short (then resumed), 404, DNS failure,
//! hostile archives, a truncated xz. Each leaves the registry as it was. Then two installs
//! at once, and installs killed at every stage. Network only to 127.0.0.1 (and one DNS
//! lookup of a name under .invalid).

use crate::common::archives;
use crate::common::install_fixtures as fixtures;
use crate::common::server;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::*;
use archives::*;
use fixtures::*;
use server::Server;

/// Fails with exit status 2 (3 when `what` is the network's or the server's doing, as
/// `network_fails_cleanly` says), says `what`, and leaves no trace of `name`.
fn fails_cleanly(sb: &Sandbox, out: &Output, what: &str, name: &str) -> String {
    fails_with(2, sb, out, what, name)
}

/// [`fails_cleanly`] for a fetch the network or the server failed: exit status 3.
fn network_fails_cleanly(sb: &Sandbox, out: &Output, what: &str, name: &str) -> String {
    fails_with(3, sb, out, what, name)
}

fn fails_with(status: i32, sb: &Sandbox, out: &Output, what: &str, name: &str) -> String {
    let t = text(out);
    assert_eq!(out.status.code(), Some(status), "{t}");
    assert!(t.contains(what), "expected {what:?} in:\n{t}");
    assert!(
        t.trim_end().lines().last().unwrap().starts_with("hint:"),
        "the hint comes last:\n{t}"
    );
    assert!(
        sb.settings().is_none_or(|s| !s.contains(name)),
        "{name} was registered"
    );
    let home = sb.gpuenv_home();
    assert!(
        !home.join("toolchains").join(name).exists(),
        "a tree of {name} was left"
    );
    assert!(!home.join("views").join(name).exists());
    assert_eq!(leftovers(&home.join("toolchains")), Vec::<String>::new());
    t
}

/// Temp dirs left in `dir`.
fn leftovers(dir: &Path) -> Vec<String> {
    fs_err::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".tmp-") || n.starts_with(".old-"))
                .collect()
        })
        .unwrap_or_default()
}

/// A redist mirror of 12.4.1 on a server, with `patch` applied to the manifest.
fn mirror(patch: impl FnOnce(&mut serde_json::Value)) -> (Server, Tree) {
    let server = Server::start();
    let mut tree = redist_tree(&["12.4.1"]);
    let m = tree
        .iter_mut()
        .find(|(p, _, _)| p == "redistrib_12.4.1.json")
        .unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&m.1).unwrap();
    patch(&mut json);
    m.1 = serde_json::to_vec(&json).unwrap();
    serve(&server, "redist/", &tree);
    (server, tree)
}

fn archive_path(tree: &Tree, component: &str) -> String {
    tree.iter()
        .find(|(p, _, _)| p.starts_with(&format!("{component}/")))
        .map(|(p, _, _)| format!("redist/{p}"))
        .unwrap()
}

#[test]
fn a_sha256_mismatch_installs_nothing() {
    let (server, _) = mirror(|m| {
        m["cuda_cudart"][platform()]["sha256"] = "0".repeat(64).into();
    });
    let sb = Sandbox::new();
    let url = server.url("redist/");
    let out = gpuenv(&sb, &[("GPUENV_CUDA_MIRROR", &url)], NVIDIA_MINIMAL);
    let t = fails_cleanly(
        &sb,
        &out,
        "does not match its sha256 (expected 0000",
        "cuda-12.4.1",
    );
    assert!(t.contains("cuda_cudart-"), "{t}");
    let cache = sb.gpuenv_home().join("downloads");
    assert!(!cache.join(format!("archives/{}", "0".repeat(64))).exists());
    assert_eq!(
        fs_err::read_dir(cache.join("partial")).unwrap().count(),
        0,
        "a bad download is not kept"
    );
}

#[test]
fn a_body_cut_short_resumes_and_fetches_only_the_rest() {
    let (server, tree) = mirror(|_| {});
    let path = archive_path(&tree, "cuda_nvcc");
    let len = tree
        .iter()
        .find(|(p, _, _)| format!("redist/{p}") == path)
        .unwrap()
        .1
        .len();
    let chunk = len / 10;
    // Every attempt of the first install is cut after `chunk` bytes.
    server.cut(&path, chunk, 4);
    let sb = Sandbox::new();
    let url = server.url("redist/");
    let vars = [("GPUENV_CUDA_MIRROR", url.as_str())];
    let out = gpuenv(&sb, &vars, NVIDIA_MINIMAL);
    let t = network_fails_cleanly(&sb, &out, "ended early", "cuda-12.4.1");
    assert!(t.contains("retrying (4/4)"), "{t}");

    let out = gpuenv(&sb, &vars, NVIDIA_MINIMAL);
    succeeded(&out);
    let hits = server.hits(&path);
    let ranges: Vec<Option<String>> = hits.iter().map(|h| h.range.clone()).collect();
    let want: Vec<Option<String>> = (0..5)
        .map(|i| (i > 0).then(|| format!("bytes={}-", i * chunk)))
        .collect();
    assert_eq!(ranges, want, "each attempt resumes where the last stopped");
    assert_eq!(
        hits.iter().map(|h| h.sent).sum::<usize>(),
        len,
        "only the rest was fetched"
    );
    assert_eq!(hits.last().unwrap().status, 206);
    assert!(sb
        .gpuenv_home()
        .join("toolchains/cuda-12.4.1/bin/nvcc")
        .is_file());
}

#[test]
fn a_missing_archive_is_a_404_naming_the_url() {
    let (server, tree) = mirror(|_| {});
    let path = archive_path(&tree, "cuda_cccl");
    server.remove(&path);
    let sb = Sandbox::new();
    let url = server.url("redist/");
    let out = gpuenv(&sb, &[("GPUENV_CUDA_MIRROR", &url)], NVIDIA_MINIMAL);
    let t = fails_cleanly(&sb, &out, "was not found (HTTP 404)", "cuda-12.4.1");
    assert!(t.contains(&server.url(&path)), "{t}");
    assert_eq!(server.hits(&path).len(), 1, "a 404 is not retried");
}

#[test]
fn a_server_that_stops_sending_times_out_after_bounded_retries() {
    let (server, tree) = mirror(|_| {});
    let path = archive_path(&tree, "cuda_cudart");
    server.slow(&path, Duration::from_secs(5));
    let sb = Sandbox::new();
    let url = server.url("redist/");
    let vars = [
        ("GPUENV_CUDA_MIRROR", url.as_str()),
        ("GPUENV_HTTP_TIMEOUT", "1"),
    ];
    let start = Instant::now();
    let out = gpuenv(&sb, &vars, NVIDIA_MINIMAL);
    let t = network_fails_cleanly(&sb, &out, "timed out fetching", "cuda-12.4.1");
    assert!(
        t.contains("retrying (4/4)") && !t.contains("retrying (5/"),
        "{t}"
    );
    assert_eq!(server.hits(&path).len(), 4);
    assert!(start.elapsed() < Duration::from_secs(30));
}

#[test]
fn an_unknown_host_is_a_dns_failure() {
    let sb = Sandbox::new();
    let vars = [("GPUENV_CUDA_MIRROR", "http://gpuenv-mirror.invalid/redist/")];
    let out = gpuenv(&sb, &vars, NVIDIA_MINIMAL);
    let t = network_fails_cleanly(
        &sb,
        &out,
        "cannot resolve the host of http://gpuenv-mirror.invalid/",
        "cuda-12.4.1",
    );
    assert!(!t.contains("retrying"), "{t}");
}

/// A manifest whose one archive is `tarball`.
fn hostile_manifest(sb: &Sandbox, tag: &str, tarball: &[u8]) -> PathBuf {
    let dir = sb.path(&format!("m-{tag}"));
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(dir.join("rocm.tar.xz"), tarball).unwrap();
    let path = dir.join("toolchains.toml");
    let toml = format!(
        "kind = \"rocm\"\nversion = \"6.2.4\"\n[[archive]]\nurl = \"rocm.tar.xz\"\nsha256 = \"{}\"\n",
        sha256(tarball)
    );
    write(&path, &toml);
    path
}

#[test]
fn hostile_archives_are_refused_and_write_nothing_outside() {
    let sb = Sandbox::new();
    let outside = sb.path("outside");
    fs_err::create_dir_all(&outside).unwrap();
    let abs = outside.join("abs-victim");
    let hipcc = || exe("bin/hipcc", "#!/bin/sh\n");
    let cases: Vec<(&str, Vec<Item>, &str)> = vec![
        (
            "dotdot",
            vec![hipcc(), file("../x", "pwned")],
            "`../x`: it goes up with `..`",
        ),
        (
            "dotdot-deep",
            vec![hipcc(), file("bin/../../x", "pwned")],
            "it goes up with `..`",
        ),
        (
            "absolute",
            vec![hipcc(), file(abs.to_str().unwrap(), "pwned")],
            "it is an absolute path",
        ),
        (
            "link-to-root",
            vec![
                hipcc(),
                Item::Symlink("evil".into(), "/".into()),
                file(&format!("evil{}", abs.display()), "pwned"),
            ],
            "`evil`: it links to the absolute path `/`",
        ),
        (
            "link-up",
            vec![
                hipcc(),
                Item::Symlink("lib/up".into(), "../../..".into()),
                file("lib/up/x", "pwned"),
            ],
            "it links outside the archive, to `../../..`",
        ),
        (
            "through-link",
            vec![
                hipcc(),
                Item::Dir("sub".into()),
                Item::Symlink("alias".into(), "sub".into()),
                file("alias/x", "x"),
            ],
            "`alias/x`: it goes through the link `alias`",
        ),
        (
            "hardlink-out",
            vec![
                hipcc(),
                Item::HardLink("lib/passwd".into(), "/etc/passwd".into()),
            ],
            "it is an absolute path",
        ),
    ];
    for (tag, items, why) in cases {
        let manifest = hostile_manifest(&sb, tag, &tar_xz(&items));
        let out = install_manifest(&sb, &manifest);
        let t = fails_cleanly(&sb, &out, "has an unsafe entry", "rocm-6.2.4");
        assert!(t.contains(why), "{tag}: expected {why:?} in:\n{t}");
    }
    assert!(!abs.exists(), "an absolute path was written");
    assert!(!sb.path("x").exists() && !sb.gpuenv_home().join("downloads/x").exists());
    assert_eq!(fs_err::read_dir(&outside).unwrap().count(), 0);
    // Nothing half-unpacked stays in the cache.
    let unpacked = sb.gpuenv_home().join("downloads/unpacked");
    assert_eq!(fs_err::read_dir(&unpacked).unwrap().count(), 0);
}

#[test]
fn a_truncated_xz_is_corrupt_and_not_kept() {
    let sb = Sandbox::new();
    let (manifest, cut) = truncated_rocm_manifest(&sb);
    let out = install_manifest(&sb, &manifest);
    let t = fails_cleanly(&sb, &out, "is corrupt", "rocm-6.2.4");
    assert!(t.contains("rocm-6.2.4.tar.xz"), "{t}");
    assert!(!sb
        .gpuenv_home()
        .join(format!("downloads/archives/{cut}"))
        .exists());
}

#[test]
fn two_installs_at_once_share_one_download_and_one_tree() {
    let server = Server::start();
    let tree = redist_tree(&["12.4.1"]);
    serve(&server, "redist/", &tree);
    for (p, _, _) in &tree {
        if p.ends_with(".tar.xz") {
            server.slow(&format!("redist/{p}"), Duration::from_millis(400));
        }
    }
    let sb = Sandbox::new();
    let url = server.url("redist/");
    let vars = [("GPUENV_CUDA_MIRROR", url.as_str())];
    let a = spawn(&sb, &vars, NVIDIA_MINIMAL);
    let b = spawn(&sb, &vars, NVIDIA_MINIMAL);
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    succeeded(&a);
    succeeded(&b);
    let both = text(&a) + &text(&b);
    assert_eq!(
        both.matches("installed cuda-12.4.1 (cuda 12.4.1)").count(),
        1,
        "{both}"
    );
    assert_eq!(
        both.matches("cuda-12.4.1 is already installed").count(),
        1,
        "{both}"
    );
    for c in ["cuda_nvcc", "cuda_cudart", "cuda_cccl"] {
        let p = archive_path(&tree, c);
        assert_eq!(server.hits(&p).len(), 1, "{p} was not fetched exactly once");
    }
    let toolchains: Vec<String> = fs_err::read_dir(sb.gpuenv_home().join("toolchains"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert_eq!(toolchains, ["cuda-12.4.1"]);
    assert_eq!(sb.settings().unwrap().matches("[toolchains.").count(), 1);
}

#[test]
fn an_install_killed_at_any_stage_leaves_nothing_registered_and_the_retry_succeeds() {
    if !cfg!(debug_assertions) {
        cannot_run("the crash checkpoints exist in debug builds only");
        return;
    }
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1"]));
    let url = server.url("redist/");
    for stage in ["download", "extract", "assemble", "register"] {
        let sb = Sandbox::new();
        let marker = sb.path("hung");
        let hang = format!("{stage}:{}", marker.display());
        let mut child = spawn(
            &sb,
            &[("GPUENV_CUDA_MIRROR", &url), ("GPUENV_TEST_HANG_AT", &hang)],
            NVIDIA_MINIMAL,
        );
        let start = Instant::now();
        while !marker.exists() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "{stage}: gpuenv ended ({status}) before the checkpoint: {}",
                    text(&child.wait_with_output().unwrap())
                );
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{stage}: no checkpoint"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        assert!(
            sb.settings().is_none_or(|s| !s.contains("cuda-12.4.1")),
            "{stage}: registered"
        );
        let out = gpuenv(&sb, &[], &["list", "--json"]);
        assert!(
            !text(&out).contains("cuda-12.4.1"),
            "{stage}: {}",
            text(&out)
        );

        let out = gpuenv(&sb, &[("GPUENV_CUDA_MIRROR", &url)], NVIDIA_MINIMAL);
        assert!(
            out.status.success(),
            "{stage}: the retry failed: {}",
            text(&out)
        );
        assert!(
            text(&out).contains("installed cuda-12.4.1"),
            "{stage}: {}",
            text(&out)
        );
        let home = sb.gpuenv_home();
        assert!(
            home.join("toolchains/cuda-12.4.1/lib64/libcudart.so")
                .exists(),
            "{stage}"
        );
        assert!(
            home.join("views/cuda-12.4.1/bin/nvcc").is_symlink(),
            "{stage}"
        );
        assert_eq!(
            leftovers(&home.join("toolchains")),
            Vec::<String>::new(),
            "{stage}"
        );
        assert_eq!(
            leftovers(&home.join("downloads/unpacked")),
            Vec::<String>::new(),
            "{stage}"
        );
    }
}
