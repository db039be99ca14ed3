//! One archive of a release: where it is, its sha256, its format and how its entries map
//! into the toolchain root.

use reqwest::Url;

use crate::pathpart;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    TarXz,
    TarGz,
    Tar,
    Zip,
}

impl Format {
    /// From a file name: `.tar.xz`/`.txz`, `.tar.gz`/`.tgz`, `.tar`, `.zip`/`.whl`.
    pub fn from_name(name: &str) -> Option<Format> {
        let n = name.to_ascii_lowercase();
        let ends = |s: &[&str]| s.iter().any(|e| n.ends_with(e));
        if ends(&[".tar.xz", ".txz"]) {
            Some(Format::TarXz)
        } else if ends(&[".tar.gz", ".tgz"]) {
            Some(Format::TarGz)
        } else if ends(&[".tar"]) {
            Some(Format::Tar)
        } else if ends(&[".zip", ".whl"]) {
            Some(Format::Zip)
        } else {
            None
        }
    }
}

/// How an archive's entries map into the toolchain root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapping {
    /// NVIDIA's redist archive: one top directory holding `bin/`, `include/`, `lib/`, ….
    Redist,
    /// A wheel: `nvidia/<package>/{bin,include,lib,…}`.
    Wheel,
    /// Strip this path prefix; entries outside it are left out.
    Strip(String),
    /// A runtime wheel of AMD's ROCm (TheRock): `_rocm_sdk_<package>/…` folded into the root.
    TheRock,
    /// TheRock's `rocm-sdk-devel` wheel: its `_devel.tar` expanded over the runtime packages.
    TheRockDevel,
}

/// One archive of a release.
#[derive(Debug, Clone)]
pub struct Archive {
    pub component: String,
    pub version: String,
    pub url: Url,
    pub sha256: pathpart::Sha256,
    pub size: Option<u64>,
    pub format: Format,
    pub mapping: Mapping,
}

impl Archive {
    pub fn file_name(&self) -> String {
        self.url
            .path_segments()
            .and_then(|mut s| s.next_back().map(str::to_string))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| self.url.to_string())
    }
}
