//! The run-time checks: FM-14 a directory on LD_LIBRARY_PATH shadowing the venv's NVIDIA
//! wheels, FM-15 a forward-compatibility libcuda against the kernel driver, FM-16 the
//! installed torch's own kernels against the GPUs (the real torch from the index, its real
//! 520 MB libtorch_cuda.so, and an nvidia-smi that names the GPU).

use std::os::unix::fs::symlink;

use super::world::*;
use crate::common::real::torch_venv;
use crate::common::*;

/// A forward-compatibility dir as CUDA installs ship it: `libcuda.so.1` -> the versioned file.
fn compat_dir(w: &World, version: &str) -> std::path::PathBuf {
    let dir = w.sb.path(&format!("usr/local/cuda-13.4/compat-{version}"));
    write(&dir.join(format!("libcuda.so.{version}")), "");
    symlink(format!("libcuda.so.{version}"), dir.join("libcuda.so.1")).unwrap();
    dir
}

#[test]
fn fm15_an_older_compat_libcuda_ahead_of_the_driver_is_an_error_a_newer_one_in_effect() {
    // The kernel driver of the world is 575.57.08.
    let mut w = healthy();
    let old = compat_dir(&w, "535.54.03");
    let lp = format!("{}:{}", old.display(), w.vars["LD_LIBRARY_PATH"]);
    w.set("LD_LIBRARY_PATH", &lp);
    let r = w.doctor();
    let f = r.get("FM-15");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("driver-compat", "error")
    );
    assert!(
        f.summary.starts_with(&format!(
            "the forward-compatibility libcuda 535.54.03 in {} is older than the kernel driver 575.57.08",
            old.display()
        )),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("error 803"), "{}", f.summary);
    assert!(
        f.hint
            .as_deref()
            .unwrap()
            .starts_with(&format!("remove {} from LD_LIBRARY_PATH", old.display())),
        "{:?}",
        f.hint
    );
    assert_eq!(r.code, 1);

    let new = compat_dir(&w, "580.65.06");
    w.set("LD_LIBRARY_PATH", &new.display().to_string());
    let f = w.check("FM-15");
    assert_eq!(f.status, "ok");
    assert!(
        f.summary.starts_with(&format!(
            "forward compatibility in effect: libcuda 580.65.06 from {} on kernel driver 575.57.08",
            new.display()
        )),
        "{}",
        f.summary
    );

    // gpuenv env keeps it where it was, and so the check still sees it.
    w.activate();
    let lp = &w.vars["LD_LIBRARY_PATH"];
    assert!(lp.ends_with(&new.display().to_string()), "{lp}");
    assert_eq!(w.check("FM-15").status, "ok");
}

#[test]
fn fm14_a_dir_on_ld_library_path_holding_a_wheel_library_is_named_with_both_paths() {
    let mut w = healthy();
    assert_eq!(w.check("FM-14").status, "ok");
    let site_lib = w.site.join("nvidia/nccl/lib/libnccl.so.2");
    let theirs = w.sb.path("opt/nccl/lib");
    write(&theirs.join("libnccl.so.2"), "");
    let lp = format!("{}:{}", theirs.display(), w.vars["LD_LIBRARY_PATH"]);
    w.set("LD_LIBRARY_PATH", &lp);
    let f = w.check("FM-14");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("shadowed-libraries", "warn")
    );
    assert_eq!(
        f.summary,
        format!(
            "libnccl.so.2: {} on LD_LIBRARY_PATH shadows the wheel's {}",
            theirs.join("libnccl.so.2").display(),
            site_lib.display()
        )
    );
    assert_eq!(
        f.hint.as_deref(),
        Some(
            format!(
                "remove {} from LD_LIBRARY_PATH (the wheels' libraries find each other without it; linking uses LIBRARY_PATH)",
                theirs.display()
            )
            .as_str()
        )
    );
}

#[test]
fn fm16_the_real_torch_without_a_kernel_for_a_pascal_gpu_is_an_error_naming_an_index() {
    let Some(venv) = torch_venv() else { return };
    let mut w = healthy();
    w.set("VIRTUAL_ENV", &venv.display().to_string());
    let path = format!("{}/bin:{}", venv.display(), w.stubs.display());
    w.set("PATH", &path);
    // No GPU listed: nothing to compare.
    assert_eq!(w.check("FM-16").status, "skip");

    write_exe(&w.stubs.join("nvidia-smi"), &printing("6.1"));
    let f = w.check("FM-16");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("torch-without-kernel", "error")
    );
    assert!(
        f.summary.starts_with(
            "torch 2.15.0+cu132 has no kernel for the GPU here of compute capability 6.1 (it carries sm_75"
        ),
        "{}",
        f.summary
    );
    assert!(
        f.summary.contains("no kernel image is available"),
        "{}",
        f.summary
    );
    let hint = f.hint.unwrap();
    // The one chooser picks for the active toolkit (CUDA 12.4 here), as the guard demands.
    assert!(
        hint.starts_with("install a torch built for 6.1 from PyTorch's `cu124` index"),
        "{hint}"
    );

    write_exe(&w.stubs.join("nvidia-smi"), &printing("9.0"));
    let f = w.check("FM-16");
    assert_eq!(f.status, "ok", "{}", f.summary);
    assert!(
        f.summary.ends_with("has kernels for the GPUs here (9.0)"),
        "{}",
        f.summary
    );
}

#[test]
fn fm12_plus_ptx_from_a_toolkit_newer_than_the_driver_is_named_and_a_new_enough_driver_passes() {
    let mut w = World::new();
    let root = cuda_runfile(&w.sb.path("opt/cuda-13.0"), "13.0.2");
    write_exe(
        &root.join("bin/nvcc"),
        &printing(&nvcc_version_text("13.0.2")),
    );
    w.sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    w.pin("[toolchain]\ncuda = \"13.0\"\ncuda-arch = [\"8.0\", \"9.0+PTX\"]\n");
    w.activate();
    // The world's driver is 575.57.08: CUDA 12.9's, PTX ISA 8.8.
    let f = w.check("FM-12");
    assert_eq!(f.status, "warn", "{}", f.summary);
    assert_eq!(
        f.summary,
        "9.0+PTX asks for PTX, and cuda-13.0 writes PTX ISA 9.0, which needs driver 580.65.06 or newer (CUDA 13.0); the driver here is 575.57.08: a GPU that runs only that PTX fails with error 222 (the provided PTX was compiled with an unsupported toolchain)"
    );
    assert!(
        f.hint
            .as_deref()
            .unwrap()
            .contains("`-gencode arch=compute_90,code=sm_90`"),
        "{:?}",
        f.hint
    );
    write(
        &w.root.join("proc/driver/nvidia/version"),
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build\n",
    );
    let f = w.check("FM-12");
    assert_eq!(f.status, "ok", "{}", f.summary);
}

/// torch 2.15.0's CUDA requirement and the part of cuda-toolkit 13.2.2's METADATA it uses,
/// as PyPI ships them, beside an nvJitLink `pip install` of something else left behind.
fn drifted_nvjitlink(w: &World) {
    let put = |dir: &str, meta: &str| write(&w.site.join(dir).join("METADATA"), meta);
    put(
        "torch-2.15.0.dist-info",
        "Metadata-Version: 2.4\nName: torch\nVersion: 2.15.0\nRequires-Dist: filelock\nRequires-Dist: cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.2.2; platform_system == \"Linux\"\nRequires-Dist: nvidia-nccl-cu13==2.30.7; platform_system == \"Linux\"\nRequires-Dist: optree>=0.13.0; extra == \"optree\"\n\nThe description: Requires-Dist: nvidia-fake==1 is not a header.\n",
    );
    put(
        "cuda_toolkit-13.2.2.dist-info",
        "Metadata-Version: 2.4\nName: cuda-toolkit\nVersion: 13.2.2\nProvides-Extra: cufft\nRequires-Dist: nvidia-cufft==12.2.0.57.*; (sys_platform == 'linux' and platform_machine == 'aarch64' or sys_platform == 'linux' and platform_machine == 'x86_64' or sys_platform == 'win32' and platform_machine == 'AMD64') and extra == 'cufft'\nRequires-Dist: nvidia-nvjitlink<14,>=13.2.86; (sys_platform == 'linux' and platform_machine == 'aarch64' or sys_platform == 'linux' and platform_machine == 'x86_64' or sys_platform == 'win32' and platform_machine == 'AMD64') and extra == 'cufft'\nProvides-Extra: cccl\nRequires-Dist: nvidia-cuda-cccl==13.2.86.*; sys_platform == 'linux' and extra == 'cccl'\n",
    );
    put(
        "nvidia_nvjitlink-13.0.88.dist-info",
        "Metadata-Version: 2.1\nName: nvidia-nvjitlink\nVersion: 13.0.88\n",
    );
    put(
        "nvidia_cufft-12.2.0.57.dist-info",
        "Metadata-Version: 2.1\nName: nvidia-cufft\nVersion: 12.2.0.57\n",
    );
    // Not an extra torch asks for: any version will do.
    put(
        "nvidia_cuda_cccl-13.3.5.0.6.dist-info",
        "Metadata-Version: 2.1\nName: nvidia-cuda-cccl\nVersion: 13.3.5.0.6\n",
    );
}

#[test]
fn fm17_an_nvjitlink_older_than_cuda_toolkit_asks_is_named_with_the_install_that_fixes_it() {
    let w = healthy();
    drifted_nvjitlink(&w);
    let f = w.check("FM-17");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("nvidia-wheel-drift", "error"),
        "{}",
        f.summary
    );
    assert_eq!(
        f.summary,
        format!(
            "nvidia-nvjitlink 13.0.88 in {} breaks nvidia-nvjitlink<14,>=13.2.86 (asked by cuda-toolkit 13.2.2, for torch 2.15.0)",
            w.site.display()
        )
    );
    assert_eq!(
        f.hint.as_deref(),
        Some("pip install \"nvidia-nvjitlink<14,>=13.2.86\"")
    );

    // Fixed: nothing to say.
    fs_err::remove_dir_all(w.site.join("nvidia_nvjitlink-13.0.88.dist-info")).unwrap();
    write(
        &w.site.join("nvidia_nvjitlink-13.2.86.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: nvidia-nvjitlink\nVersion: 13.2.86\n",
    );
    assert_eq!(w.check("FM-17").status, "ok");
}

#[test]
fn fm17_the_real_torch_venv_is_consistent() {
    let Some(venv) = torch_venv() else { return };
    let mut w = healthy();
    w.set("VIRTUAL_ENV", &venv.display().to_string());
    let f = w.check("FM-17");
    assert_eq!(f.status, "ok", "{} {:?}", f.summary, f.details);
}
