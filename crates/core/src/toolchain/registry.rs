//! The registry on disk: `$GPUENV_HOME/settings.toml` records linked and installed
//! toolchains (with what detection found, so resolving never re-reads a tree), the default
//! and trusted toolchain files. Every write is atomic.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::detect::{Collectives, Detected};
use super::{Kind, Spec, Version};
use crate::build_cache::BuildSettings;
use crate::fsutil;

/// The directories under `GPUENV_HOME`.
#[derive(Debug, Clone)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Home { root: root.into() }
    }
    pub fn settings(&self) -> PathBuf {
        self.root.join("settings.toml")
    }
    pub fn views(&self) -> PathBuf {
        self.root.join("views")
    }
    pub fn view(&self, name: &str) -> PathBuf {
        self.views().join(name)
    }
    pub fn shims(&self) -> PathBuf {
        self.root.join("shims")
    }
    pub fn toolchains(&self) -> PathBuf {
        self.root.join("toolchains")
    }
    /// The installed copy of the proxy binary every shim links to.
    pub fn proxy(&self) -> PathBuf {
        self.root.join("bin").join(crate::shims::PROXY_NAME)
    }
    pub fn downloads(&self) -> PathBuf {
        self.root.join("downloads")
    }
    /// Files whose modification times the shell hook compares against (`shell::fast_path`).
    pub fn stamps(&self) -> PathBuf {
        self.root.join("stamps")
    }
    /// `TORCH_EXTENSIONS_DIR` of each toolchain: `torch-extensions/<name>`.
    pub fn torch_extensions(&self) -> PathBuf {
        self.root.join("torch-extensions")
    }
}

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

/// One registered toolchain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub kind: Kind,
    pub version: Version,
    pub root: PathBuf,
    pub source: Source,
    pub version_from: String,
    pub include_dir: PathBuf,
    pub lib_dir: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collectives: Option<Collectives>,
}

impl Entry {
    pub fn from_detected(d: Detected, root: PathBuf, source: Source) -> Self {
        Entry {
            kind: d.kind,
            version: d.version,
            root,
            source,
            version_from: d.version_from,
            include_dir: d.include_dir,
            lib_dir: d.lib_dir,
            collectives: d.collectives,
        }
    }
}

impl Entry {
    /// Why the tree no longer works, if it does not: its root, compiler or main header is
    /// gone (a toolkit made for a torch venv links into that venv, which may be deleted).
    pub fn broken(&self) -> Option<String> {
        let header = match self.kind {
            Kind::Cuda => "cuda_runtime.h",
            Kind::Rocm => "hip/hip_runtime.h",
        };
        let checks = [
            self.root.join("bin").join(self.kind.compiler()),
            self.include_dir.join(header),
        ];
        let missing = checks.iter().find(|p| !p.exists())?;
        Some(match fs_err::read_link(missing) {
            Ok(target) => format!(
                "{} links to {}, which is gone",
                missing.display(),
                target.display()
            ),
            Err(_) => format!("{} is missing", missing.display()),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trusted {
    pub path: PathBuf,
    pub sha256: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    /// Default specs, at most one per kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trusted: Vec<Trusted>,
    /// `[build]`: the user's default compiler cache for every project.
    #[serde(default, skip_serializing_if = "BuildSettings::is_empty")]
    pub build: BuildSettings,
    #[serde(default)]
    pub toolchains: BTreeMap<String, Entry>,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("gpuenv's state file {path} is corrupt: {message}\nhint: fix the file by hand, or move it away to start with an empty registry (linked toolchains are then forgotten; installed ones stay under {toolchains})")]
    Corrupt {
        path: PathBuf,
        message: String,
        toolchains: PathBuf,
    },
    #[error("cannot read gpuenv's state file {path}: {source}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write gpuenv's state file {path}: {source}")]
    Unwritable {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Registry {
    /// A missing file is an empty registry; an unreadable or corrupt one is an error.
    pub fn load(home: &Home) -> Result<Registry, StateError> {
        let path = home.settings();
        let text = match fs_err::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Registry::default()),
            Err(source) => return Err(StateError::Unreadable { path, source }),
        };
        toml::from_str(&text).map_err(|e| StateError::Corrupt {
            message: e.message().to_string()
                + &e.span()
                    .map(|s| {
                        let (l, c) = fsutil::line_col(&text, s.start);
                        format!(" (line {l}, column {c})")
                    })
                    .unwrap_or_default(),
            path,
            toolchains: home.toolchains(),
        })
    }

    pub fn save(&self, home: &Home) -> Result<(), StateError> {
        let path = home.settings();
        let text = toml::to_string_pretty(self).expect("the registry always serializes");
        fsutil::write_atomic(&path, text.as_bytes())
            .map_err(|source| StateError::Unwritable { path, source })
    }

    /// Loads, changes and saves the registry under a lock, so concurrent gpuenv processes
    /// never lose each other's changes. Nothing is saved if `change` fails.
    pub fn update<T>(
        home: &Home,
        change: impl FnOnce(&mut Registry) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        use anyhow::Context;
        fs_err::create_dir_all(&home.root)?;
        let lock_path = home.root.join(".lock");
        let lock = fs_err::File::create(&lock_path)?;
        lock.file()
            .lock()
            .with_context(|| format!("locking {}", lock_path.display()))?;
        let mut registry = Registry::load(home)?;
        let out = change(&mut registry)?;
        registry.save(home)?;
        Ok(out)
    }

    /// The highest registered version the spec selects; an exact name wins outright.
    pub fn find(&self, spec: &Spec) -> Option<(&str, &Entry)> {
        if let Some((name, e)) = self.toolchains.get_key_value(&spec.to_string()) {
            return Some((name, e));
        }
        self.toolchains
            .iter()
            .filter_map(|(name, e)| {
                let n: Spec = name.parse().ok()?;
                spec.matches(&n).then_some((name.as_str(), e, n))
            })
            // Highest version; among equal versions the unlabelled (plain) name first.
            .max_by(|a, b| {
                (&a.2.version, a.2.label.is_none(), std::cmp::Reverse(a.0)).cmp(&(
                    &b.2.version,
                    b.2.label.is_none(),
                    std::cmp::Reverse(b.0),
                ))
            })
            .map(|(name, e, _)| (name, e))
    }

    pub fn default_specs(&self) -> Result<Vec<Spec>, super::NameError> {
        self.default.iter().map(|s| s.parse()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: Kind, version: &str) -> Entry {
        Entry {
            kind,
            version: version.parse().unwrap(),
            root: PathBuf::from(format!("/opt/{kind}-{version}")),
            source: Source::Linked,
            version_from: "version.json".into(),
            include_dir: PathBuf::from(format!("/opt/{kind}-{version}/include")),
            lib_dir: PathBuf::from(format!("/opt/{kind}-{version}/lib64")),
            collectives: None,
        }
    }

    fn registry(names: &[(&str, Kind, &str)]) -> Registry {
        let mut r = Registry::default();
        for (n, k, v) in names {
            r.toolchains.insert(n.to_string(), entry(*k, v));
        }
        r
    }

    #[test]
    fn a_prefix_spec_picks_the_highest_matching_version() {
        let r = registry(&[
            ("cuda-12.1.0", Kind::Cuda, "12.1.0"),
            ("cuda-12.4.1", Kind::Cuda, "12.4.1"),
            ("cuda-12.4.0", Kind::Cuda, "12.4.0"),
            ("cuda-11.8", Kind::Cuda, "11.8.89"),
        ]);
        let find = |s: &str| r.find(&s.parse().unwrap()).map(|(n, _)| n.to_string());
        assert_eq!(find("cuda-12").as_deref(), Some("cuda-12.4.1"));
        assert_eq!(find("cuda-12.1").as_deref(), Some("cuda-12.1.0"));
        assert_eq!(find("cuda-11").as_deref(), Some("cuda-11.8"));
        assert_eq!(find("cuda-10"), None);
        assert_eq!(find("rocm-6"), None);
    }

    #[test]
    fn plain_names_win_over_labelled_ones_of_the_same_version() {
        let r = registry(&[
            ("cuda-11.3-conda", Kind::Cuda, "11.3.109"),
            ("cuda-11.3", Kind::Cuda, "11.3.109"),
        ]);
        let (n, _) = r.find(&"cuda-11".parse().unwrap()).unwrap();
        assert_eq!(n, "cuda-11.3");
        let (n, _) = r.find(&"cuda-11.3-conda".parse().unwrap()).unwrap();
        assert_eq!(n, "cuda-11.3-conda");
    }

    #[test]
    fn round_trips_through_disk_and_reports_corruption_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        assert_eq!(Registry::load(&home).unwrap(), Registry::default());
        let r = registry(&[("rocm-6.2.4", Kind::Rocm, "6.2.4")]);
        r.save(&home).unwrap();
        assert_eq!(Registry::load(&home).unwrap(), r);

        fs_err::write(home.settings(), "[toolchains.x\n").unwrap();
        let err = Registry::load(&home).unwrap_err().to_string();
        assert!(
            err.contains(&home.settings().display().to_string()),
            "{err}"
        );
        assert!(err.contains("line 1"), "{err}");
    }
}
