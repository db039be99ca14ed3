//! A build's parallelism: in a project pinning two archs, the environment sets `MAX_JOBS` and
//! `CMAKE_BUILD_PARALLEL_LEVEL` from the cores and the memory (faked here through
//! `GPUENV_DOCTOR_ROOT`'s `/proc/meminfo`), the nvcc proxy adds `--threads`, `gpuenv show`
//! says both and why; the user's own `MAX_JOBS`, `NVCC_THREADS`, `--threads`/`-t` and
//! nvcc flag variables win, and `[build] jobs`/`nvcc-threads` in the file or the settings
//! override the computed figures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// A project pinned to a stub CUDA 12.4 (its nvcc logs its arguments) with two archs, and a
/// fake system root whose `/proc/meminfo` says `gib` GiB.
fn project(extra: &str) -> (Sandbox, PathBuf, PathBuf) {
    let sb = Sandbox::new();
    let cuda = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    sb.ok(&["link", "cuda-12.4", cuda.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        &format!("[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\", \"9.0\"]\n{extra}"),
    );
    (sb, proj, cuda)
}

fn memory(sb: &Sandbox, gib: u64) -> PathBuf {
    let root = sb.path(&format!("sysroot-{gib}"));
    write(
        &root.join("proc/meminfo"),
        &format!(
            "MemTotal:       {} kB\nMemFree:         1024 kB\n",
            gib * 1024 * 1024
        ),
    );
    root
}

fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

fn gpuenv_in(
    sb: &Sandbox,
    dir: &Path,
    root: &Path,
    vars: &[(&str, &str)],
    args: &[&str],
) -> Output {
    let mut cmd = sb.gpuenv();
    cmd.current_dir(dir).env("GPUENV_DOCTOR_ROOT", root);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.args(args).output().unwrap()
}

fn env_json(sb: &Sandbox, dir: &Path, root: &Path, vars: &[(&str, &str)]) -> serde_json::Value {
    let out = gpuenv_in(sb, dir, root, vars, &["env", "--shell", "json"]);
    serde_json::from_str(&succeeded(&out)).unwrap()
}

/// The view's nvcc run as a build runs it (as torch's `$CUDA_HOME/bin/nvcc`), in `dir`:
/// the arguments the real nvcc got.
fn compile(
    sb: &Sandbox,
    dir: &Path,
    cuda: &Path,
    root: &Path,
    vars: &[(&str, &str)],
    args: &[&str],
) -> String {
    let log = cuda.join("nvcc.log");
    let _ = fs_err::remove_file(&log);
    let mut cmd = Command::new(sb.gpuenv_home().join("views/cuda-12.4/bin/nvcc"));
    cmd.args(args)
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("GPUENV_DOCTOR_ROOT", root)
        .current_dir(dir);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    succeeded(&cmd.output().unwrap());
    fs_err::read_to_string(&log).unwrap()
}

#[test]
fn two_pinned_archs_get_jobs_for_the_memory_and_threads_for_nvcc() {
    let (sb, proj, cuda) = project("");
    let big = memory(&sb, 4096);
    let small = memory(&sb, 2);

    // Plenty of memory: a job per core, in both variables.
    let env = env_json(&sb, &proj, &big, &[]);
    let n = cores().to_string();
    assert_eq!(env["MAX_JOBS"], n.as_str(), "{env:#}");
    assert_eq!(env["CMAKE_BUILD_PARALLEL_LEVEL"], n.as_str());
    // A machine with little memory gets fewer: one job, whatever the cores.
    let env = env_json(&sb, &proj, &small, &[]);
    assert_eq!(env["MAX_JOBS"], "1", "{env:#}");
    assert_eq!(env["CMAKE_BUILD_PARALLEL_LEVEL"], "1");
    // The user's own values stay.
    let env = env_json(
        &sb,
        &proj,
        &big,
        &[("MAX_JOBS", "5"), ("CMAKE_BUILD_PARALLEL_LEVEL", "3")],
    );
    assert_eq!(env["MAX_JOBS"], "5");
    assert_eq!(env["CMAKE_BUILD_PARALLEL_LEVEL"], "3");
    // Outside any project with no toolchain active, nothing is set.
    let out = gpuenv_in(&sb, &sb.home(), &big, &[], &["env", "--shell", "json"]);
    let env: serde_json::Value = serde_json::from_str(&succeeded(&out)).unwrap();
    assert!(env.get("MAX_JOBS").is_none(), "{env:#}");

    // `gpuenv show` says both, and why.
    let shown = succeeded(&gpuenv_in(&sb, &proj, &big, &[], &["show"]));
    assert!(
        shown.contains(&format!("build jobs: {n} (MAX_JOBS")),
        "{shown}"
    );
    let threads = cores().min(2);
    if threads > 1 {
        assert!(
            shown.contains(&format!("nvcc threads: --threads {threads} ")),
            "{shown}"
        );
    }
    let shown = succeeded(&gpuenv_in(&sb, &proj, &small, &[], &["show", "--json"]));
    let json: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(json["build_jobs"]["jobs"], 1, "{json:#}");
    assert!(json["build_jobs"]["from"]
        .as_str()
        .unwrap()
        .contains("MemTotal"));

    // The proxy: a plain compile gets the pins and, with two of them, `--threads`.
    let args = compile(&sb, &proj, &cuda, &big, &[], &["-c", "k.cu", "-o", "k.o"]);
    assert!(
        args.contains("-gencode arch=compute_90,code=sm_90"),
        "{args}"
    );
    if threads > 1 {
        assert!(args.starts_with(&format!("--threads {threads} ")), "{args}");
    }
    // NVCC_THREADS is the user's count.
    let args = compile(
        &sb,
        &proj,
        &cuda,
        &big,
        &[("NVCC_THREADS", "7")],
        &["-c", "k.cu"],
    );
    assert!(args.starts_with("--threads 7 "), "{args}");
    // The user's own `-t`/`--threads`, here or in nvcc's flag variables: nothing added.
    for (vars, own) in [
        (vec![], vec!["-c", "k.cu", "-t", "1"]),
        (vec![], vec!["-c", "k.cu", "--threads=3"]),
        (
            vec![("NVCC_APPEND_FLAGS", "-O2 --threads 2")],
            vec!["-c", "k.cu"],
        ),
        (vec![("NVCC_PREPEND_FLAGS", "-t4")], vec!["-c", "k.cu"]),
    ] {
        let mut vars = vars;
        vars.push(("NVCC_THREADS", "7"));
        let args = compile(&sb, &proj, &cuda, &big, &vars, &own);
        // The pins are added, nothing else: the user's own count stands.
        let pinned =
            "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -c k.cu";
        assert_eq!(
            args.trim(),
            own.join(" ").replace("-c k.cu", pinned),
            "{vars:?}"
        );
    }
    // One arch on the command line: nothing to run side by side.
    let args = compile(&sb, &proj, &cuda, &big, &[], &["-c", "k.cu", "-arch=sm_90"]);
    assert!(!args.contains("--threads"), "{args}");
    // Little memory beside many jobs: one target at a time.
    let args = compile(
        &sb,
        &proj,
        &cuda,
        &small,
        &[("MAX_JOBS", "4")],
        &["-c", "k.cu"],
    );
    assert!(!args.contains("--threads"), "{args}");
}

#[test]
fn the_file_and_the_settings_override_the_computed_counts() {
    let (sb, proj, cuda) = project("[build]\njobs = 3\nnvcc-threads = 5\n");
    let big = memory(&sb, 4096);
    let env = env_json(&sb, &proj, &big, &[]);
    assert_eq!(env["MAX_JOBS"], "3");
    let args = compile(&sb, &proj, &cuda, &big, &[], &["-c", "k.cu"]);
    assert!(args.starts_with("--threads 5 "), "{args}");
    let shown = succeeded(&gpuenv_in(&sb, &proj, &big, &[], &["show"]));
    assert!(
        shown.contains("build jobs: 3 (MAX_JOBS, CMAKE_BUILD_PARALLEL_LEVEL where unset): "),
        "{shown}"
    );
    assert!(shown.contains("gpuenv.toml:5:8"), "{shown}");

    // The settings' `[build]`, for every project without its own.
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\", \"9.0\"]\n",
    );
    let settings = sb.gpuenv_home().join("settings.toml");
    let mut text = fs_err::read_to_string(&settings).unwrap();
    text.push_str("\n[build]\njobs = 2\nnvcc-threads = 6\n");
    write(&settings, &text);
    let env = env_json(&sb, &proj, &big, &[]);
    assert_eq!(env["MAX_JOBS"], "2");
    let args = compile(&sb, &proj, &cuda, &big, &[], &["-c", "k.cu"]);
    assert!(args.starts_with("--threads 6 "), "{args}");

    // A count that is not one is an error at its line.
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n[build]\njobs = 0\n",
    );
    let out = gpuenv_in(&sb, &proj, &big, &[], &["show"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("gpuenv.toml:4:8") && err.contains("a count from 1 to"),
        "{err}"
    );
}
