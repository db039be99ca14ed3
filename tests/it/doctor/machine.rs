//! The checks of the machine and the build: FM-04 driver, FM-06 CMake cache, FM-07 ROCm,
//! FM-09 /dev/shm, FM-10 host compiler, FM-12 arch list.

use fs_err as fs;

use super::world::*;
use crate::common::*;

#[test]
fn fm04_driver_too_old_from_proc_or_from_nvidia_smi() {
    let w = healthy();
    write(
        &w.root.join("proc/driver/nvidia/version"),
        &captured("proc-driver-nvidia-version-proprietary.txt"),
    );
    let f = w.check("FM-04");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("driver-too-old", "error")
    );
    assert_eq!(
        f.summary,
        "driver 515.76 is too old for cuda-12.4: CUDA 12.4 needs driver >= 550.54.14 (>= 525.60.13 at the very least) (and 1 more problem)"
    );
    assert!(f
        .details
        .contains(&"driver 515.76 from /proc/driver/nvidia/version".to_string()));
    let hint = f.hint.unwrap();
    assert!(
        hint.starts_with("upgrade the NVIDIA driver to >= 550.54.14 (CUDA 12.4)"),
        "{hint}"
    );
    assert!(
        hint.contains("`gpuenv install cuda-11.7` and `gpuenv pin cuda-11.7`"),
        "{hint}"
    );

    // No /proc file (a container without it): nvidia-smi's banner.
    fs::remove_file(w.root.join("proc/driver/nvidia/version")).unwrap();
    write_exe(
        &w.stubs.join("nvidia-smi"),
        &printing(&captured("nvidia-smi-header.txt")),
    );
    let f = w.check("FM-04");
    assert_eq!(f.status, "error");
    assert!(
        f.summary
            .starts_with("driver 450.119.03 is too old for cuda-12.4"),
        "{}",
        f.summary
    );
    assert!(f
        .details
        .contains(&"nvidia-smi reports CUDA Version 11.0".to_string()));

    fs::remove_file(w.stubs.join("nvidia-smi")).unwrap();
    let f = w.check("FM-04");
    assert_eq!(f.status, "skip");
    assert_eq!(
        f.summary,
        "no NVIDIA driver on this machine (no /proc/driver/nvidia/version, no nvidia-smi on PATH)"
    );
}

#[test]
fn fm04_a_driver_below_the_release_but_above_the_major_floor_warns() {
    let w = healthy();
    write(
        &w.root.join("proc/driver/nvidia/version"),
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n",
    );
    let f = w.check("FM-04");
    assert_eq!(f.status, "warn");
    assert!(f.summary.starts_with("driver 535.104.05 is older than CUDA 12.4's 550.54.14: cuda-12.4 runs only under minor version compatibility"), "{}", f.summary);
}

#[test]
fn fm06_a_cpu_build_cache_left_in_build() {
    let w = healthy();
    let build = w.proj.join("build");
    write(
        &build.join("CMakeCache.txt"),
        &captured("cmakecache-cpu-build.txt"),
    );
    let r = w.doctor();
    assert_eq!(r.code, 1);
    let f = r.get("FM-06");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("stale-cmake-cache", "error")
    );
    assert_eq!(
        f.summary,
        format!(
            "{}/CMakeCache.txt was configured with USE_CUDA=OFF, but cuda-12.4 is active",
            build.display()
        )
    );
    assert_eq!(
        f.hint.as_deref(),
        Some(
            format!(
                "rm -rf {}   (then rebuild: CMake configures afresh for the active toolchain)",
                build.display()
            )
            .as_str()
        )
    );
}

#[test]
fn fm06_a_cache_naming_another_toolkit_fails_and_one_naming_the_view_passes() {
    let w = healthy();
    let cache = w.proj.join("ext/build/CMakeCache.txt");
    write(
        &cache,
        "USE_CUDA:BOOL=ON\nCUDA_TOOLKIT_ROOT_DIR:PATH=/usr/local/cuda-11.3\n",
    );
    let f = w.check("FM-06");
    assert_eq!(f.status, "error");
    // The proxy's verdict and wording: the doctor reads the tree as its stale check does.
    let build = cache.parent().unwrap();
    assert!(
        f.summary.starts_with(&format!(
            "the build directory {} was configured with the toolkit at /usr/local/cuda-11.3 (read from {}:2), but cuda-12.4 (12.4.131) is active here",
            build.display(),
            cache.display()
        )),
        "{}",
        f.summary
    );
    // Without CMAKE_HOME_DIRECTORY no `cmake --fresh` is guessed.
    assert_eq!(
        f.hint.as_deref(),
        Some(
            format!(
                "configure it afresh for cuda-12.4: `rm -rf {}` and configure again",
                build.display()
            )
            .as_str()
        )
    );

    // Configured through another toolkit's view (gpuenv's CUDACXX): that view's nvcc is the
    // proxy too, but its path names its toolchain. CMake's compiler file is read first.
    let other = w.view("cuda-13.0");
    write(
        &cache,
        &format!("CMAKE_HOME_DIRECTORY:INTERNAL={}/ext\n", w.proj.display()),
    );
    write(
        &build.join("CMakeFiles/3.25.1/CMakeCUDACompiler.cmake"),
        &format!("set(CMAKE_CUDA_COMPILER \"{}/bin/nvcc\")\nset(CMAKE_CUDA_COMPILER_VERSION \"13.0.88\")\n", other.display()),
    );
    let f = w.check("FM-06");
    assert_eq!(f.status, "error", "{}", f.summary);
    assert!(
        f.summary.contains(&format!(
            "configured with CUDA 13.0.88, nvcc {}/bin/nvcc (read from",
            other.display()
        )),
        "{}",
        f.summary
    );
    assert_eq!(
        f.hint.as_deref(),
        Some(format!("configure it afresh for cuda-12.4: `cmake --fresh -S {}/ext -B {}` (with your other options), or `rm -rf {}` and configure again", w.proj.display(), build.display(), build.display()).as_str())
    );
    fs_err::remove_dir_all(build.join("CMakeFiles")).unwrap();

    let view = w.view("cuda-12.4");
    write(
        &cache,
        &format!("USE_CUDA:BOOL=ON\nCMAKE_CUDA_COMPILER:FILEPATH={}/bin/nvcc\nCUDAToolkit_ROOT:PATH={}\n", view.display(), view.display()),
    );
    let f = w.check("FM-06");
    assert_eq!(f.status, "ok");
    assert_eq!(
        f.summary,
        format!(
            "1 CMakeCache.txt under {} agree with the active toolchains",
            w.proj.display()
        )
    );
}

#[test]
fn fm07_rocm_arch_pin_not_covering_the_gpus_and_headers_out_of_reach() {
    let mut w = rocm_world("gfx942");
    let f = w.check("FM-07");
    assert_eq!((f.name.as_str(), f.status.as_str()), ("rocm-env", "error"));
    assert_eq!(
        f.summary,
        "hip/hip_runtime.h is not reachable: no CPATH entry, HIP_PATH or ROCM_PATH leads to it (\"fatal error: hip/hip_runtime.h: No such file or directory\") (and 1 more problem)"
    );
    w.activate();
    let f = w.check("FM-07");
    assert_eq!(f.status, "error");
    assert_eq!(
        f.summary,
        "PYTORCH_ROCM_ARCH = gfx942 does not cover this machine's gfx90a (rocminfo): its kernels fail with \"invalid device function\""
    );
    assert_eq!(f.hint.as_deref(), Some("gpuenv pin --arch gfx942,gfx90a"));
}

#[test]
fn fm07_an_activated_rocm_project_matching_rocminfo_passes() {
    let mut w = rocm_world("gfx90a");
    w.activate();
    let r = w.doctor();
    let f = r.get("FM-07");
    assert_eq!(f.status, "ok");
    assert_eq!(
        f.summary,
        "hip/hip_runtime.h of rocm-6.2.4 is reachable; PYTORCH_ROCM_ARCH covers gfx90a"
    );
    assert!(
        f.details.contains(&"rocminfo: gfx90a".to_string()),
        "{:?}",
        f.details
    );
}

#[test]
fn fm09_docker_default_shm_is_an_error_and_half_a_gib_a_warning() {
    let w = healthy();
    let mounts = |size: &str| {
        format!("shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size={size} 0 0\n")
    };
    write(&w.root.join("proc/mounts"), &mounts("65536k"));
    let f = w.check("FM-09");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("shm-too-small", "error")
    );
    assert_eq!(f.summary, "/dev/shm is only 64 MiB in this container: NCCL init and DataLoader workers hang or fail (Docker's default is 64 MiB)");
    assert_eq!(f.details, ["in a container: /.dockerenv exists"]);
    assert!(f
        .hint
        .unwrap()
        .starts_with("start the container with --shm-size=16g (or --ipc=host)"));

    write(&w.root.join("proc/mounts"), &mounts("512m"));
    assert_eq!(w.doctor().get("FM-09").status, "warn");

    fs::remove_file(w.root.join(".dockerenv")).unwrap();
    assert_eq!(
        w.doctor().get("FM-09").status,
        "skip",
        "outside a container /dev/shm is the host's"
    );
}

#[test]
fn fm10_without_g_plus_plus_nvcc_cannot_compile_and_doctor_names_the_install_command() {
    let mut w = World::new();
    fs_err::remove_file(w.stubs.join("g++")).unwrap();
    write(
        &w.root.join("etc/os-release"),
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n",
    );
    w.activate();
    let f = w.check("FM-10");
    assert_eq!(f.status, "error");
    assert_eq!(
        f.summary,
        "gcc is on PATH but g++ is not: cuda-12.4's nvcc has no host compiler and stops with \"Failed to preprocess host compiler properties\""
    );
    let hint = f.hint.unwrap();
    assert!(
        hint.starts_with("install g++: sudo apt-get install g++"),
        "{hint}"
    );

    // No compiler at all, on a distribution gpuenv does not name: every way is offered.
    fs_err::remove_file(w.stubs.join("gcc")).unwrap();
    fs_err::remove_file(w.root.join("etc/os-release")).unwrap();
    let f = w.check("FM-10");
    assert_eq!(f.status, "error");
    assert!(
        f.summary.starts_with("neither g++ nor gcc is on PATH"),
        "{}",
        f.summary
    );
    assert!(f.hint.unwrap().contains("sudo dnf install gcc-c++"));

    // The report links the finding to its section of docs/failure-modes.md.
    let out = w.gpuenv().args(["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("see: docs/failure-modes.md#fm-10-host-compiler"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn fm10_gcc_12_with_cuda_11_8_and_the_ccbin_that_fixes_it() {
    let mut w = World::new();
    w.pin("[toolchain]\ncuda = \"11.8\"\n");
    w.activate();
    let f = w.check("FM-10");
    assert_eq!(
        (f.name.as_str(), f.status.as_str()),
        ("host-compiler", "error")
    );
    assert_eq!(
        f.summary,
        "gcc 12.2.0 is newer than cuda-11.8 supports (gcc <= 11): nvcc stops with \"unsupported GNU version! gcc versions later than 11 are not supported!\""
    );
    assert_eq!(
        f.hint.as_deref().unwrap().lines().collect::<Vec<_>>(),
        [
            "install g++-11 and build with it: export NVCC_PREPEND_FLAGS='-ccbin g++-11' (CMake: CUDAHOSTCXX=g++-11)",
            "or use a toolkit that supports gcc 12: `gpuenv install cuda-12.0` and `gpuenv pin cuda-12.0`",
        ]
    );

    write_exe(
        &w.stubs.join("g++-11"),
        &printing("g++-11 (Debian 11.3.0-12) 11.3.0"),
    );
    w.set("NVCC_PREPEND_FLAGS", "-ccbin g++-11");
    let f = w.check("FM-10");
    assert_eq!(f.status, "ok");
    assert_eq!(f.summary, "g++-11 11.3.0 (-ccbin in NVCC_PREPEND_FLAGS) is within what CUDA 11.8 supports (gcc <= 11)");

    // A -ccbin that names nothing fails every nvcc call.
    w.set("NVCC_PREPEND_FLAGS", "-ccbin g++-10");
    let f = w.check("FM-10");
    assert_eq!(f.status, "error");
    assert_eq!(
        f.summary,
        "-ccbin in NVCC_PREPEND_FLAGS names g++-10, which does not exist or is not on PATH"
    );
}

#[test]
fn fm10_names_the_g_plus_plus_n_gpuenv_passes_and_a_pinned_one_that_is_missing() {
    let mut w = World::new();
    w.pin("[toolchain]\ncuda = \"11.8\"\n");
    w.activate();
    let gcc12 = printing("g++ (Debian 12.2.0-14+deb12u1) 12.2.0");
    write_exe(&w.stubs.join("g++"), &gcc12);
    write_exe(
        &w.stubs.join("g++-11"),
        &printing("g++-11 (Debian 11.3.0-12) 11.3.0"),
    );
    let f = w.check("FM-10");
    assert_eq!(f.status, "ok", "{}", f.summary);
    let g11 = w.stubs.join("g++-11");
    assert_eq!(
        f.summary,
        format!("g++-11 11.3.0 (passed by gpuenv as -ccbin: g++ is gcc 12.2.0, newer than cuda-11.8 accepts (gcc <= 11); g++-11 is the newest it accepts on PATH) is within what CUDA 11.8 supports (gcc <= 11)")
    );
    assert!(g11.exists());

    w.pin("[toolchain]\ncuda = \"11.8\"\nhost-compiler = \"g++-10\"\n");
    w.trust();
    let f = w.check("FM-10");
    assert_eq!(f.status, "error");
    assert!(
        f.summary
            .contains("host-compiler = \"g++-10\" does not exist or is not on PATH"),
        "{}",
        f.summary
    );
    assert!(f.hint.unwrap().contains("apt-get install g++-10"));
}

#[test]
fn fm12_an_arch_the_toolkit_dropped_and_no_arch_list_without_a_gpu() {
    let mut w = World::new();
    w.pin("[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"3.5\", \"8.6\"]\n");
    w.activate();
    let f = w.check("FM-12");
    assert_eq!((f.name.as_str(), f.status.as_str()), ("arch-list", "error"));
    assert_eq!(f.summary, "cuda-12.4 cannot target 3.5 (sm_35), named in TORCH_CUDA_ARCH_LIST: CUDA 12.4 targets sm_50 to sm_90");
    assert_eq!(
        f.hint.as_deref().unwrap().lines().collect::<Vec<_>>(),
        [
            "use a toolkit that targets sm_35: `gpuenv install cuda-11.8` and `gpuenv pin cuda-11.8`",
            "or drop what cuda-12.4 cannot build: `gpuenv pin --arch 8.6` (and unset TORCH_CUDA_ARCH_LIST if you set it by hand)",
        ]
    );
    // sm_30 needs CUDA 10.2, which no source of `gpuenv install` has: the hint links one.
    w.pin("[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"3.0\", \"8.6\"]\n");
    w.activate();
    let f = w.check("FM-12");
    let hint = f.hint.as_deref().unwrap();
    assert!(
        hint.starts_with("use a toolkit that targets sm_30: `gpuenv link cuda-10.2 <path>` (no source of `gpuenv install` has CUDA 10.2) and `gpuenv pin cuda-10.2`"),
        "{hint}"
    );

    let mut w = World::new();
    w.pin("[toolchain]\ncuda = \"12.4\"\n");
    fs::remove_file(w.root.join("dev/nvidia0")).unwrap();
    w.activate();
    let f = w.check("FM-12");
    assert_eq!(f.status, "warn");
    assert_eq!(f.summary, "TORCH_CUDA_ARCH_LIST is unset and no GPU is visible: torch.utils.cpp_extension cannot pick archs and fails with an IndexError");
    assert!(f
        .hint
        .unwrap()
        .contains("gpuenv pin --arch 8.0,8.6,9.0+PTX"));
}

#[test]
fn fm12_suffixes_and_named_archs_are_checked_against_the_toolkit() {
    // `9.0a` needs CUDA 12.0 although 11.8 has sm_90.
    let mut w = World::new();
    w.pin("[toolchain]\ncuda = \"11.8\"\n");
    w.activate();
    w.set("TORCH_CUDA_ARCH_LIST", "8.0;9.0a");
    let f = w.check("FM-12");
    assert_eq!(f.status, "error");
    assert_eq!(f.summary, "cuda-11.8 cannot target 9.0a (sm_90a), named in TORCH_CUDA_ARCH_LIST: arch-specific (`a`) targets need CUDA 12.0 or newer");
    assert_eq!(
        f.hint.as_deref().unwrap().lines().collect::<Vec<_>>(),
        [
            "use a toolkit that targets sm_90a: `gpuenv install cuda-12.0` and `gpuenv pin cuda-12.0`",
            "or drop what cuda-11.8 cannot build: `gpuenv pin --arch 8.0` (and unset TORCH_CUDA_ARCH_LIST if you set it by hand)",
        ]
    );

    // PyTorch's Blackwell is sm_100, sm_103, sm_120 and sm_121, none of which 12.4 builds.
    let mut w = healthy();
    w.set("TORCH_CUDA_ARCH_LIST", "Hopper Blackwell");
    let f = w.check("FM-12");
    assert_eq!(f.status, "error");
    assert_eq!(f.summary, "cuda-12.4 cannot target 10.0 (sm_100, from Blackwell), named in TORCH_CUDA_ARCH_LIST: CUDA 12.4 targets sm_50 to sm_90 (and 3 more problems)");
    assert!(
        f.details
            .iter()
            .any(|d| d.starts_with("cuda-12.4 cannot target 12.1+PTX (sm_121, from Blackwell)")),
        "{:?}",
        f.details
    );
    let hint = f.hint.unwrap();
    assert!(hint.contains("`gpuenv install cuda-12.8`"), "{hint}");
    assert!(hint.contains("`gpuenv pin --arch 9.0+PTX`"), "{hint}");

    // A name that expands to what the toolkit builds passes, shown expanded.
    w.set("TORCH_CUDA_ARCH_LIST", "Ampere;Hopper");
    let f = w.check("FM-12");
    assert_eq!(f.status, "ok", "{}", f.summary);
    assert_eq!(
        f.summary,
        "TORCH_CUDA_ARCH_LIST = 8.0;8.6+PTX;9.0+PTX: cuda-12.4 targets all of them"
    );

    // PyTorch does not split on commas: "Unknown CUDA arch (8.0,8.6)".
    w.set("TORCH_CUDA_ARCH_LIST", "8.0,8.6");
    let f = w.check("FM-12");
    assert_eq!(f.status, "warn");
    assert!(
        f.summary
            .starts_with("TORCH_CUDA_ARCH_LIST has `8.0,8.6`, which is not an arch PyTorch takes"),
        "{}",
        f.summary
    );
    assert!(f
        .hint
        .unwrap()
        .contains("separate entries with `;` or spaces"));
}
