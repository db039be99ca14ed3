//! Where releases come from. Each source turns a spec into a [`Plan`] (the archives of one
//! release, with their hashes) and lists the releases it has.

pub(crate) mod amd;
pub(crate) mod components;
pub(crate) mod manifest;
pub(crate) mod nvidia;
use gpuenv_core::facts::pep440;
pub(crate) mod pypi;
mod simple;

use std::path::Path;

use gpuenv_core::diagnostic::Hinted;
use reqwest::Url;

use crate::error::{InstallError, NoSource, Result};
use crate::plan::{Plan, Profile, Selection};
use gpuenv_core::toolchain::{Kind, Spec, Version};
use gpuenv_core::ui;

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
    if let Some(c) = components::component(component) {
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
    Err(Hinted::new(format!(
        "unknown component{} {}",
        if unknown.len() > 1 { "s" } else { "" },
        names.join(", ")
    ))
    .hint(format!("this release has: {}", all.join(", ")))
    .into())
}

/// The name of the path under which a `--manifest` or mirror value is read: a URL as is,
/// anything else a path (relative to `cwd`).
pub fn location(cwd: &Path, value: &str, dir: bool) -> Result<Url> {
    if let Ok(url) = Url::parse(value) {
        if matches!(url.scheme(), "http" | "https" | "file") {
            let mut url = url;
            if dir && !url.path().ends_with('/') {
                url.set_path(&format!("{}/", url.path()));
            }
            return Ok(url);
        }
    }
    let path = cwd.join(value);
    let url = if dir {
        Url::from_directory_path(&path)
    } else {
        Url::from_file_path(&path)
    };
    url.map_err(|()| InstallError::msg(format!("{} is not a usable path", path.display())))
}

/// Chooses the release `spec` names from the first source that has it; when none has, the
/// error gives each source's reason.
pub fn plan(sources: &[Box<dyn Source + '_>], spec: &Spec, sel: &Selection) -> Result<Plan> {
    let serving: Vec<&Box<dyn Source + '_>> =
        sources.iter().filter(|s| s.serves(spec.kind)).collect();
    if serving.is_empty() {
        let names: Vec<&str> = sources.iter().map(|s| s.name()).collect();
        return Err(gpuenv_core::diagnostic::Hinted::new(format!(
            "the source{} {} cannot install {}",
            if names.len() > 1 { "s" } else { "" },
            names.join(", "),
            spec.kind
        ))
        .hint(match spec.kind {
            Kind::Rocm => {
                format!("`gpuenv install {spec}` (AMD's ROCm wheels), or `--manifest <path|url>`")
            }
            Kind::Cuda => format!("`gpuenv install {spec}` (NVIDIA's archives and wheels)"),
        })
        .into());
    }
    let sources = serving;
    let mut reasons = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        match s.plan(spec, sel) {
            Ok(p) => return Ok(p),
            Err(e) if sources.len() == 1 => return Err(e),
            Err(e) => {
                // Say why before falling back, so a source that was never reached
                // (an unreachable host, a proxy) does not go unnoticed: one note, which
                // `-q` leaves out (should every source fail, the error gives each reason).
                if let Some(next) = sources.get(i + 1) {
                    let text = crate::error::one_line(&e);
                    let why = text.lines().next().unwrap_or_default();
                    ui::info(format!(
                        "the {} source cannot install {spec} ({why}); trying {}",
                        s.name(),
                        next.name()
                    ));
                }
                reasons.push((s.name(), e));
            }
        }
    }
    Err(NoSource::new(spec, reasons).into())
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
