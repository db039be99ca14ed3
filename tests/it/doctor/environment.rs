//! The checks of the shell environment and the Python stack: FM-01 torch vs nvcc, FM-02
//! leftovers, FM-03 CPU-only torch, FM-05 NCCL, FM-08 python/pip, FM-11 SLURM.

use fs_err as fs;

use super::world::*;
use crate::common::*;

#[test]
fn fm01_torch_built_for_another_cuda_than_the_pinned_toolkit() {
    let mut w = World::new();
    w.pin("[toolchain]\ncuda = \"11.8\"\n");
    w.activate();
    let r = w.doctor();
    assert_eq!(r.code, 1);
    let f = r.get("FM-01");
    assert_eq!(f.name, "torch-cuda-mismatch");
    assert_eq!(f.status, "error");
    assert_eq!(
        f.summary,
        "torch 2.4.1+cu124 is built for cuda 12.4, but the active nvcc is cuda-11.8 (cuda 11.8.89)"
    );
    assert!(
        f.details
            .iter()
            .any(|d| d.starts_with("policy: minor (the default)")),
        "{:?}",
        f.details
    );
    let hint = f.hint.as_deref().unwrap();
    // cuda-12.4 is registered here: the doctor names it rather than an install.
    assert!(
        hint.contains("use cuda-12.4, the registered toolkit torch was built for: `gpuenv use cuda-12.4` in this shell, `gpuenv pin cuda-12.4` for this project"),
        "{hint}"
    );
    assert!(!hint.contains("gpuenv install"), "{hint}");
    assert!(
        hint.contains(
            "pip install torch==2.4.1+cu118 --index-url https://download.pytorch.org/whl/cu118"
        ),
        "{hint}"
    );
}

#[test]
fn fm01_with_nothing_pinned_the_nvcc_torch_would_use_is_compared() {
    let mut w = World::new();
    w.unpin();
    let old = w.sb.path("opt/cuda-11.8");
    w.set("CUDA_HOME", &old.display().to_string());
    let f = w.check("FM-01");
    assert_eq!(f.status, "error");
    assert_eq!(
        f.summary,
        format!("torch 2.4.1+cu124 is built for cuda 12.4, but $CUDA_HOME/bin/nvcc ({}/bin/nvcc) is cuda 11.8.89, and no gpuenv toolchain is active to say otherwise", old.display())
    );
    assert_eq!(
        f.hint.as_deref(),
        Some("pin the toolkit torch was built for: `gpuenv pin cuda-12.4` (or `cuda = \"torch\"` under [toolchain] in gpuenv.toml), then eval \"$(gpuenv env)\"")
    );

    w.set(
        "CUDA_HOME",
        &w.sb.path("opt/cuda-12.4").display().to_string(),
    );
    let f = w.check("FM-01");
    assert_eq!(f.status, "ok");
    assert_eq!(
        f.summary,
        "torch 2.4.1+cu124 is built for cuda 12.4, matching $CUDA_HOME/bin/nvcc (cuda 12.4.131; no gpuenv toolchain is active)"
    );
}

#[test]
fn fm01_a_pytorch_nvcc_outside_gpuenv_is_named_and_a_wrapped_proxy_is_fine() {
    let mut w = healthy();
    // An nvcc of the right version, but not gpuenv's: torch would skip the guard and pin.
    let elsewhere = w.sb.path("opt/cuda-12.4/bin/nvcc");
    w.set("PYTORCH_NVCC", &format!("ccache {}", elsewhere.display()));
    let f = w.check("FM-01");
    assert_eq!(f.status, "warn");
    assert!(
        f.summary.starts_with(&format!(
            "PYTORCH_NVCC=ccache {} runs an nvcc that is not gpuenv's",
            elsewhere.display()
        )),
        "{}",
        f.summary
    );
    assert!(f.hint.as_deref().unwrap().contains("unset PYTORCH_NVCC"));

    // torch's own way of adding ccache, in front of the nvcc gpuenv puts first on PATH or
    // of the view's: nothing is bypassed.
    for value in [
        "ccache nvcc".to_string(),
        format!("ccache {}", w.view("cuda-12.4").join("bin/nvcc").display()),
    ] {
        w.set("PYTORCH_NVCC", &value);
        assert_eq!(w.check("FM-01").status, "ok", "PYTORCH_NVCC={value}");
    }
}

#[test]
fn fm02_leftover_toolkits_in_path_and_cuda_home_elsewhere() {
    let mut w = World::new();
    let old = w.sb.path("opt/cuda-11.8");
    w.set(
        "PATH",
        &format!(
            "/usr/local/cuda-11.3/bin:{}/bin:{}",
            old.display(),
            w.vars["PATH"]
        ),
    )
    .set("CUDA_HOME", &old.display().to_string())
    .set("LD_LIBRARY_PATH", &format!("{}/lib64", old.display()));
    let r = w.doctor();
    let f = r.get("FM-02");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("stale-path", "error")
    );
    assert_eq!(
        f.summary,
        "PATH has /usr/local/cuda-11.3/bin, of another toolkit (and 3 more problems)"
    );
    assert_eq!(
        f.details,
        [
            "PATH has /usr/local/cuda-11.3/bin, of another toolkit".to_string(),
            format!("PATH has {}/bin, of cuda-11.8, which is not active here", old.display()),
            format!("LD_LIBRARY_PATH has {}/lib64, of cuda-11.8, which is not active here", old.display()),
            format!("CUDA_HOME={} (cuda-11.8) is not the active cuda-12.4: builds that use $CUDA_HOME/bin/nvcc get another toolkit", old.display()),
        ]
    );
    assert!(f
        .hint
        .as_deref()
        .unwrap()
        .starts_with("eval \"$(gpuenv env)\""));
    // The fix: activating removes every one of them.
    w.activate();
    assert_eq!(w.doctor().get("FM-02").status, "ok");
}

#[test]
fn fm02_lib_instead_of_lib64_and_cuda_home_disagreeing_with_path_without_gpuenv() {
    let mut w = healthy();
    let lib = w.view("cuda-12.4").join("lib");
    let libs = format!("{}:{}", w.vars["LD_LIBRARY_PATH"], lib.display());
    w.set("LD_LIBRARY_PATH", &libs);
    let f = &w.check("FM-02");
    assert_eq!((f.id.as_str(), f.status.as_str()), ("FM-02", "warn"));
    assert_eq!(
        f.summary,
        format!(
            "LD_LIBRARY_PATH has {}, but cuda-12.4 keeps its libraries in {} (lib vs lib64)",
            lib.display(),
            w.view("cuda-12.4").join("lib64").display()
        )
    );

    // Nothing pinned: CUDA_HOME and the nvcc on PATH must still agree.
    let mut w = World::new();
    w.unpin();
    let (a, b) = (w.sb.path("opt/cuda-11.8"), w.sb.path("opt/cuda-12.4"));
    w.prepend_path(&b.join("bin"))
        .set("CUDA_HOME", &a.display().to_string());
    let f = w.check("FM-02");
    assert_eq!(f.status, "error");
    assert_eq!(
        f.summary,
        format!("CUDA_HOME={}, but the nvcc on PATH is {}/bin/nvcc: builds using $CUDA_HOME and builds using PATH get different toolkits", a.display(), b.display())
    );
    assert!(f
        .hint
        .unwrap()
        .starts_with(&format!("export CUDA_HOME={} to match PATH", b.display())));
}

#[test]
fn fm02_cuda_home_at_the_real_root_skips_the_guard() {
    let mut w = healthy();
    let root = w.sb.path("opt/cuda-12.4");
    w.set("CUDA_HOME", &root.display().to_string());
    let f = w.check("FM-02");
    assert_eq!(f.status, "warn");
    assert_eq!(
        f.summary,
        format!(
            "CUDA_HOME={} is cuda-12.4's real root, not its view {}: builds that use $CUDA_HOME/bin/nvcc skip gpuenv's torch guard",
            root.display(),
            w.view("cuda-12.4").display()
        )
    );
    assert!(f.hint.unwrap().starts_with("eval \"$(gpuenv env)\""));
}

#[test]
fn fm03_cpu_only_torch_in_a_cuda_project() {
    let mut w = World::new();
    torch_package(&w.site, "2.4.1+cpu", None, None);
    w.activate();
    let r = w.doctor();
    let f = r.get("FM-03");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("cpu-only-torch", "error")
    );
    assert!(
        f.summary.starts_with("torch 2.4.1+cpu is CPU-only (version.py: cuda = None), but cuda-12.4 is active here (pinned to 12.4 in "),
        "{}",
        f.summary
    );
    assert_eq!(
        f.details[1],
        "torchvision 0.19.1+cu124 is a cu124 build, but torch 2.4.1+cpu is cpu"
    );
    assert_eq!(
        f.hint.as_deref().unwrap().lines().next().unwrap(),
        "pip install --force-reinstall torch torchvision torchaudio --index-url https://download.pytorch.org/whl/cu124"
    );
    assert_eq!(
        r.get("FM-01").status,
        "skip",
        "a CPU torch cannot mismatch a compiler"
    );
}

#[test]
fn fm03_torchvision_swapped_for_a_cpu_build() {
    let w = healthy();
    write(
        &w.site.join("torchvision/version.py"),
        "__version__ = '0.19.1+cpu'\n",
    );
    let f = w.check("FM-03");
    assert_eq!(f.status, "error");
    assert_eq!(
        f.summary,
        "torchvision 0.19.1+cpu is a cpu build, but torch 2.4.1+cu124 is cu124"
    );
    assert_eq!(
        f.hint.as_deref(),
        Some("reinstall them together from one index: pip install --force-reinstall torch==2.4.1 torchvision torchaudio --index-url https://download.pytorch.org/whl/cu124")
    );
}

#[test]
fn fm05_no_nccl_for_a_cuda_torch_and_nccl_variables_that_name_nothing() {
    let mut w = healthy();
    fs::remove_dir_all(w.site.join("nvidia")).unwrap();
    let f = w.check("FM-05");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("nccl-missing", "warn")
    );
    assert!(
        f.summary.starts_with(
            "torch 2.4.1+cu124 is a cuda build, but no libnccl.so is anywhere it looks"
        ),
        "{}",
        f.summary
    );
    assert!(
        f.details.contains(&"no ldconfig to ask".to_string()),
        "{:?}",
        f.details
    );
    assert_eq!(
        f.hint.as_deref().unwrap().lines().next(),
        Some("pip install nvidia-nccl-cu12")
    );

    // A cluster node's system NCCL, found through ldconfig.
    write_exe(
        &w.stubs.join("ldconfig"),
        &printing("2 libs found in cache `/etc/ld.so.cache'\n\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2\n\tlibm.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libm.so.6"),
    );
    let f = w.check("FM-05");
    assert_eq!(f.status, "ok");
    assert_eq!(
        f.summary,
        "torch 2.4.1+cu124 finds NCCL in /usr/lib/x86_64-linux-gnu/libnccl.so.2 (ldconfig -p)"
    );

    w.set("NCCL_LIB_DIR", "/opt/nccl-2.18/lib");
    let f = w.check("FM-05");
    assert_eq!(f.status, "error");
    assert_eq!(
        f.summary,
        "NCCL_LIB_DIR=/opt/nccl-2.18/lib has no libnccl.so"
    );
    assert!(f
        .hint
        .unwrap()
        .starts_with("eval \"$(gpuenv env)\" sets NCCL_ROOT, NCCL_INCLUDE_DIR and NCCL_LIB_DIR"));
}

#[test]
fn fm08_pip_of_another_python_and_a_torch_on_pythonpath() {
    let mut w = healthy();
    let usr = w.sb.path("usr/bin");
    write_exe(&usr.join("pip"), "#!/usr/bin/python3\n");
    let old = torch_package(
        &w.sb.path("old-env/site-packages"),
        "1.8.0+cu102",
        Some("10.2"),
        None,
    );
    w.prepend_path(&usr)
        .set("PYTHONPATH", &old.display().to_string());
    let f = w.check("FM-08");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("python-mismatch", "warn")
    );
    assert_eq!(
        f.summary,
        format!("pip ({}/pip) installs into /usr, but python3 ({}/bin/python3) runs from {}: what pip installs is not what python imports (and 1 more problem)", usr.display(), w.venv.display(), w.venv.display())
    );
    assert_eq!(
        f.details[1],
        format!(
            "PYTHONPATH has {}, whose torch 1.8.0+cu102 comes before anything {} installs",
            old.display(),
            w.venv.display()
        )
    );
    assert_eq!(
        f.hint.as_deref().unwrap().lines().collect::<Vec<_>>(),
        [
            "use `python3 -m pip install …`, which installs where python3 imports from (or activate one environment for both)".to_string(),
            format!("unset PYTHONPATH (or drop {} from it) so python3 imports its own torch", old.display()),
        ]
    );
}

#[test]
fn fm11_a_slurm_job_without_the_toolchain_and_with_export_none() {
    let mut w = World::new();
    w.set("SLURM_JOB_ID", "4242")
        .set("SLURMD_NODENAME", "gpu017");
    let f = w.check("FM-11");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("cluster-node", "error")
    );
    assert_eq!(
        f.summary,
        format!(
            "this job's environment lacks cuda-12.4: PATH has neither {}/bin nor {}, so tools come from whatever gpu017 has",
            w.view("cuda-12.4").display(),
            w.sb.gpuenv_home().join("shims").display()
        )
    );
    assert_eq!(
        f.hint.as_deref(),
        Some("in the batch script, before srun: eval \"$(gpuenv env)\"; or run each step through gpuenv: srun gpuenv run cuda-12.4 -- <command>")
    );

    w.activate();
    let f = w.check("FM-11");
    assert_eq!(f.status, "ok");
    assert_eq!(
        f.summary,
        "SLURM job 4242: the environment carries cuda-12.4 and srun steps inherit it"
    );

    w.set("SLURM_EXPORT_ENV", "NONE");
    let f = w.check("FM-11");
    assert_eq!(f.status, "warn");
    assert_eq!(
        f.summary,
        "SLURM_EXPORT_ENV=NONE: srun steps start without this environment, dropping cuda-12.4"
    );
}
