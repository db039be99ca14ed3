//! `gpuenv.lock` beside `gpuenv.toml`: the exact toolchains a project's pins resolved to
//! (version, source, file-list digest; for an installed one how it was made: source,
//! profile, components, each archive's URL and sha256). Written by `gpuenv lock`; read by
//! `check --locked`, `install --locked`, the shell hook, the SLURM TaskProlog and `doctor
//! --all-nodes` ([`compare`]). A lock from a clone is a file gpuenv did not write: [`parse`]
//! validates every field, with file:line:column.

mod compare;
pub(crate) mod error;
mod parse;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::pathpart::Sha256;
use crate::record::{ArchiveRecord, Record};
use gpuenv_core::project::Location;
use gpuenv_core::toolchain::registry::{Entry, Source as Origin};
use gpuenv_core::toolchain::{Kind, Version};

pub use compare::{compare, inspect, pinned, Depth, Mismatch};
pub use error::LockError;
pub use parse::{load, parse};

/// The format's version; a lock of another one is refused rather than misread.
pub(crate) const FORMAT: u32 = 1;

/// A parsed, validated lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    pub path: PathBuf,
    pub toolchains: Vec<Locked>,
    pub host_compiler: Option<LockedCompiler>,
}

/// The pinned host compiler (`host-compiler` in gpuenv.toml) and the GCC version it had.
/// Compared, never run: the command is the project file's, not the lock's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedCompiler {
    pub command: String,
    pub version: Version,
    pub at: Location,
}

/// One locked toolchain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locked {
    pub name: String,
    pub kind: Kind,
    pub version: Version,
    pub source: Origin,
    /// A linked or discovered tree's root (an installed one's is the store's business).
    pub root: Option<PathBuf>,
    /// [`crate::record::files_digest`] of its tree.
    pub files: Sha256,
    /// How an installed one was made, when its install recorded it.
    pub record: Option<Record>,
    pub at: Location,
}

/// What is registered under a locked name, as `--locked` compares it.
pub struct Found<'a> {
    pub name: &'a str,
    pub entry: &'a Entry,
    pub files: &'a str,
    pub record: Option<&'a Record>,
}

impl Locked {
    /// From a registered toolchain: what `gpuenv lock` writes.
    pub fn of(found: &Found, at: Location) -> crate::Result<Locked> {
        Ok(Locked {
            name: found.name.to_string(),
            kind: found.entry.kind,
            version: found.entry.version.clone(),
            source: found.entry.source,
            root: (found.entry.source != Origin::Installed).then(|| found.entry.root.clone()),
            files: Sha256::parse(found.files)?,
            record: found.record.cloned(),
            at,
        })
    }

    /// For a toolkit `gpuenv install torch` made, the one command that makes it again as
    /// locked, its components included; `None` for any other.
    pub fn install_torch_command(&self) -> Option<String> {
        gpuenv_core::install_hint::by_install_torch(&self.name).then(|| {
            let components = self.record.as_ref().map(Record::recorded_components);
            gpuenv_core::install_hint::install_torch_command(&components.unwrap_or_default())
        })
    }

    /// Each way the registered `name` and `e` differ from this entry by name, version or
    /// source (the registry's words alone, nothing read from the tree); empty when none.
    pub fn identity_differences(&self, name: &str, e: &Entry) -> Vec<String> {
        let mut out = Vec::new();
        if name != self.name {
            out.push(format!("the lock has {}, this is {name}", self.name));
        }
        if e.version != self.version {
            out.push(format!(
                "version: the lock has {}, this is {}",
                self.version, e.version
            ));
        }
        if e.source != self.source {
            out.push(format!(
                "source: the lock has a {} toolchain, this one is {}",
                self.source.as_str(),
                e.source.as_str()
            ));
        }
        out
    }

    /// Each way `found` is not what this lock entry says, in words; empty when it is.
    pub fn differences(&self, found: &Found) -> Vec<String> {
        let e = found.entry;
        let mut out = self.identity_differences(found.name, e);
        if let Some(root) = &self.root {
            if e.source != Origin::Installed && &e.root != root {
                out.push(format!(
                    "root: the lock has {}, this is {}",
                    shown(root),
                    e.root.display()
                ));
            }
        }
        if let (Some(want), Some(have)) = (&self.record, found.record) {
            out.extend(archive_differences(&want.archives, &have.archives));
            if want.profile != have.profile
                || want.recorded_components() != have.recorded_components()
            {
                out.push(format!(
                    "selection: the lock has profile {} {:?}, this was installed with profile {} {:?}",
                    want.profile, want.components, have.profile, have.components
                ));
            }
        }
        if self.files.as_str() != found.files {
            out.push(format!(
                "files: the tree's file list differs from the locked one (digest {}, locked {})",
                short(found.files),
                short(self.files.as_str())
            ));
        }
        out
    }
}

/// Components whose archive differs, is missing or is extra, by sha256 (URLs may differ:
/// a mirror serves the same archives).
pub fn archive_differences(want: &[ArchiveRecord], have: &[ArchiveRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for w in want {
        match have.iter().find(|h| h.component == w.component) {
            None => out.push(format!("archive {}: locked, but not there", w.component)),
            Some(h) if !h.sha256.eq_ignore_ascii_case(&w.sha256) => out.push(format!(
                "archive {}: sha256 {} is not the locked {} ({} instead of {})",
                w.component,
                short(&h.sha256),
                short(&w.sha256),
                h.version,
                w.version
            )),
            Some(_) => {}
        }
    }
    for h in have {
        if !want.iter().any(|w| w.component == h.component) {
            out.push(format!("archive {}: there, but not locked", h.component));
        }
    }
    out
}

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

fn shown(path: &Path) -> String {
    gpuenv_core::ui::printable(&path.to_string_lossy()).into_owned()
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct OutLock<'a> {
    lock_version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    host_compiler: Option<OutCompiler<'a>>,
    toolchain: Vec<OutToolchain<'a>>,
}

#[derive(Serialize)]
struct OutCompiler<'a> {
    command: &'a str,
    version: String,
}

#[derive(Serialize)]
struct OutToolchain<'a> {
    name: &'a str,
    kind: &'a str,
    version: String,
    source: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    root: Option<String>,
    files: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    components: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    archive: Option<&'a [ArchiveRecord]>,
}

const HEADER: &str =
    "# gpuenv.lock: the exact toolchains of this project, written by `gpuenv lock`.\n\
# `gpuenv check --locked` compares the active toolchains with it; `gpuenv install --locked`\n\
# installs them (from the configured sources, each archive checked against its sha256).\n";

/// The lock's text. Root paths are written lossily; a root that is not UTF-8 is refused
/// by the caller first (`Lock::render` re-parses what it wrote).
pub fn render(toolchains: &[Locked], cc: Option<&LockedCompiler>) -> crate::Result<String> {
    let out = OutLock {
        lock_version: FORMAT,
        host_compiler: cc.map(|c| OutCompiler {
            command: &c.command,
            version: c.version.to_string(),
        }),
        toolchain: toolchains
            .iter()
            .map(|t| OutToolchain {
                name: &t.name,
                kind: t.kind.as_str(),
                version: t.version.to_string(),
                source: t.source.as_str(),
                root: t.root.as_ref().map(|r| r.to_string_lossy().into_owned()),
                files: t.files.as_str(),
                from: t.record.as_ref().map(|r| r.from.as_str()),
                profile: t.record.as_ref().map(|r| r.profile.as_str()),
                components: t.record.as_ref().map(|r| r.components.as_slice()),
                archive: t.record.as_ref().map(|r| r.archives.as_slice()),
            })
            .collect(),
    };
    Ok(format!("{HEADER}{}", toml::to_string(&out)?))
}
