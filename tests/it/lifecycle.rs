//! The lifecycle commands rustup and mise users reach for, against a local server: install
//! what the project pins, install on first use (GPUENV_AUTO_INSTALL), update/outdated, the
//! download cache, and an install that cannot finish refusing before it downloads.

use crate::common::install_fixtures as fixtures;
use crate::common::server;

use std::process::{Command, Output};

use crate::common::*;
use fixtures::*;
use server::Server;

/// A redist mirror with 12.4.0, 12.4.1 and 13.0.2.
fn mirror() -> (Server, String) {
    let server = Server::start();
    serve(
        &server,
        "redist/",
        &redist_tree(&["12.4.0", "12.4.1", "13.0.2"]),
    );
    let url = server.url("redist/");
    (server, url)
}

/// Runs a program (a shim, a copied gpuenv) the way a shell in `dir` would.
fn exec(
    sb: &Sandbox,
    program: &std::path::Path,
    dir: &str,
    vars: &[(&str, &str)],
    args: &[&str],
) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(sb.path(dir))
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .envs(vars.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn install_without_the_proxy_beside_gpuenv_fails_before_downloading_anything() {
    let (server, url) = mirror();
    let sb = Sandbox::new();
    // `cargo install` of the CLI alone: gpuenv without gpuenv-shim beside it.
    let lonely = sb.path("bin/gpuenv");
    fs_err::create_dir_all(lonely.parent().unwrap()).unwrap();
    fs_err::copy(assert_cmd::cargo::cargo_bin("gpuenv"), &lonely).unwrap();
    let out = exec(
        &sb,
        &lonely,
        ".",
        &[("GPUENV_CUDA_MIRROR", &url)],
        &["install", "cuda-12.4"],
    );
    assert_eq!(out.status.code(), Some(2));
    let t = text(&out);
    assert!(
        t.contains("the gpuenv proxy") && t.contains("is missing"),
        "{t}"
    );
    assert!(t.contains("hint:"), "{t}");
    assert!(
        server.log().is_empty(),
        "it asked the mirror: {:?}",
        server.log()
    );
    assert!(!sb.gpuenv_home().join("downloads").exists());
    assert!(!sb.gpuenv_home().join("toolchains").exists());
}

#[test]
fn install_with_no_spec_installs_what_the_project_pins_once() {
    let (server, url) = mirror();
    let sb = Sandbox::new();
    let vars = [("GPUENV_CUDA_MIRROR", url.as_str())];
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    let mut cmd = sb.gpuenv();
    let out = cmd
        .current_dir(sb.path("proj"))
        .env("GPUENV_CUDA_MIRROR", &url)
        .args(["install", "--profile", "minimal"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("installed cuda-12.4.1"), "{t}");
    // Said once: the cache keeps archives and unpacked trees.
    assert!(
        t.contains("keeps each archive and its unpacked tree"),
        "{t}"
    );

    // Again: satisfied, nothing fetched.
    let hits = server.log().len();
    let out = sb
        .gpuenv()
        .current_dir(sb.path("proj"))
        .env("GPUENV_CUDA_MIRROR", &url)
        .arg("install")
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("gpuenv.toml:2:8: cuda-12.4 is satisfied by cuda-12.4.1"),
        "{t}"
    );
    assert_eq!(server.log().len(), hits);

    // `cuda = "torch"`: the version the active Python's torch was built for.
    let site = torch_package(
        &sb.path("venv/lib/python3.11/site-packages"),
        "2.5.1+cu124",
        Some("12.4"),
        None,
    );
    assert!(site.is_dir());
    write(
        &sb.path("torchproj/gpuenv.toml"),
        "[toolchain]\ncuda = \"torch\"\n",
    );
    let out = sb
        .gpuenv()
        .current_dir(sb.path("torchproj"))
        .env("VIRTUAL_ENV", sb.path("venv"))
        .arg("install")
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("cuda-12.4 is satisfied by cuda-12.4.1"), "{t}");

    // A spec naming the installed release: "already installed", never "installing … GiB".
    let t = ok(
        &sb,
        &vars,
        &["install", "cuda-12.4", "--profile", "minimal"],
    );
    assert!(t.contains("cuda-12.4.1 is already installed"), "{t}");
    assert!(!t.contains("installing"), "{t}");

    // Another install: the cache note is not repeated.
    let t = ok(
        &sb,
        &vars,
        &["install", "cuda-13.0", "--profile", "minimal"],
    );
    assert!(t.contains("installed cuda-13.0.2"), "{t}");
    assert!(!t.contains("keeps each archive"), "{t}");

    // Nowhere near a project, and no spec: say what to do.
    let out = gpuenv(&sb, &vars, &["install"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("nothing to install: no SPEC given and no gpuenv.toml"),
        "{}",
        text(&out)
    );
}

#[test]
fn auto_install_puts_a_missing_pinned_toolkit_in_place_on_first_use() {
    let (_server, url) = mirror();
    let sb = Sandbox::new();
    ok(
        &sb,
        &[("GPUENV_CUDA_MIRROR", &url)],
        &["install", "cuda-12.4", "--profile", "minimal"],
    );
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"13.0\"\n",
    );
    // The user's own project: trusted, so an automatic install may act on its pins.
    ok(
        &sb,
        &[],
        &["trust", sb.path("proj/gpuenv.toml").to_str().unwrap()],
    );
    let nvcc = sb.gpuenv_home().join("shims/nvcc");

    // Without it: the usual error.
    let out = exec(
        &sb,
        &nvcc,
        "proj",
        &[("GPUENV_CUDA_MIRROR", &url)],
        &["--version"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("cuda-13.0 is not installed"),
        "{}",
        text(&out)
    );

    // With it, the shim runs `gpuenv install` (found beside the proxy: no gpuenv on PATH)
    // and then the tool; the installer's output goes to stderr, the tool's stays on stdout.
    let vars = [
        ("GPUENV_CUDA_MIRROR", url.as_str()),
        ("GPUENV_AUTO_INSTALL", "1"),
    ];
    let out = exec(&sb, &nvcc, "proj", &vars, &["--version"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("release 13.0"), "{stdout}");
    assert!(!stdout.contains("install"), "{stdout}");
    assert!(
        stderr.contains("cuda-13.0 is not installed (the pin at ")
            && stderr.contains("installing it now because GPUENV_AUTO_INSTALL is set"),
        "{stderr}"
    );
    assert!(stderr.contains("installed cuda-13.0.2"), "{stderr}");

    // The shell hook does the same at the prompt, and prints only shell code on stdout.
    write(
        &sb.path("proj2/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4.0\"\n",
    );
    ok(
        &sb,
        &[],
        &["trust", sb.path("proj2/gpuenv.toml").to_str().unwrap()],
    );
    let out = sb
        .gpuenv()
        .current_dir(sb.path("proj2"))
        .envs(vars)
        .args(["hook-env", "--shell", "bash"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("installing it now because GPUENV_AUTO_INSTALL is set"),
        "{stderr}"
    );
    let view = sb.gpuenv_home().join("views/cuda-12.4.0");
    assert!(
        stdout.contains(&format!("export CUDA_HOME='{}'", view.display())),
        "{stdout}"
    );
    assert!(!stdout.contains("info:"), "{stdout}");

    // A pin the mirror has no release for: the shim says the install failed, then the fix.
    write(
        &sb.path("proj3/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.9\"\n",
    );
    ok(
        &sb,
        &[],
        &["trust", sb.path("proj3/gpuenv.toml").to_str().unwrap()],
    );
    let out = exec(&sb, &nvcc, "proj3", &vars, &["--version"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("\nerror: `gpuenv install cuda-12.9` failed (exit status: 2)\n"),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("\nhint: run it yourself to see why, or unset GPUENV_AUTO_INSTALL\n"),
        "{stderr}"
    );

    // A pin no source of `gpuenv install` has (CUDA 10.2) is not attempted: the error
    // says what can get it.
    write(
        &sb.path("proj4/gpuenv.toml"),
        "[toolchain]\ncuda = \"10.2\"\n",
    );
    ok(
        &sb,
        &[],
        &["trust", sb.path("proj4/gpuenv.toml").to_str().unwrap()],
    );
    let out = exec(&sb, &nvcc, "proj4", &vars, &["--version"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("installing it now"), "{stderr}");
    assert!(
        stderr.contains("error: cuda-10.2 is not installed")
            && stderr.contains("hint: no source of `gpuenv install` has CUDA 10.2")
            && stderr.contains("`gpuenv link cuda-10.2 <path>`"),
        "{stderr}"
    );
}

#[test]
fn outdated_and_update_move_to_the_newest_patch_release_and_repoint_the_default() {
    let (_server, url) = mirror();
    let sb = Sandbox::new();
    let vars = [("GPUENV_CUDA_MIRROR", url.as_str())];
    ok(
        &sb,
        &vars,
        &["install", "cuda-12.4.0", "--profile", "minimal"],
    );
    ok(&sb, &vars, &["default", "cuda-12.4.0"]);

    let out = gpuenv(&sb, &vars, &["outdated"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(stdout, "cuda-12.4.0  12.4.0 -> 12.4.1  (nvidia)\n");
    let json: serde_json::Value =
        serde_json::from_slice(&gpuenv(&sb, &vars, &["outdated", "--json"]).stdout).unwrap();
    assert_eq!(json[0]["newer"], "12.4.1");

    let t = ok(&sb, &vars, &["update"]);
    assert!(
        t.contains("updating cuda-12.4.0 to cuda-12.4.1 (from nvidia)"),
        "{t}"
    );
    assert!(
        t.contains("the default is now cuda-12.4.1 (was cuda-12.4.0)"),
        "{t}"
    );
    let settings = sb.settings().unwrap();
    assert!(settings.contains("\"cuda-12.4.1\""), "{settings}");
    let list = ok(&sb, &[], &["list"]);
    assert!(
        list.contains("cuda-12.4.1") && !list.contains("cuda-12.4.0"),
        "{list}"
    );
    // The same components as before: minimal has no cuBLAS.
    let root = sb.gpuenv_home().join("toolchains/cuda-12.4.1");
    assert!(root.join("bin/nvcc").is_file());
    assert!(!root.join("include/cublas.h").exists());

    let t = ok(&sb, &vars, &["outdated"]);
    assert!(
        t.contains("every installed toolkit is on the newest patch release"),
        "{t}"
    );
}

#[test]
fn auto_says_why_it_falls_back_from_nvidia_to_pypi() {
    let server = Server::start();
    serve(&server, "", &pypi_tree());
    let sb = Sandbox::new();
    let index = server.url("simple/");
    // Nothing listens on the discard port: NVIDIA's host is "unreachable".
    let vars = [
        ("GPUENV_CUDA_MIRROR", "http://127.0.0.1:9/redist/"),
        ("GPUENV_PYPI_URL", index.as_str()),
    ];
    let t = ok(
        &sb,
        &vars,
        &["install", "cuda-13.0", "--profile", "minimal"],
    );
    let warned = t
        .find("info: the nvidia source cannot install cuda-13.0 (")
        .unwrap_or_else(|| panic!("{t}"));
    let installing = t
        .find("installing cuda-13.0.2 from pypi")
        .unwrap_or_else(|| panic!("{t}"));
    assert!(warned < installing, "{t}");
    assert!(
        t.contains("127.0.0.1:9") && t.contains("; trying pypi"),
        "{t}"
    );
    // One line about the unreachable host, not one per retry; none with -q.
    assert_eq!(
        t.lines().filter(|l| l.contains("127.0.0.1:9")).count(),
        1,
        "{t}"
    );
    let sb = Sandbox::new();
    let t = ok(
        &sb,
        &vars,
        &["-q", "install", "cuda-13.0", "--profile", "minimal"],
    );
    assert!(!t.contains("127.0.0.1:9"), "{t}");
}

#[test]
fn ctrl_c_stops_an_install_the_shell_hook_started() {
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    let server = Server::start();
    let tree = redist_tree(&["12.4.1"]);
    serve(&server, "redist/", &tree);
    for (p, _, _) in tree.iter().filter(|(p, _, _)| p.ends_with(".tar.xz")) {
        server.slow(&format!("redist/{p}"), Duration::from_secs(60));
    }
    let sb = Sandbox::new();
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    sb.ok(&["trust", sb.path("proj/gpuenv.toml").to_str().unwrap()]);
    // The bash and zsh hooks run hook-env with SIGINT ignored (`trap -- '' SIGINT`), and a
    // terminal sends Ctrl-C to the whole foreground process group.
    let gpuenv = proxy_bin().with_file_name("gpuenv");
    let child = Command::new("sh")
        .args(["-c", "trap '' INT; exec \"$0\" hook-env --shell bash"])
        .arg(&gpuenv)
        .current_dir(sb.path("proj"))
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("GPUENV_CUDA_MIRROR", server.url("redist/"))
        .env("GPUENV_AUTO_INSTALL", "1")
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiting = Instant::now();
    while server.hits(".tar.xz").is_empty() {
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "the download never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Signal the child's own group through killpg(2), never through the `kill` command:
    // procps-ng 4.0's `kill -INT -<pgid>` sends to every process of the user.
    let pgid = child.id() as libc::pid_t;
    assert!(
        pgid > 1 && unsafe { libc::getpgid(pgid) } == pgid,
        "the child leads its own group"
    );
    assert_eq!(unsafe { libc::killpg(pgid, libc::SIGINT) }, 0);
    let stopped = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        stopped.elapsed() < Duration::from_secs(20),
        "Ctrl-C did not stop the install"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`gpuenv install cuda-12.4` failed"),
        "{stderr}"
    );
    // The hook itself survives and keeps the shell as it was.
    assert!(out.status.success(), "{stderr}");
    assert!(!sb.gpuenv_home().join("toolchains/cuda-12.4.1").exists());
}

#[test]
fn auto_install_with_no_gpuenv_to_install_with_says_how_to_provide_one() {
    let sb = Sandbox::new();
    let cuda = sb.path("cuda-12.4");
    nvcc_stub(&cuda, "12.4.131");
    sb.ok(&["link", "cuda-12.4", cuda.to_str().unwrap()]);
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"13.0\"\n",
    );
    sb.ok(&["trust", sb.path("proj/gpuenv.toml").to_str().unwrap()]);
    // A proxy left without its gpuenv (a home copied to another machine), and none on PATH.
    let bin = sb.gpuenv_home().join("bin");
    fs_err::remove_file(bin.join("gpuenv")).unwrap();
    let nvcc = sb.gpuenv_home().join("shims/nvcc");
    let out = exec(
        &sb,
        &nvcc,
        "proj",
        &[("GPUENV_AUTO_INSTALL", "1")],
        &["--version"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let pin = sb.path("proj/gpuenv.toml");
    assert_eq!(
        stderr,
        format!(
            "error: cuda-13.0 is not installed (the pin at {}:2:8 asks for it), and GPUENV_AUTO_INSTALL found no gpuenv to install it with: none in {} or on PATH\n\
             hint: put gpuenv on PATH, or link it beside the proxy as {}\n\
             hint: or install it yourself: `gpuenv install cuda-13.0`\n",
            pin.display(),
            bin.display(),
            bin.join("gpuenv").display()
        )
    );
}

/// Ctrl-C during `gpuenv install` says what it left: nothing installed, and running the
/// same command again resumes; the status is a shell's for SIGINT.
#[test]
fn ctrl_c_during_an_install_says_nothing_was_installed_and_how_to_resume() {
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    let server = Server::start();
    let tree = redist_tree(&["12.4.1"]);
    serve(&server, "redist/", &tree);
    for (p, _, _) in tree.iter().filter(|(p, _, _)| p.ends_with(".tar.xz")) {
        server.slow(&format!("redist/{p}"), Duration::from_secs(60));
    }
    let sb = Sandbox::new();
    let child = Command::new(proxy_bin().with_file_name("gpuenv"))
        .args(["install", "cuda-12.4", "--source", "nvidia"])
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("GPUENV_CUDA_MIRROR", server.url("redist/"))
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiting = Instant::now();
    while server.hits(".tar.xz").is_empty() {
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "the download never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pgid = child.id() as libc::pid_t;
    assert!(pgid > 1 && unsafe { libc::getpgid(pgid) } == pgid);
    assert_eq!(unsafe { libc::killpg(pgid, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("gpuenv: interrupted; nothing installed; run it again to resume"),
        "{stderr}"
    );
    assert!(!sb.gpuenv_home().join("toolchains/cuda-12.4.1").exists());
}
