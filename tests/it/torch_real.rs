//! REAL: `gpuenv install torch` for a real torch from PyPI (a CUDA 13.2 build, with 3 GB of
//! NVIDIA wheels in its venv, made once under GPUENV_TEST_CACHE), then a real
//! `CUDAExtension` whose module includes `ATen/cuda/CUDAContext.h` built through the
//! toolkit. gpuenv leaves `PYTORCH_NVCC` alone, so torch finds ccache on PATH itself and runs
//! `ccache $CUDA_HOME/bin/nvcc` (gpuenv's proxy) and `ccache c++`: built again after
//! `rm -rf build`, both compiles come from the cache. Timings are printed, never asserted.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

use crate::common;
use crate::common::real::{
    ccache_hits_and_misses, gpuenv_in_venv, install_torch, torch_venv, twice_extension,
};
use crate::common::*;

/// The kernel and its launcher on torch's stream: nvcc's part, through ccache.
const KERNEL: &str = r#"#include <cuda_runtime.h>

__global__ void twice_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

void twice_launch(float* x, int n, cudaStream_t stream) {
    twice_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x, n);
}
"#;

/// The module, with torch's CUDA headers (they include cuBLAS's, cuSPARSE's and cuSOLVER's,
/// which the toolkit made of the venv must hold) and pybind11's tensor casters
/// (`torch/extension.h` would add torch's whole C++ API: 13 s more of g++ on CI).
const BINDING: &str = r#"#include <torch/csrc/utils/pybind.h>
#include <ATen/cuda/CUDAContext.h>

void twice_launch(float* x, int n, cudaStream_t stream);

at::Tensor twice(at::Tensor x) {
    twice_launch(x.data_ptr<float>(), x.numel(), at::cuda::getCurrentCUDAStream());
    return x;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("twice", &twice); }
"#;

/// Bytes of the files in `root` itself: links not followed, hard links counted once.
fn own_size(root: &Path) -> u64 {
    let mut seen = HashSet::new();
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs_err::read_dir(&dir).unwrap().flatten() {
            let m = fs_err::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else if m.is_file() && seen.insert(m.ino()) {
                total += m.len();
            }
        }
    }
    total
}

#[test]
fn a_toolkit_for_a_real_torch_builds_a_cuda_extension_and_torchs_own_ccache_makes_the_rebuild_fast()
{
    if !have_tool("g++") || !have_tool("ccache") {
        return;
    }
    let Some(venv) = torch_venv() else {
        return;
    };
    let sb = Sandbox::new();
    let out = install_torch(&sb, &venv);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    eprintln!("{said}");
    let root = sb.gpuenv_home().join("toolchains/cuda-13.2.2-torch");
    let size = own_size(&root);
    eprintln!("the toolkit beside the venv: {} MB", size / 1_000_000);
    assert!(size < 500_000_000, "{} MB", size / 1_000_000);

    let ext = twice_extension(&sb, KERNEL, BINDING);
    sb.ok(&["trust", ext.join("gpuenv.toml").to_str().unwrap()]);
    let ccache = sb.path("ccache");
    let build = || {
        let _ = fs_err::remove_dir_all(ext.join("build"));
        let started = Instant::now();
        let out = gpuenv_in_venv(&sb, &venv, &ext)
            .env("CCACHE_DIR", &ccache)
            .args([
                "run",
                "--",
                "python",
                "setup.py",
                "-q",
                "build_ext",
                "--inplace",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let built = fs_err::read_dir(&ext)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".so"));
        assert!(built, "no extension module was built");
        (
            started.elapsed().as_secs_f64(),
            ccache_hits_and_misses(&ccache),
        )
    };
    let (cold, (hits, misses)) = build();
    assert_eq!(
        (hits, misses),
        (0, 2),
        "the first build compiles binding.cpp and twice.cu"
    );
    let (warm, (hits, misses)) = build();
    assert_eq!(
        (hits, misses),
        (2, 2),
        "the rebuild takes both from the cache"
    );
    eprintln!("CUDAExtension build: cold {cold:.1}s, after rm -rf build {warm:.1}s");
}

/// REAL, the issue's case: `gpuenv install cuda-13.2 --component cuda_cuobjdump` on the
/// toolkit `install torch` made of the real venv (it said "installed by an older gpuenv")
/// adds NVIDIA's real cuobjdump in place, which then lists the sm_90 cubin the toolkit's
/// own nvcc compiles; the venv's libraries are still linked, not copied.
#[test]
fn a_component_is_added_in_place_to_the_toolkit_of_a_real_torch() {
    if !have_tool("g++") {
        return;
    }
    let Some(venv) = torch_venv() else {
        return;
    };
    let sb = Sandbox::new();
    let out = install_torch(&sb, &venv);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root = sb.gpuenv_home().join("toolchains/cuda-13.2.2-torch");
    assert!(!root.join("bin/cuobjdump").exists());
    let out = common::real::real_gpuenv(&sb)
        .env("VIRTUAL_ENV", &venv)
        .args(["install", "cuda-13.2", "--component", "cuda_cuobjdump"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("added cuda_cuobjdump to cuda-13.2.2-torch (from pypi"),
        "{said}"
    );
    assert!(fs_err::read_link(root.join("lib64/libcublas.so.13"))
        .unwrap()
        .starts_with(&venv));

    let dir = sb.path("k");
    write(
        &dir.join("k.cu"),
        "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n",
    );
    let run = |args: &[&str]| {
        let out = sb
            .gpuenv()
            .current_dir(&dir)
            .args(["run", "cuda-13.2.2-torch", "--"])
            .args(args)
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{args:?}: {all}");
        all
    };
    run(&["nvcc", "-cubin", "-arch=sm_90", "k.cu", "-o", "k.cubin"]);
    let listed = run(&["cuobjdump", "-lelf", "k.cubin"]);
    assert!(listed.contains("sm_90"), "{listed}");
}
