//! The wheel: built from this checkout by scripts/build-wheel.sh (maturin `bin` bindings),
//! installed into a fresh venv with pip, it holds both binaries; `gpuenv` finds its proxy
//! beside it, a real CUDA 13 nvcc runs through the shims, the proxy in `$GPUENV_HOME/bin`
//! outlives the venv, and an upgraded wheel's proxy replaces it. Its metadata is complete and
//! `twine check --strict` passes.

use crate::common;
use crate::common::wheel;

use std::io::Read as _;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::common::real::real_cuda13;
use crate::common::*;
use wheel::*;

fn member(wheel: &Path, name: &str) -> Option<String> {
    let mut zip = zip::ZipArchive::new(fs_err::File::open(wheel).unwrap()).unwrap();
    let mut f = zip.by_name(name).ok()?;
    let mut text = String::new();
    f.read_to_string(&mut text).unwrap();
    Some(text)
}

/// `prog` run in the sandbox's home with PATH = `bin`:/usr/bin:/bin.
fn in_home(sb: &Sandbox, bin: &Path, prog: &Path, args: &[&str]) -> std::process::Output {
    Command::new(prog)
        .args(args)
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .current_dir(sb.home())
        .output()
        .unwrap()
}

#[test]
fn the_wheel_holds_both_binaries_and_complete_metadata_and_passes_twine() {
    let (Some(wheel), Some(tools)) = (wheel(), py_tools()) else {
        return;
    };
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert!(name.starts_with(&format!("gpuenv-{version}-")), "{name}");
    let data = format!("gpuenv-{version}.data/scripts");
    for bin in ["gpuenv", "gpuenv-shim"] {
        let mut zip = zip::ZipArchive::new(fs_err::File::open(&wheel).unwrap()).unwrap();
        let f = zip.by_name(&format!("{data}/{bin}")).unwrap();
        assert!(f.unix_mode().unwrap() & 0o111 != 0, "{bin} is executable");
    }
    let meta = member(&wheel, &format!("gpuenv-{version}.dist-info/METADATA")).unwrap();
    for want in [
        "Name: gpuenv\n".to_string(),
        format!("Version: {version}\n"),
        "MIT OR Apache-2.0".into(),
        "Summary: rustup for GPU stacks".into(),
        "Project-URL: Repository, https://".into(),
        "Description-Content-Type: text/markdown".into(),
    ] {
        assert!(meta.contains(&want), "no {want:?} in METADATA:\n{meta}");
    }
    let sdist = sdist(&wheel).expect("an sdist beside the wheel");
    run(Command::new(tools.join("bin/twine"))
        .args(["check", "--strict"])
        .arg(&wheel)
        .arg(&sdist));
}

#[test]
fn installed_from_the_wheel_gpuenv_finds_its_proxy_and_the_proxy_outlives_the_venv() {
    let Some(wheel) = wheel() else { return };
    let Some(cuda) = real_cuda13() else { return };
    let sb = Sandbox::new();
    let venv = sb.path("venv");
    venv_with_wheel(&venv, &wheel);
    let bin = venv.join("bin");
    assert!(
        bin.join("gpuenv-shim").is_file(),
        "the proxy sits beside gpuenv"
    );
    let gpuenv = |bin: &Path, args: &[&str]| {
        let out = in_home(&sb, bin, &bin.join("gpuenv"), args);
        succeeded(&out)
    };
    assert!(gpuenv(&bin, &["--version"]).contains(env!("CARGO_PKG_VERSION")));
    gpuenv(&bin, &["link", "cuda-13.0", cuda.to_str().unwrap()]);
    gpuenv(&bin, &["default", "cuda-13.0"]);
    let info = gpuenv(&bin, &["self", "info"]);
    assert!(info.contains("as a wheel by pip"), "{info}");
    assert!(info.contains("-m pip install --upgrade gpuenv"), "{info}");
    let update = gpuenv(&bin, &["self", "update"]);
    assert!(
        update.starts_with(&format!(
            "{} -m pip install --upgrade gpuenv",
            bin.join("python").display()
        )),
        "`self update` says pip's command for this venv: {update}"
    );

    let shims = sb.gpuenv_home().join("shims");
    let nvcc = |why: &str| {
        let out = in_home(&sb, &shims, &shims.join("nvcc"), &["--version"]);
        let text = succeeded(&out);
        assert!(text.contains("release 13.0"), "{why}: {text}");
    };
    nvcc("through the shim");

    // The venv moves away: the proxy in the home is its own file, and still runs.
    let moved = sb.path("venv-moved");
    fs_err::rename(&venv, &moved).unwrap();
    nvcc("after the venv moved");

    // An upgrade (a new venv with a freshly installed wheel): its first command replaces the
    // home's proxy with its own.
    let venv2 = sb.path("venv2");
    venv_with_wheel(&venv2, &wheel);
    let bin2 = venv2.join("bin");
    std::thread::sleep(std::time::Duration::from_millis(20));
    gpuenv(&bin2, &["list"]);
    let (home_proxy, new) = (
        fs_err::metadata(sb.gpuenv_home().join("bin/gpuenv-shim")).unwrap(),
        fs_err::metadata(bin2.join("gpuenv-shim")).unwrap(),
    );
    assert!(
        (home_proxy.ino() == new.ino() && home_proxy.dev() == new.dev())
            || home_proxy.mtime() == new.mtime(),
        "the home's proxy is the upgraded one"
    );
    nvcc("after the upgrade");
}

/// `uv tool install .` and `pipx install .` in the clone: both build the wheel through
/// maturin and put both binaries in the tool's environment, linked from its bin dir; `gpuenv
/// self info` tells which. maturin builds with the tests' profile in the test cache's target
/// directory (`MATURIN_PEP517_ARGS`, `CARGO_TARGET_DIR`), as .ci/run's native wheel is
/// built: cargo finds that build current. (Not the zig build of the release wheel: its
/// linker is a wrapper named after the maturin that made it, which differs in each build
/// environment, and a changed linker rebuilds every crate.)
#[test]
fn uv_tool_and_pipx_install_from_the_clone() {
    let Some(tools) = py_tools() else { return };
    if !common::real::index_reachable() {
        return;
    }
    let pep517 = format!("--profile {PROFILE}");
    let cargo = std::env::var_os("CARGO").expect("cargo runs the tests");
    let cargo_dir = Path::new(&cargo).parent().unwrap().to_path_buf();
    let sb = Sandbox::new();
    let bin = sb.path("bin");
    let clone = env!("CARGO_MANIFEST_DIR");
    let cache = common::real::test_cache();
    let install = |tool: &str, args: &[&str], env: &[(&str, &Path)]| {
        let mut cmd = Command::new(tools.join("bin").join(tool));
        cmd.args(args)
            .current_dir(clone)
            .env("HOME", sb.home())
            .env(
                "PATH",
                format!(
                    "{}:{}:/usr/bin:/bin",
                    tools.join("bin").display(),
                    cargo_dir.display()
                ),
            )
            .env("UV_CACHE_DIR", cache.join("uv-cache"))
            .env("PIP_CACHE_DIR", cache.join("pip-cache"))
            .env("UV_PYTHON_DOWNLOADS", "never")
            .env("MATURIN_PEP517_ARGS", &pep517)
            .env("CARGO_TARGET_DIR", target_dir());
        for (k, v) in env {
            cmd.env(k, v);
        }
        run(&mut cmd);
    };
    let info = |gpuenv: &Path| {
        let out = in_home(&sb, gpuenv.parent().unwrap(), gpuenv, &["self", "info"]);
        succeeded(&out)
    };

    let uv_tools = sb.path("uv-tools");
    install(
        "uv",
        &["tool", "install", "."],
        &[("UV_TOOL_DIR", &uv_tools), ("UV_TOOL_BIN_DIR", &bin)],
    );
    assert!(uv_tools.join("gpuenv/bin/gpuenv-shim").is_file());
    let said = info(&bin.join("gpuenv"));
    assert!(
        said.contains("as a uv tool") && said.contains("uv tool upgrade gpuenv"),
        "{said}"
    );
    let update = in_home(&sb, &bin, &bin.join("gpuenv"), &["self", "update"]);
    assert!(
        succeeded(&update).starts_with("uv tool upgrade gpuenv"),
        "{update:?}"
    );
    assert!(
        said.contains(&format!(
            "proxy {}",
            uv_tools.join("gpuenv/bin/gpuenv-shim").display()
        )),
        "{said}"
    );

    let pipx_home = sb.path("pipx");
    let pipx_bin = sb.path("pipx-bin");
    install(
        "pipx",
        &["install", "."],
        &[("PIPX_HOME", &pipx_home), ("PIPX_BIN_DIR", &pipx_bin)],
    );
    let said = info(&pipx_bin.join("gpuenv"));
    assert!(
        said.contains("with pipx") && said.contains("pipx upgrade gpuenv"),
        "{said}"
    );
    assert!(
        pipx_home.join("venvs/gpuenv/bin/gpuenv-shim").is_file(),
        "{said}"
    );
}
