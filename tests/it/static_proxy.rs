//! The release wheels' proxy is linked static against musl (scripts/build-wheel.sh --zig),
//! and musl reads accounts from `/etc/passwd` alone. An LDAP or SSSD account is not there:
//! run without `HOME` (a SLURM step with `--export=NONE`), the static proxy asks `getent`,
//! which goes through the system's NSS. Here the account is a uid `/etc/passwd` does not
//! know, run through `setpriv`, and NSS is a `getent` on PATH that knows it.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::accounts::{can_make_accounts, Site};
use crate::common::wheel::{release_wheel, unpack};
use crate::common::*;

/// A uid the password database does not have.
fn unknown_uid() -> u32 {
    let uid = 4_100_000 + std::process::id() % 50_000;
    let known = Command::new("getent")
        .args(["passwd", &uid.to_string()])
        .output()
        .unwrap();
    assert!(
        !known.status.success(),
        "uid {uid} is in the password database"
    );
    uid
}

/// `program` run as `uid` in `dir`, with `env` alone (no HOME unless it is there), on a
/// machine root with no driver (`GPUENV_DOCTOR_ROOT`, made here): a GPU host's answers
/// the same.
fn as_uid(uid: u32, program: &Path, args: &[&str], dir: &Path, env: &[(&str, &Path)]) -> Output {
    let id = uid.to_string();
    let no_driver = dir.join(".no-driver");
    fs_err::create_dir_all(&no_driver).unwrap();
    Command::new("setpriv")
        .args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"])
        .arg(program)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .env("GPUENV_DOCTOR_ROOT", &no_driver)
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn without_home_the_static_proxy_finds_an_nss_accounts_home_through_getent() {
    if !can_make_accounts() {
        return;
    }
    let Some(wheel) = release_wheel(std::env::consts::ARCH) else {
        return;
    };
    let site = Site::new();
    let prefix = site.dir("venv");
    unpack(&wheel, &prefix);
    let uid = unknown_uid();
    let home = site.dir("home/ada");
    std::os::unix::fs::chown(&home, Some(uid), Some(uid)).unwrap();
    let root = cuda_runfile(&site.path("opt/cuda-12.4"), "12.4.131");
    // The wheel's binaries and the toolkit, as an admin installs them: readable by all.
    for dir in [&prefix, &site.path("opt")] {
        assert!(Command::new("chmod")
            .args(["-R", "a+rX"])
            .arg(dir)
            .status()
            .unwrap()
            .success());
    }
    let proj = site.dir("proj");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"12.4\"\n");
    // NSS that knows the account: a getent on PATH (the one in /usr/bin does not).
    let nss = site.dir("nss");
    write_exe(
        &nss.join("getent"),
        &format!(
            "#!/bin/sh\n[ \"$1 $2\" = 'passwd {uid}' ] || exit 2\necho 'ada:*:{uid}:{uid}:Ada:{}:/bin/sh'\n",
            home.display()
        ),
    );
    let system = Path::new("/usr/bin:/bin");
    let with_nss = std::ffi::OsString::from(format!("{}:/usr/bin:/bin", nss.display()));
    let with_nss = Path::new(&with_nss);

    // The account registers the toolkit with its HOME set, as at a login.
    let gpuenv = prefix.join("bin/gpuenv");
    let out = as_uid(
        uid,
        &gpuenv,
        &["link", "cuda-12.4", root.to_str().unwrap()],
        &proj,
        &[("HOME", &home), ("PATH", system)],
    );
    succeeded(&out);
    let shim = home.join(".local/share/gpuenv/shims/nvcc");
    assert!(shim.is_file(), "{out:?}");

    // Without HOME: the static proxy asks getent and compiles with the project's pin.
    let out = as_uid(uid, &shim, &["--version"], &proj, &[("PATH", with_nss)]);
    assert!(succeeded(&out).contains("release 12.4"), "{out:?}");
    // The prompt too: answered by the proxy itself, with the account's home.
    let proxy = prefix.join("bin/gpuenv-shim");
    let out = as_uid(
        uid,
        &proxy,
        &["hook-env", "--shell", "bash"],
        &proj,
        &[("PATH", with_nss)],
    );
    let code = succeeded(&out);
    assert!(
        code.contains(&format!(
            "export CUDA_HOME='{}'",
            home.join(".local/share/gpuenv/views/cuda-12.4").display()
        )),
        "{code}"
    );
    assert!(out.stderr.is_empty(), "{out:?}");

    // With no NSS that knows the account there is no home, and the proxy says so.
    let out = as_uid(uid, &shim, &["--version"], &proj, &[("PATH", system)]);
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("HOME"), "{stderr}");
}
