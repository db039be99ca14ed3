//! The prompt's fast path. After each `hook-env` the shell gets a function that tells,
//! with builtins only, whether anything that run depended on has changed: the hook starts
//! gpuenv only when it has, so a prompt where nothing changed costs no process.
//!
//! What it compares is the run's [`Fingerprint`]: `$PWD` and the variables, each watched
//! file's modification time (against a stamp file given exactly that time, since shells can
//! compare two files' times with `-nt`/`-ot` but cannot read one), and the toolchain files
//! that must still be absent between `$PWD` and the nearest one.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::hook_env::{Fingerprint, Stamp};
use super::{quote, Shell};
use crate::project::FILE_NAMES;
use crate::store::home::Home;

/// A file changed more recently than this may change again within the same tick of the
/// coarse clock file times come from, keeping its time: the shell is not told to trust it.
const RACY: Duration = Duration::from_secs(1);

/// Stamps beyond this many are cleared out when a new one is made; a shell whose stamp is
/// gone just runs gpuenv once more.
const MAX_STAMPS: usize = 256;

/// The conditions under which the last run's result still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// `$PWD` as the shell had it.
    pub pwd: String,
    pub vars: Vec<(String, Option<String>)>,
    /// Files that must exist with exactly the modification time of their stamp file.
    pub same_time: Vec<(PathBuf, PathBuf)>,
    pub absent: Vec<PathBuf>,
}

/// The check for the run that produced `fp`, making the stamp files it needs. `None` (the
/// shell then always runs gpuenv) when `$PWD` is unknown or is not the directory `fp` was
/// taken in, when a file changed too recently to trust its time, or when no stamp can be
/// written.
pub fn arm(home: &Home, fp: &Fingerprint, pwd: Option<&str>) -> Option<Check> {
    let pwd = pwd?;
    let recent = SystemTime::now().checked_sub(RACY)?;
    let recent_ns = recent.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    let racy = fp
        .files()
        .any(|(_, s)| s.is_some_and(|s| s.mtime_ns > recent_ns));
    if racy || !same_dir(Path::new(pwd), &fp.cwd) {
        return None;
    }
    let mut same_time = Vec::new();
    let mut absent = missing_toolchain_files(fp);
    for (path, stamp) in fp.files() {
        match stamp {
            Some(s) => same_time.push((path.to_path_buf(), stamp_file(home, s).ok()?)),
            None => absent.push(path.to_path_buf()),
        }
    }
    Some(Check {
        pwd: pwd.to_string(),
        vars: fp.vars.clone(),
        same_time,
        absent,
    })
}

fn same_dir(pwd: &Path, cwd: &Path) -> bool {
    pwd == cwd || pwd.canonicalize().is_ok_and(|p| p == cwd)
}

/// The toolchain files that would be found before the one `fp` found (or at all, when it
/// found none); in the nearest file's own directory, its twin too (both is an error).
fn missing_toolchain_files(fp: &Fingerprint) -> Vec<PathBuf> {
    let found_dir = fp.file.as_ref().and_then(|(p, _)| p.parent());
    let mut absent = Vec::new();
    for dir in fp.cwd.ancestors() {
        for name in FILE_NAMES {
            let p = dir.join(name);
            if fp.file.as_ref().is_none_or(|(f, _)| *f != p) {
                absent.push(p);
            }
        }
        if Some(dir) == found_dir {
            break;
        }
    }
    absent
}

/// `$GPUENV_HOME/stamps/<ns>`: an empty file whose modification time is `<ns>`. Never
/// changed once made, so every shell can compare against it.
fn stamp_file(home: &Home, stamp: Stamp) -> std::io::Result<PathBuf> {
    let dir = home.stamps();
    let path = dir.join(stamp.mtime_ns.to_string());
    let time = UNIX_EPOCH
        + Duration::new(
            (stamp.mtime_ns / 1_000_000_000) as u64,
            (stamp.mtime_ns % 1_000_000_000) as u32,
        );
    if fs_err::metadata(&path).is_ok_and(|m| m.modified().ok() == Some(time)) {
        return Ok(path);
    }
    fs_err::create_dir_all(&dir)?;
    clear_old_stamps(&dir);
    let tmp = tempfile::NamedTempFile::new_in(&dir)?;
    tmp.as_file().set_modified(time)?;
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok(path)
}

fn clear_old_stamps(dir: &Path) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    let entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    if entries.len() >= MAX_STAMPS {
        for e in entries {
            let _ = fs_err::remove_file(e);
        }
    }
}

/// The name of the check function in each shell.
pub fn function_name(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash | Shell::Zsh => "_gpuenv_fresh",
        Shell::Fish => "__gpuenv_fresh",
    }
}

/// Quoted text is text: the values quoted here are strings (a path that is not UTF-8 is
/// shown lossily, so it never matches and the shell runs gpuenv).
fn text(quoted: Vec<u8>) -> String {
    String::from_utf8(quoted).expect("quoting text gives text")
}

/// The definition of the check function: true when nothing changed. Without a check it is
/// always false.
pub fn render(check: Option<&Check>, shell: Shell) -> String {
    let name = function_name(shell);
    let Some(c) = check else {
        return match shell {
            Shell::Bash | Shell::Zsh => format!("{name}() {{ return 1; }}\n"),
            Shell::Fish => format!("function {name}; return 1; end\n"),
        };
    };
    let path = |p: &Path| p.to_string_lossy().into_owned();
    match shell {
        Shell::Bash | Shell::Zsh => {
            let q = |s: &str| text(quote::posix(s.as_bytes()));
            let mut terms = vec![format!("$PWD == {}", q(&c.pwd))];
            for (k, v) in &c.vars {
                terms.push(format!("${{{k}-}} == {}", q(v.as_deref().unwrap_or(""))));
            }
            for (file, stamp) in &c.same_time {
                let (f, s) = (q(&path(file)), q(&path(stamp)));
                terms.push(format!(
                    "-e {f} && -e {s} && ! {f} -nt {s} && ! {f} -ot {s}"
                ));
            }
            for file in &c.absent {
                terms.push(format!("! -e {}", q(&path(file))));
            }
            format!(
                "{name}() {{\n    [[ {} ]]\n}}\n",
                terms.join(" &&\n       ")
            )
        }
        Shell::Fish => {
            let q = |s: &str| text(quote::fish(s.as_bytes()));
            // `x` in front: a value starting with `-` or `!` is never read as an operator.
            let mut terms = vec![format!("test \"x$PWD\" = x{}", q(&c.pwd))];
            for (k, v) in &c.vars {
                terms.push(format!(
                    "test \"x${k}\" = x{}",
                    q(v.as_deref().unwrap_or(""))
                ));
            }
            for (file, stamp) in &c.same_time {
                let (f, s) = (q(&path(file)), q(&path(stamp)));
                terms.push(format!("test -e {f} -a -e {s}"));
                terms.push(format!("not test {f} -nt {s}"));
                terms.push(format!("not test {f} -ot {s}"));
            }
            for file in &c.absent {
                terms.push(format!("not test -e {}", q(&path(file))));
            }
            format!("function {name}\n    {}\nend\n", terms.join("\n    and "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(cwd: &str, file: Option<&str>) -> Fingerprint {
        Fingerprint {
            cwd: cwd.into(),
            vars: vec![("GPUENV_TOOLCHAIN".into(), None)],
            file: file.map(|f| {
                (
                    PathBuf::from(f),
                    Stamp {
                        mtime_ns: 5,
                        size: 1,
                    },
                )
            }),
            settings: ("/h/settings.toml".into(), None),
            ..Default::default()
        }
    }

    #[test]
    fn files_that_would_be_found_first_must_stay_absent() {
        let got = missing_toolchain_files(&fp("/p/a/b", Some("/p/a/gpuenv.toml")));
        let want: Vec<PathBuf> = [
            "/p/a/b/gpuenv.toml",
            "/p/a/b/.gpuenv.toml",
            "/p/a/.gpuenv.toml",
        ]
        .map(PathBuf::from)
        .to_vec();
        assert_eq!(got, want);
        // No file at all: every directory up to `/`.
        assert_eq!(missing_toolchain_files(&fp("/p/a", None)).len(), 6);
    }

    #[test]
    fn a_racy_or_foreign_directory_is_never_armed() {
        let home = Home::new("/nonexistent");
        let mut f = fp("/p", None);
        assert!(arm(&home, &f, None).is_none(), "no $PWD");
        assert!(arm(&home, &f, Some("/elsewhere")).is_none());
        // A toolchain file written just now: a second edit may keep its time.
        let just_now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        f.file = Some((
            "/p/gpuenv.toml".into(),
            Stamp {
                mtime_ns: just_now,
                size: 1,
            },
        ));
        assert!(arm(&home, &f, Some("/p")).is_none());
    }

    #[test]
    fn values_are_quoted_for_each_shell() {
        let c = Check {
            pwd: "/it's $x".into(),
            vars: vec![("VIRTUAL_ENV".into(), Some("-n".into()))],
            same_time: vec![],
            absent: vec!["/a b/gpuenv.toml".into()],
        };
        let bash = render(Some(&c), Shell::Bash);
        assert!(bash.contains(r"$PWD == '/it'\''s $x'"), "{bash}");
        assert!(bash.contains("${VIRTUAL_ENV-} == '-n'"), "{bash}");
        let fish = render(Some(&c), Shell::Fish);
        assert!(fish.contains(r#"test "x$PWD" = x'/it\'s $x'"#), "{fish}");
        assert!(fish.contains("not test -e '/a b/gpuenv.toml'"), "{fish}");
    }
}
