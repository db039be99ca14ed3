//! The prompt's fast path. After each `hook-env` the shell gets a function that tells,
//! with builtins only, whether anything that run depended on has changed: the hook starts
//! gpuenv only when it has, so a prompt where nothing changed costs no process.
//!
//! What it compares is the run's [`Fingerprint`]: `$PWD` and the variables, each watched
//! file's modification time (against a stamp file given exactly that time, since shells can
//! compare two files' times with `-nt`/`-ot` but cannot read one), and the toolchain files
//! that must still be absent between `$PWD` and the nearest one. The toolchain file is also
//! compared by its text (read with the shell's own `read`, no process): a file replaced by
//! one of the same size and modification time (`cp -p`, `touch -r`, a checkout that keeps
//! times) is seen, which no time a shell can compare would show.
//!
//! A run whose result does not depend on the directory within a project, or outside any,
//! holds in every such directory: its check compares no `$PWD` but walks up from it, so a
//! `cd` within a project, or between directories outside projects, costs no process either
//! ([`Place`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::hook_env::{Fingerprint, Stamp};
use super::{quote, Shell};
use crate::project::FILE_NAMES;
use crate::store::home::Home;

/// A file changed more recently than this may change again within the same tick of the
/// coarse clock file times come from, keeping its time: the shell is not told to trust it.
const RACY: Duration = Duration::from_secs(1);

/// A toolchain file larger than this is not compared by its text: the shell then asks
/// gpuenv at every prompt (toolchain files are a few lines).
const MAX_TEXT: u64 = 16 * 1024;

/// Stamps beyond this many are cleared out when a new one is made; a shell whose stamp is
/// gone just runs gpuenv once more.
const MAX_STAMPS: usize = 256;

/// The conditions under which the last run's result still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub place: Place,
    pub vars: Vec<(String, Option<String>)>,
    /// Files that must exist with exactly the modification time of their stamp file.
    pub same_time: Vec<(PathBuf, PathBuf)>,
    /// Files that must be regular files holding exactly this text.
    pub same_text: Vec<(PathBuf, String)>,
    pub absent: Vec<PathBuf>,
}

/// The directories where a check holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// `$PWD` as the shell had it: only there.
    Dir(String),
    /// Any directory with no toolchain file in it or above it, reached through no link (a
    /// link's target has other parents; the run looked from the physical directory). Only
    /// for a run that found no toolchain file, said nothing, and whose other inputs name no
    /// directory relative to `$PWD` (a relative `PATH` entry, a `"torch"` pin's python3).
    Plain,
    /// This directory (the toolchain file's), or any below it with no other toolchain
    /// file between, reached through no link: a project's result is the same in each of
    /// its directories. Only for a quiet run, a `PATH` of absolute entries, and a directory
    /// a shell's pattern takes literally (no `*?[\`, never `/`).
    Under(String),
}

/// The check for the run that produced `fp`, making the stamp files it needs. `None` (the
/// shell then always runs gpuenv) when `$PWD` is unknown or is not the directory `fp` was
/// taken in, when a file changed too recently to trust its time, when no stamp can be
/// written, or when the toolchain file cannot be read as text as it was stamped.
/// `path`: PATH as the shell has it after this run, compared too when `fp` watches the
/// `python3` on PATH (a shell cannot ask which one is first without a process). `quiet`:
/// the run said nothing, so it may hold beyond `$PWD` ([`Place`]).
pub fn arm(
    home: &Home,
    fp: &Fingerprint,
    pwd: Option<&str>,
    path: Option<&std::ffi::OsStr>,
    quiet: bool,
) -> Option<Check> {
    let pwd = pwd?;
    let recent = SystemTime::now().checked_sub(RACY)?;
    let recent_ns = recent.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    let racy = fp
        .files()
        .any(|(_, s)| s.is_some_and(|s| s.mtime_ns > recent_ns || s.ctime_ns > recent_ns as i128));
    if racy || !same_dir(Path::new(pwd), &fp.cwd) {
        return None;
    }
    let place = match &fp.file {
        _ if !quiet || !all_absolute(path) => Place::Dir(pwd.to_string()),
        None if fp.python.is_none() => Place::Plain,
        None => Place::Dir(pwd.to_string()),
        Some((file, _)) => match file.parent().and_then(Path::to_str) {
            Some(root) if root != "/" && !root.contains(['*', '?', '[', '\\']) => {
                Place::Under(root.to_string())
            }
            _ => Place::Dir(pwd.to_string()),
        },
    };
    let mut same_time = Vec::new();
    // The walk looks for toolchain files below the project's directory (or anywhere, outside
    // projects); the project's directory's own twin stays on the list.
    let mut absent = match &place {
        Place::Plain => Vec::new(),
        Place::Dir(_) => missing_toolchain_files(fp),
        Place::Under(root) => {
            let mut twin = missing_toolchain_files(fp);
            twin.retain(|f| f.parent() == Some(Path::new(root)));
            twin
        }
    };
    for (path, stamp) in fp.files() {
        match stamp {
            Some(s) => same_time.push((path.to_path_buf(), stamp_file(home, s).ok()?)),
            None => absent.push(path.to_path_buf()),
        }
    }
    let same_text = match &fp.file {
        Some((path, stamp)) => vec![(path.clone(), text_as_stamped(path, *stamp)?)],
        None => Vec::new(),
    };
    let mut vars = fp.vars.clone();
    if fp.python.is_some() {
        // A PATH that is not UTF-8 cannot be compared as text: the shell asks gpuenv.
        let value = match path {
            Some(p) => Some(p.to_str()?.to_string()),
            None => None,
        };
        vars.push((crate::facts::vars::PATH.to_string(), value));
    }
    Some(Check {
        place,
        vars,
        same_time,
        same_text,
        absent,
    })
}

/// The text of the toolchain file, if it is still the file `stamp` describes (read, then
/// checked again, so the text is the one the run saw) and is text a shell variable holds.
fn text_as_stamped(path: &Path, stamp: Stamp) -> Option<String> {
    let bytes = crate::outside::read(path, crate::outside::Kind::ToolchainFile)
        .ok()
        .filter(|b| b.len() as u64 <= MAX_TEXT)?;
    let text = String::from_utf8(bytes)
        .ok()
        .filter(|t| !t.contains('\0'))?;
    (super::hook_env::stamp(path) == Some(stamp)).then_some(text)
}

/// Every `PATH` entry names a directory by itself: an empty or relative one is found from
/// `$PWD`, so what the run found through it (an `nvcc`, a `python3`) may differ elsewhere.
fn all_absolute(path: Option<&std::ffi::OsStr>) -> bool {
    crate::path_list::split(path)
        .iter()
        .all(|d| Path::new(d).is_absolute())
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
    crate::fsutil::clear_when_full(&dir, MAX_STAMPS);
    let tmp = tempfile::NamedTempFile::new_in(&dir)?;
    tmp.as_file().set_modified(time)?;
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok(path)
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
    let mut out = String::with_capacity(4096);
    render_into(&mut out, check, shell, function_name(shell));
    out
}

/// [`render`], as a function called `name`, appended to `out`: written piece by piece into
/// one buffer (the prompt renders several checks, and growing many small strings was a
/// sixth of its work).
pub fn render_into(out: &mut String, check: Option<&Check>, shell: Shell, name: &str) {
    use std::fmt::Write as _;
    let Some(c) = check else {
        let _ = match shell {
            Shell::Bash | Shell::Zsh => writeln!(out, "{name}() {{ return 1; }}"),
            Shell::Fish => writeln!(out, "function {name}; return 1; end"),
        };
        return;
    };
    let path = |p: &Path| p.to_string_lossy().into_owned();
    // `write!` to a String cannot fail.
    match shell {
        Shell::Bash | Shell::Zsh => {
            let q = |s: &str| text(quote::posix(s.as_bytes()));
            let and = " &&\n       ";
            let _ = write!(out, "{name}() {{\n    local __gpuenv_text=\n");
            // bash's `nocasematch` makes `==` ignore case: `/w/Proj` would pass for `/w/proj`.
            if shell == Shell::Bash {
                out.push_str("    shopt -q nocasematch && return 1\n");
            }
            out.push_str("    [[ ");
            place_test(out, shell, &c.place);
            for (k, v) in &c.vars {
                let _ = write!(out, "{and}${{{k}-}} == {}", q(v.as_deref().unwrap_or("")));
            }
            for (file, stamp) in &c.same_time {
                let (f, s) = (q(&path(file)), q(&path(stamp)));
                let _ = write!(
                    out,
                    "{and}-e {f} && -e {s} && ! {f} -nt {s} && ! {f} -ot {s}"
                );
            }
            for file in &c.absent {
                let _ = write!(out, "{and}! -e {}", q(&path(file)));
            }
            out.push_str(" ]] || return 1\n");
            walk_up(out, shell, &c.place, "    ");
            // The shell's `read` reads the file without a process; `-f` first, so a FIFO
            // put in its place is never opened, and a file gone meanwhile says nothing.
            for (file, text) in &c.same_text {
                let f = q(&path(file));
                let _ = write!(
                    out,
                    "    [[ -f {f} ]] || return 1\n    IFS= read -r -d '' __gpuenv_text 2>/dev/null < {f}\n    [[ $__gpuenv_text == {} ]]\n",
                    q(text)
                );
            }
            if c.same_text.is_empty() {
                out.push_str("    return 0\n");
            }
            out.push_str("}\n");
        }
        Shell::Fish => {
            let q = |s: &str| text(quote::fish(s.as_bytes()));
            let and = "\n    and ";
            // `x` in front: a value starting with `-` or `!` is never read as an operator.
            let _ = write!(out, "function {name}\n    ");
            place_test(out, shell, &c.place);
            for (k, v) in &c.vars {
                let _ = write!(
                    out,
                    "{and}test \"x${k}\" = x{}",
                    q(v.as_deref().unwrap_or(""))
                );
            }
            for (file, stamp) in &c.same_time {
                let (f, s) = (q(&path(file)), q(&path(stamp)));
                let _ = write!(
                    out,
                    "{and}test -e {f} -a -e {s}{and}not test {f} -nt {s}{and}not test {f} -ot {s}"
                );
            }
            for file in &c.absent {
                let _ = write!(out, "{and}not test -e {}", q(&path(file)));
            }
            out.push_str("\n    or return 1\n");
            walk_up(out, shell, &c.place, "    ");
            for (file, text) in &c.same_text {
                let f = q(&path(file));
                let _ = write!(
                    out,
                    "    test -f {f}; or return 1\n    set -l text (string collect -N 2>/dev/null < {f})\n    test \"x$text\" = x{}\n",
                    q(text)
                );
            }
            out.push_str("end\n");
        }
    }
}

/// The test that `$PWD` is in `place`: one term of bash's and zsh's `[[ ]]`, one command
/// of fish's.
pub fn place_test(out: &mut String, shell: Shell, place: &Place) {
    use std::fmt::Write as _;
    let _ = match (shell, place) {
        (Shell::Bash | Shell::Zsh, Place::Dir(pwd)) => {
            write!(out, "$PWD == {}", text(quote::posix(pwd.as_bytes())))
        }
        (Shell::Bash | Shell::Zsh, Place::Plain) => write!(out, "$PWD == /*"),
        (Shell::Bash | Shell::Zsh, Place::Under(root)) => {
            let r = text(quote::posix(root.as_bytes()));
            write!(out, "( $PWD == {r} || $PWD == {r}/* )")
        }
        // `x` in front: a value starting with `-` or `!` is never read as an operator.
        (Shell::Fish, Place::Dir(pwd)) => {
            write!(
                out,
                "test \"x$PWD\" = x{}",
                text(quote::fish(pwd.as_bytes()))
            )
        }
        (Shell::Fish, Place::Plain) => write!(out, "string match -q '/*' -- \"$PWD\""),
        (Shell::Fish, Place::Under(root)) => {
            let r = text(quote::fish(root.as_bytes()));
            write!(
                out,
                "begin; test \"x$PWD\" = x{r}; or string match -q -- {r}'/*' \"$PWD\"; end"
            )
        }
    };
}

/// For a check that holds in more than one directory: code that returns 1 unless, from
/// `$PWD` up to the project's directory (to `/` outside projects), no directory is a link
/// or holds a toolchain file (`-e`, as the list of absent files it stands for). Builtins
/// only: three tests per directory level.
pub fn walk_up(out: &mut String, shell: Shell, place: &Place, indent: &str) {
    use std::fmt::Write as _;
    let dir = "__gpuenv_dir";
    let i = indent;
    let _ = match (shell, place) {
        (_, Place::Dir(_)) => Ok(()),
        (Shell::Bash | Shell::Zsh, _) => {
            let names = |d: &str| {
                FILE_NAMES
                    .iter()
                    .map(|n| format!(" && ! -e {d}/{n}"))
                    .collect::<String>()
            };
            // Outside projects down to the empty string (`/` is asked after); in one, to
            // its directory (which `$PWD` starts with).
            let until = match place {
                Place::Under(root) => format!(
                    "${dir} != {} && -n ${dir}",
                    text(quote::posix(root.as_bytes()))
                ),
                _ => format!("-n ${dir}"),
            };
            let _ = write!(
                out,
                "{i}local {dir}=$PWD\n{i}while [[ {until} ]]; do\n{i}    [[ ! -L ${dir}{} ]] || return 1\n{i}    {dir}=${{{dir}%/*}}\n{i}done\n",
                names(&format!("${dir}")),
            );
            match place {
                Place::Plain => writeln!(out, "{i}[[ -d /{} ]] || return 1", names("")),
                _ => Ok(()),
            }
        }
        (Shell::Fish, _) => {
            let names = |d: &str| {
                FILE_NAMES
                    .iter()
                    .map(|n| format!(" -o -e {d}/{n}"))
                    .collect::<String>()
            };
            let until = match place {
                Place::Under(root) => format!(
                    "\"x${dir}\" != x{} -a -n \"${dir}\"",
                    text(quote::fish(root.as_bytes()))
                ),
                _ => format!("-n \"${dir}\""),
            };
            let _ = write!(
                out,
                "{i}set -l {dir} $PWD\n{i}while test {until}\n{i}    if test -L \"${dir}\"{}\n{i}        return 1\n{i}    end\n{i}    set {dir} (string replace -r '/[^/]*$' '' -- \"${dir}\")\n{i}end\n",
                names(&format!("\"${dir}\"")),
            );
            match place {
                Place::Plain => write!(
                    out,
                    "{i}if test -L /{}\n{i}    return 1\n{i}end\n",
                    names("")
                ),
                _ => Ok(()),
            }
        }
    };
}

#[cfg(test)]
mod tests;
