//! FM-17: NVIDIA's wheels drifted from what torch asks. torch names its CUDA libraries
//! through `cuda-toolkit[cublas,…,nvjitlink]==13.2.2`, whose extras pin each `nvidia-*`
//! wheel; a later `pip install` of something else can leave an older nvJitLink than
//! cuSPARSE needs, and the import fails with `undefined symbol: __nvJitLinkGetErrorLogSize`.
//! Read from the environment's `*.dist-info/METADATA` (no pip runs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::context::vars;
use gpuenv_core::facts::pep440::{normalize, PyVersion, Requirement};
use gpuenv_core::outside;
use gpuenv_core::plan::runtime;

pub const CHECK: Check = Check {
    id: "FM-17",
    name: "nvidia-wheel-drift",
};

/// One installed distribution.
#[derive(Debug, Clone)]
pub struct Dist {
    pub name: String,
    pub version: String,
    pub requires: Vec<Requirement>,
}

/// A requirement of torch's (or of its `cuda-toolkit`'s) an installed NVIDIA wheel breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub wheel: String,
    pub installed: String,
    pub wants: String,
    /// Who asks (`cuda-toolkit 13.2.2, for torch 2.15.0`).
    pub by: String,
}

impl Drift {
    /// The exact install that fixes it (`pip install "nvidia-nvjitlink<14,>=13.2.86"`).
    pub fn pip(&self) -> String {
        format!("pip install \"{}{}\"", self.wheel, self.wants)
    }
}

/// The environments' `site-packages` directories (`<prefix>/lib/python3.*/site-packages`).
pub fn site_packages(prefixes: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for prefix in prefixes {
        let Ok(entries) = fs_err::read_dir(prefix.join("lib")) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
            .map(|e| e.path().join("site-packages"))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        out.extend(dirs);
    }
    out
}

/// The distributions installed in `site`, by normalized name, and each METADATA that could
/// not be read (too large, not text, not a regular file) with why.
pub fn installed(site: &Path) -> (BTreeMap<String, Dist>, Vec<String>) {
    let mut dists = BTreeMap::new();
    let mut refused = Vec::new();
    let Ok(entries) = fs_err::read_dir(site) else {
        return (dists, refused);
    };
    for entry in entries.filter_map(Result::ok) {
        let dir_name = entry.file_name().to_string_lossy().into_owned();
        if !dir_name.ends_with(".dist-info") {
            continue;
        }
        let path = entry.path().join("METADATA");
        match outside::read_text(&path, outside::Kind::PackageMetadata) {
            Ok(text) => {
                if let Some(d) = parse_metadata(&text) {
                    dists.insert(d.name.clone(), d);
                }
            }
            Err(e) if e.is_missing() => {}
            Err(e) => refused.push(e.to_string()),
        }
    }
    (dists, refused)
}

/// `Name`, `Version` and `Requires-Dist` of a METADATA file's header.
pub fn parse_metadata(text: &str) -> Option<Dist> {
    let (mut name, mut version, mut requires) = (None, None, Vec::new());
    for line in text.lines() {
        if line.is_empty() {
            break; // the description follows the header
        }
        if let Some(v) = line.strip_prefix("Name:") {
            name = Some(normalize(v.trim()));
        } else if let Some(v) = line.strip_prefix("Version:") {
            version = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Requires-Dist:") {
            requires.extend(Requirement::parse(v.trim()));
        }
    }
    Some(Dist {
        name: name?,
        version: version?,
        requires,
    })
}

fn is_nvidia(name: &str) -> bool {
    name.starts_with("nvidia-") || name == "cuda-toolkit"
}

/// Each NVIDIA wheel whose installed version breaks a requirement of torch's, or of the
/// `cuda-toolkit` torch asks for with the extras it asks for.
pub fn drift(dists: &BTreeMap<String, Dist>) -> Vec<Drift> {
    let Some(torch) = dists.get("torch") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let torch_by = format!("torch {}", torch.version);
    for req in torch.requires.iter().filter(|r| r.applies("")) {
        if !is_nvidia(&req.name) {
            continue;
        }
        check(dists, req, &torch_by, &mut out);
        if req.name != "cuda-toolkit" {
            continue;
        }
        let Some(toolkit) = dists.get("cuda-toolkit") else {
            continue;
        };
        let by = format!("cuda-toolkit {}, for {torch_by}", toolkit.version);
        let mut seen: Vec<&str> = Vec::new();
        for inner in &toolkit.requires {
            let asked = req.extras.iter().any(|e| inner.applies(e));
            if asked && is_nvidia(&inner.name) && !seen.contains(&inner.name.as_str()) {
                seen.push(&inner.name);
                check(dists, inner, &by, &mut out);
            }
        }
    }
    out
}

fn check(dists: &BTreeMap<String, Dist>, req: &Requirement, by: &str, out: &mut Vec<Drift>) {
    let Some(have) = dists.get(&req.name) else {
        return; // not installed: pip's own resolver says so at install
    };
    let Some(v) = PyVersion::parse(&have.version) else {
        return;
    };
    if !req.specifier.contains(&v) {
        out.push(Drift {
            wheel: req.name.clone(),
            installed: have.version.clone(),
            wants: req.specifier.to_string(),
            by: by.to_string(),
        });
    }
}

pub fn run(inputs: &Inputs) -> Finding {
    let m = &inputs.machine;
    let prefixes = runtime::python_prefixes(
        m.ctx.path_var(vars::VIRTUAL_ENV).as_deref(),
        m.ctx.path_var(vars::CONDA_PREFIX).as_deref(),
        m.ctx.var_os(vars::PATH),
    );
    let sites = site_packages(&prefixes);
    let mut notes = Notes::default();
    let mut torch_seen = false;
    for site in &sites {
        let (dists, refused) = installed(site);
        for why in refused {
            notes.problem(Status::Warn, why);
        }
        torch_seen |= dists.contains_key("torch");
        for d in drift(&dists) {
            notes.problem(
                Status::Error,
                format!(
                    "{} {} in {} breaks {}{} (asked by {})",
                    d.wheel,
                    d.installed,
                    site.display(),
                    d.wheel,
                    d.wants,
                    d.by
                ),
            );
            notes.hint(d.pip());
        }
    }
    if !torch_seen && notes.is_clean() {
        return CHECK
            .skip("no torch distribution (torch-*.dist-info) in the active Python environment");
    }
    let at: Vec<String> = sites.iter().map(|p| p.display().to_string()).collect();
    notes.seen(format!("read the METADATA of {}", at.join(", ")));
    notes.finish(
        CHECK,
        "torch's NVIDIA wheels are the versions torch and cuda-toolkit ask for",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(meta: &str) -> (String, Dist) {
        let d = parse_metadata(meta).unwrap();
        (d.name.clone(), d)
    }

    #[test]
    fn an_older_nvjitlink_than_cuda_toolkit_asks_is_named_with_its_fix() {
        let dists: BTreeMap<String, Dist> = [
            dist("Name: torch\nVersion: 2.15.0\nRequires-Dist: cuda-toolkit[cufft,nvjitlink]==13.2.2; platform_system == \"Linux\"\nRequires-Dist: optree>=0.13.0; extra == \"optree\"\n"),
            dist("Name: cuda-toolkit\nVersion: 13.2.2\nRequires-Dist: nvidia-nvjitlink<14,>=13.2.86; sys_platform == 'linux' and extra == 'nvjitlink'\nRequires-Dist: nvidia-nvjitlink<14,>=13.2.86; sys_platform == 'linux' and extra == 'cufft'\nRequires-Dist: nvidia-cuda-cccl==13.2.86.*; extra == 'cccl'\n"),
            dist("Name: nvidia-nvjitlink\nVersion: 13.0.88\n"),
            dist("Name: nvidia-cuda-cccl\nVersion: 13.3.5.0.6\n"),
        ]
        .into_iter()
        .collect();
        let found = drift(&dists);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].pip(),
            "pip install \"nvidia-nvjitlink<14,>=13.2.86\""
        );
        assert_eq!(found[0].by, "cuda-toolkit 13.2.2, for torch 2.15.0");
    }
}
