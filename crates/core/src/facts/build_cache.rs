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

/// A cache store several machines share (`[build] shared` in settings or the site config):
/// a directory every node mounts, or an HTTP server. ccache reads it as `remote_storage`
/// after its own local cache; sccache as its cache directory or WebDAV endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum SharedStore {
    Dir(std::path::PathBuf),
    Http(String),
}

/// A `shared` value that is neither `file:///absolute/dir` nor an `http(s)://` URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shared build cache `{0}` is not `file:///absolute/dir` nor an http:// or https:// URL")]
pub struct BadSharedStore(pub String);

impl TryFrom<String> for SharedStore {
    type Error = BadSharedStore;
    fn try_from(s: String) -> Result<Self, BadSharedStore> {
        let bad = || BadSharedStore(s.clone());
        // One word: ccache splits its remote_storage list on spaces.
        if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad());
        }
        if let Some(path) = s.strip_prefix("file://") {
            let path = std::path::Path::new(path);
            // `|` starts ccache's attributes (gpuenv adds its own).
            if !path.is_absolute()
                || path.components().any(|c| c.as_os_str() == "..")
                || path.as_os_str().to_string_lossy().contains('|')
            {
                return Err(bad());
            }
            return Ok(SharedStore::Dir(path.to_path_buf()));
        }
        if (s.starts_with("http://") || s.starts_with("https://")) && !s.contains('|') {
            return Ok(SharedStore::Http(s));
        }
        Err(bad())
    }
}

impl From<SharedStore> for String {
    fn from(s: SharedStore) -> String {
        s.to_string()
    }
}

impl fmt::Display for SharedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SharedStore::Dir(p) => write!(f, "file://{}", p.display()),
            SharedStore::Http(url) => f.write_str(url),
        }
    }
}

impl SharedStore {
    /// The variable that points `cache` at this store, and its value.
    pub fn variable(&self, cache: BuildCache) -> Option<(&'static str, String)> {
        match (cache, self) {
            // Group-writable files and directories, so the other users of a setgid
            // group directory can add to what one user's compile made (docs/clusters.md).
            (BuildCache::Ccache, SharedStore::Dir(p)) => Some((
                "CCACHE_REMOTE_STORAGE",
                format!("file:{}|umask=002", p.display()),
            )),
            (BuildCache::Ccache, SharedStore::Http(url)) => {
                Some(("CCACHE_REMOTE_STORAGE", url.clone()))
            }
            (BuildCache::Sccache, SharedStore::Dir(p)) => {
                Some(("SCCACHE_DIR", p.display().to_string()))
            }
            (BuildCache::Sccache, SharedStore::Http(url)) => {
                Some(("SCCACHE_WEBDAV_ENDPOINT", url.clone()))
            }
            (BuildCache::Off, _) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_store_is_an_absolute_dir_or_an_http_url() {
        let ok = |s: &str| SharedStore::try_from(s.to_string());
        assert_eq!(
            ok("file:///shared/ccache")
                .unwrap()
                .variable(BuildCache::Ccache),
            Some((
                "CCACHE_REMOTE_STORAGE",
                "file:/shared/ccache|umask=002".into()
            ))
        );
        // ccache's HTTP backend takes the URL as is: GET/PUT/HEAD on `<url>/<key>`
        // (tests/it/shared_cache_http.rs runs it against a real server).
        assert_eq!(
            ok("http://cache:8080/ccache")
                .unwrap()
                .variable(BuildCache::Ccache),
            Some(("CCACHE_REMOTE_STORAGE", "http://cache:8080/ccache".into()))
        );
        assert_eq!(
            ok("http://cache:8080/ccache")
                .unwrap()
                .variable(BuildCache::Sccache),
            Some(("SCCACHE_WEBDAV_ENDPOINT", "http://cache:8080/ccache".into()))
        );
        for bad in [
            "file://relative",
            "file:///a/../b",
            "/shared",
            "redis://x",
            "http://a b",
            "http://a|read-only",
            "file:///a|umask=000",
            "",
        ] {
            assert!(ok(bad).is_err(), "{bad}");
        }
    }
}
