//! Uninstalling an installed toolchain (its tree, view and shims; the pins it leaves
//! behind, with a command that puts it back and works when pasted: from its manifest for
//! one from a manifest), unlinking a linked one (the same), and installing it again offline
//! from the download cache. Network only to 127.0.0.1.

use crate::common::install_fixtures as fixtures;
use crate::common::server;

use crate::common::*;
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

/// The command between the backticks of the warning that ends in "puts it back".
fn puts_back(t: &str) -> String {
    let line = t
        .lines()
        .find(|l| l.ends_with("puts it back"))
        .unwrap_or_else(|| panic!("no \"puts it back\" in\n{t}"));
    let start = line.find('`').unwrap() + 1;
    let end = start + line[start..].find('`').unwrap();
    line[start..end].to_string()
}

/// Runs `command` as a shell reads it (the way a user pastes a hint), with this sandbox's
/// gpuenv first on PATH, from `dir`.
fn follow(sb: &Sandbox, dir: &std::path::Path, command: &str) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("gpuenv");
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        bin.parent().unwrap().display()
    );
    std::process::Command::new("sh")
        .args(["-c", command])
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", path)
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn uninstall_of_a_toolkit_from_a_manifest_names_that_manifest_to_put_it_back() {
    let sb = Sandbox::new();
    // A manifest in a directory whose name a shell would split.
    let manifest = write_manifest(&sb.path("site manifests"), "6.2.4");
    let proj = sb.project("proj", "[toolchain]\nrocm = \"6.2\"\n");
    // Given relative to the project: the hint names it so it works from anywhere.
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args([
            "install",
            "rocm-6.2",
            "--manifest",
            "../site manifests/toolchains.toml",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    let from_manifest = format!("--manifest '{}'", manifest.display());

    // Components are not added to it; the hint names its manifest the same way.
    let out = gpuenv(&sb, &[], &["install", "rocm-6.2.4", "--component", "x"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("came from a gpuenv manifest"), "{t}");
    assert!(
        t.contains(&format!("`gpuenv install rocm-6.2.4 {from_manifest}`")),
        "{t}"
    );

    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["uninstall", "rocm-6.2.4"])
        .output()
        .unwrap();
    let t = text(&out);
    succeeded(&out);
    let again = puts_back(&t);
    assert_eq!(
        again,
        format!("gpuenv install rocm-6.2.4 {from_manifest}"),
        "{t}"
    );
    assert!(
        t.contains("gpuenv.toml:2:8 pins rocm-6.2, which now selects nothing"),
        "{t}"
    );

    // The hint is one that can be followed, from elsewhere too.
    let out = follow(&sb, &sb.home(), &again);
    assert!(
        text(&out).contains("installed rocm-6.2.4"),
        "{}",
        text(&out)
    );
    assert!(sb
        .gpuenv_home()
        .join("toolchains/rocm-6.2.4/bin/hipcc")
        .is_file());
}

#[test]
fn unlink_names_the_pins_left_and_the_link_that_puts_it_back() {
    let sb = Sandbox::new();
    let tree = cuda_runfile(&sb.path("opt/cuda 11.8"), "11.8.89");
    ok(&sb, &[], &["link", "cuda-11.8", tree.to_str().unwrap()]);
    let proj = sb.project("proj", "[toolchain]\ncuda = \"11.8\"\n");

    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["unlink", "cuda-11.8"])
        .output()
        .unwrap();
    let t = text(&out);
    succeeded(&out);
    assert!(
        t.contains("gpuenv.toml:2:8 pins cuda-11.8, which now selects nothing"),
        "{t}"
    );
    let again = puts_back(&t);
    assert_eq!(
        again,
        format!("gpuenv link cuda-11.8 '{}'", tree.display()),
        "{t}"
    );
    let out = follow(&sb, &proj, &again);
    assert!(out.status.success(), "{}", text(&out));
    let out = sb.gpuenv().current_dir(&proj).arg("show").output().unwrap();
    assert!(text(&out).contains("cuda: cuda-11.8"), "{}", text(&out));
}
