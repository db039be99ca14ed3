//! The shared compiler cache (`[build] shared = "file:///dir"`): every user's compiles add
//! to it and reuse from it, so whoever may write it decides what ends up in others' builds.
//! The safe layout (docs/clusters.md): owned by root (or the user), group-writable with the
//! setgid bit for a group of the users who share it, never writable by every user; ccache
//! makes its subdirectories group-writable (`umask=002`, which gpuenv passes).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::facts::build_cache::SharedStore;
use gpuenv_core::toolchain::upstream;

pub const CHECK: Check = Check {
    id: "shared-cache",
    name: "access",
};

/// What the directory is, as the checks need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirFacts {
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
}

/// Who asks: the user, and the groups they are in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Me {
    pub uid: u32,
    pub groups: Vec<u32>,
}

/// The admin's commands that make `dir` a cache a group of users shares safely.
pub fn make_hint(dir: &Path) -> String {
    let d = gpuenv_core::ui::shell_word(dir);
    format!(
        "as root: `groupadd -f gpuenv-cache && mkdir -p {d} && chgrp gpuenv-cache {d} && chmod 2775 {d}`, then `usermod -aG gpuenv-cache <user>` for each user who shares it (docs/clusters.md)"
    )
}

/// The problems of a shared cache directory with these facts, for this user: each with its
/// status and what fixes it.
pub fn judge(dir: &Path, f: DirFacts, me: &Me) -> Vec<(Status, String, String)> {
    let mut out = Vec::new();
    let shown = dir.display();
    if f.uid != 0 && f.uid != me.uid {
        out.push((
            Status::Warn,
            format!("the shared build cache {shown} belongs to user {}, not to root or you: that user decides what your builds reuse", f.uid),
            make_hint(dir),
        ));
    }
    if f.mode & 0o002 != 0 {
        out.push((
            Status::Warn,
            format!("every user may write the shared build cache {shown} (mode {:04o}): anyone can plant objects your builds reuse", f.mode & 0o7777),
            make_hint(dir),
        ));
    } else if f.mode & 0o020 != 0 && f.mode & 0o2000 == 0 {
        out.push((
            Status::Warn,
            format!("the shared build cache {shown} is group-writable without the setgid bit (mode {:04o}): the directories ccache makes there get their maker's group, and the other users cannot add to them", f.mode & 0o7777),
            format!("as root: `chmod g+s {}`", gpuenv_core::ui::shell_word(dir)),
        ));
    }
    let writable = (f.uid == me.uid && f.mode & 0o200 != 0)
        || (me.groups.contains(&f.gid) && f.mode & 0o020 != 0)
        || f.mode & 0o002 != 0
        || me.uid == 0;
    if !writable {
        out.push((
            Status::Warn,
            format!("you cannot write the shared build cache {shown} (owner {}, group {}, mode {:04o}): your compiles reuse it but add nothing", f.uid, f.gid, f.mode & 0o7777),
            "ask the admin to add you to its group (docs/clusters.md)".into(),
        ));
    }
    out
}

pub fn run(inputs: &Inputs) -> Finding {
    let ctx = &inputs.machine.ctx;
    let shared = inputs
        .registry
        .build
        .shared
        .clone()
        .or_else(|| upstream::site_build(ctx).shared);
    let Some(SharedStore::Dir(dir)) = shared else {
        return CHECK
            .skip("no shared build cache directory is set ([build] shared = \"file:///dir\")");
    };
    let mut notes = Notes::default();
    match fs_err::symlink_metadata(&dir) {
        Err(e) => {
            notes.problem(
                Status::Error,
                format!(
                    "the shared build cache {} cannot be reached: {}",
                    dir.display(),
                    gpuenv_core::fsutil::io_reason(&e)
                ),
            );
            notes.hint(make_hint(&dir));
        }
        Ok(m) if !m.is_dir() => {
            let what = if m.file_type().is_symlink() {
                "a link"
            } else {
                "not a directory"
            };
            notes.problem(
                Status::Error,
                format!("the shared build cache {} is {what}", dir.display()),
            );
            notes.hint(make_hint(&dir));
        }
        Ok(m) => {
            let facts = DirFacts {
                uid: m.uid(),
                gid: m.gid(),
                mode: m.mode(),
            };
            notes.seen(format!(
                "{}: owner {}, group {}, mode {:04o}",
                dir.display(),
                facts.uid,
                facts.gid,
                facts.mode & 0o7777
            ));
            for (status, text, hint) in judge(&dir, facts, &me()) {
                notes.problem(status, text);
                notes.hint(hint);
            }
        }
    }
    notes.finish(
        CHECK,
        format!("{} (every user of it can add to it safely)", dir.display()),
    )
}

/// This process's user and groups.
fn me() -> Me {
    // SAFETY: geteuid/getegid cannot fail; getgroups writes at most `n` entries.
    unsafe {
        let mut groups = vec![0 as libc::gid_t; 256];
        let n = libc::getgroups(groups.len() as libc::c_int, groups.as_mut_ptr());
        groups.truncate(n.max(0) as usize);
        groups.push(libc::getegid());
        Me {
            uid: libc::geteuid(),
            groups,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(uid: u32, gid: u32, mode: u32) -> DirFacts {
        DirFacts {
            uid,
            gid,
            mode: 0o040000 | mode,
        }
    }

    #[test]
    fn a_setgid_group_dir_is_fine_for_its_members_and_readable_for_others() {
        let dir = Path::new("/shared/ccache");
        let member = Me {
            uid: 1000,
            groups: vec![100, 500],
        };
        assert!(judge(dir, facts(0, 500, 0o2775), &member).is_empty());
        let other = Me {
            uid: 1001,
            groups: vec![100],
        };
        let found = judge(dir, facts(0, 500, 0o2775), &other);
        assert_eq!(found.len(), 1);
        assert!(found[0].1.contains("cannot write"), "{found:?}");
    }

    #[test]
    fn world_writable_foreign_and_no_setgid_are_named() {
        let dir = Path::new("/shared/ccache");
        let me = Me {
            uid: 1000,
            groups: vec![500],
        };
        let texts = |f| {
            judge(dir, f, &me)
                .into_iter()
                .map(|p| p.1)
                .collect::<Vec<_>>()
        };
        assert!(texts(facts(0, 0, 0o1777))[0].contains("every user may write"));
        assert!(texts(facts(0, 500, 0o775))[0].contains("without the setgid bit"));
        assert!(texts(facts(1002, 500, 0o2775))[0].contains("belongs to user 1002"));
    }
}
