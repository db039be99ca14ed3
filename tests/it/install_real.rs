//! REAL: installs CUDA 13 from NVIDIA's wheels on the real package index (PyPI, or
//! GPUENV_PYPI_URL / PIP_INDEX_URL), then compiles and links a real kernel through the
//! proxy. Downloads are kept in `$GPUENV_TEST_CACHE/downloads` (default
//! `~/.cache/gpuenv-tests/downloads`), outside the checkout, so reruns fetch nothing.
//! Without the network (or g++) the test is skipped and says so; under CI it fails.

use std::time::Instant;

use crate::common::real::{
    cuda_malloc_answers, index_reachable, real_gpuenv, test_cache, REAL_VARS,
};
use crate::common::*;

fn gpuenv(sb: &Sandbox) -> assert_cmd::Command {
    real_gpuenv(sb)
}

fn run(sb: &Sandbox, args: &[&str]) -> (bool, String, String) {
    let out = gpuenv(sb).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(sb: &Sandbox, args: &[&str]) -> String {
    let (success, stdout, stderr) = run(sb, args);
    assert!(success, "gpuenv {args:?} failed:\n{stderr}");
    stdout + &stderr
}

const KERNEL: &str = r#"#include <cstdio>
#include <cuda_runtime.h>
__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }
int main() {
    float *d = nullptr;
    cudaError_t e = cudaMalloc(&d, 64 * sizeof(float));
    printf("cudaMalloc: %s\n", cudaGetErrorName(e));
    if (e != cudaSuccess) return 1;
    scale<<<1, 64>>>(d, 2.0f);
    return cudaDeviceSynchronize() != cudaSuccess;
}
"#;

#[test]
fn real_cuda_13_from_pypi_compiles_and_links_through_the_proxy() {
    if !have_tool("g++") || !index_reachable() {
        return;
    }
    let sb = Sandbox::new();
    let started = Instant::now();
    let out = ok(
        &sb,
        &[
            "install",
            "cuda-13.0",
            "--source",
            "pypi",
            "--profile",
            "minimal",
        ],
    );
    eprintln!(
        "install took {:.1}s:\n{out}",
        started.elapsed().as_secs_f64()
    );
    let list = ok(&sb, &["list", "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&list).unwrap();
    let name = rows[0]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("cuda-13.0."), "{list}");
    assert_eq!(rows[0]["source"], "installed");
    let root = sb.gpuenv_home().join("toolchains").join(&name);
    for f in [
        "bin/nvcc",
        "bin/ptxas",
        "nvvm/bin/cicc",
        "include/cuda_runtime.h",
        "lib64/libcudart.so",
        "version.json",
    ] {
        assert!(root.join(f).exists(), "{name} lacks {f}");
    }

    let src = sb.path("work");
    write(&src.join("k.cu"), KERNEL);
    let through = |args: &[&str]| {
        let mut all = vec!["run", "cuda-13.0", "--"];
        all.extend_from_slice(args);
        gpuenv(&sb).current_dir(&src).args(&all).output().unwrap()
    };
    let out = through(&["nvcc", "--version"]);
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(version.contains("release 13.0"), "{version}");
    for (args, made) in [
        (&["nvcc", "-c", "k.cu", "-o", "k.o"][..], "k.o"),
        (&["nvcc", "-ptx", "k.cu", "-o", "k.ptx"][..], "k.ptx"),
        (
            &["nvcc", "-cubin", "-arch=sm_90", "k.cu", "-o", "k.cubin"][..],
            "k.cubin",
        ),
        (&["nvcc", "k.cu", "-o", "k", "-lcudart"][..], "k"),
    ] {
        let out = through(args);
        assert!(
            out.status.success(),
            "{args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(src.join(made).is_file(), "{args:?} made no {made}");
    }
    let ptx = fs_err::read_to_string(src.join("k.ptx")).unwrap();
    assert!(ptx.contains(".entry") && ptx.contains("scale"), "{ptx}");
    // Dynamically linked against the toolkit's libcudart.so.13.
    if have_tool("ldd") {
        let out = std::process::Command::new("ldd")
            .arg(src.join("k"))
            .output()
            .unwrap();
        let text = succeeded(&out);
        assert!(text.contains("libcudart.so.13"), "{text}");
    }
    // The program loads the toolkit's cudart and asks it: without a driver the answer is
    // an error saying so (then it exits 1), with a GPU it runs the kernel.
    let out = through(&["./k"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let answers = cuda_malloc_answers();
    assert!(
        answers
            .iter()
            .any(|a| text.trim() == format!("cudaMalloc: {a}")),
        "{text}{}, expected one of {answers:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("running the linked program here: {}", text.trim());

    driver_api_links_against_the_stub(&sb, &root, &src);

    // Uninstall, then reinstall from the cache alone, by name as the uninstall suggests: the
    // kept record says the minimal profile, from the package index.
    ok(&sb, &["uninstall", &name]);
    assert!(!root.exists());
    let started = Instant::now();
    let out = ok(&sb, &["install", &name, "--offline"]);
    assert!(
        out.contains(&format!("the profile minimal that {name} had"))
            && out.contains(&format!("installing {name} from pypi")),
        "{out}"
    );
    eprintln!(
        "offline reinstall from the cache took {:.2}s",
        started.elapsed().as_secs_f64()
    );
    let out = through(&["nvcc", "-c", "k.cu", "-o", "k2.o"]);
    succeeded(&out);
}

/// A program of the driver API (`cuda.h`, `-lcuda`) as NVIDIA's installers let it link on a
/// machine without a driver: against `lib64/stubs/libcuda.so`, which the wheels do not carry
/// and gpuenv makes from the toolkit's cuda.h.
const DRIVER_PROGRAM: &str = r#"#include <cstdio>
#include <cuda.h>
int main() {
    CUresult init = cuInit(0);
    CUdeviceptr p = 0;
    CUresult alloc = cuMemAlloc(&p, 64);
    CUstream s = nullptr;
    cuStreamQuery(s);
    printf("cuInit: %d, cuMemAlloc: %d\n", (int)init, (int)alloc);
    return 0;
}
"#;

fn driver_api_links_against_the_stub(sb: &Sandbox, root: &std::path::Path, src: &std::path::Path) {
    let stub = root.join("lib64/stubs/libcuda.so");
    assert!(stub.is_file(), "no {}", stub.display());
    write(&src.join("d.cu"), DRIVER_PROGRAM);
    let out = gpuenv(sb)
        .current_dir(src)
        .args([
            "run",
            "cuda-13.0",
            "--",
            "nvcc",
            "d.cu",
            "-o",
            "d",
            "-lcuda",
        ])
        .output()
        .unwrap();
    let linked = succeeded(&out);
    assert!(src.join("d").is_file(), "{linked}");
    if !have_tool("readelf") {
        return;
    }
    // It asks for the driver's library by its soname, as a program linked against NVIDIA's
    // stub does; the loader finds the real one at run time.
    let out = std::process::Command::new("readelf")
        .args(["-d", "-W"])
        .arg(src.join("d"))
        .output()
        .unwrap();
    let dynamic = succeeded(&out);
    assert!(
        dynamic.contains("Shared library: [libcuda.so.1]"),
        "{dynamic}"
    );
    // Loaded in the driver's place, the stub answers as NVIDIA's does:
    // CUDA_ERROR_STUB_LIBRARY (34).
    let dir = sb.path("stub-as-driver");
    fs_err::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&stub, dir.join("libcuda.so.1")).unwrap();
    let out = std::process::Command::new(src.join("d"))
        .env("LD_LIBRARY_PATH", &dir)
        .output()
        .unwrap();
    let said = succeeded(&out);
    assert_eq!(said.trim(), "cuInit: 34, cuMemAlloc: 34", "{said}");

    // CMake's FindCUDAToolkit finds it for CUDA::cuda_driver, through the toolkit's view.
    if !have_tool("cmake") {
        return;
    }
    let proj = sb.path("cmake-driver");
    write(
        &proj.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.18)\nproject(d CXX)\nfind_package(CUDAToolkit REQUIRED)\nadd_executable(d d.cpp)\ntarget_link_libraries(d CUDA::cuda_driver)\n",
    );
    fs_err::copy(src.join("d.cu"), proj.join("d.cpp")).unwrap();
    for args in [
        &["cmake", "-S", ".", "-B", "build"][..],
        &["cmake", "--build", "build"][..],
    ] {
        let mut all = vec!["run", "cuda-13.0", "--"];
        all.extend_from_slice(args);
        let out = gpuenv(sb).current_dir(&proj).args(&all).output().unwrap();
        succeeded(&out);
    }
    let cache = fs_err::read_to_string(proj.join("build/CMakeCache.txt")).unwrap();
    // The stub, by either of the runfile layout's names for the library dir.
    assert!(
        cache.lines().any(|l| l
            .strip_prefix("CUDA_cuda_driver_LIBRARY:FILEPATH=")
            .is_some_and(
                |p| p.ends_with("/lib64/stubs/libcuda.so") || p.ends_with("/lib/stubs/libcuda.so")
            )),
        "{cache}"
    );
    assert!(proj.join("build/d").is_file());
}

/// scripts/demo.sh asks cargo where the binaries are, so a CARGO_TARGET_DIR elsewhere works,
/// and its closing tip does not assume gpuenv is on PATH. Its `cargo build --release` would
/// take minutes here: a `cargo` first on PATH answers `build` with the binaries this test run
/// built (copied where a release build would put them) and passes everything else on.
#[test]
fn the_demo_runs_with_cargo_target_dir_set_elsewhere() {
    if !index_reachable() || !have_tool("g++") {
        return;
    }
    let sb = Sandbox::new();
    let target = sb.path("elsewhere/target");
    let release = target.join("release");
    fs_err::create_dir_all(&release).unwrap();
    let built = proxy_bin();
    for bin in ["gpuenv", "gpuenv-shim"] {
        fs_err::copy(built.with_file_name(bin), release.join(bin)).unwrap();
    }
    write_exe(
        &sb.path("bin/cargo"),
        "#!/bin/sh\n[ \"$1\" = build ] && exit 0\nexec \"$REAL_CARGO\" \"$@\"\n",
    );
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh"))
        .env_clear()
        .env("HOME", sb.home())
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", sb.path("bin").display()),
        )
        .env("LANG", "C.UTF-8")
        .env("CARGO_TARGET_DIR", &target)
        .env("REAL_CARGO", env!("CARGO"))
        .env("GPUENV_TEST_CACHE", test_cache());
    for v in REAL_VARS.iter().chain(&["CARGO_HOME", "RUSTUP_HOME"]) {
        if let Some(val) = std::env::var_os(v) {
            cmd.env(v, val);
        }
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let log = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{log}");
    assert!(
        stdout.contains(&format!(
            "Done. This build is {}",
            release.join("gpuenv").display()
        )),
        "{log}"
    );
    assert!(stdout.contains("cargo install --path ."), "{log}");
    let answers = cuda_malloc_answers();
    assert!(
        answers
            .iter()
            .any(|a| stdout.contains(&format!("cudaMalloc: {a}\n"))),
        "{log}\nexpected cudaMalloc: one of {answers:?}"
    );
}

/// What llm.c asks of NVML, declared as `nvml.h` declares them (a program built against the
/// header links to the versioned names).
const NVML_PROGRAM: &str = r#"#include <cstdio>
extern "C" int nvmlInit_v2(void);
extern "C" int nvmlDeviceGetCount_v2(unsigned int *count);
extern "C" int nvmlShutdown(void);
int main() {
    unsigned int n = 0;
    int init = nvmlInit_v2();
    int count = nvmlDeviceGetCount_v2(&n);
    nvmlShutdown();
    printf("nvmlInit_v2: %d, nvmlDeviceGetCount_v2: %d\n", init, count);
    return 0;
}
"#;

/// The library a linked program asks the loader for, from `readelf -d`.
fn needs(program: &std::path::Path, soname: &str) -> bool {
    let out = std::process::Command::new("readelf")
        .args(["-d", "-W"])
        .arg(program)
        .output()
        .unwrap();
    succeeded(&out).contains(&format!("Shared library: [{soname}]"))
}

/// A toolkit from the 13.2 wheels links `-lcuda` and `-lnvidia-ml` with its own nvcc, run
/// as a user or a Makefile runs it (no gpuenv environment, no LIBRARY_PATH): from 13.2.78
/// the wheels' `nvcc.profile` searches `$(TOP)/lib/stubs` and `$(TOP)/lib` only, so the
/// stubs must be there. CMake's `CUDA::cuda_driver` keeps finding the driver stub.
#[test]
fn a_wheel_toolkit_links_the_driver_and_nvml_stubs_with_its_own_nvcc() {
    if !have_tool("g++") || !have_tool("readelf") || !index_reachable() {
        return;
    }
    let sb = Sandbox::new();
    ok(
        &sb,
        &[
            "install",
            "cuda-13.2.2",
            "--source",
            "pypi",
            "--profile",
            "minimal",
        ],
    );
    let root = sb.gpuenv_home().join("toolchains/cuda-13.2.2");
    let profile = fs_err::read_to_string(root.join("bin/nvcc.profile")).unwrap();
    assert!(profile.contains("-L$(TOP)/lib/stubs"), "{profile}");
    let src = sb.path("work");
    write(&src.join("d.cu"), DRIVER_PROGRAM);
    write(&src.join("m.cu"), NVML_PROGRAM);
    for (file, lib, soname, said) in [
        ("d", "-lcuda", "libcuda.so.1", "cuInit: 34, cuMemAlloc: 34"),
        (
            "m",
            "-lnvidia-ml",
            "libnvidia-ml.so.1",
            "nvmlInit_v2: 12, nvmlDeviceGetCount_v2: 12",
        ),
    ] {
        let out = std::process::Command::new(root.join("bin/nvcc"))
            .current_dir(&src)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", sb.home())
            .args([&format!("{file}.cu"), "-o", file, lib])
            .output()
            .unwrap();
        succeeded(&out);
        assert!(
            needs(&src.join(file), soname),
            "{file} does not need {soname}"
        );
        // Loaded in the real library's place, the stub answers that it is one.
        let dir = sb.path(&format!("stub-as-{soname}"));
        fs_err::create_dir_all(&dir).unwrap();
        let stub = root.join(format!("lib/stubs/{}", soname.trim_end_matches(".1")));
        std::os::unix::fs::symlink(&stub, dir.join(soname)).unwrap();
        let out = std::process::Command::new(src.join(file))
            .env("LD_LIBRARY_PATH", &dir)
            .output()
            .unwrap();
        assert_eq!(succeeded(&out).trim(), said);
    }
    // Through the toolkit's environment too, as the first test does for 13.0.
    let out = gpuenv(&sb)
        .current_dir(&src)
        .args([
            "run",
            "cuda-13.2",
            "--",
            "nvcc",
            "m.cu",
            "-o",
            "m2",
            "-lnvidia-ml",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    if !have_tool("cmake") {
        return;
    }
    let proj = sb.path("cmake-driver");
    write(
        &proj.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.18)\nproject(d CXX)\nfind_package(CUDAToolkit REQUIRED)\nadd_executable(d d.cpp)\ntarget_link_libraries(d CUDA::cuda_driver)\nadd_executable(m m.cpp)\ntarget_link_libraries(m CUDA::nvml)\n",
    );
    fs_err::copy(src.join("d.cu"), proj.join("d.cpp")).unwrap();
    fs_err::copy(src.join("m.cu"), proj.join("m.cpp")).unwrap();
    for args in [
        &["cmake", "-S", ".", "-B", "build"][..],
        &["cmake", "--build", "build"][..],
    ] {
        let mut all = vec!["run", "cuda-13.2", "--"];
        all.extend_from_slice(args);
        let out = gpuenv(&sb).current_dir(&proj).args(&all).output().unwrap();
        succeeded(&out);
    }
    let cache = fs_err::read_to_string(proj.join("build/CMakeCache.txt")).unwrap();
    for lib in ["cuda_driver", "nvml"] {
        assert!(
            cache
                .lines()
                .any(|l| l.starts_with(&format!("CUDA_{lib}_LIBRARY:FILEPATH="))
                    && l.contains("/stubs/lib")),
            "{cache}"
        );
    }
    assert!(needs(&proj.join("build/d"), "libcuda.so.1"));
    assert!(needs(&proj.join("build/m"), "libnvidia-ml.so.1"));
}
