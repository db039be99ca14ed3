//! `gpuenv doctor` through the real binary, on machines built from fixture files. Each
//! check is made to fire (with its hint) and to pass; the JSON is checked field by field,
//! the text report by snapshot.

mod environment;
mod machine;
mod runtime;
mod world;

use fs_err as fs;

use crate::common::*;
use world::*;

#[test]
fn a_healthy_project_after_gpuenv_env_passes_every_check() {
    let w = healthy();
    let r = w.doctor();
    assert_eq!(r.code, 0);
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "active-set",
            "shell-hook",
            "FM-01",
            "FM-02",
            "FM-03",
            "FM-04",
            "FM-05",
            "FM-06",
            "FM-07",
            "FM-08",
            "FM-09",
            "FM-10",
            "FM-11",
            "FM-12",
            "FM-13",
            "FM-14",
            "FM-15",
            "FM-16",
            "FM-17",
            "shared-cache"
        ]
    );
    let f = r.get("active-set");
    assert_eq!((f.name.as_str(), f.status.as_str()), ("toolchains", "ok"));
    assert!(
        f.summary.starts_with("cuda-12.4 (pinned to 12.4 in "),
        "{}",
        f.summary
    );
    let expect = [
        ("FM-01", "torch 2.4.1+cu124 is built for cuda 12.4, matching cuda-12.4 (cuda 12.4.131; policy minor)".to_string()),
        ("FM-02", "no other toolkit in PATH, LD_LIBRARY_PATH, LIBRARY_PATH, CPATH, CMAKE_PREFIX_PATH or the toolkit variables (active: cuda-12.4)".into()),
        ("FM-03", "torch 2.4.1+cu124 has the build this project needs (cu124); torchvision 0.19.1+cu124 agree".into()),
        ("FM-04", "driver 575.57.08 runs CUDA up to 12.9: enough for cuda-12.4 and torch 2.4.1+cu124".into()),
        ("FM-05", format!("torch 2.4.1+cu124 finds NCCL in {}", w.site.join("nvidia/nccl/lib").display())),
        ("FM-06", format!("no CMakeCache.txt in {} or 2 levels below", w.proj.display())),
        ("FM-08", format!("python3 and pip both belong to {}; PYTHONPATH adds no other torch", w.venv.display())),
        ("FM-09", "/dev/shm is 16.0 GiB in this container".into()),
        ("FM-10", "gcc 12.2.0 (gcc on PATH) is within what CUDA 12.4 supports (gcc 6 to 13)".into()),
        ("FM-12", "TORCH_CUDA_ARCH_LIST = 8.0;8.6: cuda-12.4 targets all of them".into()),
        ("FM-13", "all 3 registered toolchains have their compiler and headers".into()),
    ];
    for (id, summary) in expect {
        let f = r.get(id);
        assert_eq!(f.status, "ok", "{id}: {f:?}");
        assert_eq!(f.summary, summary, "{id}");
        assert_eq!(f.hint, None, "{id}");
    }
    // Not applicable here: no ROCm pinned, not a SLURM job.
    assert_eq!(r.get("FM-07").status, "skip");
    assert_eq!(r.get("FM-07").summary, "no ROCm toolchain is active here");
    assert_eq!(
        r.get("FM-11").summary,
        "not in a SLURM job (SLURM_JOB_ID is unset)"
    );
}

#[test]
fn a_pin_that_resolves_to_nothing_is_an_error_and_the_machine_checks_still_run() {
    let w = World::new();
    w.pin("[toolchain]\ncuda = \"12.1\"\n");
    let r = w.doctor();
    assert_eq!(r.code, 1);
    let f = r.get("active-set");
    assert_eq!(f.status, "error");
    assert!(
        f.summary
            .starts_with("cuda-12.1 is not installed: the pin at "),
        "{}",
        f.summary
    );
    assert!(f
        .hint
        .as_deref()
        .unwrap()
        .starts_with("install it with `gpuenv install cuda-12.1`"));
    assert_eq!(r.get("FM-04").status, "ok");
    assert_eq!(r.get("FM-09").status, "ok");
}

#[test]
fn warnings_alone_exit_zero_and_a_missing_dir_is_a_usage_error() {
    let w = healthy();
    write(
        &w.root.join("proc/mounts"),
        "shm /dev/shm tmpfs rw,size=524288k 0 0\n",
    );
    let r = w.doctor();
    assert_eq!(r.get("FM-09").status, "warn");
    assert_eq!(r.code, 0);
    assert_eq!(
        r.summary,
        serde_json::json!({"error": 0, "warn": 1, "ok": 13, "skip": 6})
    );

    let out = w
        .gpuenv()
        .args(["doctor", "--dir", "nowhere"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nowhere is not a directory"));
}

#[test]
fn the_text_report_of_a_mixed_machine() {
    let mut w = healthy();
    let sb_dir = w.sb.dir.path().to_path_buf();
    write(
        &w.proj.join("build/CMakeCache.txt"),
        &captured("cmakecache-cpu-build.txt"),
    );
    write(
        &w.root.join("proc/mounts"),
        "shm /dev/shm tmpfs rw,size=65536k 0 0\n",
    );
    fs::remove_dir_all(w.site.join("nvidia")).unwrap();
    let path = format!("/usr/local/cuda-11.3/bin:{}", w.vars["PATH"]);
    w.set("PATH", &path);
    let out = w.gpuenv().args(["doctor", "--dir", "."]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let text = text.replace(&sb_dir.display().to_string(), "[SANDBOX]");
    insta::assert_snapshot!(text);
}

#[test]
fn fm13_a_linked_toolkit_whose_root_was_removed_is_an_error_where_it_is_pinned() {
    let w = healthy();
    fs::remove_dir_all(w.sb.path("opt/cuda-12.4")).unwrap();
    let r = w.doctor();
    assert_eq!(r.code, 1, "the pinned toolkit is gone");
    let f = r.get("FM-13");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("broken-toolchain", "error")
    );
    assert_eq!(
        f.summary,
        format!(
            "the root of cuda-12.4, {}, is gone",
            w.sb.path("opt/cuda-12.4").display()
        )
    );
    let hint = f.hint.as_deref().unwrap();
    assert!(hint.contains("`gpuenv unlink cuda-12.4`"), "{hint}");
    // Said once: the active set names what is active, not what is broken about it.
    assert_eq!(r.get("active-set").status, "ok");
}

#[test]
fn fm13_a_toolkit_that_lost_its_header_warns_when_nothing_here_uses_it() {
    let w = healthy();
    let header =
        w.sb.path("opt/cuda-11.8/targets/x86_64-linux/include/cuda_runtime.h");
    fs::remove_file(&header).unwrap();
    let r = w.doctor();
    assert_eq!(r.code, 0, "the project is pinned to cuda-12.4");
    let f = r.get("FM-13");
    assert_eq!(f.status, "warn");
    assert!(
        f.summary.starts_with("cuda-11.8 is broken: ")
            && f.summary.ends_with("cuda_runtime.h is missing"),
        "{}",
        f.summary
    );
    assert!(
        f.hint
            .as_deref()
            .unwrap()
            .ends_with("or forget the toolchain with `gpuenv unlink cuda-11.8`"),
        "{:?}",
        f.hint
    );
}
