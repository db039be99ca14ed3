//! Which copy of the data is in effect: the embedded one, or a newer copy
//! (`facts/cuda.toml`) in the user's gpuenv home or an upstream store. A copy is read only
//! when a fact is first asked for, and only after one `lstat` says it exists, so a proxy
//! call that needs no fact pays nothing. A copy that is bad (not TOML, absurd values, a
//! link, owned by another user, writable by others) is refused with file and line, and the
//! embedded data is used.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use super::{schema, Facts};
use crate::diagnostic::Diagnostic;
use crate::{fsutil, outside};

/// The file, relative to a gpuenv home.
pub const FILE: &str = "facts/cuda.toml";

/// What the first question found: the copy in effect and what was refused on the way.
#[derive(Debug)]
pub struct Loaded {
    pub facts: Facts,
    /// The file it came from; `None` for the embedded data.
    pub origin: Option<PathBuf>,
    pub refused: Vec<Refused>,
    /// Good copies not used because the one in effect is as new or newer.
    pub older: Vec<(PathBuf, &'static str)>,
}

/// A copy that was not used, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}; using gpuenv's embedded data (from {embedded})", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct Refused {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
    pub embedded: &'static str,
}

impl Diagnostic for Refused {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "remove or fix {}, or write a good copy with `{}`",
            self.path.display(),
            super::REFRESH
        )]
    }
}

/// The copy in effect for one gpuenv home and its upstreams: a value the session owns
/// and hands down (never process-wide state), read at the first question.
#[derive(Debug, Default)]
pub struct InEffect {
    /// Where copies may be, the user's own home first.
    candidates: Vec<PathBuf>,
    /// Told of each refused copy when the copies are read (the edge that made this value
    /// says it; nothing here prints).
    say_refused: Option<fn(&Refused)>,
    loaded: OnceCell<Loaded>,
}

impl InEffect {
    /// The copies that `homes` (the user's own first, then its upstreams) may hold.
    pub fn of_homes(homes: impl IntoIterator<Item = PathBuf>) -> InEffect {
        InEffect {
            candidates: homes.into_iter().map(|h| h.join(FILE)).collect(),
            say_refused: None,
            loaded: OnceCell::new(),
        }
    }

    /// Each refused copy is told once to `say` when the copies are read.
    pub fn saying_refused(self, say: fn(&Refused)) -> InEffect {
        InEffect {
            say_refused: Some(say),
            ..self
        }
    }

    /// The data this gpuenv was built with, where no home is involved.
    pub fn embedded() -> InEffect {
        InEffect::default()
    }

    /// The copy in effect, read at the first question.
    pub fn loaded(&self) -> &Loaded {
        self.loaded.get_or_init(|| {
            let loaded = choose(&self.candidates, Facts::embedded());
            if let Some(say) = self.say_refused {
                loaded.refused.iter().for_each(say);
            }
            loaded
        })
    }

    /// The data in effect.
    pub fn facts(&self) -> &Facts {
        &self.loaded().facts
    }
}

/// The newest good copy among `paths` that is at least as new as `embedded`.
pub fn choose(paths: &[PathBuf], embedded: &Facts) -> Loaded {
    let mut out = Loaded {
        facts: *embedded,
        origin: None,
        refused: Vec::new(),
        older: Vec::new(),
    };
    for path in paths {
        if fs_err::symlink_metadata(path).is_err() {
            continue;
        }
        let result =
            read(path).and_then(|f| as_complete(f, embedded).map_err(|e| (None, e.to_string())));
        match result {
            Ok(facts) if facts.date >= out.facts.date => {
                if let Some(prev) = out.origin.take() {
                    out.older.push((prev, out.facts.date));
                }
                out.facts = facts;
                out.origin = Some(path.clone());
            }
            Ok(facts) => out.older.push((path.clone(), facts.date)),
            Err((line, message)) => out.refused.push(Refused {
                path: path.clone(),
                line,
                message,
                embedded: embedded.date,
            }),
        }
    }
    out
}

/// A copy lists at least what gpuenv was built with: one with fewer rows (cut short, or
/// stripped to hide a release's minimum driver) does not replace the built-in data, however
/// new its date.
fn as_complete(copy: Facts, embedded: &Facts) -> Result<Facts, Incomplete> {
    let tables = [
        (
            "CUDA releases ([[release]])",
            copy.releases.len(),
            embedded.releases.len(),
        ),
        (
            "minor-version rows ([[minor-compat]])",
            copy.minor_compat.len(),
            embedded.minor_compat.len(),
        ),
        (
            "nvcc builds ([[nvcc-build]])",
            copy.nvcc_builds.len(),
            embedded.nvcc_builds.len(),
        ),
        (
            "torch indexes ([[torch-index]])",
            copy.torch.len(),
            embedded.torch.len(),
        ),
    ];
    for (what, has, built_in) in tables {
        if has < built_in {
            return Err(Incomplete {
                what,
                has,
                built_in,
            });
        }
    }
    Ok(copy)
}

/// Reads and checks one copy; on failure the line (if any) and why.
pub fn read(path: &Path) -> Result<Facts, (Option<usize>, String)> {
    not_a_link(path).map_err(|e| (None, e.to_string()))?;
    let bytes =
        outside::read(path, outside::Kind::CompatData).map_err(|e| (None, e.why.to_string()))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| (None, "it is not UTF-8 text".into()))?;
    let checked = schema::check(text).map_err(|e| (Some(e.line), e.message))?;
    Ok(Facts::from_checked(checked))
}

/// A copy changes what gpuenv tells about every toolkit: a link is not followed for it
/// (the owner rule, in [`outside::read`], covers the rest).
fn not_a_link(path: &Path) -> Result<(), NotFollowed> {
    let meta = fs_err::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Err(NotFollowed::Link);
    }
    Ok(())
}

/// Why a copy's path is not read.
#[derive(Debug, thiserror::Error)]
enum NotFollowed {
    #[error("{}", fsutil::io_reason(.0))]
    Io(#[from] std::io::Error),
    #[error("it is a symbolic link, which gpuenv does not follow for its data")]
    Link,
}

/// A copy with fewer rows in a table than the built-in data.
#[derive(Debug, thiserror::Error)]
#[error("it lists {has} {what}, fewer than the {built_in} gpuenv was built with")]
struct Incomplete {
    what: &'static str,
    has: usize,
    built_in: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join(FILE);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(&path, text).unwrap();
        path
    }

    fn newer(date: &str) -> String {
        include_str!("cuda.toml").replacen(
            &format!("date = \"{}\"", Facts::embedded().date),
            &format!("date = \"{date}\""),
            1,
        )
    }

    #[test]
    fn a_newer_good_copy_wins_and_an_older_one_is_set_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let a = write(&tmp.path().join("a"), &newer("2099-01-01"));
        let b = write(&tmp.path().join("b"), &newer("2000-01-01"));
        let got = choose(&[b.clone(), a.clone()], Facts::embedded());
        assert_eq!(got.origin.as_deref(), Some(a.as_path()));
        assert_eq!(got.facts.date, "2099-01-01");
        assert_eq!(got.older, [(b, "2000-01-01")]);
        assert!(got.refused.is_empty());
    }

    #[test]
    fn each_home_has_its_own_copy_in_effect_read_at_the_first_question() {
        let tmp = tempfile::tempdir().unwrap();
        let (mine, other) = (tmp.path().join("mine"), tmp.path().join("other"));
        let in_mine = InEffect::of_homes([mine.clone()]);
        let in_other = InEffect::of_homes([other.clone()]);
        // Written after the value was made: nothing is read before a fact is asked for.
        let path = write(&mine, &newer("2099-01-01"));
        assert_eq!(in_mine.facts().date, "2099-01-01");
        assert_eq!(in_mine.loaded().origin.as_deref(), Some(path.as_path()));
        // Another home in the same process keeps the embedded data: nothing is shared.
        assert_eq!(in_other.facts(), Facts::embedded());
        assert_eq!(InEffect::embedded().facts(), Facts::embedded());
        // Read once: a later change to the file is not seen by the same value.
        write(&mine, &newer("2098-01-01"));
        assert_eq!(in_mine.facts().date, "2099-01-01");
        assert_eq!(InEffect::of_homes([mine]).facts().date, "2098-01-01");
    }

    #[test]
    fn a_bad_copy_is_refused_with_its_line_and_the_embedded_data_stays() {
        let tmp = tempfile::tempdir().unwrap();
        let bad = newer("2099-01-01").replacen("gcc-max = 16", "gcc-max = 1600", 1);
        let path = write(tmp.path(), &bad);
        let got = choose(std::slice::from_ref(&path), Facts::embedded());
        assert_eq!(got.origin, None);
        let refused = &got.refused[0];
        let value_line = bad.lines().position(|l| l.contains("1600")).unwrap() + 1;
        assert!(refused
            .line
            .is_some_and(|l| l <= value_line && l + 6 > value_line));
        let e = refused.to_string();
        assert!(e.starts_with(&format!("{}:", path.display())), "{e}");
        assert!(
            e.contains("cuda = \"13.4\"") && e.contains("embedded data"),
            "{e}"
        );
    }

    #[test]
    fn a_copy_others_can_write_or_own_is_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let path = write(tmp.path(), &newer("2099-01-01"));
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let got = choose(std::slice::from_ref(&path), Facts::embedded());
        assert!(got.refused[0].message.contains("other users"), "{got:?}");
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        // Another user's file: made by chown, which needs root.
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&path, Some(4242), None).unwrap();
            let got = choose(&[path], Facts::embedded());
            assert!(got.refused[0].message.contains("owner uid 4242"), "{got:?}");
        }
    }
}
