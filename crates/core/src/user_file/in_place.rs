//! Writing new bytes into the same inode (so its mode, owner, ACLs and hard links stay), with
//! a journal beside it that makes a kill mid-write recoverable: the new bytes and the old go
//! to `.NAME.gpuenv-edit` (complete, synced, renamed into place) before the file is touched,
//! and the next edit of the file finds it. A file caught half-written (a prefix of the new
//! bytes over the rest of the old, the only state a write then a truncate can leave) is
//! finished; a file that holds the old bytes, the new ones or anything else (the user's
//! own edit since) is left alone and the journal dropped.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

const MAGIC: &str = "gpuenv-edit 1";

/// The journal of the file at `target`.
pub fn journal_of(target: &Path) -> PathBuf {
    target.with_file_name(format!("{}edit", temp_prefix(target)))
}

/// The start of the name of every temp file an edit of `target` makes beside it.
pub fn temp_prefix(target: &Path) -> String {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    format!(".{name}.gpuenv-")
}

/// Removes the temp files a killed edit of `target` left (never the journal): called with
/// the lock that every edit of `target` holds while its temp files exist.
pub fn clean_stale(target: &Path) {
    let (prefix, journal) = (temp_prefix(target), journal_of(target));
    let Ok(entries) = fs_err::read_dir(target.parent().unwrap_or(Path::new("."))) else {
        return;
    };
    for e in entries.flatten() {
        let (path, name) = (e.path(), e.file_name());
        let ours = name.to_str().is_some_and(|n| n.starts_with(&prefix)) && path != journal;
        if ours && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs_err::remove_file(&path);
        }
    }
}

/// Replaces the contents of `file` (open for writing, locked, at `target`) with `new`.
pub fn write(file: &File, target: &Path, old: &[u8], new: &[u8]) -> std::io::Result<()> {
    let journal = journal_of(target);
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!("{}edit", temp_prefix(target)))
        .tempfile_in(dir)?;
    writeln!(tmp, "{MAGIC} {} {}", old.len(), new.len())?;
    tmp.write_all(old)?;
    tmp.write_all(new)?;
    tmp.as_file().sync_all()?;
    tmp.persist(&journal).map_err(|e| e.error)?;
    sync_dir(dir);
    copy_into(file, new)?;
    fs_err::remove_file(&journal)?;
    sync_dir(dir);
    Ok(())
}

/// One write of the whole contents, then the length: a file up to a page long is never
/// seen half-copied, and the journal covers the rest.
fn copy_into(file: &File, new: &[u8]) -> std::io::Result<()> {
    file.write_all_at(new, 0)?;
    file.set_len(new.len() as u64)?;
    file.sync_all()
}

fn sync_dir(dir: &Path) {
    // Best effort: the rename is durable once the directory is; nothing is lost without it.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// What a journal left by a killed edit did: `Some(bytes)` when the file was finished
/// (its contents now), `None` when there was no journal or it did not apply.
pub fn recover(file: &File, target: &Path, current: &[u8]) -> std::io::Result<Option<Vec<u8>>> {
    let journal = journal_of(target);
    let bytes = match fs_err::symlink_metadata(&journal) {
        // Ours only: a regular file (never through a link), of a sensible size.
        Ok(m) if m.is_file() && m.len() <= 2 * (current.len() as u64 + (64 << 20)) => {
            fs_err::read(&journal)?
        }
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let finished = parse(&bytes).and_then(|(old, new)| {
        (current != old && current != new && torn(current, old, new)).then(|| new.to_vec())
    });
    if let Some(new) = &finished {
        copy_into(file, new)?;
    }
    fs_err::remove_file(&journal)?;
    Ok(finished)
}

fn parse(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = bytes.iter().position(|b| *b == b'\n')?;
    let head = std::str::from_utf8(&bytes[..end]).ok()?;
    let rest = head.strip_prefix(MAGIC)?.trim();
    let (a, b) = rest.split_once(' ')?;
    let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
    let body = &bytes[end + 1..];
    (body.len() == a.checked_add(b)?).then(|| body.split_at(a))
}

/// Whether `current` is `new[..k]` followed by `old[k..]` for some `k`: what writing `new`
/// over `old` and then truncating can leave when stopped at any point.
pub fn torn(current: &[u8], old: &[u8], new: &[u8]) -> bool {
    let prefix = current.iter().zip(new).take_while(|(a, b)| a == b).count();
    // Stopped before the truncate, or with the old tail still there.
    if current.len() == old.len() {
        let suffix = current
            .iter()
            .rev()
            .zip(old.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        if prefix + suffix >= current.len() {
            return true;
        }
    }
    // Longer than the old file: a prefix of the new bytes.
    current.len() >= old.len() && prefix == current.len() && current.len() <= new.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_a_write_can_stop_in_is_recognised_and_nothing_else() {
        let old = b"[toolchain]\ncuda = \"12.4\"\n# a long comment the new text lacks\n";
        let new = b"[toolchain]\ncuda = \"13.0\"\n";
        for k in 0..=new.len() {
            let mut state = new[..k].to_vec();
            state.extend_from_slice(old.get(k..).unwrap_or_default());
            assert!(torn(&state, old, new), "{k}");
        }
        assert!(!torn(b"[toolchain]\ncuda = \"11.8\"\n", old, new));
        // Growing files: every prefix of the new bytes past the old length.
        let (old, new) = (&b"a = 1\n"[..], &b"a = 2\nb = 3\n"[..]);
        for k in 0..=new.len() {
            let mut state = new[..k].to_vec();
            state.extend_from_slice(old.get(k..).unwrap_or_default());
            assert!(torn(&state, old, new), "{k}");
        }
        assert!(!torn(b"a = 1\nc = 4\n", old, new));
    }

    #[test]
    fn a_journal_finishes_a_torn_file_and_leaves_any_other() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("gpuenv.toml");
        let (old, new) = (&b"a = 1\n# note\n"[..], &b"a = 2\n"[..]);
        let journal = |file: &File, current: &[u8]| {
            let mut j = format!("{MAGIC} {} {}\n", old.len(), new.len()).into_bytes();
            j.extend_from_slice(old);
            j.extend_from_slice(new);
            fs_err::write(journal_of(&target), j).unwrap();
            fs_err::write(&target, current).unwrap();
            recover(file, &target, current).unwrap()
        };
        fs_err::write(&target, old).unwrap();
        let file = fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&target)
            .unwrap()
            .into_parts()
            .0;
        assert_eq!(journal(&file, b"a = 2\n# note\n"), Some(new.to_vec()));
        assert_eq!(fs_err::read(&target).unwrap(), new);
        assert!(!journal_of(&target).exists());
        assert_eq!(journal(&file, old), None);
        assert_eq!(fs_err::read(&target).unwrap(), old);
        assert_eq!(journal(&file, b"mine = 3\n"), None);
        assert_eq!(fs_err::read(&target).unwrap(), b"mine = 3\n");
        assert!(!journal_of(&target).exists());
    }
}
