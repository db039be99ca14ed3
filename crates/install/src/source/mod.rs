//! Where releases come from. Each source turns a spec into a [`Plan`] (the archives of one
//! release, with their hashes) and lists the releases it has.

pub mod amd;
pub mod components;
pub mod manifest;
pub mod nvidia;
pub use gpuenv_core::facts::pep440;
pub mod pypi;
pub mod simple;

use anyhow::Result;
use gpuenv_core::diagnostic::Hinted;

use super::{Plan, Profile, Selection};
use gpuenv_core::toolchain::{Kind, Spec, Version};

pub trait Source {
    fn name(&self) -> &'static str;
    /// Whether it has toolchains of `kind` at all (`plan` and `available` skip it if not).
    fn serves(&self, kind: Kind) -> bool {
        kind == Kind::Cuda
    }
    /// The releases of `kind` this source has, lowest first.
    fn available(&self, kind: Kind) -> Result<Vec<Version>>;
    /// The archives of the highest release `spec` selects.
    fn plan(&self, spec: &Spec, sel: &Selection) -> Result<Plan>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Choice {
    #[default]
    Auto,
    Nvidia,
    Pypi,
    Manifest,
    Amd,
}

impl gpuenv_core::named::Named for Choice {
    const ALL: &'static [Choice] = &[
        Choice::Auto,
        Choice::Nvidia,
        Choice::Pypi,
        Choice::Amd,
        Choice::Manifest,
    ];
    fn name(self) -> &'static str {
        match self {
            Choice::Auto => "auto",
            Choice::Nvidia => "nvidia",
            Choice::Pypi => "pypi",
            Choice::Manifest => "manifest",
            Choice::Amd => "amd",
        }
    }
    fn help(self) -> &'static str {
        match self {
            Choice::Auto => "CUDA: NVIDIA's redist manifests, then NVIDIA's wheels on the package index; ROCm: AMD's ROCm wheels",
            Choice::Nvidia => "NVIDIA's redistributable archives (GPUENV_CUDA_MIRROR)",
            Choice::Pypi => {
                "NVIDIA's wheels on a Python package index (GPUENV_PYPI_URL, PIP_INDEX_URL, PyPI)"
            }
            Choice::Manifest => "gpuenv's own TOML manifest (--manifest)",
            Choice::Amd => "AMD's ROCm wheels (TheRock) on AMD's index (GPUENV_ROCM_INDEX_URL)",
        }
    }
}

/// The highest of `versions` that `spec` selects.
pub fn highest_matching<'a, T>(
    spec: &Spec,
    versions: impl IntoIterator<Item = (&'a Version, T)>,
) -> Option<(&'a Version, T)> {
    versions
        .into_iter()
        .filter(|(v, _)| spec.version.is_prefix_of(v))
        .max_by(|a, b| a.0.cmp(b.0))
}

/// The components of NVIDIA's redist manifests a profile needs for `version`.
pub fn redist_components(profile: Profile, version: &Version) -> Vec<&'static str> {
    let mut c = vec!["cuda_nvcc", "cuda_cudart", "cuda_cccl"];
    if version.major() >= 13 {
        c.extend(["cuda_crt", "libnvvm"]);
    }
    if profile == Profile::Default {
        c.extend([
            "libcublas",
            "libcusparse",
            "libcusolver",
            "libcurand",
            "libcufft",
        ]);
    }
    c
}

/// A component as the redist manifests name it (`libcublas`, `cuda_profiler_api`), as the
/// `cuda-toolkit` metapackage's extras do (`cublas`, `profiler`) or as a wheel does
/// (`cuda_runtime`): the extra's name. Names the table does not know are guessed.
pub fn extra_name(component: &str) -> String {
    if let Some(c) = components::lookup(component) {
        return c.extra.to_string();
    }
    let c = component.to_ascii_lowercase().replace('-', "_");
    let c = c.strip_prefix("cuda_").unwrap_or(&c);
    let c = c.strip_prefix("lib").unwrap_or(c);
    c.to_string()
}

/// `--component` values that name no component, with what there is.
pub fn unknown_components(
    asked: &[String],
    known: impl Fn(&str) -> bool,
    all: &[String],
) -> Result<()> {
    let unknown: Vec<&String> = asked.iter().filter(|c| !known(c)).collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = unknown.iter().map(|s| s.as_str()).collect();
    anyhow::bail!(Hinted::new(format!(
        "unknown component{} {}",
        if unknown.len() > 1 { "s" } else { "" },
        names.join(", ")
    ))
    .hint(format!("this release has: {}", all.join(", "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_names_map_to_extras() {
        assert_eq!(extra_name("libcublas"), "cublas");
        assert_eq!(extra_name("cuda_nvrtc"), "nvrtc");
        assert_eq!(extra_name("cublas"), "cublas");
        assert_eq!(extra_name("libnvvm"), "nvvm");
        assert_eq!(extra_name("cuda_cudart"), "cudart");
        assert_eq!(extra_name("cuda_runtime"), "cudart");
        assert_eq!(extra_name("cuda_profiler_api"), "profiler");
    }

    #[test]
    fn minimal_adds_crt_and_nvvm_from_13() {
        let v = |s: &str| s.parse::<Version>().unwrap();
        assert!(!redist_components(Profile::Minimal, &v("12.4.1")).contains(&"cuda_crt"));
        assert!(redist_components(Profile::Minimal, &v("13.0.2")).contains(&"libnvvm"));
        assert!(redist_components(Profile::Default, &v("12.4.1")).contains(&"libcusolver"));
    }
}
