//! Small file helpers shared by every module that writes state.

use std::fs::Metadata;
use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use fs_err::os::unix::fs::OpenOptionsExt;

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

/// Why reading a file that must be a small regular file failed.
#[derive(Debug)]
pub enum ReadError {
    /// It is a directory, FIFO, device or socket (what it is, for messages).
    NotRegular(&'static str),
    /// Larger than the limit given.
    TooLarge(u64),
    Io(std::io::Error),
}

/// Reads a regular file of at most `limit` bytes. Opened without blocking (a FIFO named
/// like the file does not hang) and checked on the opened handle, so the bytes returned
/// are the bytes of that one file, read once.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if let Some(what) = not_regular(&meta) {
        return Err(ReadError::NotRegular(what));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(bytes)
}

/// What a non-regular file is, in words; `None` for a regular file.
pub fn not_regular(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

/// The reason of an I/O error without the path fs-err puts in front of it ("failed to open
/// file `P`: reason"), for messages that already name the file.
pub fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    match split_fs_err(&text) {
        Some((_, reason)) => reason.to_string(),
        None => text,
    }
}

/// fs-err's `failed to <verb> `P`: reason` as `(P, reason)`.
pub fn split_fs_err(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("failed to ")?;
    let (head, reason) = rest.split_once("`: ")?;
    let (_, path) = head.split_once(" `")?;
    Some((path, reason))
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
    fn fs_err_paths_are_stripped_once() {
        assert_eq!(
            split_fs_err("failed to open file `/p/a b`: Permission denied (os error 13)"),
            Some(("/p/a b", "Permission denied (os error 13)"))
        );
        assert_eq!(split_fs_err("no such toolchain"), None);
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_regular(&fifo, 10),
            Err(ReadError::NotRegular("a FIFO"))
        ));
        assert!(matches!(
            read_regular(Path::new("/dev/zero"), 10),
            Err(ReadError::NotRegular("a character device"))
        ));
    }

    #[test]
    fn line_col_counts_from_one() {
        let text = "a\nbc\nd";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 2));
        assert_eq!(line_col(text, 5), (3, 1));
    }
}
