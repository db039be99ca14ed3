//! The installer against an attacker: a mirror, an index or a manifest that names paths
//! where digests and names belong, archives whose links climb out of the tree together,
//! two installs whose names share a prefix, a tampered install, and the messages a user
//! gets when the cache, the manifest, the server or GPUENV_HOME is not what it should be.
//! Everything hostile is generated here and served from 127.0.0.1 or the sandbox.

#[path = "common/archives.rs"]
mod archives;
mod common;
#[path = "common/install_fixtures.rs"]
mod fixtures;
#[path = "common/server.rs"]
mod server;

use std::path::{Path, PathBuf};
use std::process::Output;

use archives::*;
use common::*;
use fixtures::*;
use server::Server;

/// `~/.bashrc` in the sandbox, the file a hostile mirror aims at.
struct Victim {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl Victim {
    fn plant(sb: &Sandbox) -> Victim {
        let path = sb.home().join(".bashrc");
        let bytes = b"alias ll='ls -l'\nexport EDITOR=vi\n".to_vec();
        fs_err::write(&path, &bytes).unwrap();
        Victim { path, bytes }
    }

    /// From the download cache's `partial/`, `archives/` and `locks/` dirs.
    const FROM_CACHE: &'static str = "../../../../../.bashrc";

    fn untouched(&self, out: &Output, what: &str) {
        let t = text(out);
        assert_eq!(out.status.code(), Some(2), "{what}: {t}");
        assert_eq!(
            fs_err::read(&self.path).ok().as_deref(),
            Some(&self.bytes[..]),
            "{what}: ~/.bashrc was changed\n{t}"
        );
        let lock = self.path.with_file_name(".bashrc.lock");
        assert!(!lock.exists(), "{what}: {} was created", lock.display());
    }
}

fn hint_last(t: &str) {
    assert!(
        t.trim_end().lines().last().unwrap().starts_with("hint:"),
        "the hint comes last:\n{t}"
    );
}

const NVIDIA_MINIMAL: &[&str] = &[
    "install",
    "cuda-12.4",
    "--source",
    "nvidia",
    "--profile",
    "minimal",
];

/// A redist mirror of 12.4.1 on a server, whose nvcc entry gets `sha256` and `size`.
fn redist_with(sha256: &str, size: usize) -> Server {
    let server = Server::start();
    let mut tree = redist_tree(&["12.4.1"]);
    let m = tree
        .iter_mut()
        .find(|(p, _, _)| p == "redistrib_12.4.1.json")
        .unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&m.1).unwrap();
    json["cuda_nvcc"][platform()]["sha256"] = sha256.into();
    json["cuda_nvcc"][platform()]["size"] = size.to_string().into();
    m.1 = serde_json::to_vec(&json).unwrap();
    serve(&server, "redist/", &tree);
    server
}

#[test]
fn a_redist_sha256_naming_bashrc_cannot_append_to_it_delete_it_or_lock_it() {
    for (what, extra) in [("append", 4096), ("delete", 0)] {
        let sb = Sandbox::new();
        let victim = Victim::plant(&sb);
        let server = redist_with(Victim::FROM_CACHE, victim.bytes.len() + extra);
        let url = server.url("redist/");
        let out = gpuenv(&sb, &[("GPUENV_CUDA_MIRROR", &url)], NVIDIA_MINIMAL);
        victim.untouched(&out, what);
        let t = text(&out);
        assert!(
            t.contains("the component cuda_nvcc of CUDA 12.4.1")
                && t.contains("`../../../../../.bashrc` is not 64 hex digits"),
            "{t}"
        );
        hint_last(&t);
        assert!(server.hits(".tar.xz").is_empty(), "nothing was fetched");
    }
}

/// The package index of `pypi_tree`, with the metapackage's digest replaced by `sha256`.
fn index_with(sha256: &str) -> Server {
    let server = Server::start();
    let mut tree = pypi_tree();
    for (path, body, _) in tree.iter_mut() {
        if path == "simple/cuda-toolkit/" {
            let mut json: serde_json::Value = serde_json::from_slice(body).unwrap();
            for f in json["files"].as_array_mut().unwrap() {
                f["hashes"]["sha256"] = sha256.into();
            }
            *body = serde_json::to_vec(&json).unwrap();
        } else if path == "html/cuda-toolkit/" {
            let html = String::from_utf8(body.clone()).unwrap();
            let mut out = String::new();
            for (i, piece) in html.split("#sha256=").enumerate() {
                if i > 0 {
                    out.push_str("#sha256=");
                    out.push_str(sha256);
                    out.push_str(&piece[64..]);
                } else {
                    out.push_str(piece);
                }
            }
            *body = out.into_bytes();
        }
    }
    serve(&server, "", &tree);
    server
}

#[test]
fn an_index_page_sha256_naming_bashrc_cannot_touch_it_json_or_html() {
    let server = index_with(Victim::FROM_CACHE);
    for index in ["simple/", "html/"] {
        let sb = Sandbox::new();
        let victim = Victim::plant(&sb);
        let url = server.url(index);
        let out = gpuenv(
            &sb,
            &[("GPUENV_PYPI_URL", &url)],
            &["install", "cuda-13.0", "--source", "pypi"],
        );
        victim.untouched(&out, index);
        let t = text(&out);
        assert!(
            t.contains("the link to cuda_toolkit-13.0.2") && t.contains("is not 64 hex digits"),
            "{index}: {t}"
        );
        hint_last(&t);
    }
    assert!(server.hits(".whl").is_empty(), "nothing was fetched");
}

#[test]
fn a_gpuenv_manifest_naming_paths_is_refused_before_anything_is_fetched() {
    let sb = Sandbox::new();
    let victim = Victim::plant(&sb);
    let tarball = rocm_tarball("6.2.4");
    let dir = sb.path("m");
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(dir.join("rocm.tar.xz"), &tarball).unwrap();
    let sha = sha256(&tarball);
    let cases = [
        (
            "sha256",
            format!(
                "url = \"rocm.tar.xz\"\nsha256 = \"{}\"\n",
                Victim::FROM_CACHE
            ),
            "is not 64 hex digits",
        ),
        (
            "component",
            format!("url = \"rocm.tar.xz\"\nsha256 = \"{sha}\"\ncomponent = \"../../x\"\n"),
            "the component `../../x` cannot name a file",
        ),
        (
            "file name",
            format!("url = \"sub/..\"\nsha256 = \"{sha}\"\n"),
            "the file name `..` cannot name a file",
        ),
    ];
    for (what, archive, why) in cases {
        let manifest = dir.join("m.toml");
        write(
            &manifest,
            &format!("kind = \"rocm\"\nversion = \"6.2.4\"\n[[archive]]\n{archive}"),
        );
        let out = gpuenv(
            &sb,
            &[],
            &[
                "install",
                "rocm-6.2.4",
                "--manifest",
                manifest.to_str().unwrap(),
            ],
        );
        victim.untouched(&out, what);
        let t = text(&out);
        assert!(t.contains(why), "{what}: expected {why:?} in\n{t}");
        hint_last(&t);
    }
    assert!(!sb.gpuenv_home().join("downloads/archives").exists());
}

#[test]
fn uninstall_of_a_path_touches_nothing_outside() {
    let sb = Sandbox::new();
    // From toolchains/: up to the sandbox, then into victim/.
    let out = gpuenv(&sb, &[], &["uninstall", "/../../../../../victim/x"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("the toolchain name `/../../../../../victim/x` cannot name a file"),
        "{t}"
    );
    hint_last(&t);
    assert!(!sb.path("victim").exists(), "a lock was created outside");
    assert!(!sb.gpuenv_home().exists(), "GPUENV_HOME was touched");
}
