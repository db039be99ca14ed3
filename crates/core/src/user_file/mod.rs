//! The one way gpuenv changes a file of the user's (`gpuenv.toml`, `gpuenv.lock`,
//! `pyproject.toml`, settings, a shell's start-up file), as `cargo add` and `uv add` do:
//!
//! - the caller edits the text (a TOML one through `toml_edit`'s document, so inline tables
//!   stay inline and comments, order and spacing stay); the byte-order mark and CRLF line
//!   endings come back here;
//! - the result is checked before anything is written: TOML must parse and keep every key
//!   the file had (unless the caller says that key may go), other text passes the caller's
//!   check (a shell's `-n`) on a copy;
//! - the file is written in place, so its inode, mode, owner and hard links stay; a
//!   read-only file is refused, never made writable; the bytes go through a journal
//!   (`in_place`) so a kill mid-write is finished by the next edit;
//! - no link is followed out of the directory the caller names (the project, the home);
//! - the file itself is locked (`flock`) for the whole read-change-write, so concurrent
//!   gpuenv edits run one after the other and each sees the one before; a new file is made
//!   under a lock on its directory, complete, with the mode the umask leaves.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use fs_err::os::unix::fs::OpenOptionsExt as _;

use crate::outside::{self, ReadError, Why};
use crate::{fsutil, ui};

pub mod form;
pub mod in_place;

/// A user's file gpuenv is about to change.
#[derive(Debug, Clone, Copy)]
pub struct UserFile<'a> {
    pub path: &'a Path,
    /// The directory no link may lead out of: the project, or the user's home.
    pub within: &'a Path,
    /// That directory in words, for messages: "the project", "your home".
    pub scope: &'static str,
    pub kind: outside::Kind,
}

/// What the edited text must pass before it is written.
pub enum Check<'a> {
    /// TOML that parses and keeps every key of the old file that `may_lose` does not allow
    /// to go (given a path such as `tool.uv.index[0].url`).
    Toml { may_lose: &'a dyn Fn(&str) -> bool },
    /// Any text, which `verify` checks in a copy at the path it is given.
    Text(&'a dyn Fn(&Path) -> Result<(), EditError>),
}

impl Check<'_> {
    /// TOML that keeps every key it had.
    pub const TOML: Check<'static> = Check::Toml {
        may_lose: &|_| false,
    };
}

/// What an edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edited {
    /// The file holds what it held (`change` wanted nothing, or the same bytes).
    Unchanged,
    Created,
    Changed,
}

/// An edit done: the file's text before and after (empty before when it was made), and the
/// file written (the end of the links `path` named).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub edited: Edited,
    pub before: String,
    pub after: String,
    pub target: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("{} leads to {}, outside {scope} {}: gpuenv writes no file outside {scope}", ui::shown(.path), ui::shown(.target), ui::shown(.within))]
    LinkOut {
        path: PathBuf,
        target: PathBuf,
        within: PathBuf,
        scope: &'static str,
    },
    #[error("{} is read-only (mode {mode:04o}): gpuenv leaves it as it is", ui::shown(.path))]
    ReadOnly { path: PathBuf, mode: u32 },
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{} is not TOML (line {line}, column {column}: {message}); it was left unchanged", ui::shown(.path))]
    NotToml {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("gpuenv's edit of {} would not read back as TOML ({message}); it was left unchanged", ui::shown(.path))]
    WouldBreak { path: PathBuf, message: String },
    #[error("gpuenv's edit of {} would lose `{key}`; it was left unchanged", ui::shown(.path))]
    WouldLose { path: PathBuf, key: String },
    #[error("{checker} finds an error in gpuenv's edit of {}, so it was left unchanged: {output}", ui::shown(.path))]
    CheckFailed {
        path: PathBuf,
        checker: String,
        output: String,
    },
    #[error("cannot write {}", ui::shown(.path))]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl crate::diagnostic::Diagnostic for EditError {
    fn hints(&self) -> Vec<String> {
        match self {
            EditError::LinkOut { target, .. } => vec![format!(
                "edit {} yourself, or replace the link with a file of its own",
                ui::shown(target)
            )],
            EditError::ReadOnly { path, .. } => vec![format!(
                "make it writable (`chmod u+w {}`) if gpuenv may change it, then run the command again",
                ui::shown(path)
            )],
            EditError::Read(e) => e.hints(),
            EditError::NotToml { .. } => vec!["fix the line named, then run the command again".into()],
            EditError::WouldBreak { .. } | EditError::WouldLose { .. } => vec![
                "this is a bug in gpuenv: please report it with the file's contents".into(),
            ],
            EditError::CheckFailed { .. } => {
                vec!["fix the file so that the shell reads it, then run the command again".into()]
            }
            EditError::Io { .. } => Vec::new(),
        }
    }
}

/// Edits `file`: `change` gets its text (without a byte-order mark; empty for a file not
/// there yet) and returns the new text, or `None` to leave it. Everything the module doc
/// promises holds whatever `change` returns.
pub fn edit<E: From<EditError>>(
    file: UserFile,
    check: Check,
    change: impl FnOnce(&str) -> Result<Option<String>, E>,
) -> Result<Outcome, E> {
    let target = inside(file)?;
    let io = |source| EditError::Io {
        path: target.clone(),
        source,
    };
    let mut change = Some(change);
    // A file replaced or made between the open and the lock is opened again.
    for _ in 0..16 {
        match open_rw(file, &target)? {
            Some(f) => {
                f.lock().map_err(io)?;
                if !still_there(&f, &target).map_err(io)? {
                    continue;
                }
                let change = change.take().expect("taken once");
                return edit_open(file, &target, &f, check, change);
            }
            None => {
                let dir = File::open(target.parent().unwrap_or(Path::new("."))).map_err(io)?;
                dir.lock().map_err(io)?;
                if fs_err::symlink_metadata(&target).is_ok() {
                    continue;
                }
                let change = change.take().expect("taken once");
                return create(&target, check, change);
            }
        }
    }
    Err(EditError::Io {
        path: target.clone(),
        source: std::io::Error::other("it keeps being replaced while gpuenv edits it"),
    }
    .into())
}

/// The file `path` names at the end of its links, refused when it is not in `within`.
fn inside(file: UserFile) -> Result<PathBuf, EditError> {
    let io = |source| EditError::Io {
        path: file.path.to_path_buf(),
        source,
    };
    let target = fsutil::final_target(file.path).map_err(io)?;
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty());
    let within = fs_err::canonicalize(file.within).ok();
    let real_dir = fs_err::canonicalize(dir.unwrap_or(Path::new("."))).ok();
    match (within, real_dir) {
        (Some(w), Some(d)) if d.starts_with(&w) => Ok(target),
        _ => Err(EditError::LinkOut {
            path: file.path.to_path_buf(),
            target,
            within: file.within.to_path_buf(),
            scope: file.scope,
        }),
    }
}

/// The file open for reading and writing, never through a link, never blocking (a FIFO);
/// `None` when there is none. A regular file within its kind's cap, writable by its owner.
fn open_rw(file: UserFile, target: &Path) -> Result<Option<File>, EditError> {
    let fail = |why| ReadError {
        path: target.to_path_buf(),
        kind: file.kind,
        why,
    };
    let opened = fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(target);
    let f = match opened {
        Ok(f) => f.into_parts().0,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            if let Ok(m) = fs_err::symlink_metadata(target) {
                if m.is_file() && m.mode() & 0o200 == 0 {
                    return Err(EditError::ReadOnly {
                        path: target.to_path_buf(),
                        mode: m.mode() & 0o7777,
                    });
                }
                if let Some(what) = fsutil::not_regular(&m) {
                    return Err(fail(Why::NotRegular(what)).into());
                }
            }
            return Err(fail(Why::Io(e)).into());
        }
    };
    let meta = f.metadata().map_err(|e| fail(Why::Io(e)))?;
    if let Some(what) = fsutil::not_regular(&meta) {
        return Err(fail(Why::NotRegular(what)).into());
    }
    // Root may write a file its owner made read-only; gpuenv does not.
    if meta.mode() & 0o200 == 0 {
        return Err(EditError::ReadOnly {
            path: target.to_path_buf(),
            mode: meta.mode() & 0o7777,
        });
    }
    let limit = file.kind.limit();
    if meta.len() > limit {
        return Err(fail(Why::TooLarge {
            kind: file.kind,
            limit,
        })
        .into());
    }
    Ok(Some(f))
}

fn still_there(f: &File, target: &Path) -> std::io::Result<bool> {
    let open = f.metadata()?;
    Ok(match fs_err::symlink_metadata(target) {
        Ok(m) => m.ino() == open.ino() && m.dev() == open.dev(),
        Err(_) => false,
    })
}

fn edit_open<E: From<EditError>>(
    file: UserFile,
    target: &Path,
    f: &File,
    check: Check,
    change: impl FnOnce(&str) -> Result<Option<String>, E>,
) -> Result<Outcome, E> {
    let io = |source| EditError::Io {
        path: target.to_path_buf(),
        source,
    };
    in_place::clean_stale(target);
    let mut bytes = Vec::new();
    f.take(file.kind.limit() + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if let Some(finished) = in_place::recover(f, target, &bytes).map_err(io)? {
        bytes = finished;
    }
    let before = String::from_utf8(bytes).map_err(|_| {
        EditError::Read(ReadError {
            path: target.to_path_buf(),
            kind: file.kind,
            why: Why::NotText,
        })
    })?;
    let (form, body) = form::Form::of(&before);
    let unchanged = |before: String| Outcome {
        edited: Edited::Unchanged,
        after: before.clone(),
        before,
        target: target.to_path_buf(),
    };
    let Some(new_body) = change(body)? else {
        return Ok(unchanged(before));
    };
    let after = form.apply(&new_body);
    if after == before {
        return Ok(unchanged(before));
    }
    verify(target, body, &after, &check)?;
    in_place::write(f, target, before.as_bytes(), after.as_bytes()).map_err(io)?;
    Ok(Outcome {
        edited: Edited::Changed,
        before,
        after,
        target: target.to_path_buf(),
    })
}

fn create<E: From<EditError>>(
    target: &Path,
    check: Check,
    change: impl FnOnce(&str) -> Result<Option<String>, E>,
) -> Result<Outcome, E> {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let io = |source| EditError::Io {
        path: target.to_path_buf(),
        source,
    };
    in_place::clean_stale(target);
    let Some(after) = change("")? else {
        return Ok(Outcome {
            edited: Edited::Unchanged,
            before: String::new(),
            after: String::new(),
            target: target.to_path_buf(),
        });
    };
    verify(target, "", &after, &check)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    // rw-rw-rw- less the umask, as an editor makes a file.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!("{}new", in_place::temp_prefix(target)))
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(io)?;
    tmp.write_all(after.as_bytes()).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist_noclobber(target).map_err(|e| io(e.error))?;
    Ok(Outcome {
        edited: Edited::Created,
        before: String::new(),
        after,
        target: target.to_path_buf(),
    })
}

/// The checks on the new text (with its mark and line endings) before it is written.
fn verify(target: &Path, old_body: &str, after: &str, check: &Check) -> Result<(), EditError> {
    match check {
        Check::Toml { may_lose } => {
            let (_, body) = form::Form::of(after);
            let new: toml_edit::DocumentMut =
                body.parse()
                    .map_err(|e: toml_edit::TomlError| EditError::WouldBreak {
                        path: target.to_path_buf(),
                        message: e.message().trim().replace('\n', ": "),
                    })?;
            // The old text parsed (the caller edited its document); its keys must all be there.
            let Ok(old) = old_body.parse::<toml_edit::DocumentMut>() else {
                return Ok(());
            };
            let kept = form::key_paths(&new);
            if let Some(key) = form::key_paths(&old)
                .into_iter()
                .find(|k| !kept.contains(k) && !may_lose(k))
            {
                return Err(EditError::WouldLose {
                    path: target.to_path_buf(),
                    key,
                });
            }
            Ok(())
        }
        Check::Text(check) => check_copy(target, after, *check),
    }
}

/// Runs `check` on a copy of `text` beside `target` (what a shell reads as `target` would).
pub fn check_copy(
    target: &Path,
    text: &str,
    check: &dyn Fn(&Path) -> Result<(), EditError>,
) -> Result<(), EditError> {
    use std::io::Write as _;
    let io = |source| EditError::Io {
        path: target.to_path_buf(),
        source,
    };
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut copy = tempfile::Builder::new()
        .prefix(&format!("{}check", in_place::temp_prefix(target)))
        .tempfile_in(dir)
        .map_err(io)?;
    copy.write_all(text.as_bytes()).map_err(io)?;
    copy.flush().map_err(io)?;
    check(copy.path())
}

/// Keeps `file` as it is now at `backup`, byte for byte (a byte-order mark too, which
/// [`edit`]'s `change` does not see), with its mode: a private file's copy stays private.
/// Called inside `change`, the file is locked and still the old one.
pub fn keep_copy(backup: &Path, file: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut old = fs_err::File::open(file)?;
    let mode = old.metadata()?.permissions().mode();
    let dir = backup.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(mode & 0o777))
        .tempfile_in(dir)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode & 0o777))?;
    std::io::copy(&mut old, &mut tmp)?;
    tmp.as_file().sync_all()?;
    tmp.persist(backup).map_err(|e| e.error)?;
    Ok(())
}

/// [`EditError::NotToml`] for `text` (the file at `path`) that does not parse.
pub fn not_toml(path: &Path, text: &str, e: &toml_edit::TomlError) -> EditError {
    let (line, column) = e
        .span()
        .map(|s| fsutil::line_col(text, s.start))
        .unwrap_or((1, 1));
    EditError::NotToml {
        path: path.to_path_buf(),
        line,
        column,
        message: e.message().trim().replace('\n', ": "),
    }
}

#[cfg(test)]
mod tests;
