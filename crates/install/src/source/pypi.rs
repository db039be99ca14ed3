//! NVIDIA's CUDA wheels from a Python package index (`GPUENV_PYPI_URL`, else
//! `PIP_INDEX_URL`, else PyPI) through the simple API: PEP 691 JSON, or PEP 503 HTML from
//! indexes that only serve that; every file must come with its sha256. A release is resolved
//! through NVIDIA's `cuda-toolkit` metapackage, whose extras (`nvcc`, `cudart`, `cublas`, …)
//! pin the exact component wheels.

use std::collections::BTreeMap;

use crate::error::{Context as _, InstallError, Result};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::sources;
use gpuenv_core::install_hint;
use gpuenv_core::outside;
use indicatif::ProgressBar;
use reqwest::Url;

use super::pep440::{normalize, PyVersion, Requirement, Specifier};
use super::simple::{parse_html, parse_json, FileLink};
use super::{extra_name, highest_matching, redist_components, unknown_components, Source};
use crate::fault::Fault;
use crate::fetch::Fetcher;
use crate::pathpart;
use crate::{Archive, Format, Mapping, Plan, Selection};
use gpuenv_core::toolchain::{Kind, Spec, Version};

pub const PYPI_INDEX: &str = "https://pypi.org/simple/";
const ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01";
const METAPACKAGE: &str = "cuda-toolkit";

pub struct Pypi<'a> {
    pub fetcher: &'a Fetcher,
    pub index: Url,
}

/// A wheel's file name, taken apart.
#[derive(Debug, Clone)]
pub struct Wheel {
    pub version: PyVersion,
    pub platforms: Vec<String>,
}

impl Wheel {
    pub fn parse(filename: &str) -> Option<Wheel> {
        let stem = filename.strip_suffix(".whl")?;
        let parts: Vec<&str> = stem.split('-').collect();
        if parts.len() != 5 && parts.len() != 6 {
            return None;
        }
        Some(Wheel {
            version: PyVersion::parse(parts[1])?,
            platforms: parts[parts.len() - 1]
                .split('.')
                .map(str::to_string)
                .collect(),
        })
    }

    /// Installs on Linux on this machine's architecture: 0 no, 1 pure (`any`), 2 built for it.
    pub fn fit(&self) -> u8 {
        let arch = std::env::consts::ARCH;
        let linux = |t: &String| {
            t == &format!("linux_{arch}")
                || (t.starts_with("manylinux") && t.ends_with(&format!("_{arch}")))
        };
        if self.platforms.iter().any(linux) {
            2
        } else if self.platforms.iter().any(|t| t == "any") {
            1
        } else {
            0
        }
    }
}

fn no_sha256(index: &Url, filename: &str) -> Hinted {
    Hinted::new(format!(
        "the package index {index} gives no sha256 for {filename}, so it cannot be checked"
    ))
    .hint("use an index that publishes hashes (PyPI and its mirrors do)")
}

impl Pypi<'_> {
    pub fn files(&self, project: &str) -> Result<Vec<FileLink>> {
        let url = self
            .index
            .join(&format!("{}/", normalize(project)))
            .map_err(InstallError::other)
            .context("building the project URL")?;
        let page = match self.fetcher.page(&url, ACCEPT, outside::Kind::IndexPage) {
            Ok(p) => p,
            Err(Fault::NotFound { .. } | Fault::NoSuchFile { .. }) => {
                return Err(Hinted::new(format!(
                    "the package index {} has no project {project} ({url})",
                    self.index
                ))
                .hint("set GPUENV_PYPI_URL to an index that mirrors NVIDIA's CUDA wheels")
                .into())
            }
            Err(e) => {
                return Err(e).with_context(|| format!("reading the package index {}", self.index))
            }
        };
        if page.content_type.contains("json") {
            parse_json(&page).with_context(|| format!("reading the PEP 691 project page {url}"))
        } else {
            parse_html(&page).with_context(|| format!("reading the project page {url}"))
        }
    }

    /// The best wheel of `project` whose version `spec` allows.
    fn pick(&self, project: &str, spec: &Specifier) -> Result<(FileLink, PyVersion)> {
        let files = self.files(project)?;
        let wheels: Vec<(FileLink, Wheel)> = files
            .into_iter()
            .filter(|f| !f.yanked)
            .filter_map(|f| Wheel::parse(&f.filename).map(|w| (f, w)))
            .filter(|(_, w)| w.fit() > 0 && spec.contains(&w.version))
            .collect();
        let finals = wheels.iter().any(|(_, w)| !w.version.is_prerelease());
        let best = wheels
            .into_iter()
            .filter(|(_, w)| !finals || !w.version.is_prerelease())
            .max_by(|(_, a), (_, b)| a.version.cmp(&b.version).then(a.fit().cmp(&b.fit())));
        let Some((file, wheel)) = best else {
            return Err(InstallError::msg(format!(
                "the package index {} has no wheel of {project}{spec} for Linux {}",
                self.index,
                std::env::consts::ARCH
            )));
        };
        if file.sha256.is_none() {
            return Err(no_sha256(&self.index, &file.filename).into());
        }
        Ok((file, wheel.version))
    }

    /// The metapackage releases, as CUDA versions, with their wheel.
    fn releases(&self) -> Result<Vec<(Version, FileLink)>> {
        let mut out: Vec<(Version, FileLink)> = Vec::new();
        for f in self.files(METAPACKAGE)? {
            let Some(w) = Wheel::parse(&f.filename) else {
                continue;
            };
            if f.yanked || w.version.is_prerelease() || w.fit() == 0 {
                continue;
            }
            out.push((Version::new(&w.version.short_release()), f));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

impl Source for Pypi<'_> {
    fn name(&self) -> &'static str {
        "pypi"
    }

    fn available(&self, kind: Kind) -> Result<Vec<Version>> {
        if kind != Kind::Cuda {
            return Err(InstallError::msg("the package index has CUDA wheels only"));
        }
        let mut v: Vec<Version> = self
            .releases()?
            .into_iter()
            .map(|(v, _)| v)
            .filter(|v| sources::Source::Pypi.has_cuda(v))
            .collect();
        v.dedup();
        Ok(v)
    }

    fn plan(&self, spec: &Spec, sel: &Selection) -> Result<Plan> {
        if spec.kind != Kind::Cuda {
            return Err(Hinted::new("the package index has CUDA wheels only")
                .hint(format!(
                "install {} with a gpuenv manifest: `gpuenv install {spec} --manifest <path|url>`",
                spec.kind
            ))
                .into());
        }
        if !sources::Source::Pypi.has_cuda(&spec.version) {
            let elsewhere = if sources::Source::Nvidia.has_cuda(&spec.version) {
                format!("`gpuenv install {spec} --source nvidia` installs it from NVIDIA's redist archives; `gpuenv link {spec} <path>` registers a toolkit you already have")
            } else {
                install_hint::install_or_link(spec)
            };
            return Err(Hinted::new(format!(
                "NVIDIA's wheels of CUDA {} cannot make a toolkit: the -cu11/-cu12 nvcc wheels ship ptxas but no nvcc driver on Linux (only the 13.x wheels have one)",
                spec.version
            ))
            .hint(elsewhere).into());
        }
        let releases = self.releases()?;
        let Some((release, meta_file)) =
            highest_matching(spec, releases.iter().map(|(v, f)| (v, f)))
        else {
            let have: Vec<String> = releases
                .iter()
                .filter(|(v, _)| sources::Source::Pypi.has_cuda(v))
                .map(|(v, _)| v.to_string())
                .collect();
            return Err(Hinted::new(format!(
                "the package index {} has no {METAPACKAGE} release {}",
                self.index, spec.version,
            ))
            .hint(format!(
                "it has {}",
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(", ")
                }
            ))
            .into());
        };
        let meta = self.metadata(meta_file)?;
        let provided = meta.extras.clone();
        let asked: Vec<String> = sel.components.iter().map(|c| extra_name(c)).collect();
        unknown_components(&asked, |c| provided.iter().any(|p| p == c), &provided)?;
        if !provided.iter().any(|p| p == "nvcc") {
            return Err(Hinted::new(format!(
                "{METAPACKAGE} {release} has no `nvcc` extra, so it cannot make a toolkit"
            ))
            .hint(format!("`gpuenv install {spec} --source nvidia`"))
            .into());
        }
        // The profile's components, as the metapackage names its extras.
        let mut extras: Vec<String> = redist_components(sel.profile, release)
            .into_iter()
            .map(extra_name)
            .filter(|e| provided.contains(e))
            .collect();
        for a in asked {
            if !extras.contains(&a) {
                extras.push(a);
            }
        }
        // One specifier per wheel, from every extra that asks for it.
        let mut wanted: BTreeMap<String, Specifier> = BTreeMap::new();
        for r in &meta.requires {
            if extras.iter().any(|e| r.applies(e)) {
                wanted
                    .entry(r.name.clone())
                    .and_modify(|s| s.and(&r.specifier))
                    .or_insert_with(|| r.specifier.clone());
            }
        }
        let picks: Vec<Result<(String, FileLink, PyVersion)>> = std::thread::scope(|s| {
            let handles: Vec<_> = wanted
                .iter()
                .map(|(name, spec)| {
                    s.spawn(move || self.pick(name, spec).map(|(f, v)| (name.clone(), f, v)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("index lookups do not panic"))
                .collect()
        });
        let mut archives = Vec::new();
        for p in picks {
            let (name, file, version) = p?;
            let component = name.trim_start_matches("nvidia-").replace('-', "_");
            pathpart::part("component", &component).map_err(|e| {
                Hinted::new(format!("{METAPACKAGE} {release}"))
                    .hint(pathpart::SOURCE_HINT)
                    .caused_by(e)
            })?;
            archives.push(Archive {
                component,
                version: version.to_string(),
                sha256: file.sha256.clone().expect("pick checks it"),
                size: file.size,
                format: Format::Zip,
                mapping: Mapping::Wheel,
                url: file.url,
            });
        }
        Ok(Plan {
            name: format!("cuda-{release}"),
            kind: Kind::Cuda,
            version: release.clone(),
            source: "pypi",
            archives,
            cuda_layout: true,
            linked: Vec::new(),
            manifest: None,
        })
    }
}

/// What the metapackage's METADATA says.
#[derive(Debug, Default)]
pub struct Metadata {
    pub extras: Vec<String>,
    pub requires: Vec<Requirement>,
}

impl Pypi<'_> {
    fn metadata(&self, file: &FileLink) -> Result<Metadata> {
        let Some(sha256) = file.sha256.clone() else {
            return Err(no_sha256(&self.index, &file.filename).into());
        };
        let archive = Archive {
            component: METAPACKAGE.into(),
            version: String::new(),
            url: file.url.clone(),
            sha256,
            size: file.size,
            format: Format::Zip,
            mapping: Mapping::Strip(String::new()),
        };
        let dir = self
            .fetcher
            .unpacked(&archive, &ProgressBar::hidden())
            .with_context(|| format!("fetching {}", file.filename))?;
        let dist_info = fs_err::read_dir(&dir)?
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".dist-info"))
            .with_context(|| format!("{} has no .dist-info", file.filename))?;
        let text = outside::read_text(
            &dist_info.path().join("METADATA"),
            outside::Kind::PackageMetadata,
        )?;
        Ok(parse_metadata(&text))
    }
}

/// The headers of a METADATA file (the body after the first blank line is the README).
pub fn parse_metadata(text: &str) -> Metadata {
    let mut m = Metadata::default();
    for line in text.lines() {
        if line.trim().is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Provides-Extra:") {
            m.extras.push(normalize(v.trim()));
        } else if let Some(v) = line.strip_prefix("Requires-Dist:") {
            if let Some(r) = Requirement::parse(v.trim()) {
                m.requires.push(r);
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_tags_decide_what_installs_here() {
        let arch = std::env::consts::ARCH;
        let w = Wheel::parse(&format!(
            "nvidia_nvvm-13.0.88-py3-none-manylinux2010_{arch}.manylinux_2_12_{arch}.whl"
        ))
        .unwrap();
        assert_eq!(w.fit(), 2);
        assert_eq!(w.version.to_string(), "13.0.88");
        assert_eq!(
            Wheel::parse("cuda_toolkit-13.0.2-py2.py3-none-any.whl")
                .unwrap()
                .fit(),
            1
        );
        assert_eq!(
            Wheel::parse("nvidia_cuda_nvcc-13.0.88-py3-none-win_amd64.whl")
                .unwrap()
                .fit(),
            0
        );
        assert!(Wheel::parse("cuda_toolkit-13.0.2.tar.gz").is_none());
    }

    #[test]
    fn reads_the_metapackage_metadata() {
        let text = "Metadata-Version: 2.4\nName: cuda-toolkit\nVersion: 13.0.2\nProvides-Extra: nvcc\nRequires-Dist: nvidia-cuda-nvcc==13.0.88.*; (sys_platform == 'linux' or sys_platform == 'win32') and extra == 'nvcc'\nProvides-Extra: cudart\n\nRequires-Dist: not-a-header\n";
        let m = parse_metadata(text);
        assert_eq!(m.extras, ["nvcc", "cudart"]);
        assert_eq!(m.requires.len(), 1);
        assert!(m.requires[0].applies("nvcc"));
    }
}
