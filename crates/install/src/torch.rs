//! A toolkit for the torch in a Python environment, made of what torch's NVIDIA wheels lack
//! (nvcc, crt, nvvm: downloaded) and what they have (headers and libraries: linked into the
//! venv, never copied). The release is the `cuda-toolkit` metapackage torch installed, so
//! the downloaded pieces match the linked ones exactly.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::sources;
use gpuenv_core::install_hint;

use crate::Plan;
use gpuenv_core::guard::TorchVersion;
use gpuenv_core::toolchain::{Kind, Spec, Version};

/// Where a torch's CUDA wheels are and which release they belong to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchCuda {
    /// `site-packages`.
    pub site: PathBuf,
    /// `site-packages/nvidia/cu13`: the merged tree of the CUDA 13 wheels.
    pub tree: PathBuf,
    /// The exact release (`cuda-toolkit` installed beside torch), else torch's major.minor.
    pub release: Version,
}

/// The CUDA wheels of `torch`, or why a toolkit cannot be made from them.
pub fn cuda_of(torch: &TorchVersion) -> Result<TorchCuda> {
    let Some(cuda) = torch.cuda.as_deref() else {
        bail!(Hinted::new(format!(
            "the torch at {} (torch {}) is not built for CUDA",
            torch.dir.display(),
            torch.version.as_deref().unwrap_or("?")
        ))
        .hint("install a CUDA build of torch (`pip install torch`), or `gpuenv install cuda-<version>`"));
    };
    let site = torch.dir.parent().unwrap_or(Path::new("/")).to_path_buf();
    let major = cuda.split('.').next().unwrap_or_default();
    let version = cuda.parse::<Version>().ok();
    if !version
        .as_ref()
        .is_some_and(|v| sources::Source::Pypi.has_cuda(v))
    {
        let full = match &version {
            Some(v) if sources::Source::Nvidia.has_cuda(v) => format!(
                "`gpuenv install cuda-{cuda} --source nvidia` installs a full toolkit for it"
            ),
            Some(v) => install_hint::install_or_link(&Spec {
                kind: Kind::Cuda,
                version: v.clone(),
                label: None,
            }),
            None => "register a toolkit of its CUDA with `gpuenv link`".into(),
        };
        bail!(Hinted::new(format!(
            "the torch at {} is a CUDA {cuda} build: NVIDIA's CUDA {major} wheels carry no nvcc driver, so gpuenv cannot complete them into a toolkit",
            torch.dir.display()
        ))
        .hint(full));
    }
    let tree = site.join("nvidia").join(format!("cu{major}"));
    if !tree.join("include").is_dir() || !tree.join("lib").is_dir() {
        bail!(Hinted::new(format!(
            "the torch at {} is a CUDA {cuda} build, but {} has no include/ and lib/: its NVIDIA wheels are not installed",
            torch.dir.display(),
            tree.display()
        ))
        .hint(format!(
            "reinstall torch with its dependencies (`pip install --force-reinstall torch`), or `gpuenv install cuda-{cuda}`"
        )));
    }
    let torchs: Version = cuda.parse()?;
    let release = installed_version(&site, "cuda_toolkit")
        .and_then(|v| v.parse::<Version>().ok())
        .filter(|v| torchs.is_prefix_of(v))
        .unwrap_or(torchs);
    Ok(TorchCuda {
        site,
        tree,
        release,
    })
}

/// The version of the distribution `dist` (normalized with `_`) installed in `site`.
pub fn installed_version(site: &Path, dist: &str) -> Option<String> {
    let prefix = format!("{dist}-");
    fs_err::read_dir(site).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let rest = name.strip_prefix(&prefix)?.strip_suffix(".dist-info")?;
        Some(rest.to_string())
    })
}

/// A wheel in the venv of another version than the release's: `nvidia-cuda-nvcc` 13.x
/// requires `nvidia-nvvm`, `nvidia-cuda-crt` and `nvidia-cuda-runtime` without versions, so
/// pip mixes releases, and nvcc then fails at ptxas (`Unsupported .version`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub component: String,
    pub venv: String,
    pub release: String,
}

/// The venv's version of an archive's wheel, when it is another than the archive's.
fn mismatch(site: &Path, a: &crate::Archive) -> Option<Mismatch> {
    let have = installed_version(site, &format!("nvidia_{}", a.component))?;
    (!have.eq_ignore_ascii_case(&a.version)).then(|| Mismatch {
        component: a.component.clone(),
        venv: have,
        release: a.version.clone(),
    })
}

/// The release's plan, without the wheels the venv already has in the release's exact
/// version and with its tree linked in (what is downloaded wins over what is linked);
/// named `cuda-<release>-torch`. Also the venv's wheels of another version, which are
/// downloaded again in the right one.
pub fn for_venv(mut plan: Plan, cuda: &TorchCuda) -> (Plan, Vec<Mismatch>) {
    let mismatches: Vec<Mismatch> = plan
        .archives
        .iter()
        .filter_map(|a| mismatch(&cuda.site, a))
        .collect();
    plan.archives.retain(|a| {
        installed_version(&cuda.site, &format!("nvidia_{}", a.component)).is_none()
            || mismatches.iter().any(|m| m.component == a.component)
    });
    plan.name = format!(
        "cuda-{}-{}",
        plan.version,
        gpuenv_core::install_hint::TORCH_LABEL
    );
    plan.linked = vec![cuda.tree.clone()];
    (plan, mismatches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_or_cuda_12_torch_cannot_be_completed_and_says_what_to_do() {
        let torch = |cuda: Option<&str>| TorchVersion {
            dir: "/v/lib/python3.11/site-packages/torch".into(),
            version: Some("2.15.0".into()),
            cuda: cuda.map(str::to_string),
            hip: None,
        };
        // What a user reads: the message, its causes and the hints.
        let shown = |t: TorchVersion| {
            let err = cuda_of(&t).unwrap_err();
            let report = gpuenv_core::ui::Report::of(err.as_ref(), crate::FIND);
            (report.inline(), report.hints.join("\n"))
        };
        let (err, hints) = shown(torch(None));
        assert!(
            err.contains("not built for CUDA") && !hints.is_empty(),
            "{err}"
        );
        let (err, hints) = shown(torch(Some("12.8")));
        assert!(hints.contains("--source nvidia"), "{err}\n{hints}");
        let (err, hints) = shown(torch(Some("13.2")));
        assert!(
            err.contains("nvidia/cu13") || hints.contains("nvidia/cu13"),
            "{err}\n{hints}"
        );
    }
}
