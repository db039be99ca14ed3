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

/// Removes the tree at `path` (if any) so that no reader sees it half-removed: it is first
/// renamed to `.old-<name>.<pid>` beside itself, then deleted. A crash between the two leaves
/// only a dot-named leftover, which `is_leftover` recognises.
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    if fs_err::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let doomed = path.with_file_name(format!(".old-{name}.{}", std::process::id()));
    fs_err::rename(path, &doomed)?;
    fs_err::remove_dir_all(&doomed)
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
}
