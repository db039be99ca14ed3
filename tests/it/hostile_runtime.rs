//! The run-time checks read what gpuenv did not write: a forward-compatibility directory on
//! LD_LIBRARY_PATH that is a FIFO, a link loop, a file or a dangling link (and a
//! `libcuda.so.1` in it that is a FIFO); a `libtorch_cuda.so` cut short, huge, or a FIFO; an
//! `nvidia-smi` that never answers; a compat directory another account cannot read (run as that
//! account with `setpriv`); a package METADATA that is huge, binary or a FIFO. Each gives a clear finding within the probe timeout,
//! never a hang, and `gpuenv run` keeps such entries where they were.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::*;
use fs_err as fs;

/// CUDA 12.4 linked and `proj/` pinned to it.
fn pinned_project() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let proj = sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n");
    (sb, proj)
}

/// Makes a `libtorch_cuda.so` at the path given.
type Make = dyn Fn(&Path);

fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let out = std::process::Command::new("mkfifo")
        .arg(path)
        .output()
        .unwrap();
    succeeded(&out);
}

/// `gpuenv doctor --json` in `proj/` on an empty machine root, with `vars`; bounded.
fn doctor(sb: &Sandbox, vars: &[(&str, &str)]) -> (Output, serde_json::Value) {
    let root = sb.path("machine");
    fs::create_dir_all(&root).unwrap();
    let mut cmd = sb.gpuenv();
    cmd.current_dir(sb.path("proj"))
        .env("GPUENV_DOCTOR_ROOT", &root)
        .env("GPUENV_PROBE_TIMEOUT", "0.5")
        .args(["doctor", "--json"])
        .timeout(Duration::from_secs(60));
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (out, json)
}

fn finding(json: &serde_json::Value, id: &str) -> serde_json::Value {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id}"))
        .clone()
}

#[test]
fn a_compat_dir_that_is_a_fifo_a_loop_a_file_or_dangling_is_named_and_kept() {
    let (sb, proj) = pinned_project();
    let bad = sb.path("usr/local/cuda-13.4");
    mkfifo(&bad.join("compat-fifo"));
    fs::create_dir_all(&bad).unwrap();
    symlink(bad.join("compat-loop"), bad.join("compat-loop")).unwrap();
    write(&bad.join("compat-file"), "");
    symlink(bad.join("nowhere"), bad.join("compat-dangling")).unwrap();
    // A libcuda.so.1 that is a FIFO, beside its versioned name: nothing is opened.
    let fifo_lib = bad.join("compat");
    mkfifo(&fifo_lib.join("libcuda.so.1"));
    for name in [
        "compat-fifo",
        "compat-loop",
        "compat-file",
        "compat-dangling",
    ] {
        let dir = bad.join(name);
        let lp = format!("{}:{}", dir.display(), fifo_lib.display());
        let started = Instant::now();
        let (out, json) = doctor(&sb, &[("LD_LIBRARY_PATH", &lp)]);
        assert!(started.elapsed() < Duration::from_secs(30), "{name}");
        let f = finding(&json, "FM-15");
        assert_eq!(f["status"], "warn", "{name}: {f}");
        let summary = f["summary"].as_str().unwrap();
        assert!(
            summary.starts_with(&format!(
                "the driver directory {} on LD_LIBRARY_PATH cannot be read: ",
                dir.display()
            )),
            "{name}: {summary}"
        );
        assert!(out.status.code().is_some(), "{name}");

        let run = sb
            .gpuenv()
            .current_dir(&proj)
            .env("LD_LIBRARY_PATH", &lp)
            .args(["run", "--", "printenv", "LD_LIBRARY_PATH"])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let kept = succeeded(&run);
        assert!(kept.trim().ends_with(&lp), "{name}: {kept}");
    }
}

/// A venv whose torch is a CUDA build with `lib` holding `libtorch_cuda.so` as `make` makes
/// it; an `nvidia-smi` that names a 9.0 GPU.
fn torch_with(sb: &Sandbox, make: impl Fn(&Path)) -> PathBuf {
    let venv = sb.path("venv");
    write_exe(&venv.join("bin/python3"), "#!/bin/sh\n");
    let site = torch_package(
        &venv.join("lib/python3.11/site-packages"),
        "2.15.0+cu132",
        Some("13.2"),
        None,
    );
    let lib = site.join("torch/lib");
    fs::create_dir_all(&lib).unwrap();
    make(&lib.join("libtorch_cuda.so"));
    write_exe(&sb.path("stubs/nvidia-smi"), "#!/bin/sh\necho 9.0\n");
    venv
}

#[test]
fn a_libtorch_cuda_cut_short_huge_or_a_fifo_is_a_warning_naming_it() {
    let cases: [(&str, &Make, &str); 3] = [
        (
            "cut short",
            &|p: &Path| fs::write(p, b"\x7fELF\x02\x01\x01\x00\x00\x00").unwrap(),
            "its ELF headers are damaged",
        ),
        (
            "huge",
            // 8 GiB of nothing (sparse): not ELF, said from its first bytes.
            &|p: &Path| fs::File::create(p).unwrap().set_len(8 << 30).unwrap(),
            "it is not an ELF object",
        ),
        ("a FIFO", &|p: &Path| mkfifo(p), "not a library"),
    ];
    for (what, make, says) in cases {
        let (sb, _) = pinned_project();
        let venv = torch_with(&sb, make);
        let path = format!(
            "{}/bin:{}:/usr/bin:/bin",
            venv.display(),
            sb.path("stubs").display()
        );
        let started = Instant::now();
        let (_, json) = doctor(
            &sb,
            &[("VIRTUAL_ENV", venv.to_str().unwrap()), ("PATH", &path)],
        );
        assert!(started.elapsed() < Duration::from_secs(30), "{what}");
        let f = finding(&json, "FM-16");
        assert_eq!(f["status"], "warn", "{what}: {f}");
        let summary = f["summary"].as_str().unwrap();
        assert!(
            summary.starts_with("cannot read torch's kernels in ") && summary.contains(says),
            "{what}: {summary}"
        );
        assert!(summary.contains("libtorch_cuda.so"), "{what}: {summary}");
    }
}

#[test]
fn a_hanging_nvidia_smi_is_said_within_the_probe_timeout() {
    let (sb, _) = pinned_project();
    let venv = torch_with(&sb, |p| fs::write(p, "").unwrap());
    write_exe(&sb.path("stubs/nvidia-smi"), "#!/bin/sh\nexec sleep 60\n");
    let path = format!(
        "{}/bin:{}:/usr/bin:/bin",
        venv.display(),
        sb.path("stubs").display()
    );
    let started = Instant::now();
    let (_, json) = doctor(
        &sb,
        &[("VIRTUAL_ENV", venv.to_str().unwrap()), ("PATH", &path)],
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    let f = finding(&json, "FM-16");
    assert_eq!(f["status"], "skip", "{f}");
    let summary = f["summary"].as_str().unwrap();
    assert!(
        summary.contains("nvidia-smi") && summary.contains("did not answer within 0.5 s"),
        "{summary}"
    );
}

#[test]
fn a_compat_dir_another_account_cannot_read_is_named_for_that_account() {
    if !have_tool("setpriv") {
        return;
    }
    // A world-reachable place: the other account needs its own HOME and the binary.
    let dir = tempfile::Builder::new()
        .prefix("gpuenv-test-other")
        .tempdir()
        .unwrap();
    let chmod = |p: &Path, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    chmod(dir.path(), 0o755);
    let home = dir.path().join("home");
    fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    let compat = dir.path().join("cuda-13.4/compat");
    write(&compat.join("libcuda.so.580.65.06"), "");
    chmod(&compat, 0o000);
    let bin = assert_cmd::cargo::cargo_bin("gpuenv");
    let out = assert_cmd::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(["doctor", "--json"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", "/usr/bin:/bin")
        .env("GPUENV_DOCTOR_ROOT", &home)
        .env("GPUENV_PROBE_TIMEOUT", "0.5")
        .env("LD_LIBRARY_PATH", &compat)
        .current_dir(&home)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    chmod(&compat, 0o755);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let f = finding(&json, "FM-15");
    assert_eq!(f["status"], "warn", "{f}");
    assert_eq!(
        f["summary"],
        format!(
            "the driver directory {} on LD_LIBRARY_PATH cannot be read: Permission denied (os error 13)",
            compat.display()
        )
        .as_str()
    );
}

#[test]
fn a_metadata_that_is_huge_binary_or_a_fifo_is_a_warning_naming_it() {
    let cases: [(&str, &Make, &str); 3] = [
        (
            "huge",
            // 8 GiB of nothing (sparse): refused from its size, never read.
            &|p: &Path| fs::File::create(p).unwrap().set_len(8 << 30).unwrap(),
            "METADATA",
        ),
        (
            "binary",
            &|p: &Path| {
                fs::write(p, b"Name: nvidia-nvjitlink\nVersion: \xff\xfe\x00\x01\n").unwrap()
            },
            "METADATA",
        ),
        ("a FIFO", &|p: &Path| mkfifo(p), "METADATA"),
    ];
    for (what, make, says) in cases {
        let (sb, _) = pinned_project();
        let site = sb.path("venv/lib/python3.11/site-packages");
        write(
            &site.join("torch-2.15.0.dist-info/METADATA"),
            "Name: torch\nVersion: 2.15.0\nRequires-Dist: nvidia-nvjitlink>=13.2.86\n",
        );
        let meta = site.join("nvidia_nvjitlink-13.0.88.dist-info/METADATA");
        fs::create_dir_all(meta.parent().unwrap()).unwrap();
        make(&meta);
        let venv = sb.path("venv");
        let started = Instant::now();
        let (_, json) = doctor(&sb, &[("VIRTUAL_ENV", venv.to_str().unwrap())]);
        assert!(started.elapsed() < Duration::from_secs(30), "{what}");
        let f = finding(&json, "FM-17");
        assert_eq!(f["status"], "warn", "{what}: {f}");
        let summary = f["summary"].as_str().unwrap();
        assert!(
            summary.contains(&meta.display().to_string()) && summary.contains(says),
            "{what}: {summary}"
        );
    }
}
