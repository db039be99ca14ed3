//! gpuenv's wheels, built from this checkout by scripts/build-wheel.sh (maturin), and the
//! Python tools around them (maturin, twine, uv, pipx, ziglang, cargo-zigbuild, auditwheel,
//! check-jsonschema, from PyPI), kept outside the checkout in `$GPUENV_TEST_CACHE/pytools`,
//! which .ci/run makes. The tests install the release wheels (`build-wheel.sh --zig`:
//! manylinux2014 for x86_64 and aarch64), built with the [`PROFILE`] profile into the
//! [`target_dir`] in the test cache; `GPUENV_TEST_WHEEL_DIR` names a directory .ci/run
//! already built them into, once for every test. The wheel a test installs here is the one
//! for this machine's architecture.
#![allow(dead_code)]

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::real::test_cache;

/// The venv with maturin, twine, uv and pipx, or None (the test cannot run; fails under CI).
pub fn py_tools() -> Option<PathBuf> {
    let venv = test_cache().join("pytools");
    let missing: Vec<&str> = ["maturin", "twine", "uv", "pipx"]
        .into_iter()
        .filter(|t| !venv.join("bin").join(t).is_file())
        .collect();
    if missing.is_empty() {
        return Some(venv);
    }
    let venv = venv.display();
    super::cannot_run(format!(
        "{missing} not installed in {venv} (.ci/run installs them: python3 -m venv {venv}; {venv}/bin/pip install maturin twine uv pipx)",
        missing = missing.join(", "),
    ));
    None
}

/// One more tool from the test cache's venv (`python-zig`, `auditwheel`,
/// `check-jsonschema`), or None (the test cannot run; fails under CI).
pub fn py_tool(name: &str) -> Option<PathBuf> {
    let tool = test_cache().join("pytools/bin").join(name);
    if tool.is_file() {
        return Some(tool);
    }
    super::cannot_run(format!(
        "{name} is not installed in {} (.ci/run installs it from PyPI)",
        test_cache().join("pytools").display()
    ));
    None
}

/// The cargo profile of the wheels the tests build (Cargo.toml's `ci`: release's code
/// without LTO; the released wheels are built with `release`), as .ci/run builds them.
pub const PROFILE: &str = "ci";

/// Where cargo builds the tests' wheels, as .ci/run does: in the test cache, outside the
/// checkout, so that a fresh clone rebuilds only the workspace's own crates.
pub fn target_dir() -> PathBuf {
    test_cache().join("wheel-target")
}

/// The wheel for this machine: the release wheel of its architecture.
pub fn wheel() -> Option<PathBuf> {
    release_wheel(std::env::consts::ARCH)
}

/// The `gpuenv-*<suffix>` in `dir`; a wheel only for this machine's architecture.
fn find(dir: &Path, suffix: &str) -> Option<PathBuf> {
    fs_err::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("gpuenv-")
                && name.ends_with(suffix)
                && (suffix != ".whl" || name.contains(std::env::consts::ARCH))
        })
}

/// The release wheel (`build-wheel.sh --zig`: manylinux2014, zig-linked) for `arch`
/// (`x86_64`, `aarch64`): from `GPUENV_TEST_WHEEL_DIR` when .ci/run built them, else built
/// once into target/test-wheel-<arch> (the cross build in the [`target_dir`] is reused).
/// None when the tools are missing (fails under CI).
pub fn release_wheel(arch: &str) -> Option<PathBuf> {
    let tag = format!("manylinux_2_17_{arch}");
    let pick = |dir: &Path| {
        fs_err::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.starts_with("gpuenv-") && name.ends_with(".whl") && name.contains(&tag)
            })
    };
    if let Some(dir) = std::env::var_os("GPUENV_TEST_WHEEL_DIR") {
        let found = pick(Path::new(&dir));
        assert!(
            found.is_some(),
            "GPUENV_TEST_WHEEL_DIR={} holds no {tag} wheel (.ci/run builds them with scripts/build-wheel.sh --zig)",
            Path::new(&dir).display()
        );
        return found;
    }
    let tools = py_tools()?;
    py_tool("python-zig")?;
    py_tool("auditwheel")?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = root.join(format!("target/test-wheel-{arch}"));
    fs_err::create_dir_all(&out).unwrap();
    let lock = fs_err::File::create(out.join(".lock")).unwrap();
    lock.file().lock().unwrap();
    // Built before, from the same sources: the cross build is current (maturin would only
    // repackage it; skipping it saves the cargo fingerprint walk under a held lock).
    if let Some(w) = pick(&out) {
        if !older_than_sources(&w, root) {
            return Some(w);
        }
    }
    let built = Command::new(root.join("scripts/build-wheel.sh"))
        .args(["--profile", PROFILE, "--zig", "--target", arch])
        .arg(&out)
        .env("GPUENV_PY_TOOLS", &tools)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "scripts/build-wheel.sh --profile {PROFILE} --zig --target {arch} failed:\n{}{}",
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    pick(&out)
}

/// Whether any source file (src/, crates/, Cargo.*) is newer than `file`.
fn older_than_sources(file: &Path, root: &Path) -> bool {
    let built = fs_err::metadata(file).and_then(|m| m.modified()).unwrap();
    let newer = |p: &Path| {
        fs_err::metadata(p)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t > built)
    };
    ["Cargo.toml", "Cargo.lock", "build.rs"]
        .iter()
        .any(|f| newer(&root.join(f)))
        || ["src", "crates"].iter().any(|d| {
            walkdir::WalkDir::new(root.join(d))
                .into_iter()
                .flatten()
                .any(|e| e.file_type().is_file() && newer(e.path()))
        })
}

/// The sdist next to the wheel.
pub fn sdist(wheel: &Path) -> Option<PathBuf> {
    find(wheel.parent().unwrap(), ".tar.gz")
}

/// A fresh venv at `dir` with the wheel installed by pip (offline: the wheel has no
/// dependencies).
pub fn venv_with_wheel(dir: &Path, wheel: &Path) {
    run(Command::new("python3").args(["-m", "venv"]).arg(dir));
    run(Command::new(dir.join("bin/pip"))
        .args([
            "install",
            "--no-index",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(wheel));
}

/// Runs `cmd`, panics with its output unless it succeeds; its stdout.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A wheel laid out as pip lays it out in a venv at `prefix`: both binaries in
/// bin/ (run bits kept), the dist-info in site-packages with pip's INSTALLER.
pub fn unpack(wheel: &Path, prefix: &Path) {
    let version = env!("CARGO_PKG_VERSION");
    let site = prefix.join("lib/python3.11/site-packages");
    let mut zip = zip::ZipArchive::new(fs_err::File::open(wheel).unwrap()).unwrap();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        let name = f.name().to_string();
        let dest =
            if let Some(script) = name.strip_prefix(&format!("gpuenv-{version}.data/scripts/")) {
                prefix.join("bin").join(script)
            } else {
                site.join(&name)
            };
        let mut data = Vec::new();
        f.read_to_end(&mut data).unwrap();
        fs_err::create_dir_all(dest.parent().unwrap()).unwrap();
        fs_err::write(&dest, &data).unwrap();
        if let Some(mode) = f.unix_mode() {
            fs_err::set_permissions(&dest, std::fs::Permissions::from_mode(mode & 0o777)).unwrap();
        }
    }
    fs_err::write(
        site.join(format!("gpuenv-{version}.dist-info/INSTALLER")),
        "pip\n",
    )
    .unwrap();
    fs_err::create_dir_all(prefix.join("bin")).unwrap();
    super::write_exe(&prefix.join("bin/python"), "#!/bin/sh\nexit 1\n");
}
