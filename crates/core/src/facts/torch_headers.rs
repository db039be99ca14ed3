//! The CUDA headers torch's own CUDA headers include (`ATen/cuda/CUDAContext.h`, through
//! `CUDAContextLight.h`, as of torch 2.15): a toolkit without them cannot build a CUDA
//! extension that includes it (`fatal error: cusparse.h: No such file or directory`).

use std::path::Path;

pub const NEEDED: &[&str] = &[
    "cuda_runtime_api.h",
    "cusparse.h",
    "cublas_v2.h",
    "cublasLt.h",
    "cusolverDn.h",
];

/// The headers of `NEEDED` that `include_dir` lacks.
pub fn missing(include_dir: &Path) -> Vec<&'static str> {
    NEEDED
        .iter()
        .copied()
        .filter(|h| !include_dir.join(h).is_file())
        .collect()
}
