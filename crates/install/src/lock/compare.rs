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
    let rec = (entry.source == Origin::Installed)
        .then(|| record::read(&entry.root))
        .flatten();
    let files = record::tree_digest(&entry.root, rec.as_ref()).map_err(|source| ListError {
        root: entry.root.clone(),
        source,
    })?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pathpart::Sha256;
    use gpuenv_core::project::Location;
    use gpuenv_core::toolchain::Kind;

    fn at(line: usize) -> Location {
        Location {
            path: PathBuf::from("/p/gpuenv.lock"),
            line,
            column: 1,
        }
    }

    /// A linked CUDA 12.4.1 tree in `dir`, active through the project's pin.
    fn active_tree(dir: &Path) -> ActiveSet {
        fs_err::create_dir_all(dir.join("bin")).unwrap();
        fs_err::write(dir.join("bin/nvcc"), "nvcc").unwrap();
        let entry = Entry {
            kind: Kind::Cuda,
            version: "12.4.1".parse().unwrap(),
            root: dir.to_path_buf(),
            source: Origin::Linked,
            version_from: "version.json".into(),
            include_dir: dir.join("include"),
            lib_dir: dir.join("lib64"),
            collectives: None,
            system: None,
        };
        ActiveSet {
            toolchains: vec![Active {
                name: "cuda-12.4.1".into(),
                entry,
                reason: Reason::File(at(2), "cuda-12.4".parse().unwrap()),
            }],
            ..ActiveSet::default()
        }
    }

    fn locking(active: &ActiveSet) -> Lock {
        let t = &active.toolchains[0];
        let (files, _) = inspect(&t.entry).unwrap();
        Lock {
            path: PathBuf::from("/p/gpuenv.lock"),
            toolchains: vec![Locked {
                name: t.name.clone(),
                kind: Kind::Cuda,
                version: t.entry.version.clone(),
                source: Origin::Linked,
                root: Some(t.entry.root.clone()),
                files: Sha256::parse(&files).unwrap(),
                record: None,
                at: at(6),
            }],
            host_compiler: None,
        }
    }

    fn lines(found: &[Mismatch]) -> Vec<String> {
        found.iter().flat_map(Mismatch::lines).collect()
    }

    #[test]
    fn the_locked_tree_matches_and_another_file_list_differs_only_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let active = active_tree(dir.path());
        let lock = locking(&active);
        assert!(compare(&lock, &active, Depth::Full, || None)
            .unwrap()
            .is_empty());

        fs_err::write(dir.path().join("bin/nvcc"), "another nvcc").unwrap();
        let full = compare(&lock, &active, Depth::Full, || None).unwrap();
        let text = lines(&full);
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(
            text[0].starts_with(
                "/p/gpuenv.lock:6:1: cuda-12.4.1: files: the tree's file list differs"
            ),
            "{text:?}"
        );
        assert_eq!(
            full[0].locked().map(|l| l.name.as_str()),
            Some("cuda-12.4.1")
        );
        // The prompt's comparison reads no tree.
        assert!(compare(&lock, &active, Depth::Identity, || None)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_locked_kind_with_nothing_active_and_a_locked_compiler_not_found_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let active = active_tree(dir.path());
        let mut lock = locking(&active);
        lock.host_compiler = Some(LockedCompiler {
            command: "g++-11".into(),
            version: "11.4.0".parse().unwrap(),
            at: at(3),
        });
        let nothing = ActiveSet::default();
        let found = compare(&lock, &nothing, Depth::Full, || None).unwrap();
        assert_eq!(
            lines(&found),
            [
                "/p/gpuenv.lock:6:1: cuda-12.4.1 is locked, but no cuda toolchain is active here",
                "/p/gpuenv.lock:3:1: host compiler: the lock has g++-11 11.4.0, and none is pinned and found here",
            ]
        );
        let asked = std::cell::Cell::new(false);
        let found = compare(&lock, &active, Depth::Identity, || {
            asked.set(true);
            None
        })
        .unwrap();
        assert!(
            found.is_empty() && !asked.get(),
            "a prompt runs no compiler"
        );
    }
}
