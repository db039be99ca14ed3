//! Whose a toolchain file is: one that someone else wrote, or could have swapped in, is not
//! this user's to apply (as git's `safe.directory`). A file is this user's when the file,
//! and the link naming it if it is one, belong to this user or to root, and its directory
//! is not writable by every user unless the sticky bit protects it there (the directory
//! then belongs to this user or root, as `/tmp` does). A group-writable directory is not
//! passed over: with per-user groups (Debian's and Red Hat's default) every home has them.

use std::fmt;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A toolchain file passed over because it may not be this user's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    pub path: PathBuf,
    /// The directory it was found in: what `gpuenv trust --safe-directory` accepts.
    pub dir: PathBuf,
    pub why: Why,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The file (or the link naming it) belongs to this user id.
    Owner(u32),
    /// Its directory is writable by every user and not protected by a sticky bit of its own
    /// owner's or root's.
    OpenDirectory,
}

impl fmt::Display for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = crate::ui::printable(&self.path.to_string_lossy()).into_owned();
        let dir = crate::ui::printable(&self.dir.to_string_lossy()).into_owned();
        let word = crate::ui::shell_word(&self.dir);
        match &self.why {
            Why::Owner(uid) => write!(
                f,
                "ignoring {path}: it belongs to {}, not to you",
                crate::passwd::describe_uid(*uid)
            )?,
            Why::OpenDirectory => write!(
                f,
                "ignoring {path}: {dir} is writable by every user, so anyone could have put it there"
            )?,
        }
        write!(
            f,
            "; to use it anyway: gpuenv trust --safe-directory {word}"
        )
    }
}

/// The facts about one toolchain file the decision needs: its owner, the owner of the link
/// naming it (when it is one), and its directory's owner and mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    pub file_uid: u32,
    pub link_uid: u32,
    pub dir_uid: u32,
    pub dir_mode: u32,
}

impl Facts {
    pub fn of(file: &Metadata, link: &Metadata, dir: &Metadata) -> Facts {
        Facts {
            file_uid: file.uid(),
            link_uid: link.uid(),
            dir_uid: dir.uid(),
            dir_mode: dir.mode(),
        }
    }
}

const ROOT: u32 = 0;
const WRITABLE_BY_OTHERS: u32 = 0o002;
const STICKY: u32 = 0o1000;

/// Why a file with these facts is not this user's (`me`), or `None` when it is.
pub fn why_foreign(facts: Facts, me: u32) -> Option<Why> {
    let ours = |uid: u32| uid == me || uid == ROOT;
    if !ours(facts.file_uid) {
        return Some(Why::Owner(facts.file_uid));
    }
    if !ours(facts.link_uid) {
        return Some(Why::Owner(facts.link_uid));
    }
    let open = facts.dir_mode & WRITABLE_BY_OTHERS != 0;
    let protected = facts.dir_mode & STICKY != 0 && ours(facts.dir_uid);
    (open && !protected).then_some(Why::OpenDirectory)
}

/// The user whose files are "ours": the effective user.
pub fn me() -> u32 {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// Whether `dir` is one of the accepted directories: compared as given, then canonical
/// (both sides), so `/scratch/./p` and a link to it match what was accepted.
pub fn accepted(dir: &Path, safe: &[PathBuf]) -> bool {
    if safe.iter().any(|s| s == dir) {
        return true;
    }
    let Ok(real) = dir.canonicalize() else {
        return false;
    };
    safe.iter()
        .any(|s| *s == real || s.canonicalize().is_ok_and(|s| s == real))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: u32 = 1000;

    fn facts(file_uid: u32, dir_uid: u32, dir_mode: u32) -> Facts {
        Facts {
            file_uid,
            link_uid: file_uid,
            dir_uid,
            dir_mode,
        }
    }

    #[test]
    fn own_and_root_files_in_closed_directories_are_ours() {
        assert_eq!(why_foreign(facts(ME, ME, 0o755), ME), None);
        assert_eq!(why_foreign(facts(ROOT, ROOT, 0o755), ME), None);
        // A group-writable directory is every home's with per-user groups.
        assert_eq!(why_foreign(facts(ME, ME, 0o2775), ME), None);
    }

    #[test]
    fn another_users_file_or_link_is_not() {
        assert_eq!(
            why_foreign(facts(1001, ME, 0o755), ME),
            Some(Why::Owner(1001))
        );
        let link = Facts {
            link_uid: 65534,
            ..facts(ME, ME, 0o755)
        };
        assert_eq!(why_foreign(link, ME), Some(Why::Owner(65534)));
        // Root is not exempt from its users' files.
        assert_eq!(
            why_foreign(facts(ME, ME, 0o755), ROOT),
            Some(Why::Owner(ME))
        );
    }

    #[test]
    fn an_open_directory_is_safe_only_with_the_sticky_bit_of_an_owner_we_trust() {
        assert_eq!(
            why_foreign(facts(ME, ME, 0o777), ME),
            Some(Why::OpenDirectory)
        );
        // /tmp: root's, sticky.
        assert_eq!(why_foreign(facts(ME, ROOT, 0o1777), ME), None);
        // Sticky, but its owner may still remove and replace our file.
        assert_eq!(
            why_foreign(facts(ME, 1001, 0o1777), ME),
            Some(Why::OpenDirectory)
        );
    }

    #[test]
    fn the_notice_says_how_to_accept_the_directory() {
        let f = Foreign {
            path: "/tmp/.gpuenv.toml".into(),
            dir: "/tmp".into(),
            why: Why::Owner(65534),
        };
        let text = f.to_string();
        assert!(
            text.starts_with("ignoring /tmp/.gpuenv.toml: it belongs to "),
            "{text}"
        );
        assert!(text.contains("uid 65534"), "{text}");
        assert!(
            text.ends_with("; to use it anyway: gpuenv trust --safe-directory /tmp"),
            "{text}"
        );
    }
}
