//! The one comparison of an active set with gpuenv.lock. `check --locked`, the shell hook,
//! the SLURM TaskProlog and `doctor --all-nodes` all ask it; each only words the answer.

use std::path::{Path, PathBuf};

use gpuenv_core::resolve::{Active, ActiveSet, Reason};
use gpuenv_core::toolchain::registry::{Entry, Source as Origin};

use super::{Found, Lock, Locked, LockedCompiler};
use crate::record::{self, Record};

/// How far a comparison looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Name, version and source, from the registry alone: fast enough for a prompt.
    Identity,
    /// Everything the lock records: also each tree's file list, how it was installed and
    /// the pinned host compiler.
    Full,
}

/// One way the active set is not what the lock says.
#[derive(Debug)]
pub enum Mismatch<'a> {
    /// A locked kind with nothing active.
    NotActive(&'a Locked),
    /// The active toolchain of a locked kind, and each way it differs, in words.
    Differs {
        locked: &'a Locked,
        active: &'a Active,
        details: Vec<String>,
    },
    /// The pinned host compiler is another, or none was found.
    Compiler {
        want: &'a LockedCompiler,
        have: Option<LockedCompiler>,
    },
    /// A toolchain the project pins that the lock does not name.
    NotLocked { lock: &'a Path, active: &'a Active },
}

impl Mismatch<'_> {
    /// In `check --locked`'s words: one line per difference, each starting with where.
    pub fn lines(&self) -> Vec<String> {
        match self {
            Mismatch::NotActive(l) => vec![format!(
                "{}: {} is locked, but no {} toolchain is active here",
                l.at, l.name, l.kind
            )],
            Mismatch::Differs {
                locked, details, ..
            } => details
                .iter()
                .map(|d| format!("{}: {}: {d}", locked.at, locked.name))
                .collect(),
            Mismatch::Compiler {
                want,
                have: Some(have),
            } => vec![format!(
                "{}: host compiler: the lock has {} {}, this is {} {}",
                want.at, want.command, want.version, have.command, have.version
            )],
            Mismatch::Compiler { want, have: None } => vec![format!(
                "{}: host compiler: the lock has {} {}, and none is pinned and found here",
                want.at, want.command, want.version
            )],
            Mismatch::NotLocked { lock, active } => vec![format!(
                "{}: {} is pinned but not locked",
                lock.display(),
                active.name
            )],
        }
    }

    /// The locked toolchain it is about, if any.
    pub fn locked(&self) -> Option<&Locked> {
        match self {
            Mismatch::NotActive(l) | Mismatch::Differs { locked: l, .. } => Some(l),
            _ => None,
        }
    }
}

/// Listing a tree's files failed.
#[derive(Debug, thiserror::Error)]
#[error("listing the files of {}", root.display())]
pub struct ListError {
    pub root: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The digest of a registered tree's file list, and how it was installed if it says.
pub fn inspect(entry: &Entry) -> Result<(String, Option<Record>), ListError> {
    let files = record::files_digest(&entry.root).map_err(|source| ListError {
        root: entry.root.clone(),
        source,
    })?;
    let rec = (entry.source == Origin::Installed)
        .then(|| record::read(&entry.root))
        .flatten();
    Ok((files, rec))
}

/// Whether a toolchain is active because the project pins it (what `gpuenv lock` locks).
pub fn pinned(reason: &Reason) -> bool {
    matches!(reason, Reason::File(..) | Reason::Torch(..))
}

/// Every way `active` is not what `lock` says; empty when it is. `compiler` gives the
/// pinned host compiler found here, asked only at [`Depth::Full`] of a lock that has one.
pub fn compare<'a>(
    lock: &'a Lock,
    active: &'a ActiveSet,
    depth: Depth,
    compiler: impl FnOnce() -> Option<LockedCompiler>,
) -> Result<Vec<Mismatch<'a>>, ListError> {
    let mut out = Vec::new();
    for l in &lock.toolchains {
        let Some(t) = active.get(l.kind) else {
            out.push(Mismatch::NotActive(l));
            continue;
        };
        let details = match depth {
            Depth::Identity => l.identity_differences(&t.name, &t.entry),
            Depth::Full => {
                let (files, rec) = inspect(&t.entry)?;
                l.differences(&Found {
                    name: &t.name,
                    entry: &t.entry,
                    files: &files,
                    record: rec.as_ref(),
                })
            }
        };
        if !details.is_empty() {
            out.push(Mismatch::Differs {
                locked: l,
                active: t,
                details,
            });
        }
    }
    if depth == Depth::Identity {
        return Ok(out);
    }
    if let Some(want) = &lock.host_compiler {
        match compiler() {
            Some(have) if have.command == want.command && have.version == want.version => {}
            have => out.push(Mismatch::Compiler { want, have }),
        }
    }
    for t in &active.toolchains {
        if pinned(&t.reason) && !lock.toolchains.iter().any(|l| l.kind == t.entry.kind) {
            out.push(Mismatch::NotLocked {
                lock: &lock.path,
                active: t,
            });
        }
    }
    Ok(out)
}
