//! The download cache's content-addressed store: each file of every unpacked archive is kept
//! once per content and mode, as `objects/<first two hex digits>/<sha256>-<mode>`, and the
//! unpacked trees, hence the installed toolchains (hard links into them), are hard links to
//! it. CUDA 13.0, 13.1 and 13.2 ship many identical headers and files in different archives;
//! each is stored once, as in uv's and pnpm's stores.
//!
//! The mode is in the name because hard links share it. Objects are read-only like the
//! trees, and one is reused only after its bytes are hashed again: an object someone made
//! writable and changed is replaced, never linked into a new tree, and one that belongs to
//! another user is never reused (they could change it after it was checked). Sharing is an
//! optimisation: a file that cannot be shared (another filesystem, too many links) stays as
//! it was unpacked.

use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::Digest;

use super::dir::{self, Dir};
use super::pathpart::{hex, is_digits, is_sha256, Sha256};

/// The store's own temp dir (`objects/.tmp`).
pub const TEMP: &str = ".tmp";

/// `<xx>`: the first two hex digits of the objects in it.
pub fn is_shard(name: &str) -> bool {
    name.len() == 2 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `<sha256>-<mode>` in the shard of its first two digits, or `<pid>-<n>` in the temp dir.
fn is_entry(shard: &str, name: &str) -> bool {
    let Some((head, tail)) = name.split_once('-') else {
        return false;
    };
    if shard == TEMP {
        return is_digits(head) && is_digits(tail);
    }
    is_sha256(head)
        && head.starts_with(shard)
        && !tail.is_empty()
        && tail.bytes().all(|b| matches!(b, b'0'..=b'7'))
}

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
    /// The file stays as it was: the store could not take it, or holds another user's copy.
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
        self.root.join(&hex[..2]).join(name(sha256, mode))
    }

    /// The store's directory, or one in it: made when missing, never through a link, and
    /// only when it is the user's or root's and nobody else can rename what is in it.
    fn open(&self, sub: Option<&str>) -> Option<Dir> {
        let parent = Dir::open_path(self.root.parent()?).ok()?;
        let store = parent.create(self.root.file_name()?).ok()?;
        store.check().ok()?;
        let Some(sub) = sub else {
            return Some(store);
        };
        let dir = store.create(sub).ok()?;
        dir.check().ok()?;
        Some(dir)
    }

    /// Makes `file` (a read-only regular file whose bytes hash to `sha256`) the same inode as
    /// the stored object for its bytes and mode, storing it first when there is none. An
    /// object of another user is never reused: the file is kept as it is.
    pub fn share(&self, file: &Path, sha256: &Sha256) -> io::Result<Shared> {
        let meta = fs_err::symlink_metadata(file)?;
        let mode = meta.mode() & 0o7777;
        let Some(shard) = self.open(Some(&sha256.as_str()[..2])) else {
            return Ok(Shared::Kept);
        };
        let object = name(sha256, mode);
        // A second try after removing a damaged object or losing a race with another process.
        for _ in 0..3 {
            match shard.stat(&object)? {
                Some(o) if o.st_dev == meta.dev() && o.st_ino == meta.ino() => {
                    return Ok(Shared::Reused)
                }
                Some(o) if !dir::trusted_owner(o.st_uid) => return Ok(Shared::Kept),
                Some(_) => match intact(&shard, &object, mode, meta.len(), sha256)? {
                    Some(inode) => {
                        let Some(temp) = self.open(Some(TEMP)) else {
                            return Ok(Shared::Kept);
                        };
                        let tmp = temp_name();
                        match shard.hard_link(&object, &temp, &tmp) {
                            Ok(()) => {}
                            // Removed meanwhile (a prune): stored anew on the next turn.
                            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                            Err(_) => return Ok(Shared::Kept),
                        }
                        // The name now links the inode that was checked, not one swapped in.
                        let linked = temp.stat(&tmp)?.map(|t| (t.st_dev, t.st_ino));
                        if linked != Some(inode) {
                            let _ = temp.remove_file(&tmp);
                            continue;
                        }
                        if let Err(e) = temp.rename_out(&tmp, file) {
                            let _ = temp.remove_file(&tmp);
                            return Err(e);
                        }
                        return Ok(Shared::Reused);
                    }
                    // Changed since it was stored (its mode, size or bytes), or a link or
                    // something else planted at its name: replaced.
                    None => {
                        let _ = shard.remove_file(&object);
                    }
                },
                None => match shard.link_in(file, &object) {
                    Ok(()) => return Ok(Shared::Stored),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    // Another filesystem, too many links: the file stays unshared.
                    Err(_) => return Ok(Shared::Kept),
                },
            }
        }
        Ok(Shared::Kept)
    }

    /// Removes the objects no tree links to any more (a link count of one: the store's own),
    /// and leftovers of interrupted runs. Returns the bytes and files freed.
    pub fn remove_unused(&self) -> io::Result<(u64, u64)> {
        self.remove(false, &mut Vec::new())
    }

    /// Removes every object (each file's bytes stay with the trees that still link it), and
    /// the shards left empty; what the store did not make is listed in `left`.
    pub fn remove_all(&self, left: &mut Vec<PathBuf>) -> io::Result<(u64, u64)> {
        self.remove(true, left)
    }

    /// Only names the store gives are removed, and no link is followed.
    fn remove(&self, all: bool, left: &mut Vec<PathBuf>) -> io::Result<(u64, u64)> {
        let (mut bytes, mut files) = (0, 0);
        // Never through a link at the store's own name.
        let store = (self.root.parent())
            .zip(self.root.file_name())
            .and_then(|(parent, name)| Dir::open_path(parent).ok()?.open(name).ok()?);
        let Some(store) = store.filter(|s| s.check().is_ok()) else {
            return Ok((0, 0));
        };
        for shard_name in store.names()? {
            let shard_name = shard_name.to_string_lossy().into_owned();
            if !(is_shard(&shard_name) || shard_name == TEMP) {
                left.push(store.join(&shard_name));
                continue;
            }
            let shard = match store.open(&shard_name) {
                // Another user's shard (root's too), in a shared cache: theirs to prune.
                Ok(Some(shard)) if !shard.owner().is_ok_and(dir::mine) => continue,
                Ok(Some(shard)) => shard,
                // A link planted at a shard's name goes itself.
                Err(_) if all => {
                    store.remove_file(&shard_name)?;
                    continue;
                }
                _ => continue,
            };
            for entry in shard.names()? {
                if !entry.to_str().is_some_and(|e| is_entry(&shard_name, e)) {
                    left.push(shard.join(&entry));
                    continue;
                }
                let Some(st) = shard.stat(&entry)? else {
                    continue;
                };
                // A temp link of a running install is younger than a minute.
                let age = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |now| now.as_secs() as i64 - st.st_mtime);
                let stale = shard_name != TEMP || age > 60;
                let unused =
                    dir::kind(&st) == rustix::fs::FileType::RegularFile && st.st_nlink == 1;
                if all || (unused && stale) {
                    shard.remove_file(&entry)?;
                    if unused {
                        bytes += st.st_size as u64;
                        files += 1;
                    }
                }
            }
            if all {
                // Only when empty: what the store did not make stays.
                let _ = store.remove_empty(&shard_name);
            }
        }
        Ok((bytes, files))
    }
}

fn name(sha256: &Sha256, mode: u32) -> String {
    format!("{}-{:o}", sha256.as_str(), mode & 0o7777)
}

/// A fresh name in the store's own temp dir, on the same filesystem as the objects, so a
/// link made there can be renamed over a tree's file (a name inside the tree could be one
/// the archive ships).
fn temp_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// The object is still what it was stored as (a regular file with its mode, size and
/// bytes, read through one handle opened without following a link): its device and inode.
fn intact(
    shard: &Dir,
    object: &str,
    mode: u32,
    len: u64,
    sha256: &Sha256,
) -> io::Result<Option<(u64, u64)>> {
    let Some(mut file) = shard.open_file(object).ok().flatten() else {
        return Ok(None);
    };
    let meta = file.metadata()?;
    if !meta.is_file() || meta.mode() & 0o7777 != mode || meta.len() != len {
        return Ok(None);
    }
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok((hex(&hasher.finalize()) == sha256.as_str()).then_some((meta.dev(), meta.ino())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn file(dir: &Path, name: &str, bytes: &str, mode: u32) -> (PathBuf, Sha256) {
        let path = dir.join(name);
        fs_err::write(&path, bytes).unwrap();
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let sha = Sha256::parse(&hex(&sha2::Sha256::digest(bytes))).unwrap();
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
