//! A ROCm tree for a ROCm build of torch made of AMD's wheels (from ROCm 7.14 torch requires
//! `rocm[libraries]==<release>`): what the venv has (`_rocm_sdk_core`, `_rocm_sdk_libraries`
//! with its device overlays) is linked, never copied; what it lacks (`rocm-sdk-devel`, the
//! device wheels of pinned ISAs) is downloaded from AMD's index at the same release.

use std::path::{Path, PathBuf};

use crate::error::{InstallError, Result};

use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::pep440::PyVersion;
use gpuenv_core::guard::TorchVersion;
use gpuenv_core::toolchain::{Kind, Spec, Version};

use crate::therock::PLATFORM_PREFIX;
use crate::torch::{Linked, Wheel};
use crate::Plan;

/// Returns the error (a refusal with its hints) from the function.
macro_rules! bail {
    ($e:expr) => {
        return Err(InstallError::from($e))
    };
}

/// Where a ROCm torch's wheels are and which release they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchRocm {
    pub site: PathBuf,
    /// The `rocm-sdk-core` wheel's version.
    pub release: PyVersion,
    /// The `_rocm_sdk_*` packages the venv has (core, libraries), to link.
    pub trees: Vec<PathBuf>,
}

impl TorchRocm {
    pub fn spec(&self) -> Spec {
        Spec {
            kind: Kind::Rocm,
            version: Version::new(&self.release.short_release()),
            label: None,
        }
    }
}

/// The version of the wheel `project` installed in `site` (its `.dist-info`), if any.
pub(crate) fn installed(site: &Path, project: &str) -> Option<PyVersion> {
    let stem = format!("{}-", project.replace('-', "_"));
    fs_err::read_dir(site)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.to_string();
            PyVersion::parse(n.strip_prefix(&stem)?.strip_suffix(".dist-info")?)
        })
        .max()
}

/// The ROCm wheels of a ROCm `torch`, or why a tree cannot be made from them.
pub fn rocm_of(torch: &TorchVersion) -> Result<TorchRocm> {
    let hip = torch.hip.as_deref().unwrap_or("?");
    let site = torch.dir.parent().unwrap_or(Path::new("/")).to_path_buf();
    let Some(release) = installed(&site, "rocm-sdk-core") else {
        let mm: Vec<&str> = hip.split('.').take(2).collect();
        bail!(Hinted::new(format!(
            "the torch at {} is a ROCm build (HIP {hip}) without AMD's ROCm wheels beside it (torch bundled its ROCm libraries before 7.14)",
            torch.dir.display()
        ))
        .hint(format!(
            "`gpuenv install rocm-{}` installs a ROCm of its release from AMD's wheels (from 7.14), or register one you have with `gpuenv link`",
            mm.join(".")
        )));
    };
    let mut trees = Vec::new();
    for e in fs_err::read_dir(&site)?.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let is_runtime = [
            format!("{PLATFORM_PREFIX}core"),
            format!("{PLATFORM_PREFIX}libraries"),
        ]
        .iter()
        .any(|p| n.starts_with(p.as_str()));
        if is_runtime && e.path().is_dir() && !e.path().is_symlink() {
            trees.push(e.path());
        }
    }
    trees.sort();
    Ok(TorchRocm {
        site,
        release,
        trees,
    })
}

/// The plan of the `amd` source made a tree for the venv: archives of wheels the venv has
/// at the release are left out and linked instead; named `rocm-<release>-torch`.
pub fn for_venv(mut plan: Plan, rocm: &TorchRocm) -> Plan {
    let project = |component: &str| match component {
        "core" | "libraries" | "devel" => format!("rocm-sdk-{component}"),
        c => format!("rocm-sdk-{c}"),
    };
    let (download, in_venv): (Vec<_>, Vec<_>) = plan.archives.into_iter().partition(|a| {
        a.component == "devel"
            || installed(&rocm.site, &project(&a.component)) != Some(rocm.release.clone())
    });
    plan.archives = download;
    plan.name = format!(
        "rocm-{}-{}",
        plan.version,
        gpuenv_core::install_hint::TORCH_LABEL
    );
    plan.linked = rocm
        .trees
        .iter()
        .enumerate()
        .map(|(i, tree)| Linked {
            tree: tree.clone(),
            // The wheels are said once, with the first tree.
            wheels: if i == 0 {
                in_venv
                    .iter()
                    .map(|a| Wheel {
                        component: a.component.clone(),
                        version: a.version.clone(),
                    })
                    .collect()
            } else {
                Vec::new()
            },
        })
        .collect();
    plan
}

/// The venv's wheels the ROCm tree `name` links into, by its record, as [`rocm_of`] found
/// them when it was made; an error with the fix when they are gone. The record is
/// gpuenv's, but what it names is checked before anything is linked to it.
pub fn rocm_of_linked(name: &str, linked: &[Linked]) -> Result<TorchRocm> {
    let again = format!(
        "`gpuenv uninstall {name}`, then `gpuenv install torch --component …` with the Python environment of that torch active"
    );
    let trees: Vec<PathBuf> = linked.iter().map(|l| l.tree.clone()).collect();
    let shaped = |t: &PathBuf| {
        t.is_absolute()
            && t.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PLATFORM_PREFIX))
    };
    let site = trees
        .first()
        .and_then(|t| t.parent())
        .map(Path::to_path_buf);
    let (Some(site), true) = (site, trees.iter().all(shaped)) else {
        bail!(Hinted::new(format!(
            "the install record of {name} names no ROCm wheels of a Python environment"
        ))
        .hint(again));
    };
    let gone = trees
        .iter()
        .find(|t| !t.is_dir() || t.parent() != Some(site.as_path()));
    let release = installed(&site, "rocm-sdk-core");
    let (None, Some(release)) = (gone, release) else {
        bail!(Hinted::new(format!(
            "{name} links into {}, whose ROCm wheels are gone",
            site.display()
        ))
        .hint(again));
    };
    Ok(TorchRocm {
        site,
        release,
        trees,
    })
}
