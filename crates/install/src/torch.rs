//! A toolkit for the torch in a Python environment, made of what torch's NVIDIA wheels lack
//! (nvcc, crt, nvvm: downloaded) and what they have (headers and libraries: linked into the
//! venv, never copied). The release is the `cuda-toolkit` metapackage torch installed, so
//! the downloaded pieces match the linked ones exactly.

use std::path::{Path, PathBuf};

use crate::error::Result;
use serde::{Deserialize, Serialize};

use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::sources;
use gpuenv_core::install_hint;

use crate::Plan;
use gpuenv_core::guard::TorchVersion;
use gpuenv_core::toolchain::{Kind, Spec, Version};

/// A tree of NVIDIA's wheels in a Python environment (`site-packages/nvidia/cu13`) that a
/// toolkit links to instead of downloading, and the release's wheels it found there: what
/// the plan and the install record say besides the archives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Linked {
    pub tree: PathBuf,
    #[serde(default, rename = "wheel")]
    pub wheels: Vec<Wheel>,
}

/// One of the release's wheels, installed in the venv in the release's own version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wheel {
    pub component: String,
    pub version: String,
}

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
        return Err(Hinted::new(format!(
            "the torch at {} (torch {}) is not built for CUDA",
            torch.dir.display(),
            torch.version.as_deref().unwrap_or("?")
        ))
        .hint("install a CUDA build of torch (`pip install torch`), or `gpuenv install cuda-<version>`").into());
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
        return Err(Hinted::new(format!(
            "the torch at {} is a CUDA {cuda} build: NVIDIA's CUDA {major} wheels carry no nvcc driver, so gpuenv cannot complete them into a toolkit",
            torch.dir.display()
        ))
        .hint(full).into());
    }
    let tree = site.join("nvidia").join(format!("cu{major}"));
    if !tree.join("include").is_dir() || !tree.join("lib").is_dir() {
        return Err(Hinted::new(format!(
            "the torch at {} is a CUDA {cuda} build, but {} has no include/ and lib/: its NVIDIA wheels are not installed",
            torch.dir.display(),
            tree.display()
        ))
        .hint(format!(
            "reinstall torch with its dependencies (`pip install --force-reinstall torch`), or `gpuenv install cuda-{cuda}`"
        )).into());
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
pub(crate) fn installed_version(site: &Path, dist: &str) -> Option<String> {
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

impl Mismatch {
    /// What a user is told: the toolkit gets the release's wheel downloaded, and why.
    pub fn warning(&self, cuda: &TorchCuda) -> String {
        // The nvcc wheel requires these without versions; a mix stops ptxas.
        let why = if ["cuda_nvcc", "nvvm", "cuda_crt", "cuda_runtime"]
            .contains(&self.component.as_str())
        {
            "nvcc of one release with another's pieces fails at ptxas (\"Unsupported .version\")"
        } else {
            "its headers and libraries would be another release's than the toolkit's nvcc"
        };
        format!(
            "{} has nvidia-{} {}, not {} of CUDA {}: {why}, so the toolkit gets {} downloaded",
            cuda.site.display(),
            self.component.replace('_', "-"),
            self.venv,
            self.release,
            cuda.release,
            self.release
        )
    }
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
    let (archives, in_venv): (Vec<_>, Vec<_>) = plan.archives.into_iter().partition(|a| {
        installed_version(&cuda.site, &format!("nvidia_{}", a.component)).is_none()
            || mismatches.iter().any(|m| m.component == a.component)
    });
    plan.archives = archives;
    plan.name = format!(
        "cuda-{}-{}",
        plan.version,
        gpuenv_core::install_hint::TORCH_LABEL
    );
    plan.linked = vec![Linked {
        tree: cuda.tree.clone(),
        wheels: in_venv
            .into_iter()
            .map(|a| Wheel {
                component: a.component,
                version: a.version,
            })
            .collect(),
    }];
    (plan, mismatches)
}

/// The venv's wheels the toolkit `name` of `release` links into, by its record, as
/// [`cuda_of`] found them when it was made; an error with the fix when that tree is gone.
/// The record is gpuenv's, but what it names is checked before anything is linked to it.
pub fn cuda_of_linked(name: &str, linked: &Linked, release: &Version) -> Result<TorchCuda> {
    let tree = &linked.tree;
    let again = format!(
        "`gpuenv uninstall {name}`, then `gpuenv install torch --component …` with the Python environment of that torch active"
    );
    let shaped = tree.is_absolute()
        && tree.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n.strip_prefix("cu")
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        && tree
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "nvidia")
        && !tree
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir));
    let Some(site) = tree.parent().and_then(Path::parent).filter(|_| shaped) else {
        return Err(Hinted::new(format!(
            "the install record of {name} says it links into {}, which is not a `site-packages/nvidia/cuNN` tree of NVIDIA's wheels",
            tree.display()
        ))
        .hint(again).into());
    };
    if !tree.join("include").is_dir() || !tree.join("lib").is_dir() {
        return Err(Hinted::new(format!(
            "{name} links into the NVIDIA wheels at {}, which are gone: nothing can be added to it",
            tree.display()
        ))
        .hint(again)
        .into());
    }
    Ok(TorchCuda {
        site: site.to_path_buf(),
        tree: tree.clone(),
        release: release.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_venv_tree_is_used_only_where_it_is_a_wheel_tree_that_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("lib/python3.11/site-packages");
        let tree = site.join("nvidia/cu13");
        for d in ["include", "lib"] {
            fs_err::create_dir_all(tree.join(d)).unwrap();
        }
        let release: Version = "13.0.2".parse().unwrap();
        let of = |tree: &Path| {
            let linked = Linked {
                tree: tree.to_path_buf(),
                wheels: Vec::new(),
            };
            cuda_of_linked("cuda-13.0.2-torch", &linked, &release)
        };
        let found = of(&tree).unwrap();
        assert_eq!((found.site, found.tree), (site.clone(), tree.clone()));
        // What a tampered record might name instead: never linked to.
        for odd in [
            PathBuf::from("nvidia/cu13"),
            dir.path().to_path_buf(),
            PathBuf::from("/etc"),
            site.join("nvidia/cu13/../cu13"),
            site.join("nvidia/cuda"),
            site.join("other/cu13"),
        ] {
            let err = crate::error::one_line(&of(&odd).unwrap_err());
            assert!(
                err.contains("not a `site-packages/nvidia/cuNN` tree"),
                "{odd:?}: {err}"
            );
        }
        fs_err::remove_dir_all(tree.join("lib")).unwrap();
        let err = of(&tree).unwrap_err();
        let report = gpuenv_core::ui::Report::of(&err, crate::FIND);
        assert!(
            report.inline().contains("which are gone"),
            "{}",
            report.inline()
        );
        assert!(
            report
                .hints
                .join("\n")
                .contains("`gpuenv uninstall cuda-13.0.2-torch`"),
            "{:?}",
            report.hints
        );
    }

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
            let report = gpuenv_core::ui::Report::of(&err, crate::FIND);
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
