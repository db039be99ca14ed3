//! AMD's ROCm wheels (TheRock) from AMD's package index (`GPUENV_ROCM_INDEX_URL`, the
//! `rocm-index-url` setting, else AMD's multi-arch release index) through the simple API.
//! A release is the version of its `rocm-sdk-core` wheel; the `rocm` metapackage is an
//! sdist whose setup.py picks the wheels where it is installed, so gpuenv picks them as its
//! extras name them, without running it: `core` and `devel` always (`minimal`),
//! `libraries` (`default`), and one `device-<gfx>` per ISA asked for or pinned. Final
//! releases are named `rocm-7.14.0`; a nightly (`7.15.0a20260630`) or release candidate
//! (`7.14.1rc1`) only by its own name, the pre-release tag as the label
//! (`rocm-7.15.0-a20260630`), so no two builds ever share a name.

use crate::error::{Context as _, InstallError, Result};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::outside;
use reqwest::Url;

use super::pep440::{normalize, PyVersion};
use super::pypi::Wheel;
use super::simple::{parse_html, parse_json, FileLink};
use super::{highest_matching, Source};
use crate::fault::Fault;
use crate::fetch::Fetcher;
use crate::{Archive, Format, Mapping, Plan, Profile, Selection};
use gpuenv_core::toolchain::{Kind, Spec, Version};

/// Returns the error (a refusal with its hints) from the function.
macro_rules! bail {
    ($e:expr) => {
        return Err(InstallError::from($e))
    };
}

const ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01";

/// The wheel that says which releases the index has.
const CORE: &str = "rocm-sdk-core";

pub struct Amd<'a> {
    pub fetcher: &'a Fetcher,
    pub index: Url,
}

/// The `rocm` extras gpuenv installs as components, beside `device-<gfx>`.
pub const PACKAGES: &[&str] = &["core", "devel", "libraries"];

/// Whether a toolchain label is a PEP 440 pre-release tag of AMD's wheels: `a20260630`
/// (nightlies), `b1`, `rc1`.
pub fn prerelease_label(label: &str) -> bool {
    ["rc", "a", "b"].iter().any(|p| {
        label
            .strip_prefix(p)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The name of the toolchain a wheel version makes: `rocm-7.14.0`, `rocm-7.15.0-a20260630`.
fn name_of(py: &PyVersion) -> String {
    let release = Version::new(&py.short_release());
    let text = py.to_string();
    let tag = text
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
        .trim_start_matches(['.', '-', '_']);
    if tag.is_empty() {
        format!("rocm-{release}")
    } else {
        format!("rocm-{release}-{tag}")
    }
}

/// `device-gfx942` (or `gfx942`, `rocm-sdk-device-gfx942`) as the ISA it names.
pub fn device_isa(component: &str) -> Option<String> {
    let c = component.trim().to_ascii_lowercase();
    let c = c.strip_prefix("rocm-sdk-").unwrap_or(&c);
    let isa = c.strip_prefix("device-").unwrap_or(c);
    let isa = isa.split(':').next().unwrap_or(isa);
    (isa.starts_with("gfx") && isa.len() > 3 && isa.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| isa.to_string())
}

/// The components of `sel` for ROCm wheels, in install order (the devel tree last: it is
/// placed over the runtime packages' files): (component, project).
pub fn wheels_for(sel: &Selection) -> Result<Vec<(String, String)>> {
    let mut unknown = Vec::new();
    let mut isas: Vec<String> = Vec::new();
    let mut libraries = sel.profile == Profile::Default;
    for c in &sel.components {
        if let Some(isa) = device_isa(c) {
            if !isas.contains(&isa) {
                isas.push(isa);
            }
            // Each device wheel requires rocm-sdk-libraries of its release.
            libraries = true;
        } else if c == "libraries" {
            libraries = true;
        } else if !PACKAGES.contains(&c.as_str()) {
            unknown.push(c.as_str());
        }
    }
    if !unknown.is_empty() {
        bail!(Hinted::new(format!(
            "unknown ROCm component{} {}",
            if unknown.len() > 1 { "s" } else { "" },
            unknown.join(", ")
        ))
        .hint("ROCm's wheels have core, devel, libraries and device-<gfx> (one per GPU ISA, e.g. device-gfx942)"));
    }
    let mut out = vec![("core".to_string(), "rocm-sdk-core".to_string())];
    if libraries {
        out.push(("libraries".into(), "rocm-sdk-libraries".into()));
    }
    for isa in isas {
        out.push((format!("device-{isa}"), format!("rocm-sdk-device-{isa}")));
    }
    out.push(("devel".into(), "rocm-sdk-devel".into()));
    Ok(out)
}

impl Amd<'_> {
    /// The files the index lists for `project`; `None` when it has no such project.
    fn files(&self, project: &str) -> Result<Option<Vec<FileLink>>> {
        let url = self
            .index
            .join(&format!("{}/", normalize(project)))
            .map_err(InstallError::other)
            .context("building the project URL")?;
        let page = match self.fetcher.page(&url, ACCEPT, outside::Kind::IndexPage) {
            Ok(p) => p,
            Err(Fault::NotFound { .. } | Fault::NoSuchFile { .. }) => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| format!("reading AMD's ROCm index {}", self.index))
            }
        };
        let files = if page.content_type.contains("json") {
            parse_json(&page)
        } else {
            parse_html(&page)
        };
        files
            .map(Some)
            .with_context(|| format!("reading the project page {url}"))
    }

    /// The releases (pre-releases too) of `rocm-sdk-core` with a wheel for this machine,
    /// lowest first.
    fn releases(&self) -> Result<Vec<(Version, PyVersion)>> {
        let Some(files) = self.files(CORE)? else {
            bail!(Hinted::new(format!(
                "{} has no project {CORE}: it is not an index of AMD's ROCm wheels",
                self.index
            ))
            .hint("set GPUENV_ROCM_INDEX_URL (or `rocm-index-url` in the settings) to AMD's index or a mirror of it"));
        };
        let mut out: Vec<(Version, PyVersion)> = files
            .iter()
            .filter(|f| !f.yanked)
            .filter_map(|f| Wheel::parse(&f.filename))
            .filter(|w| w.fit() > 0)
            .map(|w| (Version::new(&w.version.short_release()), w.version))
            .collect();
        out.sort_by(|a, b| a.1.cmp(&b.1));
        out.dedup_by(|a, b| a.1 == b.1);
        Ok(out)
    }

    /// The wheel of `project` at exactly `version` for this machine, with its sha256.
    fn wheel(&self, project: &str, version: &PyVersion) -> Result<FileLink> {
        let files = self.files(project)?.unwrap_or_default();
        let best = files
            .into_iter()
            .filter(|f| !f.yanked)
            .filter_map(|f| Wheel::parse(&f.filename).map(|w| (f, w)))
            .filter(|(_, w)| w.fit() > 0 && w.version == *version)
            .max_by_key(|(_, w)| w.fit());
        let Some((file, _)) = best else {
            let hint = if project.starts_with("rocm-sdk-device-") {
                format!("this release may not be built for that GPU: the index's `rocm` {version} sdist lists its device-<gfx> extras; pin an ISA it has")
            } else {
                "the index is incomplete; use AMD's index or a full mirror of it".to_string()
            };
            bail!(Hinted::new(format!(
                "AMD's ROCm index {} has no wheel of {project} {version} for Linux {}",
                self.index,
                std::env::consts::ARCH
            ))
            .hint(hint));
        };
        if file.sha256.is_none() {
            bail!(Hinted::new(format!(
                "the index {} gives no sha256 for {}, so it cannot be checked",
                self.index, file.filename
            ))
            .hint("use an index that publishes hashes (AMD's does)"));
        }
        Ok(file)
    }
}

impl Source for Amd<'_> {
    fn name(&self) -> &'static str {
        "amd"
    }

    fn serves(&self, kind: Kind) -> bool {
        kind == Kind::Rocm
    }

    fn available(&self, kind: Kind) -> Result<Vec<Version>> {
        if kind != Kind::Rocm {
            bail!(Hinted::new("AMD's index has ROCm wheels only"));
        }
        let mut v: Vec<Version> = self
            .releases()?
            .into_iter()
            .filter(|(_, p)| !p.is_prerelease())
            .map(|(v, _)| v)
            .collect();
        v.dedup();
        Ok(v)
    }

    fn plan(&self, spec: &Spec, sel: &Selection) -> Result<Plan> {
        if spec.kind != Kind::Rocm {
            bail!(Hinted::new("AMD's index has ROCm wheels only"));
        }
        let wanted = wheels_for(sel)?;
        let all = self.releases()?;
        let (finals, pre): (Vec<_>, Vec<_>) = all.iter().partition(|(_, p)| !p.is_prerelease());
        let chosen = match spec.label.as_deref() {
            // A pre-release by its own name, exactly.
            Some(tag) if prerelease_label(tag) => pre
                .iter()
                .find(|(v, p)| *v == spec.version && name_of(p) == spec.to_string())
                .map(|(v, p)| (v, p)),
            Some(_) => None,
            None => highest_matching(spec, finals.iter().map(|(v, p)| (v, p))),
        };
        let Some((release, py)) = chosen else {
            let names = |list: &[&(Version, PyVersion)]| -> String {
                let mut n: Vec<String> = list.iter().map(|(_, p)| name_of(p)).collect();
                n.dedup();
                if n.is_empty() {
                    "none".into()
                } else {
                    n.join(", ")
                }
            };
            bail!(Hinted::new(format!(
                "AMD's ROCm index {} has no release {spec}",
                self.index
            ))
            .hint(format!(
                "it has {}; pre-releases (nightlies, release candidates), each installed by its own name: {}",
                names(&finals),
                names(&pre)
            )));
        };
        let picks: Vec<Result<FileLink>> = std::thread::scope(|s| {
            let handles: Vec<_> = wanted
                .iter()
                .map(|(_, project)| s.spawn(move || self.wheel(project, py)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("index lookups do not panic"))
                .collect()
        });
        let mut archives = Vec::new();
        for ((component, _), pick) in wanted.iter().zip(picks) {
            let file = pick?;
            archives.push(Archive {
                component: component.clone(),
                version: py.to_string(),
                sha256: file.sha256.clone().expect("wheel() checks it"),
                size: file.size,
                format: Format::Zip,
                mapping: if component == "devel" {
                    Mapping::TheRockDevel
                } else {
                    Mapping::TheRock
                },
                url: file.url,
            });
        }
        Ok(Plan {
            name: name_of(py),
            kind: Kind::Rocm,
            version: release.clone(),
            source: "amd",
            archives,
            cuda_layout: false,
            linked: Vec::new(),
            manifest: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_releases_are_named_by_their_tag() {
        let n = |s: &str| name_of(&PyVersion::parse(s).unwrap());
        assert_eq!(n("7.14.0"), "rocm-7.14.0");
        assert_eq!(n("7.15.0a20260630"), "rocm-7.15.0-a20260630");
        assert_eq!(n("7.14.1rc1"), "rocm-7.14.1-rc1");
        assert!(prerelease_label("a20260630") && prerelease_label("rc1"));
        assert!(!prerelease_label("torch") && !prerelease_label("a") && !prerelease_label("venv"));
    }

    #[test]
    fn device_components_name_isas() {
        assert_eq!(device_isa("device-gfx942").as_deref(), Some("gfx942"));
        assert_eq!(device_isa("gfx90a").as_deref(), Some("gfx90a"));
        assert_eq!(
            device_isa("rocm-sdk-device-gfx1100").as_deref(),
            Some("gfx1100")
        );
        assert_eq!(device_isa("gfx942:xnack+").as_deref(), Some("gfx942"));
        assert_eq!(device_isa("device-../x"), None);
        assert_eq!(device_isa("libraries"), None);
    }

    #[test]
    fn profiles_pick_the_wheels() {
        let sel = |profile, c: &[&str]| Selection {
            profile,
            components: c.iter().map(|s| s.to_string()).collect(),
        };
        let names = |s: &Selection| -> Vec<String> {
            wheels_for(s).unwrap().into_iter().map(|(c, _)| c).collect()
        };
        assert_eq!(names(&sel(Profile::Minimal, &[])), ["core", "devel"]);
        assert_eq!(
            names(&sel(Profile::Default, &[])),
            ["core", "libraries", "devel"]
        );
        assert_eq!(
            names(&sel(Profile::Minimal, &["device-gfx90a", "gfx90a"])),
            ["core", "libraries", "device-gfx90a", "devel"]
        );
        let err = wheels_for(&sel(Profile::Default, &["cublas"])).unwrap_err();
        assert!(
            err.to_string().contains("unknown ROCm component cublas"),
            "{err}"
        );
    }
}
