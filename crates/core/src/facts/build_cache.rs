//! The compiler caches gpuenv can compile through, by the names the toolchain file, the
//! settings and `GPUENV_BUILD_CACHE` use. Choosing one and wrapping a compile is
//! `plan::build_cache`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BuildCache {
    Ccache,
    Sccache,
    Off,
}

impl BuildCache {
    /// The cache's program, looked up on PATH.
    pub fn program(self) -> Option<&'static str> {
        match self {
            BuildCache::Ccache => Some("ccache"),
            BuildCache::Sccache => Some("sccache"),
            BuildCache::Off => None,
        }
    }
}

impl fmt::Display for BuildCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BuildCache::Ccache => "ccache",
            BuildCache::Sccache => "sccache",
            BuildCache::Off => "off",
        })
    }
}

/// A build cache name gpuenv does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("build cache `{0}` is not one of \"ccache\", \"sccache\", \"off\"")]
pub struct UnknownBuildCache(pub String);

impl FromStr for BuildCache {
    type Err = UnknownBuildCache;
    fn from_str(s: &str) -> Result<Self, UnknownBuildCache> {
        match s {
            "ccache" => Ok(BuildCache::Ccache),
            "sccache" => Ok(BuildCache::Sccache),
            "off" => Ok(BuildCache::Off),
            other => Err(UnknownBuildCache(other.to_string())),
        }
    }
}
