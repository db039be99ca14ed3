//! Which CUDA releases each of `gpuenv install`'s sources can make a toolkit of, whatever
//! its mirror lists today, and the order `--source auto` tries them in. The installer keeps
//! to these and the hints that suggest an install ask them, so no hint names an install
//! that cannot work. ROCm comes from AMD's ROCm wheels (TheRock) or a gpuenv manifest.

use super::version::Version;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// NVIDIA's redistributable archives (`redistrib_<release>.json`).
    Nvidia,
    /// NVIDIA's CUDA wheels on a Python package index.
    Pypi,
}

/// AMD's multi-arch index of ROCm wheels: the release channel (TheRock's RELEASES.md; the
/// wheels are production from ROCm 7.14). One index for every GPU: the ISA is an extra
/// (`rocm[device-gfx942]`).
pub const ROCM_WHEEL_INDEX: &str = "https://repo.amd.com/rocm/whl-multi-arch/";
/// AMD's nightly multi-arch index (versions `X.Y.ZaYYYYMMDD`); the older per-family
/// indexes sit under `https://rocm.nightlies.amd.com/v2/<family>/`.
pub const ROCM_NIGHTLY_INDEX: &str = "https://rocm.nightlies.amd.com/whl-multi-arch/";

/// The first ROCm release (major, minor) AMD publishes as production wheels (TheRock's
/// multi-arch index; earlier ones were previews and nightlies).
pub const ROCM_WHEELS_FIRST: (u64, u64) = (7, 14);

/// Whether AMD's ROCm wheels have ROCm `version` (a prefix such as `7` asks for any
/// release it starts).
pub fn rocm_wheels_have(version: &Version) -> bool {
    let (major, minor) = ROCM_WHEELS_FIRST;
    match version.minor() {
        Some(m) => (version.major(), m) >= (major, minor),
        None => version.major() >= major,
    }
}

/// What `gpuenv install` tries when no `--source` is given, first to last.
pub const AUTO: &[Source] = &[Source::Nvidia, Source::Pypi];

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Nvidia => "nvidia",
            Source::Pypi => "pypi",
        }
    }

    /// The first CUDA release (major, minor) it can make a toolkit of: NVIDIA's redist
    /// starts at 11.0 (`redistrib_11.0.3.json`); before 13.0 the `nvidia-cuda-nvcc` wheels
    /// ship ptxas but no nvcc driver on Linux.
    pub fn first_cuda(self) -> (u64, u64) {
        match self {
            Source::Nvidia => (11, 0),
            Source::Pypi => (13, 0),
        }
    }

    /// Whether it can make a toolkit of CUDA `version` (a prefix such as `12` asks for
    /// any release it starts).
    pub fn has_cuda(self, version: &Version) -> bool {
        let (major, minor) = self.first_cuda();
        match version.minor() {
            Some(m) => (version.major(), m) >= (major, minor),
            None => version.major() >= major,
        }
    }
}

/// The sources `--source auto` would try for CUDA `version`, in order; empty when none can.
pub fn auto_for_cuda(version: &Version) -> Vec<Source> {
    AUTO.iter()
        .copied()
        .filter(|s| s.has_cuda(version))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn the_wheels_make_toolkits_from_13_and_the_redist_from_11() {
        assert_eq!(auto_for_cuda(&v("13.2")), [Source::Nvidia, Source::Pypi]);
        assert_eq!(auto_for_cuda(&v("13")), [Source::Nvidia, Source::Pypi]);
        assert_eq!(auto_for_cuda(&v("12.8.1")), [Source::Nvidia]);
        assert_eq!(auto_for_cuda(&v("11")), [Source::Nvidia]);
        assert_eq!(auto_for_cuda(&v("10.2")), []);
        assert!(!Source::Pypi.has_cuda(&v("12.9")));
    }
}
