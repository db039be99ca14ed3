//! Trees on their way in or out, beside where they belong: `.tmp-<key>@<random>` while one
//! is built, `.old-<key>@<random>` while one is deleted. `@` appears in no toolchain name
//! and no digest, so the leftovers of one key never match another's (`cuda-12.4.1` and
//! `cuda-12.4.1-foo`). They are made and cleaned only under the key's lock: whatever its
//! holder finds was left by a process that died.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn prefix(state: &str, key: &str) -> String {
    format!(".{state}-{key}@")
}

/// A new, empty temp dir in `dir` for `key`; removed when dropped unless kept.
pub fn tempdir(dir: &Path, key: &str) -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&prefix("tmp", key))
        .tempdir_in(dir)
}

/// Removes what killed processes left in `dir` for `key`. Call it holding `key`'s lock.
pub fn remove_leftovers(dir: &Path, key: &str) {
    let Ok(rd) = fs_err::read_dir(dir) else {
        return;
    };
    let mine = [prefix("tmp", key), prefix("old", key)];
    for e in rd.flatten() {
        let name = e.file_name();
        if mine.iter().any(|p| name.to_string_lossy().starts_with(p)) {
            let _ = remove_all(&e.path());
        }
    }
}

/// Moves `path` (in `dir`, for `key`) out of the way at once, then deletes it.
pub fn remove_tree(dir: &Path, key: &str, path: &Path) -> io::Result<()> {
    if fs_err::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let doomed: PathBuf = dir.join(format!("{}{}", prefix("old", key), std::process::id()));
    // One of a dead process that had our pid; we hold the lock.
    let _ = remove_all(&doomed);
    fs_err::rename(path, &doomed)?;
    remove_all(&doomed)
}

/// Deletes a file or a tree, also one whose directories were made read-only.
pub fn remove_all(path: &Path) -> io::Result<()> {
    let meta = fs_err::symlink_metadata(path)?;
    if !meta.is_dir() {
        return fs_err::remove_file(path);
    }
    match fs_err::remove_dir_all(path) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            writable_dirs(path)?;
            fs_err::remove_dir_all(path)
        }
        other => other,
    }
}

fn writable_dirs(dir: &Path) -> io::Result<()> {
    let mode = fs_err::metadata(dir)?.permissions().mode();
    fs_err::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700))?;
    for e in fs_err::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            writable_dirs(&e.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_of_one_name_never_match_a_longer_one() {
        let dir = tempfile::tempdir().unwrap();
        let mine = tempdir(dir.path(), "cuda-12.4.1").unwrap().keep();
        let theirs = tempdir(dir.path(), "cuda-12.4.1-foo").unwrap().keep();
        remove_leftovers(dir.path(), "cuda-12.4.1");
        assert!(!mine.exists());
        assert!(theirs.exists(), "another toolchain's temp dir was removed");
    }

    #[test]
    fn a_read_only_tree_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("t");
        fs_err::create_dir_all(tree.join("a/b")).unwrap();
        fs_err::write(tree.join("a/b/f"), "x").unwrap();
        for d in ["a/b", "a", ""] {
            let p = tree.join(d);
            fs_err::set_permissions(&p, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        remove_tree(dir.path(), "t", &tree).unwrap();
        assert!(!tree.exists());
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 0);
    }
}
