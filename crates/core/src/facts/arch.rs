//! Arch values, parsed once: CUDA archs in every spelling gpuenv meets (`8.6`, `86`,
//! `sm_86`, `compute_90a`, `9.0+PTX`, `10.0f`, CMake's `90-real`, PyTorch's named archs,
//! nvcc's `-arch`/`-gencode`), ROCm targets (`gfx90a`, `gfx942:sramecc+:xnack-`), their
//! spelling for each consumer (TORCH_CUDA_ARCH_LIST, CUDAARCHS, `-gencode`,
//! PYTORCH_ROCM_ARCH, `--offload-arch`), and which CUDA release builds which.

mod coverage;
mod cuda;
mod flags;
mod named;
mod rocm;
mod rules;

pub use coverage::{compiles_device_code, device_links, hipcc_missing, missing_name, nvcc_missing};
pub use cuda::{Code, CudaArch, CudaArchError, Suffix};
pub use flags::{hipcc_archs, nvcc_archs, HipArch, NvccArch};
pub use named::{named, parse_torch_list, torch_list, torch_takes, ListEntry, NAMED_ARCHES};
pub use rocm::{device_libs, device_wheels, rocm_list, DeviceLibs, RocmTarget, RocmTargetError};
pub use rules::{
    can_build, problem_with, release_to_suggest, releases_for, suffix_from, Problem, Verdict,
};

/// An arch pin (a `cuda-arch` / `rocm-arch` entry, `gpuenv pin --arch`) in a form the build
/// tools do not take.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ArchError {
    #[error("cuda-arch `{given}` is not a compute capability: {why}")]
    Cuda { given: String, why: CudaArchError },
    #[error("rocm-arch `{given}` is not a gfx target: {why}")]
    Rocm { given: String, why: RocmTargetError },
}

/// A `cuda-arch` entry.
pub fn cuda_pin(text: &str) -> Result<CudaArch, ArchError> {
    CudaArch::parse(text).map_err(|why| ArchError::Cuda {
        given: text.to_string(),
        why,
    })
}

/// A `rocm-arch` entry.
pub fn rocm_pin(text: &str) -> Result<RocmTarget, ArchError> {
    RocmTarget::parse(text).map_err(|why| ArchError::Rocm {
        given: text.to_string(),
        why,
    })
}

/// Each value once, the first place it is named kept.
pub fn dedup<T: PartialEq>(list: &mut Vec<T>) {
    let mut seen: Vec<T> = Vec::with_capacity(list.len());
    for item in list.drain(..) {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    *list = seen;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_say_which_list_and_why() {
        assert_eq!(
            cuda_pin("sm_90").unwrap_err().to_string(),
            "cuda-arch `sm_90` is not a compute capability: `sm_90` is nvcc's or CMake's spelling of \"9.0\", which is the form here"
        );
        assert_eq!(
            rocm_pin("gfx90a::xnack+").unwrap_err().to_string(),
            "rocm-arch `gfx90a::xnack+` is not a gfx target: a target feature is empty: features follow single colons, as in \"gfx90a:xnack+\""
        );
        let mut list = vec![
            cuda_pin("8.6").unwrap(),
            cuda_pin("9.0").unwrap(),
            cuda_pin("8.6").unwrap(),
        ];
        dedup(&mut list);
        assert_eq!(list, ["8.6", "9.0"]);
    }
}
