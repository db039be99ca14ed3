//! The registry on disk: `$GPUENV_HOME/settings.toml` records linked and installed
//! toolchains (with what detection found, so resolving never re-reads a tree), the default
//! and trusted toolchain files. Every write is atomic, made under a lock, and keeps the
//! previous state in `settings.toml.bak`.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use super::entry::{Broken, Entry, Source};
pub use super::toolchains::Toolchains;
use super::Spec;
use crate::diagnostic::Diagnostic;
use crate::facts::build_cache::{BuildCache, SharedStore};
use crate::store::home::Home;
use crate::user_file::{self, form, Check, UserFile};
use crate::{fsutil, outside};

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
    /// Directories whose toolchain files apply though someone else could have written them
    /// (`gpuenv trust --safe-directory`, as git's `safe.directory`).
    #[serde(
        default,
        rename = "safe-directories",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub safe_directories: Vec<PathBuf>,
    /// `[build]`: the user's default compiler cache for every project.
    #[serde(default, skip_serializing_if = "BuildSettings::is_empty")]
    pub build: BuildSettings,
    /// `[torch]`: where PyTorch's wheel indexes are mirrored.
    #[serde(default, skip_serializing_if = "TorchSettings::is_empty")]
    pub torch: TorchSettings,
    /// `[rocm]`: where AMD's ROCm wheels are mirrored.
    #[serde(default, skip_serializing_if = "RocmSettings::is_empty")]
    pub rocm: RocmSettings,
    /// Other gpuenv homes whose toolchains are used read-only (a site's shared store).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstreams: Vec<PathBuf>,
    #[serde(default)]
    pub toolchains: Toolchains,
    /// Something about the file the user should know (it is not saved).
    #[serde(skip)]
    pub notice: Option<StateNotice>,
}

/// A state file that loads but is probably not what the user had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateNotice {
    /// gpuenv never writes an empty settings file, so something else emptied it.
    Empty {
        path: PathBuf,
        backup: Option<PathBuf>,
        toolchains: PathBuf,
    },
}

impl fmt::Display for StateNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let StateNotice::Empty { path, backup, .. } = self;
        write!(
            f,
            "gpuenv's state file {} is empty, so no toolchain is registered{}",
            path.display(),
            if backup.is_some() {
                ""
            } else {
                " (there is no backup)"
            }
        )
    }
}

/// Not an error (the registry loads), but said the way errors are: a message and hints.
impl std::error::Error for StateNotice {}

impl Diagnostic for StateNotice {
    fn hints(&self) -> Vec<String> {
        match self {
            StateNotice::Empty {
                path,
                backup: Some(backup),
                ..
            } => vec![format!(
                "the state before gpuenv's last change is in {}: `cp {} {}` brings it back",
                backup.display(),
                backup.display(),
                path.display()
            )],
            StateNotice::Empty { toolchains, .. } => vec![format!(
                "`gpuenv discover --register` and `gpuenv link <name> <path>` register toolchains again; installed ones are under {}",
                toolchains.display()
            )],
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("gpuenv's state file {path} is corrupt: {message}")]
    Corrupt {
        path: PathBuf,
        message: String,
        toolchains: PathBuf,
    },
    #[error("{}:{line}:{column}: {message}", .path.display())]
    BadValue {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("cannot read gpuenv's state file {path}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not a regular file, too large, or (an upstream's) another user's to write.
    #[error("{0}")]
    Refused(outside::ReadError),
    #[error(transparent)]
    IndexUrl(#[from] crate::facts::wheel_base::BadIndexUrl),
    #[error("cannot write gpuenv's state file {path}")]
    Unwritable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Edit(#[from] crate::user_file::EditError),
    #[error("GPUENV_HOME {path} is read-only, so gpuenv cannot change its state")]
    ReadOnly { path: PathBuf },
    #[error("cannot lock gpuenv's state in {path}: {source}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The registry loaded under the state lock: changes made to it are saved by [`Locked::save`]
/// before anyone else may read or change it.
pub struct Locked<'h> {
    home: &'h Home,
    pub registry: Registry,
    /// The file as it was read, kept as the backup when the new state is written.
    before: String,
    _lock: fs_err::File,
}

impl Locked<'_> {
    /// Writes the registry; the state it replaces becomes `settings.toml.bak`. An empty
    /// file is never a backup: it would replace the last good one.
    pub fn save(&mut self) -> Result<(), StateError> {
        let unwritable = |path: PathBuf| move |source| StateError::Unwritable { path, source };
        if !self.before.trim().is_empty() {
            let bak = self.home.settings_backup();
            fsutil::write_atomic(&bak, self.before.as_bytes()).map_err(unwritable(bak))?;
        }
        let path = self.home.settings();
        let text = self.registry.to_text();
        if !fs_err::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            // A new one (or a link planted at the name, replaced, never followed): gpuenv's
            // own file, readable by every user of an upstream.
            fsutil::write_atomic(&path, text.as_bytes()).map_err(unwritable(path))?;
            self.before = text;
            return Ok(());
        }
        // The user's copy, through the one editor: their comments, order, mode and inode
        // stay; the rendering is merged in (and wins if the merge said anything else).
        let file = UserFile {
            path: &path,
            within: &self.home.root,
            scope: "gpuenv's home",
            kind: outside::Kind::Settings,
        };
        let check = Check::Toml {
            may_lose: &|_| true,
        };
        let outcome = user_file::edit(file, check, |old| {
            Ok::<_, StateError>(Some(
                form::merged(old, &text).unwrap_or_else(|| text.clone()),
            ))
        })?;
        self.before = outcome.after;
        Ok(())
    }
}

impl Diagnostic for StateError {
    fn hints(&self) -> Vec<String> {
        match self {
            StateError::Corrupt { toolchains, .. } => vec![format!(
                "fix the file by hand, or move it away to start with an empty registry (linked toolchains are then forgotten; installed ones stay under {})",
                toolchains.display()
            )],
            StateError::BadValue { path, line, .. } => vec![format!(
                "fix line {line} of {}; the rest of the file is fine and nothing was changed",
                path.display()
            )],
            StateError::ReadOnly { .. } => vec![
                "make it writable, or point GPUENV_HOME at a directory you own".into(),
            ],
            StateError::Refused(e) => e.hints(),
            StateError::Edit(e) => e.hints(),
            StateError::IndexUrl(e) => e.hints(),
            StateError::Unreadable { .. }
            | StateError::Lock { .. }
            | StateError::Unwritable { .. } => Vec::new(),
        }
    }
}

/// A settings file that is not UTF-8 is corrupt; any other refusal says why itself.
pub(super) fn refused(e: outside::ReadError) -> StateError {
    match e.why {
        outside::Why::Io(source) => StateError::Unreadable {
            path: e.path,
            source,
        },
        _ => StateError::Refused(e),
    }
}

impl Registry {
    /// A missing file is an empty registry; an unreadable or corrupt one is an error.
    pub fn load(home: &Home) -> Result<Registry, StateError> {
        Ok(Registry::read(home)?.0)
    }

    /// The registry and the text it was parsed from.
    fn read(home: &Home) -> Result<(Registry, String), StateError> {
        let path = home.settings();
        let text = match outside::read_text(&path, outside::Kind::Settings) {
            Ok(t) => t,
            Err(e) if e.is_missing() => return Ok((Registry::default(), String::new())),
            Err(e) => return Err(refused(e)),
        };
        Ok((Registry::parse(home, path, &text)?, text))
    }

    /// `text`, the contents of `home`'s settings file at `path`, parsed and checked.
    pub(super) fn parse(home: &Home, path: PathBuf, text: &str) -> Result<Registry, StateError> {
        let at = |e: &toml::de::Error| {
            e.span()
                .map(|s| fsutil::line_col(text, s.start))
                .unwrap_or((1, 1))
        };
        // Not TOML at all: the file is corrupt. TOML with one value wrong: that value is
        // the error, named with its line (a typo is not a reason to move the registry away).
        if let Err(e) = text.parse::<toml::Table>() {
            let (l, c) = at(&e);
            return Err(StateError::Corrupt {
                message: format!(
                    "line {l}, column {c}: {}",
                    crate::ui::toml_message(e.message())
                ),
                path,
                toolchains: home.toolchains(),
            });
        }
        let mut registry: Registry = toml::from_str(text).map_err(|e| {
            let (line, column) = at(&e);
            StateError::BadValue {
                message: crate::ui::toml_message(e.message()),
                path: path.clone(),
                line,
                column,
            }
        })?;
        if let Err(e) = registry.check_names() {
            return Err(StateError::Corrupt {
                message: format!("[toolchains] names a toolchain that cannot be used: {e}"),
                path,
                toolchains: home.toolchains(),
            });
        }
        if text.trim().is_empty() {
            let backup = home.settings_backup();
            let has_backup = fs_err::metadata(&backup).is_ok_and(|m| m.len() > 0);
            registry.notice = Some(StateNotice::Empty {
                path,
                backup: has_backup.then_some(backup),
                toolchains: home.toolchains(),
            });
        }
        Ok(registry)
    }

    /// The names become directories and files (views, module files): a settings file
    /// someone else wrote (an upstream's), or a copy of one, must not name `../../x`.
    pub(super) fn check_names(&self) -> Result<(), super::NameError> {
        for (name, entry) in &self.toolchains {
            super::check_name(name, entry.kind)?;
        }
        Ok(())
    }

    fn to_text(&self) -> String {
        toml::to_string_pretty(self).expect("the registry always serializes")
    }

    /// Takes the state lock (waiting for another gpuenv that holds it) and loads the
    /// registry, so concurrent gpuenv processes never lose each other's changes.
    pub fn lock(home: &Home) -> Result<Locked<'_>, StateError> {
        let read_only = |e: &std::io::Error| {
            matches!(
                e.kind(),
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
            )
        };
        let lock_err = |path: PathBuf| {
            let home = home.root.clone();
            move |source: std::io::Error| match read_only(&source) {
                true => StateError::ReadOnly { path: home },
                false => StateError::Lock { path, source },
            }
        };
        let created = fs_err::symlink_metadata(&home.root).is_err();
        fs_err::create_dir_all(&home.root).map_err(lock_err(home.root.clone()))?;
        crate::store::marker::ensure(home, created);
        let lock_path = home.lock_file();
        // Never truncated: the file only carries the lock.
        let lock = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&lock_path)
            .map_err(lock_err(lock_path.clone()))?;
        lock.file().lock().map_err(lock_err(lock_path))?;
        let (registry, before) = Registry::read(home)?;
        Ok(Locked {
            home,
            registry,
            before,
            _lock: lock,
        })
    }

    /// Loads, changes and saves the registry under the state lock. Nothing is saved if
    /// `change` fails.
    pub fn update<T, E: From<StateError>>(
        home: &Home,
        change: impl FnOnce(&mut Registry) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut locked = Registry::lock(home)?;
        let out = change(&mut locked.registry)?;
        locked.save()?;
        Ok(out)
    }

    /// The highest registered release the spec selects; an exact name wins outright. A
    /// toolchain whose root is missing on this machine (a tree on another node's disk) is
    /// chosen only when no other one matches. Releases are compared before names: an old
    /// registry's `cuda-13.0.88` (nvcc's build number) is release 13.0, below `cuda-13.0.3`.
    pub fn find(&self, spec: &Spec) -> Option<(&str, &Entry)> {
        if let Some((name, e)) = self.toolchains.get_key_value(&spec.to_string()) {
            return Some((name, e));
        }
        // Only names that may match are decoded and parsed: a site's hundreds of other
        // releases cost a look at their first bytes.
        let matching: Vec<(&str, &Entry, Spec)> = self
            .toolchains
            .iter_where(|name| spec.may_select(name))
            .filter_map(|(name, e)| {
                let n: Spec = name.parse().ok()?;
                spec.matches(&n).then_some((name, e, n))
            })
            .collect();
        // One lstat per candidate, only when there is a choice to make.
        let here = |e: &Entry| matching.len() < 2 || fs_err::symlink_metadata(&e.root).is_ok();
        // Ordering only, so the built-in data: each name was made with the copy in effect.
        let facts = crate::facts::Facts::embedded();
        matching
            .iter()
            // Present first; then the highest release, then name; among equal versions the
            // unlabelled (plain) name first.
            .max_by(|a, b| {
                (
                    here(a.1),
                    a.1.release(facts),
                    &a.2.version,
                    a.2.label.is_none(),
                    std::cmp::Reverse(a.0),
                )
                    .cmp(&(
                        here(b.1),
                        b.1.release(facts),
                        &b.2.version,
                        b.2.label.is_none(),
                        std::cmp::Reverse(b.0),
                    ))
            })
            .map(|(name, e, _)| (*name, *e))
    }

    pub fn default_specs(&self) -> Result<Vec<Spec>, super::NameError> {
        self.default.iter().map(|s| s.parse()).collect()
    }
}

/// The `[build]` table of settings.toml (the user's default for every project) and of the
/// site config (everyone's, below the user's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<BuildCache>,
    /// A store the cache shares with other machines (see [`SharedStore`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedStore>,
    /// Compile jobs a build runs at once (`MAX_JOBS`, `CMAKE_BUILD_PARALLEL_LEVEL`), over
    /// what gpuenv computes from the cores and memory.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "parallel"
    )]
    pub jobs: Option<u32>,
    /// Target archs one nvcc compiles at once (`--threads`).
    #[serde(
        default,
        rename = "nvcc-threads",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "parallel"
    )]
    pub nvcc_threads: Option<u32>,
}

/// A job or thread count: 1 to [`MAX_PARALLEL`](crate::facts::build_jobs::MAX_PARALLEL).
fn parallel<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let n = u32::deserialize(d)?;
    if n == 0 || n > crate::facts::build_jobs::MAX_PARALLEL {
        return Err(serde::de::Error::custom(format!(
            "{n}: a count from 1 to {}",
            crate::facts::build_jobs::MAX_PARALLEL
        )));
    }
    Ok(Some(n))
}

impl BuildSettings {
    pub fn is_empty(&self) -> bool {
        self.cache.is_none()
            && self.shared.is_none()
            && self.jobs.is_none()
            && self.nvcc_threads.is_none()
    }
}

/// The `[torch]` table of settings.toml and of the site config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TorchSettings {
    /// A mirror of `https://download.pytorch.org/whl` (see `facts::wheel_base`).
    #[serde(default, rename = "index-url", skip_serializing_if = "Option::is_none")]
    pub index_url: Option<String>,
}

impl TorchSettings {
    pub fn is_empty(&self) -> bool {
        self.index_url.is_none()
    }
}

/// The `[rocm]` table of settings.toml and of the site config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RocmSettings {
    /// The index of AMD's ROCm wheels `gpuenv install rocm-X` uses: a mirror, AMD's nightly
    /// or a per-family index (`GPUENV_ROCM_INDEX_URL` wins).
    #[serde(default, rename = "index-url", skip_serializing_if = "Option::is_none")]
    pub index_url: Option<String>,
}

impl RocmSettings {
    pub fn is_empty(&self) -> bool {
        self.index_url.is_none()
    }
}

#[cfg(test)]
mod tests;
