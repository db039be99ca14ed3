//! The installer against an attacker: a mirror, an index or a manifest that names paths
//! where digests and names belong, archives whose links climb out of the tree together,
//! and two installs whose names share a prefix. Everything hostile is generated here and
//! served from 127.0.0.1 or the sandbox.

use crate::common::archives;
use crate::common::install_fixtures as fixtures;
use crate::common::server;

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;
use archives::*;
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
        let out = install_manifest(&sb, &manifest);
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

/// A manifest of rocm-6.2.4 made of `archives` (items, strip-prefix), written beside it.
fn manifest_of(sb: &Sandbox, tag: &str, archives: &[(Vec<Item>, &str)]) -> PathBuf {
    let dir = sb.path(&format!("m-{tag}"));
    fs_err::create_dir_all(&dir).unwrap();
    let mut toml = String::from("kind = \"rocm\"\nversion = \"6.2.4\"\n");
    for (i, (items, strip)) in archives.iter().enumerate() {
        let bytes = tar_xz(items);
        let name = format!("part{i}.tar.xz");
        fs_err::write(dir.join(&name), &bytes).unwrap();
        toml.push_str(&format!(
            "[[archive]]\nurl = \"{name}\"\nsha256 = \"{}\"\nstrip-prefix = \"{strip}\"\n",
            sha256(&bytes)
        ));
    }
    let path = dir.join("toolchains.toml");
    write(&path, &toml);
    path
}

fn link(at: &str, to: &str) -> Item {
    Item::Symlink(at.into(), to.into())
}

/// Refused with exit 2, nothing registered, nothing written into `outside`.
fn refused_and_nothing_outside(sb: &Sandbox, out: &Output, outside: &Path, why: &str) {
    let t = text(out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains(why), "expected {why:?} in\n{t}");
    hint_last(&t);
    assert_eq!(
        fs_err::read_dir(outside).unwrap().count(),
        0,
        "something was written outside:\n{t}"
    );
    assert!(sb.settings().is_none_or(|s| !s.contains("rocm-6.2.4")));
    assert!(!sb.gpuenv_home().join("toolchains/rocm-6.2.4").exists());
}

#[test]
fn a_chain_of_relative_links_cannot_carry_a_later_archive_outside() {
    // The attack as found: u12 climbs twelve levels, `extra` goes through it to a directory
    // outside, and the second archive of the same install writes into `extra`.
    let sb = Sandbox::new();
    let outside = sb.path("outside");
    fs_err::create_dir_all(&outside).unwrap();
    let from_root = outside.strip_prefix("/").unwrap().to_str().unwrap();
    let mut first = vec![link("pkg/a/up", ".."), link("pkg/a/u1", "up/..")];
    for i in 2..=12 {
        first.push(link(&format!("pkg/a/u{i}"), &format!("u{}/..", i - 1)));
    }
    first.push(link("pkg/extra", &format!("a/u12/{from_root}")));
    let second = vec![
        exe("bin/hipcc", "#!/bin/sh\n"),
        file("pkg/extra/pwned", "pwned"),
    ];
    let m = manifest_of(&sb, "chain", &[(first, ""), (second, "")]);
    let out = install_manifest(&sb, &m);
    refused_and_nothing_outside(
        &sb,
        &out,
        &outside,
        "`pkg/a/u2`: it links outside the archive, to `u1/..` (it climbs above the root through the link `pkg/a/u1`)",
    );
}

#[test]
fn links_harmless_in_each_archive_cannot_combine_to_leave_the_tree() {
    // Alone, `x` stays inside (b/…/.. cancels out) and `b -> .` is harmless; together `x`
    // climbs seven levels from pkg/, to the sandbox, and a third archive writes through it.
    let sb = Sandbox::new();
    let outside = sb.path("outside");
    fs_err::create_dir_all(&outside).unwrap();
    let x = format!("{}{}outside", "b/".repeat(6), "../".repeat(7));
    let archives = [
        (vec![link("pkg/x", &x)], ""),
        (vec![link("pkg/b", ".")], ""),
        (
            vec![
                exe("bin/hipcc", "#!/bin/sh\n"),
                file("pkg/x/pwned", "pwned"),
            ],
            "",
        ),
    ];
    let m = manifest_of(&sb, "combined", &archives);
    let out = install_manifest(&sb, &m);
    refused_and_nothing_outside(
        &sb,
        &out,
        &outside,
        "pkg/x/pwned would be placed at pkg/x/pwned, outside the toolchain (it climbs above the root through the link `pkg/x`)",
    );

    // Without anything written through it, the link itself is refused once assembled.
    let m = manifest_of(&sb, "combined-link", &archives[..2]);
    let out = install_manifest(&sb, &m);
    refused_and_nothing_outside(
        &sb,
        &out,
        &outside,
        "the assembled tree has the link pkg/x -> b/b/b/b/b/b/../../../../../../../outside, which leads outside it",
    );
}

#[test]
fn a_strip_prefix_cannot_turn_an_inside_link_chain_into_an_exit() {
    // Inside its archive `a/u1` is the archive's root; with `rocm/` stripped it is the
    // directory above the toolchain, and the next archive writes there.
    let sb = Sandbox::new();
    let archives = [
        (
            vec![
                exe("rocm/bin/hipcc", "#!/bin/sh\n"),
                link("rocm/a/up", ".."),
                link("rocm/a/u1", "up/.."),
            ],
            "rocm",
        ),
        (vec![file("more/a/u1/pwned", "pwned")], "more"),
    ];
    let m = manifest_of(&sb, "strip", &archives);
    let out = install_manifest(&sb, &m);
    let toolchains = sb.gpuenv_home().join("toolchains");
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("links to up/.., outside the toolchain once placed at a/u1"),
        "{t}"
    );
    hint_last(&t);
    assert!(!toolchains.join("pwned").exists(), "written above the tree");
    assert!(!toolchains.join("rocm-6.2.4").exists());
}

/// Waits for `child` to reach the checkpoint that creates `marker`.
fn wait_for(marker: &Path, child: &mut std::process::Child) {
    let start = std::time::Instant::now();
    while !marker.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("gpuenv ended ({status}) before its checkpoint");
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(120));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn installing_a_toolchain_leaves_the_temp_tree_of_one_whose_name_extends_it_alone() {
    if !cfg!(debug_assertions) {
        cannot_run("the pause checkpoints exist in debug builds only");
        return;
    }
    let sb = Sandbox::new();
    let longer = write_manifest(&sb.path("foo"), "6.2.4");
    let text_of = fs_err::read_to_string(&longer).unwrap();
    write(&longer, &format!("name = \"rocm-6.2.4-foo\"\n{text_of}"));
    let shorter = write_manifest(&sb.path("plain"), "6.2.4");

    // rocm-6.2.4-foo stops with its tree assembled in its temp dir, holding its lock…
    let marker = sb.path("paused");
    let pause = format!("assemble:{}", marker.display());
    let mut foo = spawn(
        &sb,
        &[("GPUENV_TEST_PAUSE_AT", &pause)],
        &[
            "install",
            "rocm-6.2.4-foo",
            "--manifest",
            longer.to_str().unwrap(),
        ],
    );
    wait_for(&marker, &mut foo);
    // …while rocm-6.2.4 is installed from start to end, cleaning up after itself.
    let plain = install_manifest(&sb, &shorter);
    succeeded(&plain);
    fs_err::remove_file(&marker).unwrap();
    succeeded(&foo.wait_with_output().unwrap());

    let toolchains = sb.gpuenv_home().join("toolchains");
    for name in ["rocm-6.2.4", "rocm-6.2.4-foo"] {
        for f in [
            "bin/hipcc",
            ".info/version",
            "lib/libamdhip64.so",
            "include/hip/hip_runtime.h",
        ] {
            assert!(toolchains.join(name).join(f).exists(), "{name} lacks {f}");
        }
    }
    let names: Vec<String> = fs_err::read_dir(&toolchains)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert_eq!(names.len(), 2, "temp trees left: {names:?}");
}

/// The driver stub of a toolkit from wheels takes names from the wheel's cuda.h and nothing
/// else: nothing in it runs, no text of it names a path, an endless name is left out.
#[test]
fn a_hostile_cuda_h_gives_the_driver_stub_names_only() {
    let sb = Sandbox::new();
    let marker = sb.path("ran");
    let endless = format!("cuA{}", "a".repeat(10_000));
    let cuda_h = format!(
        "#define cuX $(touch {m})\n`touch {m}` cuInit(); cuB/../../../etc/passwd\n__CUDA_API_PTSZ(../../x)\n{endless}();\n#include \"/etc/passwd\"\n",
        m = marker.display()
    );
    let server = Server::start();
    serve(&server, "", &pypi_tree_with(&["13.0.2"], &cuda_h));
    let url = server.url("simple/");
    let t = ok(
        &sb,
        &[("GPUENV_PYPI_URL", &url)],
        &[
            "install",
            "cuda-13.0",
            "--source",
            "pypi",
            "--profile",
            "minimal",
        ],
    );
    let stub = sb
        .gpuenv_home()
        .join("toolchains/cuda-13.0.2/lib64/stubs/libcuda.so");
    let bytes = fs_err::read(&stub).unwrap_or_else(|e| panic!("{e}\n{t}"));
    let has = |s: &str| bytes.windows(s.len()).any(|w| w == s.as_bytes());
    assert!(has("cuInit") && has("cuX") && has("cuB"), "{t}");
    assert!(!has("../") && !has("passwd") && !has("touch") && !has(&endless));
    assert!(!marker.exists(), "something in cuda.h ran");
}

/// The record `gpuenv uninstall` keeps is read as data from gpuenv's own directory: a
/// garbled one, or a link put in its place, is not used, and the reinstall takes the
/// default profile instead of failing.
#[test]
fn a_garbled_or_linked_kept_record_is_ignored_by_the_reinstall() {
    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    let sb = Sandbox::new();
    ok(&sb, &vars, NVIDIA_12_4_1_MINIMAL);
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    let kept = sb
        .gpuenv_home()
        .join("toolchains/.cuda-12.4.1.uninstalled.toml");
    let elsewhere = sb.path("record-elsewhere.toml");
    fs_err::rename(&kept, &elsewhere).unwrap();

    let garbled: &[u8] = b"profile = \"minimal\nsource = [\xff\xfe";
    for plant in ["garbled", "link"] {
        match plant {
            "garbled" => fs_err::write(&kept, garbled).unwrap(),
            _ => std::os::unix::fs::symlink(&elsewhere, &kept).unwrap(),
        }
        let t = ok(
            &sb,
            &vars,
            &["install", "cuda-12.4.1", "--source", "nvidia"],
        );
        assert!(!t.contains("had when it was uninstalled"), "{plant}: {t}");
        ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
        // The uninstall kept a real record again; the next case plants over it.
        let _ = fs_err::remove_file(&kept);
    }
}
