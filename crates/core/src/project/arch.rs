//! The arch lists a toolchain file pins, in the forms the build tools take.

/// An arch pin in a form the build tools do not take.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArchError {
    #[error("cuda-arch `{0}` is not a compute capability: expected forms like \"8.6\", \"9.0a\" or \"9.0+PTX\"")]
    Cuda(String),
    #[error("rocm-arch `{0}` is not a gfx target: expected forms like \"gfx90a\" or \"gfx942\"")]
    Rocm(String),
}

/// `8.0`, `8.6`, `9.0a`, `9.0+PTX`: the forms `TORCH_CUDA_ARCH_LIST` takes.
pub fn validate_cuda_arch(arch: &str) -> Result<(), ArchError> {
    let base = arch.strip_suffix("+PTX").unwrap_or(arch);
    let base = base.trim_end_matches(['a', 'f']);
    let ok = base.split_once('.').is_some_and(|(maj, min)| {
        !maj.is_empty()
            && !min.is_empty()
            && maj.chars().all(|c| c.is_ascii_digit())
            && min.chars().all(|c| c.is_ascii_digit())
    });
    if ok {
        Ok(())
    } else {
        Err(ArchError::Cuda(arch.to_string()))
    }
}

/// `gfx90a`, `gfx942`, `gfx90a:xnack+`.
pub fn validate_rocm_arch(arch: &str) -> Result<(), ArchError> {
    let ok = arch.strip_prefix("gfx").is_some_and(|rest| {
        let (chip, features) = rest.split_once(':').unwrap_or((rest, ""));
        !chip.is_empty()
            && chip.chars().all(|c| c.is_ascii_alphanumeric())
            && features
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '+' | '-'))
    });
    if ok {
        Ok(())
    } else {
        Err(ArchError::Rocm(arch.to_string()))
    }
}
