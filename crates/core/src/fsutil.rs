//! Small file helpers shared by every module that writes state. gpuenv writes files and
//! links only through these: a new entry is made under a temp name in the target's own
//! directory and renamed over the target, so a link planted at the target is replaced,
//! never followed, and a reader sees the old entry or the new one, never half of one.

use std::fs::Metadata;
use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use fs_err::os::unix::fs::OpenOptionsExt;

/// Who may read what gpuenv writes: every file it keeps (in a home another user may use
/// as an upstream, in a store, a view, a module dir) is readable by all and writable by
/// its owner alone, whatever the umask or the temp file's own mode.
pub const SHARED_FILE_MODE: u32 = 0o644;

/// Writes `bytes` to `path` through a temp file in the same directory and a rename; the
/// result is `rw-r--r--` ([`SHARED_FILE_MODE`]), set on the open file before the rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, bytes, |_| Some(SHARED_FILE_MODE))
}

/// Writes a file of the user's (a project's `gpuenv.toml` or `gpuenv.lock`) as an editor
/// does: an existing file keeps its mode, a new one gets what the umask leaves of `rw-rw-rw-`.
pub fn write_user_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, bytes, |existing| existing.map(|m| m & 0o777))
}

/// The temp file is made `rw-rw-rw-` less the umask; `mode` (given the mode of the file
/// being replaced, if any) says what it becomes instead, set on the descriptor.
fn write_with_mode(
    path: &Path,
    bytes: &[u8],
    mode: impl FnOnce(Option<u32>) -> Option<u32>,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir)?;
    let existing = fs_err::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions().mode());
    let mut tmp = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if let Some(mode) = mode(existing) {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.as_file().sync_all()?;
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
    // Sized from the handle: one read for the file and one for its end.
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize + 1);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(bytes)
}

/// At most `limit` bytes from the start of a regular file, as text (bytes that are not
/// UTF-8 replaced; a cut last line dropped): for files anyone may have written, such as a
/// build directory's. Opened without blocking, so a FIFO in its place does not hang the
/// reader; `None` when it cannot be read or is not a regular file.
pub fn read_prefix(path: &Path, limit: u64) -> Option<String> {
    let file = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if not_regular(&meta).is_some() {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize);
    file.take(limit).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 == limit {
        let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(end);
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
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

/// Makes `link` a symlink to `target`, replacing whatever entry is at `link` (a temp link
/// renamed over it).
pub fn replace_with_link(target: &Path, link: &Path) -> std::io::Result<()> {
    let tmp = link.with_file_name(format!(
        ".{}.tmp-{}",
        link.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let _ = fs_err::remove_file(&tmp);
    symlink(target, &tmp)?;
    fs_err::rename(&tmp, link).inspect_err(|_| {
        let _ = fs_err::remove_file(&tmp);
    })
}

/// The file a chain of symlinks at `path` ends at (which may not exist yet); `path` itself
/// when it is not a link. For editing a file the user linked on purpose, in its own place.
pub fn final_target(path: &Path) -> std::io::Result<PathBuf> {
    let mut at = path.to_path_buf();
    // The kernel's own limit on links followed in one lookup.
    for _ in 0..40 {
        match fs_err::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = fs_err::read_link(&at)?;
                at = at.parent().unwrap_or(Path::new("/")).join(target);
            }
            _ => return Ok(at),
        }
    }
    Err(std::io::Error::other(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

/// `std::os::unix::fs::symlink`, with an error that names both ends.
pub fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "cannot link {} -> {}: {e}",
                link.display(),
                target.display()
            ),
        )
    })
}

/// True if the two files hold the same bytes.
pub fn same_bytes(a: &Path, b: &Path) -> std::io::Result<bool> {
    if fs_err::metadata(a)?.len() != fs_err::metadata(b)?.len() {
        return Ok(false);
    }
    let (mut fa, mut fb) = (fs_err::File::open(a)?, fs_err::File::open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = fa.read(&mut ba)?;
        if n == 0 {
            return Ok(true);
        }
        fb.read_exact(&mut bb[..n])?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
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

/// The SHA-256 of `bytes` in hex: what identifies a file's content (a trusted toolchain
/// file, a cached compiler's answer).
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
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
    fn writes_replace_a_planted_link_instead_of_following_it() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("important.txt");
        fs_err::write(&victim, "mine").unwrap();
        let state = dir.path().join("state.toml");
        std::os::unix::fs::symlink(&victim, &state).unwrap();
        write_atomic(&state, b"gpuenv's").unwrap();
        assert_eq!(fs_err::read_to_string(&victim).unwrap(), "mine");
        assert!(!state.is_symlink());
        assert_eq!(fs_err::read_to_string(&state).unwrap(), "gpuenv's");

        let link = dir.path().join("tool");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        replace_with_link(&state, &link).unwrap();
        assert_eq!(fs_err::read_link(&link).unwrap(), state);
        assert_eq!(fs_err::read_to_string(&victim).unwrap(), "mine");
    }

    fn mode_of(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs_err::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn state_files_are_readable_by_all_whatever_they_were() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("settings.toml");
        write_atomic(&state, b"a").unwrap();
        assert_eq!(mode_of(&state), 0o644);
        // One an older gpuenv wrote private is made readable again.
        fs_err::set_permissions(&state, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&state, b"b").unwrap();
        assert_eq!(mode_of(&state), 0o644);
    }

    #[test]
    fn user_files_keep_their_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gpuenv.toml");
        fs_err::write(&file, "").unwrap();
        for mode in [0o600, 0o664, 0o640] {
            fs_err::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            write_user_file(&file, b"[toolchain]").unwrap();
            assert_eq!(mode_of(&file), mode);
        }
    }

    #[test]
    fn final_target_follows_relative_and_absolute_links() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        fs_err::create_dir_all(p("common")).unwrap();
        fs_err::create_dir_all(p("proj")).unwrap();
        std::os::unix::fs::symlink("../common/gpuenv.toml", p("proj/gpuenv.toml")).unwrap();
        std::os::unix::fs::symlink(p("proj/gpuenv.toml"), p("top.toml")).unwrap();
        let end = final_target(&p("top.toml")).unwrap();
        assert_eq!(end, p("proj/../common/gpuenv.toml"));
        assert_eq!(final_target(&p("common")).unwrap(), p("common"));
        std::os::unix::fs::symlink("loop", p("loop")).unwrap();
        assert!(final_target(&p("loop")).is_err());
    }

    #[test]
    fn same_bytes_compares_contents() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        fs_err::write(p("a"), "abc").unwrap();
        fs_err::write(p("b"), "abc").unwrap();
        fs_err::write(p("c"), "abd").unwrap();
        fs_err::write(p("d"), "abcd").unwrap();
        assert!(same_bytes(&p("a"), &p("b")).unwrap());
        assert!(!same_bytes(&p("a"), &p("c")).unwrap());
        assert!(!same_bytes(&p("a"), &p("d")).unwrap());
        assert!(!same_bytes(&p("d"), &p("a")).unwrap());
    }

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
