//! Directories of the download cache, entered only through descriptors: each is opened
//! relative to its parent's descriptor with `O_NOFOLLOW | O_DIRECTORY`, and its entries are
//! made, linked, renamed, removed and opened relative to it without following a link. A
//! link planted where gpuenv keeps a directory is never entered, and a directory swapped for
//! a link after it was opened is not where gpuenv goes on working.
//!
//! [`Dir::check`] adds the rule that makes a checked name stay what it was: the directory is
//! owned by the user or root and nobody else may rename its entries (it is not writable by
//! others, or it has the sticky bit, as `/tmp` has).

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

pub use rustix::fs::Stat;

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Files of the user or of root: the only ones gpuenv reuses from its cache. Anyone else's
/// could hold anything, however well it matches a list beside it.
pub fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == rustix::process::geteuid().as_raw()
}

/// The user's own files: the only ones a prune removes (a shared cache's others are theirs).
pub fn mine(uid: u32) -> bool {
    uid == rustix::process::geteuid().as_raw()
}

pub fn kind(st: &Stat) -> FileType {
    FileType::from_raw_mode(st.st_mode)
}

/// Why a directory of the cache is not used.
#[derive(Debug, thiserror::Error)]
pub enum Untrusted {
    #[error("{} belongs to user {uid}, not to you or root", path.display())]
    Owner { path: PathBuf, uid: u32 },
    #[error("{} can be written by other users and has no sticky bit, so they could swap what gpuenv checked", path.display())]
    Writable { path: PathBuf },
    #[error("cannot read {}: {cause}", path.display())]
    Unreadable { path: PathBuf, cause: io::Error },
}

/// An open directory and the path it was opened at (for messages and path-based readers).
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

fn err(e: Errno, what: &str, path: &Path) -> io::Error {
    let e = io::Error::from(e);
    io::Error::new(e.kind(), format!("cannot {what} {}: {e}", path.display()))
}

impl Dir {
    /// The directory at `path`; links in `path` itself are the user's to make.
    pub fn open_path(path: &Path) -> io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rfs::open(path, flags, Mode::empty()).map_err(|e| err(e, "open", path))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: impl AsRef<OsStr>) -> PathBuf {
        self.path.join(name.as_ref())
    }

    /// Owned by the user or root, and nobody else can rename what is in it. One the user
    /// owns that others may write is made theirs alone first (gpuenv made it, or it is the
    /// cache they named).
    pub fn check(&self) -> Result<(), Untrusted> {
        let st = rfs::fstat(&self.fd).map_err(|e| Untrusted::Unreadable {
            path: self.path.clone(),
            cause: e.into(),
        })?;
        if !trusted_owner(st.st_uid) {
            return Err(Untrusted::Owner {
                path: self.path.clone(),
                uid: st.st_uid,
            });
        }
        let open_to_others = st.st_mode & 0o022 != 0 && st.st_mode & 0o1000 == 0;
        if open_to_others {
            let mine = st.st_uid == rustix::process::geteuid().as_raw();
            let tightened = Mode::from_raw_mode(st.st_mode & 0o7755);
            if !(mine && rfs::fchmod(&self.fd, tightened).is_ok()) {
                return Err(Untrusted::Writable {
                    path: self.path.clone(),
                });
            }
            gpuenv_core::ui::warn(format!(
                "{} could be written by other users without the sticky bit, who could swap what gpuenv checked; it is writable only by you now",
                self.path.display()
            ));
        }
        Ok(())
    }

    /// The user who owns this directory.
    pub fn owner(&self) -> io::Result<u32> {
        let st = rfs::fstat(&self.fd).map_err(|e| err(e, "read", &self.path))?;
        Ok(st.st_uid)
    }

    /// The entry `name` itself (a link is not followed); `None` when there is none.
    pub fn stat(&self, name: impl AsRef<OsStr>) -> io::Result<Option<Stat>> {
        let name = name.as_ref();
        match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(err(e, "read", &self.join(name))),
        }
    }

    /// The directory `name` in this one; `None` when there is none. A link or a file there
    /// is an error: gpuenv never follows a link in its cache.
    pub fn open(&self, name: impl AsRef<OsStr>) -> io::Result<Option<Dir>> {
        let name = name.as_ref();
        match rfs::openat(&self.fd, name, DIR, Mode::empty()) {
            Ok(fd) => Ok(Some(Dir {
                fd,
                path: self.join(name),
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(Errno::LOOP | Errno::NOTDIR) => Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!(
                    "{} is a link or a file where gpuenv keeps a directory; gpuenv never follows a link in its download cache",
                    self.join(name).display()
                ),
            )),
            Err(e) => Err(err(e, "open", &self.join(name))),
        }
    }

    /// The directory `name`, made (`rwxr-xr-x`) when missing. A link at its name was planted
    /// there: it is removed (never followed) and the directory made.
    pub fn create(&self, name: impl AsRef<OsStr>) -> io::Result<Dir> {
        let name = name.as_ref();
        for _ in 0..3 {
            match rfs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(err(e, "create", &self.join(name))),
            }
            if self
                .stat(name)?
                .is_some_and(|st| kind(&st) == FileType::Symlink)
            {
                self.remove_file(name)?;
                continue;
            }
            if let Some(dir) = self.open(name)? {
                return Ok(dir);
            }
        }
        Err(io::Error::other(format!(
            "{} was replaced again while gpuenv made it",
            self.join(name).display()
        )))
    }

    /// The names in this directory.
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        let read = |e| err(e, "list", &self.path);
        let mut out = Vec::new();
        for entry in rfs::Dir::read_from(&self.fd).map_err(read)? {
            let entry = entry.map_err(read)?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                out.push(OsStr::from_bytes(name).to_os_string());
            }
        }
        Ok(out)
    }

    /// Removes the entry `name` that is not a directory (a link itself, never its target).
    pub fn remove_file(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let name = name.as_ref();
        rfs::unlinkat(&self.fd, name, AtFlags::empty())
            .map_err(|e| err(e, "remove", &self.join(name)))
    }

    /// Removes the directory `name` if it is empty.
    pub fn remove_empty(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let name = name.as_ref();
        rfs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)
            .map_err(|e| err(e, "remove", &self.join(name)))
    }

    /// Removes the entry `name`, a whole tree if it is one: renamed to `.old-<name>@<pid>`
    /// first (no reader takes half a tree for a whole one), then removed entry by entry,
    /// never following a link.
    pub fn remove_tree(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let name = name.as_ref();
        match self.stat(name)? {
            None => return Ok(()),
            Some(st) if kind(&st) != FileType::Directory => return self.remove_file(name),
            Some(_) => {}
        }
        let mut doomed = scratch_prefix("old", name);
        doomed.push(std::process::id().to_string());
        // One of a dead process that had our pid.
        self.remove_all(&doomed)?;
        self.rename(name, self, &doomed)?;
        self.remove_all(&doomed)
    }

    fn remove_all(&self, name: &OsStr) -> io::Result<()> {
        match self.stat(name)? {
            None => Ok(()),
            Some(st) if kind(&st) != FileType::Directory => self.remove_file(name),
            Some(_) => {
                if let Some(dir) = self.open(name)? {
                    dir.let_owner_remove();
                    for entry in dir.names()? {
                        dir.remove_all(&entry)?;
                    }
                }
                rfs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)
                    .map_err(|e| err(e, "remove", &self.join(name)))
            }
        }
    }

    /// A directory an archive made read-only gets its owner's write bit back.
    fn let_owner_remove(&self) {
        if let Ok(st) = rfs::fstat(&self.fd) {
            if st.st_mode & 0o700 != 0o700 {
                let mode = Mode::from_raw_mode((st.st_mode | 0o700) & 0o7777);
                let _ = rfs::fchmod(&self.fd, mode);
            }
        }
    }

    pub fn rename(
        &self,
        from: impl AsRef<OsStr>,
        to: &Dir,
        to_name: impl AsRef<OsStr>,
    ) -> io::Result<()> {
        let (from, to_name) = (from.as_ref(), to_name.as_ref());
        rfs::renameat(&self.fd, from, &to.fd, to_name)
            .map_err(|e| err(e, "rename", &self.join(from)))
    }

    /// Renames the entry `from` over the file at `path` (a rename replaces a link at `path`,
    /// never writes through it).
    pub fn rename_out(&self, from: impl AsRef<OsStr>, path: &Path) -> io::Result<()> {
        let from = from.as_ref();
        rfs::renameat(&self.fd, from, rfs::CWD, path).map_err(|e| err(e, "rename", path))
    }

    /// A hard link `to/to_name` of the entry `from` (a link at `from` is linked itself).
    pub fn hard_link(
        &self,
        from: impl AsRef<OsStr>,
        to: &Dir,
        to_name: impl AsRef<OsStr>,
    ) -> io::Result<()> {
        let (from, to_name) = (from.as_ref(), to_name.as_ref());
        rfs::linkat(&self.fd, from, &to.fd, to_name, AtFlags::empty()).map_err(io::Error::from)
    }

    /// A hard link `name` here of the file at `path`.
    pub fn link_in(&self, path: &Path, name: impl AsRef<OsStr>) -> io::Result<()> {
        rfs::linkat(rfs::CWD, path, &self.fd, name.as_ref(), AtFlags::empty())
            .map_err(io::Error::from)
    }

    /// The entry `name` opened for reading, never through a link and without blocking on a
    /// FIFO; `None` when there is none. The caller checks what it is on the handle.
    pub fn open_file(&self, name: impl AsRef<OsStr>) -> io::Result<Option<fs_err::File>> {
        let name = name.as_ref();
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        match rfs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(fs_err::File::from_parts(
                std::fs::File::from(fd),
                self.join(name),
            ))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(err(e, "open", &self.join(name))),
        }
    }

    /// A new file `name` (`rw-r--r--`) for writing; `None` when the name is taken.
    pub fn create_file(&self, name: impl AsRef<OsStr>) -> io::Result<Option<fs_err::File>> {
        let name = name.as_ref();
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rfs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o644)) {
            Ok(fd) => Ok(Some(fs_err::File::from_parts(
                std::fs::File::from(fd),
                self.join(name),
            ))),
            Err(Errno::EXIST) => Ok(None),
            Err(e) => Err(err(e, "create", &self.join(name))),
        }
    }

    /// Calls `f` with every regular file at or below the entry `name`, never following a link.
    pub fn for_each_file(
        &self,
        name: impl AsRef<OsStr>,
        f: &mut dyn FnMut(&Stat),
    ) -> io::Result<()> {
        let name = name.as_ref();
        match self.stat(name)? {
            Some(st) if kind(&st) == FileType::RegularFile => f(&st),
            Some(st) if kind(&st) == FileType::Directory => {
                if let Some(dir) = self.open(name)? {
                    for entry in dir.names()? {
                        dir.for_each_file(&entry, f)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

// Trees on their way in or out sit beside where they belong: `.tmp-<key>@<random>` while
// one is built, `.old-<key>@<pid>` while one is deleted. `@` appears in no toolchain name
// and no digest, so the leftovers of one key never match another's (`cuda-12.4` and
// `cuda-12.4.1`, `cuda-12.4.1` and `cuda-12.4.1-foo`). Callers make and clean them only
// under the key's lock: whatever its holder finds was left by a process that died.

fn scratch_prefix(state: &str, key: &OsStr) -> OsString {
    let mut prefix = OsString::from(format!(".{state}-"));
    prefix.push(key);
    prefix.push("@");
    prefix
}

/// A new, empty temp dir in `dir` to build the tree `key`; removed when dropped unless kept.
pub fn temp_dir(dir: &Path, key: &str) -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&scratch_prefix("tmp", key.as_ref()))
        .tempdir_in(dir)
}

/// Removes what killed processes left in `dir` for `key`. Call it holding `key`'s lock.
pub fn remove_leftovers(dir: &Path, key: &str) {
    let Ok(dir) = Dir::open_path(dir) else {
        return;
    };
    let mine = [
        scratch_prefix("tmp", key.as_ref()),
        scratch_prefix("old", key.as_ref()),
    ];
    for name in dir.names().unwrap_or_default() {
        if mine
            .iter()
            .any(|p| name.as_bytes().starts_with(p.as_bytes()))
        {
            let _ = dir.remove_all(&name);
        }
    }
}

/// The directory `path` is in, opened, and its last component.
fn parent_of(path: &Path) -> io::Result<(Dir, &OsStr)> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no entry to remove", path.display()),
        )
    })?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    Ok((Dir::open_path(parent.unwrap_or(Path::new(".")))?, name))
}

/// `Dir::remove_tree` of the entry at `path` (nothing when there is none).
pub fn remove_tree(path: &Path) -> io::Result<()> {
    match parent_of(path) {
        Ok((dir, name)) => dir.remove_tree(name),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes the file or tree at `path` in place, also one whose directories were made
/// read-only, never following a link.
pub fn remove_all(path: &Path) -> io::Result<()> {
    let (dir, name) = parent_of(path)?;
    dir.remove_all(name)
}

#[cfg(test)]
mod tests;
