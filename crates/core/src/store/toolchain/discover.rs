//! Finding toolchains in the standard places: `/usr/local/cuda`, `/usr/local/cuda-*`,
//! `/opt/cuda*`, `/opt/rocm`, `/opt/rocm-*`, Debian/Ubuntu's packages (`/usr/lib/nvidia-cuda-toolkit`,
//! ROCm under `/usr`), and conda environments (`~/.conda/environments.txt`, `$CONDA_PREFIX`).

use std::path::{Path, PathBuf};

use super::detect::{self, NotAToolchain};
use super::entry::{Entry, Source};
use super::system;

/// Where to look. `prefixes` are file-system roots the standard places are looked for under
/// (`/` normally; `GPUENV_DISCOVER_ROOTS` replaces them so tests are hermetic).
#[derive(Debug, Clone, Default)]
pub struct Places {
    pub prefixes: Vec<PathBuf>,
    pub conda_envs_file: Option<PathBuf>,
    pub conda_prefix: Option<PathBuf>,
    /// The active venv (`VIRTUAL_ENV`): the ROCm its AMD wheels carry.
    pub venv: Option<PathBuf>,
}

#[derive(Debug)]
pub struct Found {
    pub root: PathBuf,
    /// Why this place was looked at, for the report.
    pub origin: &'static str,
    /// What the tree is, as `gpuenv discover --register` would register it.
    pub result: Result<Entry, NotAToolchain>,
}

impl Found {
    /// The label a discovered toolchain's name gets: conda and Debian/Ubuntu trees are marked
    /// so they never take the plain name of a toolkit installed the usual way.
    pub fn label(&self) -> Option<&'static str> {
        match self.origin {
            "conda" => Some("conda"),
            "debian" => Some("debian"),
            "module" => Some("module"),
            "venv" => Some("venv"),
            _ => None,
        }
    }
}

fn children_starting_with(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs_err::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The ROCm AMD's wheels put in a venv: `_rocm_sdk_devel` in each site-packages once
/// `rocm-sdk init` expanded it (what `rocm-sdk path --root` prints), else `_rocm_sdk_core`.
fn venv_rocm(venv: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for lib in ["lib", "lib64"] {
        for py in children_starting_with(&venv.join(lib), "python") {
            let site = py.join("site-packages");
            let devel = children_starting_with(&site, "_rocm_sdk_devel")
                .into_iter()
                .find(|d| d.join("bin").is_dir());
            let core = || {
                children_starting_with(&site, "_rocm_sdk_core")
                    .into_iter()
                    .find(|d| d.join("bin").is_dir())
            };
            out.extend(devel.or_else(core));
        }
    }
    out
}

/// Every candidate directory, in a stable order, without duplicates (`/usr/local/cuda` is
/// usually a link to one of the `cuda-*` dirs: the real directory is reported once).
pub fn candidates(places: &Places) -> Vec<(PathBuf, &'static str)> {
    let mut out: Vec<(PathBuf, &'static str)> = Vec::new();
    for p in &places.prefixes {
        for c in children_starting_with(&p.join("usr/local"), "cuda") {
            let name = c
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            if name == "cuda" || name.starts_with("cuda-") {
                out.push((c, "standard"));
            }
        }
        for c in children_starting_with(&p.join("opt"), "cuda") {
            out.push((c, "standard"));
        }
        for c in children_starting_with(&p.join("opt"), "rocm") {
            // ROCm 7's Core SDK installs into /opt/rocm/core(-<version>); /opt/rocm itself
            // may then hold only links to it, or nothing of a toolchain.
            let cores = children_starting_with(&c, "core");
            if cores.is_empty() || c.join("bin/hipcc").exists() {
                out.push((c, "standard"));
            }
            out.extend(cores.into_iter().map(|core| (core, "standard")));
        }
        let usr = p.join("usr");
        if let Some(cuda) = system::cuda_root(&usr) {
            out.push((cuda, "debian"));
        }
        if system::is_rocm_prefix(&usr) {
            out.push((usr, "debian"));
        }
    }
    if let Some(file) = &places.conda_envs_file {
        if let Ok(text) = crate::outside::read_text(file, crate::outside::Kind::FileList) {
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                out.push((PathBuf::from(line), "conda"));
            }
        }
    }
    if let Some(prefix) = &places.conda_prefix {
        out.push((prefix.clone(), "conda"));
    }
    if let Some(venv) = &places.venv {
        out.extend(venv_rocm(venv).into_iter().map(|r| (r, "venv")));
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    out.retain(|(p, _)| {
        let real = p.canonicalize().unwrap_or_else(|_| p.clone());
        if seen.contains(&real) {
            false
        } else {
            seen.push(real);
            true
        }
    });
    out
}

/// Detects every candidate. Conda environments without nvcc are dropped silently: most
/// conda environments are not toolkits, and saying so for each would be noise.
pub fn discover(places: &Places) -> Vec<Found> {
    candidates(places)
        .into_iter()
        .map(|(root, origin)| Found {
            result: detect::detect(&root, Source::Discovered),
            root,
            origin,
        })
        .filter(|f| {
            f.origin != "conda"
                || !matches!(
                    f.result,
                    Err(NotAToolchain::NoCompiler { .. }) | Err(NotAToolchain::Missing(_))
                )
        })
        .collect()
}
