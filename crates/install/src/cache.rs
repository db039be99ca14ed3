//! The per-user download cache (`$GPUENV_HOME/downloads`, or `GPUENV_DOWNLOAD_CACHE`):
//! archives keyed by their sha256, each kept unpacked so a reinstall only links files (the
//! archive itself is removed once unpacked, unless `GPUENV_KEEP_ARCHIVES` is set), every
//! file stored once by content, partial downloads to resume, the index pages last fetched
//! (for `--offline`), and locks.
//!
//! ```text
//! CACHEDIR.TAG           gpuenv's mark: it made this directory (the standard cache tag)
//! archives/<sha256>      verified archives, until unpacked
//! unpacked/<sha256>/     their safe, unmapped contents, read-only (renamed into place when complete)
//! unpacked/<sha256>.seal their files' modes, sizes and sha256, checked before reuse
//! objects/<xx>/<sha256>-<mode>  each file once; unpacked trees are hard links to these
//! partial/<sha256>       downloads in progress
//! meta/<sha256 of url>   index pages and manifests
//! locks/<sha256>.lock
//! ```
//!
//! The cache is gpuenv's alone. A directory is used as one only when gpuenv marked it, or
//! when it holds nothing but the names above (an empty directory, or a cache of a gpuenv
//! from before the mark, which is marked then): gpuenv deletes in its cache, so `$HOME` named
//! as the cache is refused. Its directories are entered without following links
//! ([`Dir`]), must belong to the user or root, and nothing in them that belongs to another
//! user is reused. A prune removes only the names above ([`ours`]).

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::Digest;

use super::dir::{self, Dir, Untrusted};
use super::objects::Objects;
pub use super::pathpart::{hex, is_sha256};
use super::pathpart::{is_digits, Sha256};
use gpuenv_core::diagnostic::Diagnostic;

/// The directories gpuenv makes at the top of its cache.
pub const PARTS: [&str; 6] = [
    "archives", "unpacked", "objects", "partial", "meta", "locks",
];

/// `unpacked/<sha256>.seal`: the list an unpacked tree is checked against before reuse.
pub const SEAL: &str = ".seal";
/// `locks/<sha256>.lock`.
const LOCK: &str = ".lock";
/// The lock every process that uses the cache holds shared (installs, from their first
/// fetch until their toolchains are linked) and `cache prune` holds alone.
const USERS_LOCK: &str = "users.lock";

/// The standard cache directory tag (<https://bford.info/cachedir/>), which backup tools
/// skip; its comment line says gpuenv made the directory.
pub const TAG: &str = "CACHEDIR.TAG";
const SIGNATURE: &str = "Signature: 8a477f597d28d172789f06886806bc55";
const MADE_BY: &str =
    "# This file is a cache directory tag created by gpuenv (its download cache).";

/// Why a directory is not used as the download cache.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("{} is not a gpuenv download cache: it has no {TAG} from gpuenv, and it holds `{entry}`, which gpuenv did not make (gpuenv deletes files in its cache, so it uses no other directory as one)", root.display())]
    NotOurs { root: PathBuf, entry: String },
    #[error("the download cache cannot be used: {0} (gpuenv reuses nothing another user could have changed)")]
    Untrusted(#[from] Untrusted),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Diagnostic for Refused {
    fn hints(&self) -> Vec<String> {
        let own = "use a download cache of your own: unset GPUENV_DOWNLOAD_CACHE (the default is $GPUENV_HOME/downloads), or point it at a new or empty directory";
        match self {
            Refused::NotOurs { .. } => vec![format!(
                "point GPUENV_DOWNLOAD_CACHE at a new or empty directory (gpuenv makes it and marks it with {TAG}), or unset it to use $GPUENV_HOME/downloads"
            )],
            Refused::Untrusted(Untrusted::Writable { path }) => vec![format!(
                "`chmod +t {}` (as /tmp is), or {own}",
                path.display()
            )],
            Refused::Untrusted(_) => vec![own.to_string()],
            Refused::Io(_) => Vec::new(),
        }
    }
}

/// Whether gpuenv makes an entry named `name` in the part `part` of its cache: the only
/// names a prune removes (a link with such a name is removed itself, never followed).
pub fn ours(part: &str, name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    match part {
        "archives" | "partial" => is_sha256(name),
        "meta" => is_sha256(name) || is_atomic_temp(name),
        "locks" => name == USERS_LOCK || name.strip_suffix(LOCK).is_some_and(is_sha256),
        "unpacked" => {
            is_sha256(name)
                || name.strip_suffix(SEAL).is_some_and(is_sha256)
                || is_atomic_temp(name)
                || [".tmp-", ".old-"].iter().any(|p| {
                    name.strip_prefix(p)
                        .and_then(|rest| rest.split_once('@'))
                        .is_some_and(|(key, _)| is_sha256(key))
                })
                // A prune of the last release that was killed.
                || name
                    .strip_prefix(".prune-")
                    .and_then(|rest| rest.split_once('-'))
                    .is_some_and(|(pid, key)| is_digits(pid) && is_sha256(key))
        }
        "objects" => super::objects::is_shard(name) || name == super::objects::TEMP,
        _ => false,
    }
}

/// `fsutil::write_atomic`'s temp file (`.tmp` and six letters or digits), left by a kill.
fn is_atomic_temp(s: &str) -> bool {
    s.strip_prefix(".tmp")
        .is_some_and(|r| r.len() == 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[derive(Debug, Clone)]
pub struct Cache {
    pub root: PathBuf,
}

impl Cache {
    pub fn new(root: impl Into<PathBuf>) -> Cache {
        Cache { root: root.into() }
    }
    /// The content-addressed store the unpacked trees link to.
    pub fn objects(&self) -> Objects {
        Objects::new(self.root.join("objects"))
    }
    pub fn partial(&self, sha256: &Sha256) -> PathBuf {
        self.root.join("partial").join(sha256.as_str())
    }
    pub fn meta(&self, url: &str) -> PathBuf {
        self.root
            .join("meta")
            .join(hex(&sha2::Sha256::digest(url.as_bytes())))
    }

    /// The cache's own directory, checked to be gpuenv's. Made and marked when missing if
    /// `create`; `None` when missing otherwise.
    pub fn top(&self, create: bool) -> Result<Option<Dir>, Refused> {
        let top = match Dir::open_path(&self.root) {
            Ok(top) => top,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                if let Some(parent) = self.root.parent() {
                    fs_err::create_dir_all(parent)?;
                }
                match rustix::fs::mkdir(&self.root, rustix::fs::Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(std::io::Error::from(e).into()),
                }
                Dir::open_path(&self.root)?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let tagged = marked(&top);
        if !tagged {
            let names = top.names()?;
            let foreign = names
                .iter()
                .find(|n| !PARTS.iter().chain(&[TAG]).any(|p| OsStr::new(p) == *n));
            if let Some(entry) = foreign {
                return Err(Refused::NotOurs {
                    root: self.root.clone(),
                    entry: gpuenv_core::ui::printable(&entry.to_string_lossy()).into_owned(),
                });
            }
        }
        // Only a directory known to be gpuenv's is made the user's alone (see Dir::check).
        top.check()?;
        if !tagged {
            // Empty, or a cache of a gpuenv from before the mark: gpuenv's from now on. A
            // cache the user cannot write (a site's, filled by root) stays unmarked.
            mark(&top);
        }
        Ok(Some(top))
    }

    /// The part `part` (one of `PARTS`) of the cache, checked like the cache itself. Made
    /// when missing if `create`; `None` when missing otherwise. A link at its name is
    /// removed, never followed.
    pub fn part(&self, part: &str, create: bool) -> Result<Option<Dir>, Refused> {
        let Some(top) = self.top(create)? else {
            return Ok(None);
        };
        let planted = top
            .stat(part)?
            .is_some_and(|st| dir::kind(&st) == rustix::fs::FileType::Symlink);
        let dir = if create {
            Some(top.create(part)?)
        } else if planted {
            // gpuenv makes no link here: the link goes itself, what it leads to stays.
            top.remove_file(part)?;
            None
        } else {
            top.open(part)?
        };
        if let Some(dir) = &dir {
            dir.check()?;
        }
        Ok(dir)
    }

    /// The part `part`, made when missing.
    pub fn made(&self, part: &str) -> Result<Dir, Refused> {
        Ok(self.part(part, true)?.expect("made when missing"))
    }

    /// Takes the lock of the archive `sha256`, calling `waiting` first if another process
    /// holds it.
    pub fn lock(&self, sha256: &Sha256, waiting: impl FnOnce()) -> Result<FileLock, LockFailed> {
        self.lock_named(&format!("{sha256}{LOCK}"), Share::Alone, waiting)
    }

    /// Held by a process that works in the cache (an install: what it downloads and
    /// unpacks is not linked into its toolchain until the end), so a prune never removes
    /// what it is about to link. Many may hold it at once.
    pub fn using(&self, waiting: impl FnOnce()) -> Result<FileLock, LockFailed> {
        self.lock_named(USERS_LOCK, Share::Shared, waiting)
    }

    /// Held by `cache prune`: it waits for the installs working in the cache to finish.
    pub fn alone(&self, waiting: impl FnOnce()) -> Result<FileLock, LockFailed> {
        self.lock_named(USERS_LOCK, Share::Alone, waiting)
    }

    fn lock_named(
        &self,
        name: &str,
        share: Share,
        waiting: impl FnOnce(),
    ) -> Result<FileLock, LockFailed> {
        let locks = self.made("locks")?;
        if let Some(st) = locks.stat(name)? {
            if dir::kind(&st) == rustix::fs::FileType::Symlink {
                // Planted: the link goes itself, never followed.
                locks.remove_file(name)?;
            }
        }
        lock_as(&locks.join(name), share, waiting)
    }

    /// Whether the archive `sha256` is here, unpacked or whole, as far as names tell (its
    /// contents are checked when it is used): what a message may call "from the cache".
    pub fn holds(&self, sha256: &Sha256) -> bool {
        let here = |part: &str| {
            self.part(part, false)
                .ok()
                .flatten()
                .and_then(|dir| dir.stat(sha256.as_str()).ok().flatten())
                .is_some()
        };
        here("unpacked") || here("archives")
    }

    /// The page last fetched from `url`: (content type, body). Only one the user or root
    /// wrote is believed: `--offline` installs what it names.
    pub fn read_meta(&self, url: &str, limit: u64) -> Option<(String, Vec<u8>)> {
        let meta = self.part("meta", false).ok()??;
        let name = self.meta(url);
        let file = meta.open_file(name.file_name()?).ok()??;
        let st = file.metadata().ok()?;
        if !st.is_file() || !dir::trusted_owner(std::os::unix::fs::MetadataExt::uid(&st)) {
            return None;
        }
        let mut bytes = Vec::new();
        // The content type's line, then the page up to its cap.
        file.take(limit + 4096).read_to_end(&mut bytes).ok()?;
        if bytes.len() as u64 >= limit + 4096 {
            return None;
        }
        let nl = bytes.iter().position(|&b| b == b'\n')?;
        let content_type = String::from_utf8_lossy(&bytes[..nl]).into_owned();
        Some((content_type, bytes[nl + 1..].to_vec()))
    }

    pub fn write_meta(&self, url: &str, content_type: &str, body: &[u8]) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(body.len() + content_type.len() + 1);
        bytes.extend_from_slice(content_type.replace('\n', " ").as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(body);
        let meta = self.made("meta").map_err(std::io::Error::other)?;
        let name = self.meta(url);
        gpuenv_core::fsutil::write_atomic(&meta.join(name.file_name().unwrap_or_default()), &bytes)
    }
}

/// gpuenv's tag is in `top`.
fn marked(top: &Dir) -> bool {
    let Ok(Some(file)) = top.open_file(TAG) else {
        return false;
    };
    let mut text = String::new();
    let read = file.take(4096).read_to_string(&mut text);
    read.is_ok() && text.starts_with(SIGNATURE) && text.lines().any(|l| l == MADE_BY)
}

/// Writes gpuenv's tag into `top`; a cache the user cannot write stays unmarked.
fn mark(top: &Dir) {
    if let Ok(Some(mut file)) = top.create_file(TAG) {
        let _ = writeln!(
            file,
            "{SIGNATURE}\n{MADE_BY}\n# For information about cache directory tags see https://bford.info/cachedir/"
        );
    }
}

/// The sha256 of a file, read in large blocks.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = fs_err::File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// An exclusive lock on a file, held until dropped.
pub struct FileLock {
    _file: fs_err::File,
}

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockFailed {
    #[error(transparent)]
    Cache(#[from] Refused),
    #[error("locking {}", path.display())]
    Locking {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Diagnostic for LockFailed {
    fn hints(&self) -> Vec<String> {
        match self {
            // Transparent: the refusal is not in the chain, so its hints are said here.
            LockFailed::Cache(r) => r.hints(),
            LockFailed::Locking { .. } | LockFailed::Io(_) => Vec::new(),
        }
    }
}

/// Whether others may hold a lock at the same time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    Alone,
    Shared,
}

/// Takes the lock at `path`, calling `waiting` first if another process holds it.
pub fn lock(path: &Path, waiting: impl FnOnce()) -> Result<FileLock, LockFailed> {
    lock_as(path, Share::Alone, waiting)
}

/// [`lock`], shared with other holders of a shared lock when `share` says so.
pub fn lock_as(path: &Path, share: Share, waiting: impl FnOnce()) -> Result<FileLock, LockFailed> {
    use fs_err::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    // Never through a link planted at its name. Another user's lock file in a shared cache
    // is locked through a read-only handle.
    let open = |write: bool| {
        fs_err::OpenOptions::new()
            .create(write)
            .truncate(false)
            .write(write)
            .read(!write)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
    };
    let file = match open(true) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => open(false),
        other => other,
    }?;
    let (f, shared) = (file.file(), share == Share::Shared);
    let tried = if shared {
        f.try_lock_shared()
    } else {
        f.try_lock()
    };
    match tried {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            waiting();
            if shared { f.lock_shared() } else { f.lock() }.map_err(|source| {
                LockFailed::Locking {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(LockFailed::Locking {
                path: path.to_path_buf(),
                source: e,
            })
        }
    }
    Ok(FileLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_names_gpuenv_gives_are_its_own() {
        let sha = "ab".repeat(32);
        let ours = |part, name: &str| super::ours(part, OsStr::new(name));
        for (part, name) in [
            ("archives", sha.clone()),
            ("partial", sha.clone()),
            ("unpacked", sha.clone()),
            ("unpacked", format!("{sha}.seal")),
            ("unpacked", format!(".tmp-{sha}@x1y2z3")),
            ("unpacked", format!(".old-{sha}@123")),
            ("unpacked", format!(".prune-123-{sha}")),
            ("unpacked", ".tmpA1b2C3".to_string()),
            ("meta", sha.clone()),
            ("locks", format!("{sha}.lock")),
            ("locks", "users.lock".to_string()),
            ("objects", "0f".to_string()),
            ("objects", ".tmp".to_string()),
        ] {
            assert!(ours(part, &name), "{part}/{name}");
        }
        for (part, name) in [
            ("archives", "README"),
            ("archives", &sha.to_uppercase()),
            ("unpacked", "notes.txt"),
            ("unpacked", ".tmp-notes@1"),
            ("meta", ".bashrc"),
            ("objects", "0F"),
            ("objects", "mine"),
            ("locks", &sha),
            ("elsewhere", &sha),
        ] {
            assert!(!ours(part, name), "{part}/{name}");
        }
    }

    #[test]
    fn a_new_or_empty_directory_or_one_with_only_gpuenvs_layout_becomes_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let new = Cache::new(dir.path().join("a/b"));
        assert!(new.top(false).unwrap().is_none());
        assert!(new.top(true).unwrap().is_some());
        assert!(dir.path().join("a/b").join(TAG).is_file());

        let old = Cache::new(dir.path().join("old"));
        fs_err::create_dir_all(old.root.join("unpacked")).unwrap();
        fs_err::create_dir_all(old.root.join("objects")).unwrap();
        assert!(old.top(false).unwrap().is_some());
        assert!(old.root.join(TAG).is_file());

        let home = Cache::new(dir.path().join("home"));
        fs_err::create_dir_all(home.root.join("unpacked")).unwrap();
        fs_err::write(home.root.join(".bashrc"), "mine").unwrap();
        let refused = home.top(true).unwrap_err();
        assert!(
            matches!(&refused, Refused::NotOurs { entry, .. } if entry == ".bashrc"),
            "{refused}"
        );
        assert!(!home.root.join(TAG).exists());
        // Refused as it is: a directory that is not gpuenv's keeps its mode.
        let group = std::os::unix::fs::PermissionsExt::from_mode(0o775);
        fs_err::set_permissions(&home.root, group).unwrap();
        assert!(home.top(true).is_err());
        let mode = fs_err::metadata(&home.root).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o775
        );
        // Another tool's tag is not gpuenv's.
        fs_err::write(home.root.join(TAG), format!("{SIGNATURE}\n# cargo\n")).unwrap();
        assert!(home.top(true).is_err());
    }
}
