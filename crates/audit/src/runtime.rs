//! What the libraries an object needs (its DT_NEEDED sonames) say about the GPU runtime it
//! was built for: `libcudart.so.13` is CUDA 13's runtime, `libamdhip64.so.5` ROCm 5's.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "is", rename_all = "kebab-case")]
pub enum Runtime {
    /// `libcudart.so.N`: the CUDA runtime of release N.x, which the loader must find.
    Cudart { major: u32 },
    /// `libcuda.so.1`: the driver's own library (only a machine with the driver has it).
    CudaDriver,
    /// Another library of the CUDA Toolkit or NVIDIA's stack (cuBLAS, NVRTC, cuDNN, NCCL).
    CudaLibrary,
    /// `libamdhip64.so.N`: the HIP runtime of ROCm N.x.
    Hip { major: u32 },
    /// PyTorch's own libraries; `cuda` for its CUDA or HIP half (`libtorch_cuda.so`,
    /// `libc10_cuda.so`, `libtorch_hip.so`).
    Torch { gpu: bool },
}

/// Libraries of NVIDIA's stack other than the runtime and the driver (name before `.so`).
const CUDA_LIBRARIES: &[&str] = &[
    "libcublas",
    "libcublasLt",
    "libcusparse",
    "libcusolver",
    "libcurand",
    "libcufft",
    "libnvrtc",
    "libnvJitLink",
    "libcudnn",
    "libnccl",
    "libnvToolsExt",
    "libcupti",
];

/// What a soname means for the runtime, if anything.
pub fn classify(soname: &str) -> Option<Runtime> {
    let (stem, version) = soname.split_once(".so")?;
    let major = || {
        version
            .strip_prefix('.')?
            .split('.')
            .next()?
            .parse::<u32>()
            .ok()
    };
    match stem {
        "libcudart" => {
            Some(major().map_or(Runtime::CudaLibrary, |major| Runtime::Cudart { major }))
        }
        "libcuda" => Some(Runtime::CudaDriver),
        "libamdhip64" => Some(major().map_or(Runtime::CudaLibrary, |major| Runtime::Hip { major })),
        "libtorch_cuda" | "libc10_cuda" | "libtorch_hip" | "libc10_hip" => {
            Some(Runtime::Torch { gpu: true })
        }
        "libtorch" | "libtorch_cpu" | "libc10" | "libtorch_python" => {
            Some(Runtime::Torch { gpu: false })
        }
        s if CUDA_LIBRARIES.contains(&s) => Some(Runtime::CudaLibrary),
        _ => None,
    }
}

impl Runtime {
    /// How a report names it: `the CUDA 13 runtime`.
    pub fn describe(&self) -> String {
        match self {
            Runtime::Cudart { major } => format!("the CUDA {major} runtime"),
            Runtime::CudaDriver => "the NVIDIA driver's library".into(),
            Runtime::CudaLibrary => "a CUDA library".into(),
            Runtime::Hip { major } => format!("the HIP runtime of ROCm {major}"),
            Runtime::Torch { gpu: true } => "PyTorch's GPU half".into(),
            Runtime::Torch { gpu: false } => "PyTorch".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonames_name_their_runtime_and_release() {
        assert_eq!(
            classify("libcudart.so.13"),
            Some(Runtime::Cudart { major: 13 })
        );
        assert_eq!(
            classify("libcudart.so.11.0"),
            Some(Runtime::Cudart { major: 11 })
        );
        assert_eq!(
            classify("libamdhip64.so.5"),
            Some(Runtime::Hip { major: 5 })
        );
        assert_eq!(classify("libcuda.so.1"), Some(Runtime::CudaDriver));
        assert_eq!(classify("libcublasLt.so.13"), Some(Runtime::CudaLibrary));
        assert_eq!(
            classify("libc10_cuda.so"),
            Some(Runtime::Torch { gpu: true })
        );
        assert_eq!(classify("libstdc++.so.6"), None);
        assert_eq!(classify("libcudart_static"), None);
    }
}
