//! What a toolchain tree is (what `detect` reads from it, and what the registry keeps): where
//! it is, its kind and version, its programs, and whether it still works.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::system::System;
use super::{Kind, Version};
use crate::facts::lookup::{self, NvccRelease};
use crate::facts::python::prefix_of_site_packages;
use crate::facts::Facts;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// `gpuenv link`: used in place.
    Linked,
    /// `gpuenv discover --register`: used in place.
    Discovered,
    /// `gpuenv install`: owned by gpuenv under `toolchains/`.
    Installed,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Linked => "linked",
            Source::Discovered => "discovered",
            Source::Installed => "installed",
        }
    }
}

/// A toolchain tree: what `detect::detect` finds at a root, and what the registry keeps of
/// each registered one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub kind: Kind,
    pub version: Version,
    pub root: PathBuf,
    pub source: Source,
    /// Where the version was read, for `list` and error messages.
    pub version_from: String,
    pub include_dir: PathBuf,
    pub lib_dir: PathBuf,
    /// NCCL (CUDA) or RCCL (ROCm) inside the tree or beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collectives: Option<Collectives>,
    /// Set for a toolchain spread over a distribution prefix (Debian's packages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<System>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collectives {
    pub root: PathBuf,
    pub include_dir: PathBuf,
    pub lib_dir: PathBuf,
}

/// Where a CUDA tree's version is its release: version.json's `cuda.version`.
pub const FROM_VERSION_JSON: &str = "version.json";
/// Where it is nvcc's build number: `nvcc --version` (V13.0.88), or 11.x's version.json,
/// which dates its SDK (`11.8.20220929`) and so gives the `cuda_nvcc` component's version.
pub const FROM_NVCC: &str = "bin/nvcc --version";
pub const FROM_NVCC_JSON: &str = "version.json (cuda_nvcc)";

impl Entry {
    /// The CUDA release this tree is, as NVIDIA numbers it (13.2.2), from its version and
    /// where that was read, by the data `facts`: version.json's `cuda.version` is the
    /// release; nvcc's build number (V13.2.86) is the release the data's `[[nvcc-build]]`
    /// rows give it, when exactly one release ships that build; otherwise (a build several
    /// releases share, one the data does not list, `cuda.h`, version.txt) the major.minor
    /// only. ROCm's versions are its releases. The one rule every name follows (installed,
    /// linked, discovered, module).
    pub fn release(&self, facts: &Facts) -> Version {
        if self.kind != Kind::Cuda || self.version_from == FROM_VERSION_JSON {
            return self.version.clone();
        }
        let nvcc_build = self.version_from == FROM_NVCC || self.version_from == FROM_NVCC_JSON;
        match nvcc_build.then(|| lookup::release_of_nvcc(facts, &self.version)) {
            Some(NvccRelease::One(release)) => release,
            _ => self.version.truncated(2),
        }
    }

    /// The real program `name` of this toolchain: its compiler driver and, for a system
    /// toolchain, its own programs only (never another program of `/usr/bin`); else a
    /// toolkit program in `<root>/bin` (never the python of a conda environment).
    pub fn tool(&self, name: &str) -> Option<PathBuf> {
        let in_bin = self.root.join("bin").join(name);
        match &self.system {
            Some(_) if name == self.kind.compiler() && in_bin.is_file() => Some(in_bin),
            _ if !super::system::is_toolkit_program(self.kind, name) => None,
            Some(system) => system.tool(name).map(Path::to_path_buf),
            None => in_bin.is_file().then_some(in_bin),
        }
    }

    /// The names of the toolkit programs of this toolchain, for the shims: a system
    /// toolchain's own, else the programs in `<root>/bin`, each only if it belongs to a
    /// toolkit of its kind (`system::is_toolkit_program`): a conda environment's python,
    /// pip or curl never get a shim.
    pub fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = match &self.system {
            // The list is in the settings, which may be an upstream's: filtered as well.
            Some(system) => system
                .tools
                .iter()
                .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
                .filter(|n| super::system::is_toolkit_program(self.kind, n))
                .collect(),
            None => fs_err::read_dir(self.root.join("bin"))
                .map(|rd| {
                    rd.flatten()
                        // Files only: the wheels' bin/ also holds a `crt/` directory.
                        .filter(|t| t.path().is_file())
                        .map(|t| t.file_name().to_string_lossy().into_owned())
                        .filter(|n| super::system::is_toolkit_program(self.kind, n))
                        .collect()
                })
                .unwrap_or_default(),
        };
        if self.tool(self.kind.compiler()).is_some() {
            names.push(self.kind.compiler().to_string());
        }
        names.retain(|n| is_tool_name(n));
        names.sort();
        names.dedup();
        names
    }
}

/// Names worth a shim: not hidden files, not data files such as `nvcc.profile` or Perl
/// modules such as Debian's executable `hipvars.pm`.
fn is_tool_name(name: &str) -> bool {
    !name.starts_with('.')
        && !name.ends_with(".profile")
        && !name.ends_with(".pm")
        && !name.contains(char::is_whitespace)
}

impl Entry {
    /// Why the tree no longer works, if it does not: its root, compiler or main header is
    /// gone (a toolkit made for a torch venv links into that venv, which may be deleted).
    pub fn broken(&self) -> Option<Broken> {
        let header = match self.kind {
            Kind::Cuda => "cuda_runtime.h",
            Kind::Rocm => "hip/hip_runtime.h",
        };
        // A system toolchain's compiler may be outside `<root>/bin` (`Entry::tool` knows).
        let compiler = self
            .tool(self.kind.compiler())
            .unwrap_or_else(|| self.root.join("bin").join(self.kind.compiler()));
        let checks = [compiler, self.include_dir.join(header)];
        let missing = checks.into_iter().find(|p| !p.exists())?;
        let target = fs_err::read_link(&missing).ok();
        Some(Broken {
            path: missing,
            target,
        })
    }
}

#[cfg(test)]
impl Entry {
    /// A CUDA toolkit linked at `root` (runfile layout), as unit tests register one.
    pub(crate) fn linked_cuda(root: impl Into<PathBuf>, version: &str) -> Entry {
        let root = root.into();
        Entry {
            kind: Kind::Cuda,
            version: version.parse().expect("a test's version"),
            include_dir: root.join("include"),
            lib_dir: root.join("lib64"),
            root,
            source: Source::Linked,
            version_from: "version.json".into(),
            collectives: None,
            system: None,
        }
    }
}

/// A file a working tree needs that is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// The compiler or the main header.
    pub path: PathBuf,
    /// Where it points, when it is a link whose target is gone.
    pub target: Option<PathBuf>,
}

impl Broken {
    /// The Python environment the dangling link pointed into: the venv a toolkit made by
    /// `gpuenv install torch` lives on.
    pub fn python_env(&self) -> Option<PathBuf> {
        let target = self.target.as_ref()?;
        let at = self.path.parent().unwrap_or(Path::new("/")).join(target);
        prefix_of_site_packages(&at)
    }
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Some(target) => write!(
                f,
                "{} links to {}, which is gone",
                self.path.display(),
                target.display()
            ),
            None => write!(f, "{} is missing", self.path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn torch_toolkit(dir: &Path, venv: &Path) -> Entry {
        let root = dir.join("cuda-13.0.2-torch");
        let cu13 = venv.join("lib/python3.11/site-packages/nvidia/cu13");
        fs_err::create_dir_all(root.join("bin")).unwrap();
        fs_err::create_dir_all(root.join("include")).unwrap();
        fs_err::create_dir_all(cu13.join("include")).unwrap();
        fs_err::write(root.join("bin/nvcc"), "#!/bin/sh\n").unwrap();
        fs_err::write(cu13.join("include/cuda_runtime.h"), "").unwrap();
        std::os::unix::fs::symlink(
            cu13.join("include/cuda_runtime.h"),
            root.join("include/cuda_runtime.h"),
        )
        .unwrap();
        Entry {
            kind: Kind::Cuda,
            version: "13.0.2".parse().unwrap(),
            include_dir: root.join("include"),
            lib_dir: root.join("lib64"),
            root,
            source: Source::Installed,
            version_from: "version.json".into(),
            collectives: None,
            system: None,
        }
    }

    #[test]
    fn a_toolkit_whose_venv_was_deleted_names_the_link_and_the_venv() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        let entry = torch_toolkit(dir.path(), &venv);
        assert_eq!(entry.broken(), None);

        fs_err::remove_dir_all(&venv).unwrap();
        let broken = entry.broken().expect("the header's link is dangling");
        assert_eq!(broken.path, entry.include_dir.join("cuda_runtime.h"));
        assert_eq!(broken.python_env(), Some(venv.clone()));
        assert!(
            broken.to_string().ends_with(&format!(
                "links to {}, which is gone",
                venv.join("lib/python3.11/site-packages/nvidia/cu13/include/cuda_runtime.h")
                    .display()
            )),
            "{broken}"
        );
    }

    #[test]
    fn a_removed_compiler_is_missing_and_not_from_a_venv() {
        let dir = tempfile::tempdir().unwrap();
        let entry = torch_toolkit(dir.path(), &dir.path().join("venv"));
        fs_err::remove_file(entry.root.join("bin/nvcc")).unwrap();
        let broken = entry.broken().unwrap();
        assert_eq!(broken.target, None);
        assert_eq!(broken.python_env(), None);
        assert_eq!(
            broken.to_string(),
            format!("{} is missing", entry.root.join("bin/nvcc").display())
        );
    }
}
