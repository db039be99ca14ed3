//! Small file helpers shared by every module that writes state.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` through a temp file in the same directory and a rename, so a
/// reader sees the old file or the new one, never half of one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    // Keep an existing file's permissions (a user may have made it private).
    if let Ok(meta) = fs_err::metadata(path) {
        fs_err::set_permissions(tmp.path(), meta.permissions())?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

// Trees on their way in or out sit beside where they belong: `.tmp-<key>@<random>` while
// one is built, `.old-<key>@<pid>` while one is deleted. `@` appears in no toolchain name
// and no digest, so the leftovers of one key never match another's (`cuda-12.4` and
// `cuda-12.4.1`, `cuda-12.4.1` and `cuda-12.4.1-foo`). Callers make and clean them only
// under the key's lock: whatever its holder finds was left by a process that died.

fn scratch_prefix(state: &str, key: &str) -> String {
    format!(".{state}-{key}@")
}

/// A new, empty temp dir in `dir` to build the tree `key`; removed when dropped unless kept.
pub fn temp_dir(dir: &Path, key: &str) -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&scratch_prefix("tmp", key))
        .tempdir_in(dir)
}

/// Removes what killed processes left in `dir` for `key`. Call it holding `key`'s lock.
pub fn remove_leftovers(dir: &Path, key: &str) {
    let Ok(rd) = fs_err::read_dir(dir) else {
        return;
    };
    let mine = [scratch_prefix("tmp", key), scratch_prefix("old", key)];
    for e in rd.flatten() {
        let name = e.file_name();
        if mine.iter().any(|p| name.to_string_lossy().starts_with(p)) {
            let _ = remove_all(&e.path());
        }
    }
}

/// Removes the tree at `path` (if any) so that no reader sees it half-removed: it is first
/// renamed to `.old-<name>@<pid>` beside itself, then deleted.
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    if fs_err::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let doomed = path.with_file_name(format!(
        "{}{}",
        scratch_prefix("old", &name),
        std::process::id()
    ));
    // One of a dead process that had our pid.
    let _ = remove_all(&doomed);
    fs_err::rename(path, &doomed)?;
    remove_all(&doomed)
}

/// Deletes a file or a tree, also one whose directories were made read-only.
pub fn remove_all(path: &Path) -> std::io::Result<()> {
    let meta = fs_err::symlink_metadata(path)?;
    if !meta.is_dir() {
        return fs_err::remove_file(path);
    }
    match fs_err::remove_dir_all(path) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            writable_dirs(path)?;
            fs_err::remove_dir_all(path)
        }
        other => other,
    }
}

fn writable_dirs(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
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

/// 1-based line and column of a byte offset, as editors count them.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let text = "a\nbc\nd";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 2));
        assert_eq!(line_col(text, 5), (3, 1));
    }

    #[test]
    fn leftovers_of_one_name_never_match_a_longer_one() {
        let dir = tempfile::tempdir().unwrap();
        let mine = temp_dir(dir.path(), "cuda-12.4").unwrap().keep();
        let longer = temp_dir(dir.path(), "cuda-12.4.1").unwrap().keep();
        let labelled = temp_dir(dir.path(), "cuda-12.4-foo").unwrap().keep();
        remove_leftovers(dir.path(), "cuda-12.4");
        assert!(!mine.exists());
        assert!(
            longer.exists() && labelled.exists(),
            "another toolchain's temp dir was removed"
        );
    }

    #[test]
    fn a_read_only_tree_is_removed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("t");
        fs_err::create_dir_all(tree.join("a/b")).unwrap();
        fs_err::write(tree.join("a/b/f"), "x").unwrap();
        for d in ["a/b", "a", ""] {
            let p = tree.join(d);
            fs_err::set_permissions(&p, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        remove_tree(&tree).unwrap();
        assert!(!tree.exists());
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 0);
    }
}
