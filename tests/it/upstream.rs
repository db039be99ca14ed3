//! A site's shared store as an upstream: an admin fills one gpuenv home, users see its
//! toolchains, pin and use them, and nothing they run ever writes there; tried on a real
//! read-only bind mount.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::shells::{self, dialect};
use crate::common::*;
use fs_err as fs;

/// Every file and directory under `dir` with its size and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                todo.push(e.path());
            }
            out.push((e.path(), meta.len(), meta.modified().unwrap()));
        }
    }
    out.sort();
    out
}

/// `dir` bind-mounted read-only onto itself until dropped (needs root).
struct ReadOnly(PathBuf);

impl ReadOnly {
    fn mount(dir: &Path) -> Option<ReadOnly> {
        let sh = |cmd: &str| {
            Command::new("sh")
                .args(["-c", cmd, "sh"])
                .arg(dir)
                .status()
                .is_ok_and(|s| s.success())
        };
        if !sh("mount --bind \"$1\" \"$1\" 2>/dev/null") {
            cannot_run("cannot bind-mount (mount --bind needs root)");
            return None;
        }
        let ro = ReadOnly(dir.to_path_buf());
        assert!(sh("mount -o remount,ro,bind \"$1\""), "remount read-only");
        Some(ro)
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The site's store with cuda-12.4 (with its view) and cuda-11.8 (whose view the admin
/// removed), filled by the admin with `GPUENV_HOME=<store> gpuenv link …`.
fn site_store(sb: &Sandbox) -> PathBuf {
    let store = sb.path("site/gpuenv");
    for (name, version) in [("cuda-12.4", "12.4.131"), ("cuda-11.8", "11.8.89")] {
        let root = cuda_runfile(&sb.path(&format!("site/sw/{name}")), version);
        sb.gpuenv()
            .env("GPUENV_HOME", &store)
            .args(["link", name, root.to_str().unwrap()])
            .assert()
            .success();
    }
    fs::remove_dir_all(store.join("views/cuda-11.8")).unwrap();
    write(
        &sb.path("etc/gpuenv/config.toml"),
        &format!("upstreams = [\"{}\"]\n", store.display()),
    );
    store
}

#[test]
fn user_pins_and_runs_a_read_only_site_toolchain_without_writing_to_it() {
    let sb = Sandbox::new();
    let store = site_store(&sb);
    let proj = sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n");
    let site = sb.path("site");
    let before = snapshot(&site);
    let Some(_ro) = ReadOnly::mount(&site) else {
        return;
    };
    let user = || {
        let mut cmd = sb.gpuenv();
        cmd.env("GPUENV_SYSTEM_CONFIG", sb.path("etc/gpuenv/config.toml"))
            .current_dir(&proj);
        cmd
    };

    let list = user().arg("list").output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(
        list.contains("cuda-12.4") && list.contains("upstream"),
        "{list}"
    );
    assert!(
        list.contains(&format!("(from {})", store.display())),
        "{list}"
    );

    // The pin resolves to the store's toolchain, through the store's own view.
    let env = user().args(["env", "--shell", "json"]).output().unwrap();
    assert!(
        env.status.success(),
        "{}",
        String::from_utf8_lossy(&env.stderr)
    );
    let env: serde_json::Value = serde_json::from_slice(&env.stdout).unwrap();
    assert_eq!(
        env["CUDA_HOME"],
        store.join("views/cuda-12.4").to_str().unwrap()
    );

    // A store toolchain without a view gets one in the user's own home.
    let env = user()
        .args(["env", "--shell", "json", "cuda-11.8"])
        .output()
        .unwrap();
    let env: serde_json::Value = serde_json::from_slice(&env.stdout).unwrap();
    let own_view = sb.gpuenv_home().join("views/cuda-11.8");
    assert_eq!(env["CUDA_HOME"], own_view.to_str().unwrap());
    assert!(own_view.join("bin/nvcc").exists());

    // Shims for the store's tools, in the user's home; nvcc runs the pinned toolkit.
    user().arg("reshim").assert().success();
    let nvcc = Command::new(sb.gpuenv_home().join("shims/nvcc"))
        .arg("--version")
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("GPUENV_SYSTEM_CONFIG", sb.path("etc/gpuenv/config.toml"))
        .current_dir(&proj)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&nvcc.stdout).contains("release 12.4"),
        "{}",
        String::from_utf8_lossy(&nvcc.stderr)
    );
    user()
        .args(["hook-env", "--shell", "bash"])
        .assert()
        .success();

    for command in ["uninstall", "unlink"] {
        let out = user().args([command, "cuda-12.4"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("cuda-12.4 belongs to the upstream"), "{err}");
        assert!(
            err.contains(&format!("GPUENV_HOME={} gpuenv {command}", store.display())),
            "{err}"
        );
    }
    drop(_ro);
    assert_eq!(snapshot(&site), before, "nothing in the store changed");
}

#[test]
fn cd_into_a_project_pinned_to_an_upstream_toolchain_puts_its_nvcc_on_path_at_the_prompt() {
    let sb = Sandbox::new();
    let store = site_store(&sb);
    // cuda-11.8 has no view in the store; the user never ran env, run or reshim.
    let proj = sb.project("proj", "[toolchain]\ncuda = \"11.8\"\n");
    assert!(!sb.gpuenv_home().exists(), "a fresh user home");
    let before = snapshot(&sb.path("site"));

    let (source, prompt, hook) = dialect("bash");
    let script =
        format!("{source}\n{prompt}\ncd \"$P\"\n{hook}\ncommand -v nvcc\nnvcc --version\n");
    let gpuenv = assert_cmd::cargo::cargo_bin("gpuenv");
    let config = sb.path("etc/gpuenv/config.toml");
    let home = sb.home();
    let env: [(&str, &OsStr); 6] = [
        ("HOME", home.as_os_str()),
        ("PATH", OsStr::new("/usr/bin:/bin")),
        ("LANG", OsStr::new("C.UTF-8")),
        ("GPUENV_BIN", gpuenv.as_os_str()),
        ("GPUENV_SYSTEM_CONFIG", config.as_os_str()),
        ("P", proj.as_os_str()),
    ];
    let out = shells::run("bash", &script, &sb.path("."), &env);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The fresh home was made on first use: its shims come first on PATH, and the view
    // CUDA_HOME names is in the user's own home.
    let own_nvcc = sb.gpuenv_home().join("views/cuda-11.8/bin/nvcc");
    let own_shim = sb.gpuenv_home().join("shims/nvcc");
    assert!(
        stdout.starts_with(&format!("{}\n", own_shim.display())),
        "the shim in the user's own home: {stdout}"
    );
    assert!(own_nvcc.is_symlink(), "the view in the user's own home");
    assert!(stdout.contains("release 11.8"), "{stdout}\n{stderr}");
    assert_eq!(
        snapshot(&sb.path("site")),
        before,
        "nothing in the store changed"
    );
    assert!(!store.join("views/cuda-11.8").exists());
}

#[test]
fn upstreams_from_the_environment_and_settings_are_searched_after_the_own_home() {
    let sb = Sandbox::new();
    let store = site_store(&sb);
    // The user's own cuda-12.4 wins over the store's of the same name.
    sb.linked_runfile("mine/cuda", "cuda-12.4", "12.4.99");
    let env = sb
        .gpuenv()
        .env(
            "GPUENV_UPSTREAMS",
            format!("{}:{}", sb.path("gone").display(), store.display()),
        )
        .args(["env", "--shell", "json", "cuda-12.4"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&env.stderr);
    assert!(
        err.contains(&format!(
            "the upstream {} is gone",
            sb.path("gone").display()
        )),
        "{err}"
    );
    let json: serde_json::Value = serde_json::from_slice(&env.stdout).unwrap();
    assert_eq!(
        json["CUDA_HOME"],
        sb.gpuenv_home().join("views/cuda-12.4").to_str().unwrap()
    );

    // `upstreams` in the user's settings works the same; the store's 11.8 resolves.
    let settings = sb.gpuenv_home().join("settings.toml");
    let text = fs::read_to_string(&settings).unwrap();
    fs::write(
        &settings,
        format!("upstreams = [\"{}\"]\n{text}", store.display()),
    )
    .unwrap();
    let out = sb.ok(&["env", "--shell", "json", "cuda-11"]);
    assert!(out.contains("views/cuda-11.8"), "{out}");

    // A store toolchain can be the default, and stays it when an own toolchain goes.
    sb.ok(&["default", "cuda-11.8"]);
    sb.ok(&["unlink", "cuda-12.4"]);
    assert_eq!(sb.ok(&["default"]), "cuda-11.8\n");
}

#[test]
fn a_corrupt_upstream_or_system_config_is_a_warning_not_a_crash() {
    let sb = Sandbox::new();
    let store = sb.path("broken-store");
    write(&store.join("settings.toml"), "[toolchains.x\n");
    let config = sb.path("etc/config.toml");
    write(&config, "upstreams = \"not a list\"\n");
    let out = sb
        .gpuenv()
        .env("GPUENV_UPSTREAMS", &store)
        .env("GPUENV_SYSTEM_CONFIG", &config)
        .arg("list")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("the upstream {} cannot be used", store.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: line 1", config.display())),
        "{err}"
    );
}

/// A bare `gpuenv install` in a project whose pin the site store provides downloads nothing
/// (no source is even asked: both point where nothing is) and says where the pin is met.
#[test]
fn a_bare_install_of_a_pin_an_upstream_provides_installs_nothing() {
    let sb = Sandbox::new();
    let store = site_store(&sb);
    let proj = sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n");
    let nowhere = sb.path("no-mirror");
    let out = sb
        .gpuenv()
        .env("GPUENV_SYSTEM_CONFIG", sb.path("etc/gpuenv/config.toml"))
        .env("GPUENV_CUDA_MIRROR", &nowhere)
        .env("GPUENV_PYPI_URL", &nowhere)
        .current_dir(&proj)
        .arg("install")
        .output()
        .unwrap();
    succeeded(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "cuda-12.4 is satisfied by cuda-12.4 from the upstream {}; nothing to install",
            store.display()
        )),
        "{err}"
    );
    assert!(!err.contains("installing"), "{err}");
    let own = sb.gpuenv_home().join("toolchains");
    let installed: Vec<_> = fs::read_dir(&own)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(installed.is_empty(), "{installed:?}");
}
