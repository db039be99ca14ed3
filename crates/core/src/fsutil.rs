//! Small file helpers shared by every module that writes state. gpuenv writes files and
//! links only through these: a new entry is made under a temp name in the target's own
//! directory and renamed over the target, so a link planted at the target is replaced,
//! never followed, and a reader sees the old entry or the new one, never half of one.

use std::fs::Metadata;
use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

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

/// The SHA-256 of `bytes` in hex: what identifies a file's content (a trusted toolchain
/// file, a cached compiler's answer).
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
}

/// The file name stem of a cache entry for `key` (a path): 16 hex digits of its 64-bit
/// FNV-1a hash. Stable across builds and Rust releases, and computed without sha2, whose
/// CPU-feature probe (two `cpuid`s, which trap to the hypervisor in a VM: about 25 µs each
/// there) would cost every proxy call. It identifies no content: an entry names its key,
/// and one that names another is not used.
pub fn cache_name(key: &str) -> String {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// Empties `dir`, one of gpuenv's own cache directories of small files, once it holds `max`
/// or more: whoever needs a removed file makes it again. Best effort: what cannot be read
/// or removed is left.
pub fn clear_when_full(dir: &Path, max: usize) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    let entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    if entries.len() >= max {
        for e in entries {
            let _ = fs_err::remove_file(e);
        }
    }
}

/// A 64-bit check of `bytes`, eight at a time (a 37 KB file in about 25,000 instructions;
/// FNV-1a would take six times that): a file gpuenv wrote and reads back on every call
/// carries it, so a damaged or cut one is seen. Each step is a bijection of the state, so
/// any one changed word always changes it, and the length is mixed in first. Not a defence
/// against someone who writes the file on purpose (that file's owner), only against damage.
pub fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let word = u64::from_le_bytes(<[u8; 8]>::try_from(c).unwrap_or_default());
        h = (h.rotate_left(5) ^ word).wrapping_mul(K);
    }
    let mut last = [0u8; 8];
    let rest = chunks.remainder();
    last[..rest.len()].copy_from_slice(rest);
    (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(K)
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
    fn cache_names_are_fnv_1a_and_the_same_in_every_build() {
        // The published FNV-1a 64 test vectors: a name never changes with the toolchain
        // that built gpuenv, so one built by another release finds the same entry.
        assert_eq!(cache_name(""), "cbf29ce484222325");
        assert_eq!(cache_name("a"), "af63dc4c8601ec8c");
        assert_eq!(cache_name("foobar"), "85944171f73967e8");
        assert_ne!(
            cache_name("/home/a/.local/share/gpuenv/settings.toml"),
            cache_name("/home/b/.local/share/gpuenv/settings.toml")
        );
    }

    #[test]
    fn line_col_counts_from_one() {
        let text = "a\nbc\nd";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 2));
        assert_eq!(line_col(text, 5), (3, 1));
    }
}
