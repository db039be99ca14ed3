//! The download cache's content-addressed store: each file of every unpacked archive is kept
//! once per content and mode, as `objects/<first two hex digits>/<sha256>-<mode>`, and the
//! unpacked trees, hence the installed toolchains (hard links into them), are hard links to
//! it. CUDA 13.0, 13.1 and 13.2 ship many identical headers and files in different archives;
//! each is stored once, as in uv's and pnpm's stores.
//!
//! The mode is in the name because hard links share it. Objects are read-only like the
//! trees, and one is reused only after its bytes are hashed again: an object someone made
//! writable and changed is replaced, never linked into a new tree. Sharing is an
//! optimisation: a file that cannot be shared (another filesystem, too many links) stays as
//! it was unpacked.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::cache::sha256_file;
use super::pathpart::Sha256;

/// The store below `root` (`<cache>/objects`).
#[derive(Debug, Clone)]
pub struct Objects {
    root: PathBuf,
}

/// What [`Objects::share`] did with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    /// The file became the stored object for its content.
    Stored,
    /// The file was replaced by a link to the object stored before.
    Reused,
    /// The file stays as it was: the store could not take it.
    Kept,
}

impl Objects {
    pub fn new(root: impl Into<PathBuf>) -> Objects {
        Objects { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the object with these bytes and this mode (permission bits) is kept.
    pub fn path(&self, sha256: &Sha256, mode: u32) -> PathBuf {
        let hex = sha256.as_str();
        self.root
            .join(&hex[..2])
            .join(format!("{hex}-{:o}", mode & 0o7777))
    }

    /// Makes `file` (a read-only regular file whose bytes hash to `sha256`) the same inode as
    /// the stored object for its bytes and mode, storing it first when there is none.
    pub fn share(&self, file: &Path, sha256: &Sha256) -> io::Result<Shared> {
        let meta = fs_err::symlink_metadata(file)?;
        let mode = meta.mode() & 0o7777;
        let object = self.path(sha256, mode);
        // A second try after removing a damaged object or losing a race with another process.
        for _ in 0..3 {
            match std::fs::symlink_metadata(&object) {
                Ok(o) if o.dev() == meta.dev() && o.ino() == meta.ino() => {
                    return Ok(Shared::Reused)
                }
                Ok(o) if is_intact(&object, &o, mode, meta.len(), sha256)? => {
                    let tmp = self.temp_name()?;
                    match std::fs::hard_link(&object, &tmp) {
                        Ok(()) => {}
                        // Removed meanwhile (a prune): stored anew on the next turn.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                        Err(_) => return Ok(Shared::Kept),
                    }
                    if let Err(e) = fs_err::rename(&tmp, file) {
                        let _ = fs_err::remove_file(&tmp);
                        return Err(e);
                    }
                    return Ok(Shared::Reused);
                }
                Ok(_) => {
                    // Changed since it was stored (its mode, size or bytes): replaced.
                    let _ = fs_err::remove_file(&object);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    fs_err::create_dir_all(object.parent().expect("objects have a parent"))?;
                    match std::fs::hard_link(file, &object) {
                        Ok(()) => return Ok(Shared::Stored),
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        // Another filesystem, too many links: the file stays unshared.
                        Err(_) => return Ok(Shared::Kept),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Shared::Kept)
    }

    /// A fresh name in the store's own temp dir, on the same filesystem as the objects, so a
    /// link made there can be renamed over a tree's file (a name inside the tree could be
    /// one the archive ships).
    fn temp_name(&self) -> io::Result<PathBuf> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = self.root.join(".tmp");
        fs_err::create_dir_all(&dir)?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Ok(dir.join(format!("{}-{n}", std::process::id())))
    }

    /// Removes the objects no tree links to any more (a link count of one: the store's own),
    /// and leftovers of interrupted runs. Returns the bytes and files freed.
    pub fn remove_unused(&self) -> io::Result<(u64, u64)> {
        let (mut bytes, mut files) = (0, 0);
        let Ok(dirs) = fs_err::read_dir(&self.root) else {
            return Ok((0, 0));
        };
        for dir in dirs.flatten() {
            let leftovers = dir.file_name() == ".tmp";
            let Ok(entries) = fs_err::read_dir(dir.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(meta) = entry.path().symlink_metadata() else {
                    continue;
                };
                // A temp link of a running install is younger than a minute.
                let stale = leftovers
                    && meta
                        .modified()
                        .ok()
                        .and_then(|m| m.elapsed().ok())
                        .is_some_and(|age| age.as_secs() > 60);
                if meta.nlink() == 1 && (!leftovers || stale) {
                    fs_err::remove_file(entry.path())?;
                    bytes += meta.len();
                    files += 1;
                }
            }
        }
        Ok((bytes, files))
    }
}

/// The object is still what it was stored as: its mode, size and bytes.
fn is_intact(
    object: &Path,
    meta: &std::fs::Metadata,
    mode: u32,
    len: u64,
    sha256: &Sha256,
) -> io::Result<bool> {
    Ok(meta.is_file()
        && meta.mode() & 0o7777 == mode
        && meta.len() == len
        && sha256_file(object)? == sha256.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn file(dir: &Path, name: &str, bytes: &str, mode: u32) -> (PathBuf, Sha256) {
        let path = dir.join(name);
        fs_err::write(&path, bytes).unwrap();
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let sha = Sha256::parse(&sha256_file(&path).unwrap()).unwrap();
        (path, sha)
    }

    fn inode(p: &Path) -> u64 {
        fs_err::metadata(p).unwrap().ino()
    }

    #[test]
    fn identical_files_of_two_trees_become_one_inode() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path().join("objects"));
        let (a, sha) = file(dir.path(), "a", "#include <x>\n", 0o444);
        let (b, _) = file(dir.path(), "b", "#include <x>\n", 0o444);
        assert_eq!(objects.share(&a, &sha).unwrap(), Shared::Stored);
        assert_eq!(objects.share(&b, &sha).unwrap(), Shared::Reused);
        assert_eq!(inode(&a), inode(&b));
        assert_eq!(fs_err::metadata(&a).unwrap().nlink(), 3);
        assert_eq!(objects.share(&b, &sha).unwrap(), Shared::Reused);
    }

    #[test]
    fn the_same_bytes_with_another_mode_are_another_object() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path().join("objects"));
        let (a, sha) = file(dir.path(), "a", "x", 0o444);
        let (b, _) = file(dir.path(), "b", "x", 0o555);
        objects.share(&a, &sha).unwrap();
        assert_eq!(objects.share(&b, &sha).unwrap(), Shared::Stored);
        assert_ne!(inode(&a), inode(&b));
        assert_eq!(fs_err::metadata(&b).unwrap().mode() & 0o777, 0o555);
    }

    #[test]
    fn an_object_changed_after_it_was_stored_is_replaced_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path().join("objects"));
        let (a, sha) = file(dir.path(), "a", "good", 0o444);
        objects.share(&a, &sha).unwrap();
        // Someone makes the stored copy writable and edits it (the mode is put back too).
        let object = objects.path(&sha, 0o444);
        fs_err::set_permissions(&object, std::fs::Permissions::from_mode(0o644)).unwrap();
        fs_err::write(&object, "evil").unwrap();
        fs_err::set_permissions(&object, std::fs::Permissions::from_mode(0o444)).unwrap();
        let (b, _) = file(dir.path(), "b", "good", 0o444);
        assert_eq!(objects.share(&b, &sha).unwrap(), Shared::Stored);
        assert_eq!(fs_err::read_to_string(&b).unwrap(), "good");
        assert_eq!(fs_err::read_to_string(&object).unwrap(), "good");
    }

    #[test]
    fn a_link_planted_where_an_object_belongs_is_replaced_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path().join("objects"));
        let (outside, _) = file(dir.path(), "outside", "same bytes", 0o444);
        let (a, sha) = file(dir.path(), "a", "same bytes", 0o444);
        let object = objects.path(&sha, 0o444);
        fs_err::create_dir_all(object.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &object).unwrap();
        assert_eq!(objects.share(&a, &sha).unwrap(), Shared::Stored);
        let meta = fs_err::symlink_metadata(&object).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.ino(), inode(&a));
        assert_ne!(inode(&a), inode(&outside));
        assert_eq!(fs_err::metadata(&outside).unwrap().nlink(), 1);
    }

    #[test]
    fn unused_objects_are_removed_and_used_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path().join("objects"));
        let (a, sha_a) = file(dir.path(), "a", "kept", 0o444);
        let (b, sha_b) = file(dir.path(), "b", "gone", 0o444);
        objects.share(&a, &sha_a).unwrap();
        objects.share(&b, &sha_b).unwrap();
        fs_err::remove_file(&b).unwrap();
        assert_eq!(objects.remove_unused().unwrap(), (4, 1));
        assert!(objects.path(&sha_a, 0o444).exists());
        assert!(!objects.path(&sha_b, 0o444).exists());
    }
}
