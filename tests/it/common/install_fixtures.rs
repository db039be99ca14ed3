//! Install tests' helpers: gpuenv run with extra variables, fake releases served on
//! 127.0.0.1 (the trees themselves are in release_trees.rs), and checks of what an install
//! left behind.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

use crate::common::archives::sha256;
use crate::common::server::Server;
use crate::common::{succeeded, system_path, write, Sandbox};

#[path = "release_trees.rs"]
mod release_trees;
pub use release_trees::*;

/// stdout and stderr of a run, for messages and assertions.
pub fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// Runs gpuenv with extra variables; returns the output.
pub fn gpuenv(sb: &Sandbox, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = sb.gpuenv();
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.args(args).output().unwrap()
}

/// `gpuenv` with `vars`, which must succeed; what it printed (stdout, then stderr).
#[track_caller]
pub fn ok(sb: &Sandbox, vars: &[(&str, &str)], args: &[&str]) -> String {
    let out = gpuenv(sb, vars, args);
    assert!(
        out.status.success(),
        "gpuenv {args:?} failed:\n{}",
        text(&out)
    );
    text(&out)
}

/// The same command as `Sandbox::gpuenv`, started in the background.
pub fn spawn(sb: &Sandbox, vars: &[(&str, &str)], args: &[&str]) -> Child {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpuenv"));
    cmd.env_clear()
        .env("HOME", sb.home())
        .env("PATH", system_path())
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .current_dir(sb.dir.path())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Asserts that a failure's message ends with its hint.
pub fn hint_last(t: &str) {
    assert!(
        t.trim_end().lines().last().unwrap().starts_with("hint:"),
        "the hint comes last:\n{t}"
    );
}

/// `gpuenv install cuda-12.4` from NVIDIA's redist, the smallest profile.
pub const NVIDIA_MINIMAL: &[&str] = &[
    "install",
    "cuda-12.4",
    "--source",
    "nvidia",
    "--profile",
    "minimal",
];

/// `gpuenv install cuda-12.4.1 --source nvidia --profile minimal`: the smallest build of the
/// release [`redist_mirror`] serves.
pub const NVIDIA_12_4_1_MINIMAL: &[&str] = &[
    "install",
    "cuda-12.4.1",
    "--source",
    "nvidia",
    "--profile",
    "minimal",
];

/// NVIDIA's redist tree of `releases` served on 127.0.0.1, and its URL (for
/// `GPUENV_CUDA_MIRROR`).
pub fn redist_mirror(releases: &[&str]) -> (Server, String) {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(releases));
    let url = server.url("redist/");
    (server, url)
}

/// Makes `sb`'s directory a project that pins `cuda`.
pub fn pin_cuda(sb: &Sandbox, cuda: &str) {
    write(
        &sb.path("gpuenv.toml"),
        &format!("[toolchain]\ncuda = \"{cuda}\"\n"),
    );
}

/// A project pinned to CUDA 12.4 and locked after `gpuenv <install>` from `mirror`.
pub fn locked_project(mirror: &str, install: &[&str]) -> Sandbox {
    let sb = Sandbox::new();
    ok(&sb, &[("GPUENV_CUDA_MIRROR", mirror)], install);
    pin_cuda(&sb, "12.4");
    ok(&sb, &[], &["lock"]);
    sb
}

/// A clone of a locked project on a fresh home: pinned to CUDA 12.4, with `lock` as its
/// gpuenv.lock.
pub fn clone_with_lock(lock: &str) -> Sandbox {
    let sb = Sandbox::new();
    pin_cuda(&sb, "12.4");
    write(&sb.path("gpuenv.lock"), lock);
    sb
}

/// A manifest in `<sandbox>/m` whose archive is a ROCm tarball cut at 60 %: its sha256
/// (returned with the manifest's path) matches, yet it does not decompress.
pub fn truncated_rocm_manifest(sb: &Sandbox) -> (PathBuf, String) {
    let good = rocm_tarball("6.2.4");
    let cut = &good[..good.len() * 6 / 10];
    let dir = sb.path("m");
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(dir.join("rocm-6.2.4.tar.xz"), cut).unwrap();
    let manifest = dir.join("m.toml");
    write(
        &manifest,
        &manifest_toml("6.2.4", "rocm-6.2.4.tar.xz", &sha256(cut)),
    );
    (manifest, sha256(cut))
}

/// `gpuenv install rocm-6.2.4 --manifest <manifest>`.
pub fn install_manifest(sb: &Sandbox, manifest: &Path) -> Output {
    gpuenv(
        sb,
        &[],
        &[
            "install",
            "rocm-6.2.4",
            "--manifest",
            manifest.to_str().unwrap(),
        ],
    )
}

/// The view's nvcc (the proxy) run as a build would.
pub fn view_nvcc_version(sb: &Sandbox, name: &str) -> String {
    let nvcc = sb.gpuenv_home().join(format!("views/{name}/bin/nvcc"));
    assert_eq!(
        fs_err::read_link(&nvcc).unwrap(),
        sb.gpuenv_home().join("bin/gpuenv-shim"),
        "the view's nvcc is the proxy"
    );
    let out = std::process::Command::new(nvcc)
        .arg("--version")
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    succeeded(&out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An installed CUDA has the runfile layout: `include` and `lib64` link into
/// `targets/<arch>-linux`, the tools are there, read-only and executable by everyone.
pub fn check_runfile_layout(root: &Path) {
    let t = if std::env::consts::ARCH == "aarch64" {
        "sbsa"
    } else {
        std::env::consts::ARCH
    };
    let target = format!("targets/{t}-linux");
    assert_eq!(
        fs_err::read_link(root.join("include")).unwrap(),
        Path::new(&format!("{target}/include"))
    );
    assert_eq!(
        fs_err::read_link(root.join("lib64")).unwrap(),
        Path::new(&format!("{target}/lib"))
    );
    for f in [
        "bin/nvcc",
        "bin/ptxas",
        "nvvm/bin/cicc",
        "include/cuda_runtime.h",
        "include/crt/host_config.h",
        "lib64/libcudart.so",
    ] {
        assert!(root.join(f).exists(), "{} lacks {f}", root.display());
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = fs_err::metadata(root.join("bin/nvcc"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o555,
        "tools are executable by everyone and writable by no one"
    );
}

pub fn serve(server: &Server, prefix: &str, tree: &Tree) {
    for (path, body, ct) in tree {
        server.put(&format!("{prefix}{path}"), body.clone(), ct);
    }
}

pub fn write_tree(dir: &Path, tree: &Tree) {
    // Index pages are the server's; a directory lists itself.
    for (path, body, _) in tree
        .iter()
        .filter(|(p, _, _)| !p.is_empty() && !p.ends_with('/'))
    {
        let p = dir.join(path);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, body).unwrap();
    }
}
