//! The aarch64 build (the manylinux2014 wheel for Grace Hopper/Blackwell nodes and Jetson
//! boards), run here under qemu-user: `qemu-aarch64 -L /usr/aarch64-linux-gnu` (Debian's
//! qemu-user and libc6-arm64-cross). No binfmt_misc handler is registered (it is
//! kernel-wide), so an aarch64 program that gpuenv or its proxy execs cannot start
//! ("Exec format error"); shell scripts and x86-64 programs they exec run natively. The
//! tests say where that bites and check the rest: what a Grace user does first (version,
//! `self info`, env and hook in a pinned project, doctor, `torch index`), the proxy a
//! wheel upgrade replaces, and a real install of NVIDIA's aarch64 (sbsa) CUDA whose nvcc
//! then runs under qemu.

use crate::common::wheel;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::real::{index_reachable, test_cache, REAL_VARS};
use crate::common::*;
use wheel::release_wheel;

const SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// qemu-aarch64, when it and the aarch64 C library are here (else the test cannot run).
fn qemu() -> Option<PathBuf> {
    if !have_tool("qemu-aarch64") {
        return None;
    }
    if !Path::new(SYSROOT)
        .join("lib/ld-linux-aarch64.so.1")
        .is_file()
    {
        cannot_run(format!(
            "{SYSROOT} has no aarch64 C library (Debian: apt-get install libc6-arm64-cross)"
        ));
        return None;
    }
    Some(PathBuf::from("qemu-aarch64"))
}

/// `exe` (an aarch64 program) under qemu, with the sandbox's home, its machine (the system
/// root `GPUENV_DOCTOR_ROOT`: a Jetson's files go there) and `dir` as its cwd.
fn arm(sb: &Sandbox, exe: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new("qemu-aarch64");
    cmd.arg("-L")
        .arg(SYSROOT)
        .arg(exe)
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", system_path())
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .env("GPUENV_DISCOVER_ROOTS", sb.root())
        .env("GPUENV_DOCTOR_ROOT", sb.sysroot())
        .current_dir(dir);
    cmd
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A linked CUDA 13.2 whose tools are shell scripts (the host runs those even when an
/// emulated program execs them), in NVIDIA's aarch64 server layout: `targets/sbsa-linux`.
fn sbsa_stub(root: &Path) -> PathBuf {
    nvcc_stub(root, "13.2.86");
    let target = root.join("targets/sbsa-linux");
    write(&target.join("include/cuda_runtime.h"), "");
    write(&target.join("lib/libcudart.so"), "");
    write(
        &root.join("version.json"),
        "{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"13.2.1\"}, \"cuda_nvcc\": {\"name\": \"CUDA NVCC\", \"version\": \"13.2.86\"}}\n",
    );
    root.to_path_buf()
}

#[test]
fn the_aarch64_wheel_runs_under_qemu_as_a_grace_user_starts() {
    let (Some(_), Some(wheel)) = (qemu(), release_wheel("aarch64")) else {
        return;
    };
    let sb = Sandbox::new();
    let venv = sb.path("venv");
    wheel::unpack(&wheel, &venv);
    let gpuenv = venv.join("bin/gpuenv");
    let home = sb.home();
    let ok = |args: &[&str], dir: &Path| {
        let out = arm(&sb, &gpuenv, dir).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "gpuenv {args:?} under qemu:\n{}",
            text(&out)
        );
        text(&out)
    };

    let v = ok(&["--version"], &home);
    assert!(v.contains(env!("CARGO_PKG_VERSION")), "{v}");
    let info = ok(&["self", "info"], &home);
    assert!(info.contains("as a wheel by pip"), "{info}");
    assert!(info.contains("-m pip install --upgrade gpuenv"), "{info}");
    let update = ok(&["self", "update"], &home);
    assert!(
        update.contains("-m pip install --upgrade gpuenv"),
        "{update}"
    );

    // A toolkit in the sbsa layout, linked and pinned in a project.
    let cuda = sbsa_stub(&sb.path("cuda-13.2"));
    ok(&["link", "cuda-13.2", cuda.to_str().unwrap()], &home);
    let settings = sb.settings().unwrap();
    assert!(
        settings.contains(&format!(
            "include_dir = \"{}/targets/sbsa-linux/include\"",
            cuda.display()
        )) && settings.contains(&format!(
            "lib_dir = \"{}/targets/sbsa-linux/lib\"",
            cuda.display()
        )),
        "the aarch64 build reads NVIDIA's sbsa layout:\n{settings}"
    );
    let proj = sb.path("proj");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"13.2\"\n");
    let env = ok(&["env", "--shell", "bash"], &proj);
    let view = sb.gpuenv_home().join("views/cuda-13.2");
    assert!(
        env.contains(&format!("export CUDA_HOME='{}'", view.display()))
            || env.contains(&format!("export CUDA_HOME={}", view.display())),
        "{env}"
    );
    let hook = ok(&["hook-env", "--shell", "bash"], &proj);
    assert!(hook.contains("CUDA_HOME"), "{hook}");
    // The prompt as the hook runs it: the static (musl) proxy beside gpuenv answers it
    // itself (a hand-over would exec the aarch64 gpuenv, which qemu cannot start from
    // there), with gpuenv's answer.
    let out = arm(&sb, &venv.join("bin/gpuenv-shim"), &proj)
        .args(["hook-env", "--shell", "bash"])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "the proxy's prompt under qemu:\n{}",
        text(&out)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), hook);

    // The doctor: its checks run (the host's gcc and g++ are x86-64 programs it may start).
    let out = arm(&sb, &gpuenv, &proj)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json under qemu: {e}\n{}", text(&out)));
    let findings = report["findings"].as_array().expect("findings");
    assert!(findings.len() > 10, "{report}");
    assert!(
        serde_json::to_string(&report)
            .unwrap()
            .contains("cuda-13.2"),
        "the doctor checks the pinned toolkit: {report}"
    );

    // torch index for a GH200 (Hopper, 9.0) on a CUDA 13 driver.
    let out = arm(&sb, &gpuenv, &proj)
        .args([
            "torch",
            "index",
            "--json",
            "--gpu",
            "9.0",
            "--driver",
            "580.65.06",
        ])
        .output()
        .unwrap();
    let pick: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("torch index under qemu: {e}\n{}", text(&out)));
    assert_eq!(pick["cuda"], "13.2", "{pick}");
    assert!(
        pick["url"]
            .as_str()
            .unwrap()
            .starts_with("https://download.pytorch.org/whl/cu"),
        "{pick}"
    );

    // The proxy: the shim runs under qemu and execs the toolkit's nvcc (a script here;
    // an aarch64 nvcc it could not exec without binfmt).
    let shims = sb.gpuenv_home().join("shims");
    let out = arm(&sb, &shims.join("nvcc"), &proj)
        .arg("--version")
        .output()
        .unwrap();
    assert!(text(&out).contains("release 13.2"), "{}", text(&out));

    // An upgrade: a freshly installed wheel in another venv; its first command replaces the
    // home's proxy with its own.
    let installed = sb.gpuenv_home().join("bin/gpuenv-shim");
    let before = fs_err::metadata(&installed).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let venv2 = sb.path("venv2");
    wheel::unpack(&wheel, &venv2);
    let new = fs_err::metadata(venv2.join("bin/gpuenv-shim")).unwrap();
    assert_ne!(before.mtime_nsec(), new.mtime_nsec(), "a different file");
    let out = arm(&sb, &venv2.join("bin/gpuenv"), &home)
        .arg("list")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let after = fs_err::metadata(&installed).unwrap();
    assert!(
        (after.ino() == new.ino() && after.dev() == new.dev())
            || (after.mtime() == new.mtime() && after.mtime_nsec() == new.mtime_nsec()),
        "the home's proxy is the upgraded wheel's"
    );
    assert_eq!(
        fs_err::read(&installed).unwrap()[..20],
        fs_err::read(venv2.join("bin/gpuenv-shim")).unwrap()[..20]
    );
    let out = arm(&sb, &shims.join("nvcc"), &proj)
        .arg("--version")
        .output()
        .unwrap();
    assert!(
        text(&out).contains("release 13.2"),
        "after the upgrade: {}",
        text(&out)
    );
}

/// REAL: `install cuda-13.2 --profile minimal` by the aarch64 gpuenv from PyPI's aarch64
/// (sbsa) wheels (downloads kept in the test cache), then the installed aarch64 nvcc runs
/// under qemu and names the pinned release. `nvcc -c` cannot: nvcc execs its own aarch64
/// children (cudafe++, cicc, ptxas), which need binfmt.
#[test]
fn a_real_sbsa_cuda_installs_under_qemu_and_its_nvcc_names_the_pinned_release() {
    let (Some(_), Some(wheel)) = (qemu(), release_wheel("aarch64")) else {
        return;
    };
    if !index_reachable() {
        return;
    }
    let sb = Sandbox::new();
    let venv = sb.path("venv");
    wheel::unpack(&wheel, &venv);
    let gpuenv = venv.join("bin/gpuenv");
    let proj = sb.path("proj");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"13.2\"\n");
    let real = |args: &[&str]| {
        let mut cmd = arm(&sb, &gpuenv, &proj);
        cmd.args(args)
            .env("GPUENV_DOWNLOAD_CACHE", test_cache().join("downloads"));
        for v in REAL_VARS {
            if let Some(val) = std::env::var_os(v) {
                cmd.env(v, val);
            }
        }
        cmd.output().unwrap()
    };
    let out = real(&[
        "install",
        "cuda-13.2",
        "--source",
        "pypi",
        "--profile",
        "minimal",
    ]);
    assert!(out.status.success(), "install under qemu:\n{}", text(&out));
    let out = real(&["which", "nvcc"]);
    assert!(out.status.success(), "{}", text(&out));
    let nvcc = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let root = fs_err::canonicalize(&nvcc).unwrap();
    let root = root.parent().unwrap().parent().unwrap();
    assert!(
        root.join("targets/sbsa-linux").is_dir(),
        "NVIDIA's aarch64 server layout in {}",
        root.display()
    );
    let elf = fs_err::read(root.join("bin/nvcc")).unwrap();
    assert_eq!(
        u16::from_le_bytes([elf[18], elf[19]]),
        183,
        "an aarch64 nvcc (EM_AARCH64)"
    );
    let out = arm(&sb, &root.join("bin/nvcc"), &proj)
        .arg("--version")
        .output()
        .unwrap();
    let said = text(&out);
    assert!(
        out.status.success() && said.contains("release 13.2"),
        "{said}"
    );
    // Through the proxy, qemu runs the shim, which execs the aarch64 nvcc: without binfmt
    // the host kernel refuses it (ENOEXEC), and the C library's execvp then hands the file to
    // /bin/sh, which stops at its first bytes naming it. On an aarch64 machine this is the
    // ordinary proxied nvcc; here it shows the shim resolved the pinned toolkit's nvcc.
    let out = arm(&sb, &sb.gpuenv_home().join("shims/nvcc"), &proj)
        .arg("--version")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{}", root.join("bin/nvcc").display())),
        "{}",
        text(&out)
    );
}

/// A Jetson on JetPack 6 (an Orin, L4T R36.4.3), its files laid out under a test root the
/// way the doctor's tests fake /proc and /sys: the aarch64 gpuenv finds JetPack's CUDA 12.6
/// in `/usr/local/cuda-12.6`, whose headers and libraries are in `targets/aarch64-linux`
/// (not the servers' `sbsa-linux`).
#[test]
fn on_a_jetpack_6_root_the_aarch64_gpuenv_finds_jetpacks_cuda_in_targets_aarch64_linux() {
    let (Some(_), Some(wheel)) = (qemu(), release_wheel("aarch64")) else {
        return;
    };
    let sb = Sandbox::new();
    let venv = sb.path("venv");
    wheel::unpack(&wheel, &venv);
    let gpuenv = venv.join("bin/gpuenv");
    jetson_board(&sb.sysroot(), JP6_RELEASE, "nvidia,tegra234");
    let cuda = sb.root().join("usr/local/cuda-12.6");
    nvcc_stub(&cuda, "12.6.68");
    let target = cuda.join("targets/aarch64-linux");
    write(&target.join("include/cuda_runtime.h"), "");
    write(&target.join("lib/libcudart.so.12"), "");
    write(
        &cuda.join("version.json"),
        "{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"12.6.10\"}, \"cuda_nvcc\": {\"name\": \"CUDA NVCC\", \"version\": \"12.6.68\"}}\n",
    );
    let out = arm(&sb, &gpuenv, &sb.home())
        .args(["discover", "--register", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let said = found.to_string();
    assert!(said.contains("cuda-12.6"), "{said}");
    let settings = sb.settings().unwrap();
    assert!(
        settings.contains(&format!(
            "include_dir = \"{}/targets/aarch64-linux/include\"",
            cuda.display()
        )) && settings.contains(&format!(
            "lib_dir = \"{}/targets/aarch64-linux/lib\"",
            cuda.display()
        )),
        "JetPack 6's layout:\n{settings}"
    );
}

/// On a JetPack 6 board the project's side of the one chooser reads the board too: a trusted
/// `[torch] index = "auto"` project pinned to JetPack's CUDA 12.6 gets NVIDIA's Jetson index
/// from `env` and `--write-pyproject`, the index `torch index` names there (PyPI's and
/// PyTorch's aarch64 wheels are built for SBSA servers and do not load on JetPack 6).
#[test]
fn on_jetpack_6_the_projects_environment_and_pyproject_name_the_jetson_index() {
    let (Some(_), Some(wheel)) = (qemu(), release_wheel("aarch64")) else {
        return;
    };
    let sb = Sandbox::new();
    let venv = sb.path("venv");
    wheel::unpack(&wheel, &venv);
    let gpuenv = venv.join("bin/gpuenv");
    jetson_board(&sb.sysroot(), JP6_RELEASE, "nvidia,tegra234");
    let cuda = sb.root().join("usr/local/cuda-12.6");
    nvcc_stub(&cuda, "12.6.68");
    write(
        &cuda.join("targets/aarch64-linux/include/cuda_runtime.h"),
        "",
    );
    let out = arm(&sb, &gpuenv, &sb.home())
        .args(["link", "cuda-12.6", cuda.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.6\"\n\n[torch]\nindex = \"auto\"\n",
    );
    write(
        &proj.join("pyproject.toml"),
        "[project]\nname = \"app\"\ndependencies = [\"torch\"]\n",
    );
    let run = |args: &[&str]| {
        let out = arm(&sb, &gpuenv, &proj).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["trust"]);
    const JP6: &str = "https://pypi.jetson-ai-lab.io/jp6/cu126";
    let vars: serde_json::Value = serde_json::from_str(&run(&["env", "--shell", "json"])).unwrap();
    assert_eq!(vars["PIP_EXTRA_INDEX_URL"], JP6, "{vars}");
    assert_eq!(
        vars["UV_INDEX"],
        format!("pytorch={JP6}").as_str(),
        "{vars}"
    );
    run(&["torch", "index", "--write-pyproject"]);
    let written = fs_err::read_to_string(proj.join("pyproject.toml")).unwrap();
    assert!(written.contains(&format!("url = \"{JP6}\"")), "{written}");
}

const JP6_RELEASE: &str = "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\nTARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n";
const JP7_RELEASE: &str = "# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64, DATE: Mon Aug 25 10:39:45 UTC 2025\n";

/// What a Jetson says of itself, under `root`: the L4T release file and the device tree.
fn jetson_board(root: &Path, release: &str, soc: &str) {
    write(&root.join("etc/nv_tegra_release"), release);
    let tree = root.join("sys/firmware/devicetree/base");
    write(
        &tree.join("compatible"),
        &format!("nvidia,p3737-0000+p3701-0005\0{soc}\0"),
    );
    write(
        &tree.join("model"),
        "NVIDIA Jetson AGX Orin Developer Kit\0",
    );
    // As on a board: /proc/device-tree links to the tree in /sys.
    fs_err::create_dir_all(root.join("proc")).unwrap();
    std::os::unix::fs::symlink(
        "../sys/firmware/devicetree/base",
        root.join("proc/device-tree"),
    )
    .unwrap();
}

/// `torch index --json --any-toolkit` by the aarch64 gpuenv on the sandbox's machine.
fn torch_index(sb: &Sandbox, gpuenv: &Path, extra: &[&str]) -> (bool, serde_json::Value, String) {
    let out = arm(sb, gpuenv, &sb.home())
        .args(["torch", "index", "--json", "--any-toolkit"])
        .args(extra)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("torch index --json: {e}\n{}", text(&out)));
    (out.status.success(), json, text(&out))
}

/// `torch index` on a faked Jetson root (JetPack 6: NVIDIA's Jetson index; JetPack 7: the
/// SBSA wheels) and on a Grace node: an index with wheels for that board and GPU, and why.
/// The board's GPU is its SoC's when nothing else names one (JetPack 6 has no nvidia-smi).
#[test]
fn torch_index_answers_for_jetpack_6_jetpack_7_and_grace() {
    let (Some(_), Some(wheel)) = (qemu(), release_wheel("aarch64")) else {
        return;
    };
    let venv = Sandbox::new().path("venv");
    wheel::unpack(&wheel, &venv);
    let gpuenv = venv.join("bin/gpuenv");

    let orin = Sandbox::new();
    jetson_board(&orin.sysroot(), JP6_RELEASE, "nvidia,tegra234");
    let (ok, pick, said) = torch_index(&orin, &gpuenv, &[]);
    assert!(ok, "{said}");
    assert_eq!(
        pick["url"], "https://pypi.jetson-ai-lab.io/jp6/cu126",
        "{said}"
    );
    assert_eq!(pick["inputs"]["platform"], "jetpack6", "{said}");
    assert_eq!(pick["inputs"]["gpus"], serde_json::json!(["8.7"]), "{said}");
    assert!(!pick["why"].as_array().unwrap().is_empty(), "{said}");

    let thor = Sandbox::new();
    jetson_board(&thor.sysroot(), JP7_RELEASE, "nvidia,tegra264");
    let (ok, pick, said) = torch_index(&thor, &gpuenv, &[]);
    assert!(ok, "{said}");
    assert_eq!(pick["inputs"]["platform"], "jetpack7", "{said}");
    assert_eq!(
        pick["inputs"]["gpus"],
        serde_json::json!(["11.0"]),
        "{said}"
    );
    let url = pick["url"].as_str().unwrap();
    assert!(
        url.starts_with("https://download.pytorch.org/whl/cu13"),
        "SBSA wheels: {said}"
    );

    // Grace Hopper: no board files; the GPU and driver as nvidia-smi would say them.
    let grace = Sandbox::new();
    grace.fake_driver("580.65.06");
    let (ok, pick, said) = torch_index(&grace, &gpuenv, &["--gpu", "9.0"]);
    assert!(ok, "{said}");
    assert_eq!(pick["inputs"]["platform"], "linux-sbsa", "{said}");
    let url = pick["url"].as_str().unwrap();
    assert!(
        url.starts_with("https://download.pytorch.org/whl/cu1"),
        "{said}"
    );

    // A Xavier on JetPack 5: no index gpuenv knows has wheels for it, and it says why.
    let xavier = Sandbox::new();
    jetson_board(
        &xavier.sysroot(),
        "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64\n",
        "nvidia,tegra194",
    );
    let out = arm(&xavier, &gpuenv, &xavier.home())
        .args(["torch", "index", "--any-toolkit"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).contains("JetPack 6 and 7 only"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("L4T R35.4.1"), "{}", text(&out));
}
