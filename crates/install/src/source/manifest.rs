//! gpuenv's own manifest, for ROCm tarballs and in-house builds (`--manifest PATH|URL`):
//!
//! ```toml
//! kind = "rocm"
//! version = "6.2.4"
//! name = "rocm-6.2.4"              # optional; <kind>-<version>[-<label>]
//! [[archive]]
//! url = "rocm-6.2.4.tar.xz"        # relative to the manifest, or absolute
//! sha256 = "…"
//! strip-prefix = "rocm-6.2.4"      # optional: the directory the tree is in
//! ```
//!
//! Several toolchains go in `[[toolchain]]` tables of the same shape.

use crate::error::{Context as _, InstallError, Result};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::fsutil::line_col;
use gpuenv_core::outside;
use gpuenv_core::ui;
use reqwest::Url;
use serde::Deserialize;

use super::{highest_matching, Source};
use crate::fetch::Fetcher;
use crate::pathpart::{self, Sha256};
use crate::{Archive, Format, Mapping, Plan, Selection};
use gpuenv_core::toolchain::{Kind, Spec, Version};

pub struct ManifestSource<'a> {
    pub fetcher: &'a Fetcher,
    pub url: Url,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Def {
    pub name: Option<String>,
    pub kind: Kind,
    pub version: Version,
    pub archive: Vec<ArchiveDef>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ArchiveDef {
    pub url: String,
    pub sha256: Sha256,
    #[serde(default)]
    pub strip_prefix: String,
    pub size: Option<u64>,
    pub component: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Many {
    toolchain: Vec<Def>,
}

/// The toolchains a manifest describes.
pub fn parse(text: &str) -> Result<Vec<Def>> {
    let not_valid = |e: toml::de::Error| {
        let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        InstallError::msg(format!(
            "line {line}, column {column}: {}",
            ui::toml_message(e.message())
        ))
    };
    let value: toml::Table = toml::from_str(text).map_err(not_valid)?;
    let defs = if value.contains_key("toolchain") {
        toml::from_str::<Many>(text).map_err(not_valid)?.toolchain
    } else {
        vec![toml::from_str::<Def>(text).map_err(not_valid)?]
    };
    for d in &defs {
        let name = d
            .name
            .clone()
            .unwrap_or_else(|| format!("{}-{}", d.kind, d.version));
        pathpart::part("toolchain name", &name)?;
        let spec: Spec = name.parse()?;
        if spec.kind != d.kind || spec.version != d.version {
            return Err(InstallError::msg(format!(
                "the name {name} does not match kind = \"{}\" and version = \"{}\"",
                d.kind, d.version
            )));
        }
        if d.archive.is_empty() {
            return Err(InstallError::msg(format!("{name} has no [[archive]]")));
        }
        for a in &d.archive {
            if let Some(c) = &a.component {
                pathpart::part("component", c)?;
            }
            let file = a.url.split(['?', '#']).next().unwrap_or_default();
            pathpart::part("file name", file.rsplit('/').next().unwrap_or_default())
                .with_context(|| format!("{name}: the archive {}", a.url))?;
        }
    }
    Ok(defs)
}

impl ManifestSource<'_> {
    fn defs(&self) -> Result<Vec<Def>> {
        let page = self
            .fetcher
            .page(
                &self.url,
                "application/toml, text/plain",
                outside::Kind::Manifest,
            )
            .with_context(|| format!("reading the manifest {}", self.url))?;
        parse(&page.text()).map_err(|e| {
            Hinted::new(format!("the manifest {} is not valid", self.url))
                .hint("fix the manifest, or ask whoever publishes it to")
                .caused_by(e)
                .into()
        })
    }
}

impl Source for ManifestSource<'_> {
    fn serves(&self, _kind: Kind) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "manifest"
    }

    fn available(&self, kind: Kind) -> Result<Vec<Version>> {
        let mut v: Vec<Version> = self
            .defs()?
            .into_iter()
            .filter(|d| d.kind == kind)
            .map(|d| d.version)
            .collect();
        v.sort();
        v.dedup();
        Ok(v)
    }

    fn plan(&self, spec: &Spec, sel: &Selection) -> Result<Plan> {
        if !sel.components.is_empty() {
            return Err(
                Hinted::new("a manifest's toolchains have no components to choose")
                    .hint("drop --component")
                    .into(),
            );
        }
        let defs = self.defs()?;
        let candidates = defs.iter().filter(|d| {
            d.kind == spec.kind
                && (spec.label.is_none() || d.name.as_deref() == Some(&spec.to_string()))
        });
        let Some((_, def)) = highest_matching(spec, candidates.map(|d| (&d.version, d))) else {
            let have: Vec<String> = defs
                .iter()
                .map(|d| {
                    d.name
                        .clone()
                        .unwrap_or_else(|| format!("{}-{}", d.kind, d.version))
                })
                .collect();
            return Err(
                Hinted::new(format!("the manifest {} has no {spec}", self.url))
                    .hint(format!("it has {}", have.join(", ")))
                    .into(),
            );
        };
        let name = def
            .name
            .clone()
            .unwrap_or_else(|| format!("{}-{}", def.kind, def.version));
        let archives = def
            .archive
            .iter()
            .map(|a| {
                let url = self
                    .url
                    .join(&a.url)
                    .map_err(InstallError::other)
                    .with_context(|| format!("bad archive URL {}", a.url))?;
                let format = Format::from_name(url.path())
                    .with_context(|| format!("{}: not a .tar.xz, .tar.gz, .tar or .zip", a.url))?;
                Ok(Archive {
                    component: a.component.clone().unwrap_or_else(|| name.clone()),
                    version: def.version.to_string(),
                    url,
                    sha256: a.sha256.clone(),
                    size: a.size,
                    format,
                    mapping: Mapping::Strip(a.strip_prefix.trim_matches('/').to_string()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Plan {
            name,
            kind: def.kind,
            version: def.version.clone(),
            source: "manifest",
            archives,
            cuda_layout: false,
            linked: Vec::new(),
            manifest: Some(self.url.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn one_toolchain_or_several() {
        let one = format!("kind = \"rocm\"\nversion = \"6.2.4\"\n[[archive]]\nurl = \"r.tar.xz\"\nsha256 = \"{SHA}\"\nstrip-prefix = \"rocm-6.2.4\"\n");
        let d = parse(&one).unwrap();
        assert_eq!(
            (d[0].kind, d[0].version.to_string()),
            (Kind::Rocm, "6.2.4".into())
        );
        assert_eq!(d[0].archive[0].strip_prefix, "rocm-6.2.4");
        let many = format!("[[toolchain]]\nkind = \"cuda\"\nversion = \"12.4.1\"\nname = \"cuda-12.4.1-inhouse\"\n[[toolchain.archive]]\nurl = \"https://x.example/c.tar.gz\"\nsha256 = \"{SHA}\"\n");
        assert_eq!(
            parse(&many).unwrap()[0].name.as_deref(),
            Some("cuda-12.4.1-inhouse")
        );
    }

    #[test]
    fn rejects_what_cannot_be_right() {
        let bad_sha = "kind = \"rocm\"\nversion = \"6.2\"\n[[archive]]\nurl = \"r.tar.xz\"\nsha256 = \"abc\"\n";
        assert!(parse(bad_sha).unwrap_err().to_string().contains("64 hex"));
        let bad_name = format!("name = \"rocm-6.3\"\nkind = \"rocm\"\nversion = \"6.2\"\n[[archive]]\nurl = \"r\"\nsha256 = \"{SHA}\"\n");
        assert!(parse(&bad_name)
            .unwrap_err()
            .to_string()
            .contains("does not match"));
        let unknown = format!("kind = \"rocm\"\nversion = \"6.2\"\nsha = 1\n[[archive]]\nurl = \"r\"\nsha256 = \"{SHA}\"\n");
        assert!(parse(&unknown).unwrap_err().to_string().contains("sha"));
    }
}
