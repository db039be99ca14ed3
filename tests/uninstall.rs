//! Uninstalling an installed toolchain (its tree, view and shims; the pins it leaves
//! behind), and installing it again offline from the download cache. Network only to
//! 127.0.0.1.

#[path = "common/archives.rs"]
mod archives;
mod common;
#[path = "common/install_fixtures.rs"]
mod fixtures;
#[path = "common/server.rs"]
mod server;

use common::*;
use fixtures::*;
use server::Server;

#[test]
fn uninstall_removes_tree_view_and_shims_and_names_the_pins_left() {
    let sb = Sandbox::new();
    let dir = sb.path("mirror");
    write_tree(&dir, &redist_tree(&["12.4.1"]));
    let mirror = dir.display().to_string();
    ok(
        &sb,
        &[("GPUENV_CUDA_MIRROR", &mirror)],
        &["install", "cuda-12.4.1", "--profile", "minimal"],
    );
    ok(&sb, &[], &["default", "cuda-12.4"]);
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );

    // unlink is for linked toolchains.
    let out = gpuenv(&sb, &[], &["unlink", "cuda-12.4.1"]);
    assert!(
        text(&out).contains("gpuenv uninstall cuda-12.4.1"),
        "{}",
        text(&out)
    );

    let out = sb
        .gpuenv()
        .current_dir(sb.path("proj"))
        .args(["uninstall", "cuda-12.4.1"])
        .output()
        .unwrap();
    succeeded(&out);
    let t = text(&out);
    assert!(t.contains("uninstalled cuda-12.4.1"), "{t}");
    assert!(
        t.contains("gpuenv.toml:2:8 pins cuda-12.4, which now selects nothing; `gpuenv install cuda-12.4.1` puts it back"),
        "{t}"
    );
    assert!(t.contains("the default cuda-12.4 no longer matches"), "{t}");
    let home = sb.gpuenv_home();
    assert!(!home.join("toolchains/cuda-12.4.1").exists());
    assert!(!home.join("views/cuda-12.4.1").exists());
    assert!(!home.join("shims/nvcc").exists());
    assert!(!sb.settings().unwrap().contains("cuda-12.4.1"));

    // Linked toolchains are not gpuenv's to remove.
    let linked = cuda_runfile(&sb.path("opt/cuda-11.8"), "11.8.89");
    ok(&sb, &[], &["link", "cuda-11.8", linked.to_str().unwrap()]);
    let out = gpuenv(&sb, &[], &["uninstall", "cuda-11.8"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("hint: `gpuenv unlink cuda-11.8`"),
        "{}",
        text(&out)
    );
    assert!(linked.join("bin/nvcc").exists());
    let out = gpuenv(&sb, &[], &["uninstall", "cuda-9.9"]);
    assert!(
        text(&out).contains("no toolchain named cuda-9.9"),
        "{}",
        text(&out)
    );
}

#[test]
fn offline_installs_from_the_cache_only() {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1"]));
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    let out = gpuenv(
        &sb,
        &vars,
        &["install", "cuda-12.4", "--offline", "--profile", "minimal"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("not in the download cache"),
        "{}",
        text(&out)
    );
    assert!(server.log().is_empty(), "offline touched the network");

    ok(
        &sb,
        &vars,
        &["install", "cuda-12.4", "--profile", "minimal"],
    );
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    let before = server.log().len();
    let out = ok(
        &sb,
        &vars,
        &["install", "cuda-12.4", "--offline", "--profile", "minimal"],
    );
    assert!(out.contains("installed cuda-12.4.1"), "{out}");
    assert_eq!(server.log().len(), before, "offline touched the network");
    check_runfile_layout(&sb.gpuenv_home().join("toolchains/cuda-12.4.1"));
}
