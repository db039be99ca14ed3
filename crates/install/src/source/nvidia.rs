//! NVIDIA's redistributable archives: `redistrib_<release>.json` manifests under a redist
//! root (`GPUENV_CUDA_MIRROR`; a `file://` URL or a directory works too). Per component a
//! `name`, `version`, and per platform a `relative_path` (from the manifest's directory),
//! `sha256` and `size` (a string). Keys without a `name` (`release_date`, …) are not
//! components.

use crate::error::{Context as _, InstallError, Result};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::{outside, ui};
use reqwest::Url;
use serde_json::Value;

use super::{highest_matching, redist_components, unknown_components, Source};
use crate::fetch::Fetcher;
use crate::pathpart::{self, Sha256, SOURCE_HINT};
use crate::{Archive, Format, Mapping, Plan, Selection};
use gpuenv_core::facts::nvidia_target::redist_platform;
use gpuenv_core::toolchain::{Kind, Spec, Version};

pub const NVIDIA_MIRROR: &str = "https://developer.download.nvidia.com/compute/cuda/redist/";

pub struct Nvidia<'a> {
    pub fetcher: &'a Fetcher,
    pub root: Url,
}

impl Nvidia<'_> {
    fn releases(&self) -> Result<Vec<Version>> {
        let page = self
            .fetcher
            .page(&self.root, "text/html", outside::Kind::IndexPage)
            .with_context(|| format!("listing the CUDA releases at {}", self.root))?;
        Ok(nvidia_releases(&page.text()))
    }
}

/// The releases a redist root's index page links to (`redistrib_12.4.1.json`).
pub fn nvidia_releases(html: &str) -> Vec<Version> {
    let mut out: Vec<Version> = html
        .split("redistrib_")
        .skip(1)
        .filter_map(|rest| rest.split_once(".json").map(|(v, _)| v))
        .filter_map(|v| v.parse().ok())
        .collect();
    out.sort();
    out.dedup();
    out
}

impl Source for Nvidia<'_> {
    fn name(&self) -> &'static str {
        "nvidia"
    }

    fn available(&self, kind: Kind) -> Result<Vec<Version>> {
        if kind != Kind::Cuda {
            return Err(Hinted::new("NVIDIA's redist has CUDA releases only").hint(format!(
                "install {kind} with a gpuenv manifest: `gpuenv install {kind}-<version> --manifest <path|url>`"
            )).into());
        }
        self.releases()
    }

    fn plan(&self, spec: &Spec, sel: &Selection) -> Result<Plan> {
        if spec.kind != Kind::Cuda {
            return Err(Hinted::new("NVIDIA's redist has CUDA releases only")
                .hint(format!(
                "install {} with a gpuenv manifest: `gpuenv install {spec} --manifest <path|url>`",
                spec.kind
            ))
                .into());
        }
        let releases = self.releases()?;
        let Some((release, ())) = highest_matching(spec, releases.iter().map(|v| (v, ()))) else {
            let have: Vec<String> = releases.iter().map(|v| v.to_string()).collect();
            return Err(Hinted::new(format!(
                "{} has no CUDA release {}",
                self.root, spec.version
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
        let url = self
            .root
            .join(&format!("redistrib_{release}.json"))
            .map_err(InstallError::other)
            .context("building the manifest URL")?;
        let page = self
            .fetcher
            .page(&url, "application/json", outside::Kind::Manifest)?;
        let json: Value = serde_json::from_slice(&page.body)
            .with_context(|| format!("{url} is not a JSON redist manifest"))?;
        plan_from_manifest(&json, &page.url, release, sel).with_context(|| format!("reading {url}"))
    }
}

/// One component's archive, every value that becomes a path checked.
fn archive(key: &str, comp: &Value, entry: &Value, url: &Url) -> Result<Archive> {
    let field = |name: &str| {
        entry
            .get(name)
            .and_then(Value::as_str)
            .with_context(|| format!("it has no {name}"))
    };
    let version = match comp.get("version").and_then(Value::as_str) {
        Some(v) => pathpart::part("version", v)?.to_string(),
        None => String::new(),
    };
    let rel = field("relative_path")?;
    let sha256 = Sha256::parse(field("sha256")?)?;
    let size = entry.get("size").and_then(|s| match s {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    });
    pathpart::part("file name", rel.rsplit('/').next().unwrap_or(rel))?;
    let format = Format::from_name(rel)
        .with_context(|| format!("unknown archive type of {}", ui::value(rel)))?;
    Ok(Archive {
        component: pathpart::part("component", key)?.to_string(),
        version,
        url: url
            .join(rel)
            .map_err(InstallError::other)
            .with_context(|| format!("bad relative_path {}", ui::value(rel)))?,
        sha256,
        size,
        format,
        mapping: Mapping::Redist,
    })
}

/// The plan for `release` from its manifest.
pub fn plan_from_manifest(
    json: &Value,
    url: &Url,
    release: &Version,
    sel: &Selection,
) -> Result<Plan> {
    let obj = json
        .as_object()
        .context("the manifest is not a JSON object")?;
    let components: Vec<String> = obj
        .iter()
        .filter(|(_, v)| v.get("name").is_some())
        .map(|(k, _)| k.clone())
        .collect();
    // A name in any form the table knows (`cudart`, `cuda_runtime`), else guessed.
    let find = |c: &str| {
        let known = super::components::component(c).map(|k| k.redist.to_string());
        known
            .into_iter()
            .chain([c.to_string(), format!("cuda_{c}"), format!("lib{c}")])
            .find(|k| components.contains(k))
    };
    unknown_components(&sel.components, |c| find(c).is_some(), &components)?;
    let mut wanted: Vec<String> = redist_components(sel.profile, release)
        .into_iter()
        .map(str::to_string)
        .collect();
    for c in &sel.components {
        let key = find(c).expect("checked above");
        if !wanted.contains(&key) {
            wanted.push(key);
        }
    }
    let mut archives = Vec::new();
    for key in &wanted {
        let comp = obj
            .get(key)
            .filter(|v| v.get("name").is_some())
            .ok_or_else(|| {
                Hinted::new(format!("CUDA {release} has no component {key}")).hint(format!(
                    "`--profile minimal` asks for less; the manifest has: {}",
                    components.join(", ")
                ))
            })?;
        let mut entry = comp.get(redist_platform()).with_context(|| {
            format!(
                "{key} of CUDA {release} has no archive for {}",
                redist_platform()
            )
        })?;
        // Some components have one archive per CUDA major (`cuda12`, `cuda13`).
        if entry.get("relative_path").is_none() {
            entry = entry
                .get(format!("cuda{}", release.major()))
                .with_context(|| {
                    format!("{key} of CUDA {release} has no archive for this CUDA major")
                })?;
        }
        archives.push(archive(key, comp, entry, url).map_err(|e| {
            Hinted::new(format!("the component {key} of CUDA {release}"))
                .hint(SOURCE_HINT)
                .caused_by(e)
        })?);
    }
    Ok(Plan {
        name: format!("cuda-{release}"),
        kind: Kind::Cuda,
        version: release.clone(),
        source: "nvidia",
        archives,
        cuda_layout: true,
        linked: Vec::new(),
        manifest: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Profile;

    #[test]
    fn lists_releases_from_an_index_page() {
        let html = r#"<a href="redistrib_12.4.1.json">redistrib_12.4.1.json</a>
<a href="redistrib_11.8.0.json">x</a><a href="redistrib_12.10.0.json">y</a><a href="redistrib_12.4.1.json">dup</a>
<a href="cuda_nvcc/">cuda_nvcc/</a><a href="redistrib_bad.json">bad</a>"#;
        let got: Vec<String> = nvidia_releases(html)
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(got, ["11.8.0", "12.4.1", "12.10.0"]);
    }

    #[test]
    fn plans_the_profile_from_a_manifest_like_nvidias() {
        // The shape of 12.0's manifest: no release_label or release_product.
        let p = redist_platform();
        let comp = |name: &str, dir: &str, ver: &str| {
            serde_json::json!({
                "name": name, "license": "CUDA Toolkit", "version": ver,
                p: {"relative_path": format!("{dir}/{p}/{dir}-{p}-{ver}-archive.tar.xz"),
                    "sha256": "AB".repeat(32), "md5": "00", "size": "1234"}
            })
        };
        let json = serde_json::json!({
            "release_date": "2022-12-08",
            "cuda_nvcc": comp("CUDA NVCC", "cuda_nvcc", "12.0.76"),
            "cuda_cudart": comp("CUDA Runtime (cudart)", "cuda_cudart", "12.0.107"),
            "cuda_cccl": comp("CXX Core Compute Libraries", "cuda_cccl", "12.0.90"),
            "libcublas": comp("CUDA cuBLAS", "libcublas", "12.0.1.189"),
            "nameless": {"version": "1"}
        });
        let url = Url::parse("https://mirror.example/redist/redistrib_12.0.0.json").unwrap();
        let release: Version = "12.0.0".parse().unwrap();
        let sel = Selection {
            profile: Profile::Minimal,
            components: vec!["cublas".into()],
        };
        let plan = plan_from_manifest(&json, &url, &release, &sel).unwrap();
        assert_eq!(plan.name, "cuda-12.0.0");
        let names: Vec<&str> = plan.archives.iter().map(|a| a.component.as_str()).collect();
        assert_eq!(
            names,
            ["cuda_nvcc", "cuda_cudart", "cuda_cccl", "libcublas"]
        );
        let nvcc = &plan.archives[0];
        assert_eq!(nvcc.size, Some(1234));
        assert_eq!(nvcc.sha256.as_str(), "ab".repeat(32));
        assert_eq!(
            nvcc.url.as_str(),
            format!(
                "https://mirror.example/redist/cuda_nvcc/{p}/cuda_nvcc-{p}-12.0.76-archive.tar.xz"
            )
        );

        let sel = Selection {
            profile: Profile::Default,
            components: vec![],
        };
        let err =
            crate::error::one_line(&plan_from_manifest(&json, &url, &release, &sel).unwrap_err());
        assert!(err.contains("no component libcusparse"), "{err}");
        let sel = Selection {
            profile: Profile::Minimal,
            components: vec!["nope".into()],
        };
        let err = plan_from_manifest(&json, &url, &release, &sel).unwrap_err();
        let report = gpuenv_core::ui::Report::of(&err, crate::FIND);
        assert!(
            report.inline().contains("unknown component nope")
                && report.hints.iter().any(|h| h.contains("cuda_nvcc")),
            "{report:?}"
        );
    }
}
