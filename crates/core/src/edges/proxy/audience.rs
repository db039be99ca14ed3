//! Whether anyone sees what a compile writes to stderr. pip and uv (and `python -m build`)
//! capture a build's output and show it only when the build fails, so a notice said there
//! is said to no one: it must not use up the once-per-build marker, and it goes to the
//! terminal, when there is one, as well. Only asked when there is something to say, so
//! the few reads of `/proc` cost nothing on the common path.

use fs_err::os::unix::fs::OpenOptionsExt as _;
use std::ffi::OsStr;
use std::io::{IsTerminal as _, Write as _};
use std::path::Path;

use crate::context::Context;
use crate::facts::vars;

/// Frontends that capture a build's output, as their program names (`pip3.11` included).
const FRONTENDS: &[&str] = &["pip", "uv", "pdm", "hatch", "poetry"];
/// How far up the process tree a frontend is looked for: pip runs the backend, which runs
/// setuptools' compile through a shell or ninja, which runs nvcc.
const ANCESTORS: usize = 8;

/// Who reads this compile's stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// A terminal, a log, a build tool that prints what its commands say.
    Seen,
    /// A frontend that hides it unless the build fails.
    Hidden,
}

/// This compile's audience: stderr a terminal, else a frontend named by the variables it
/// sets or found among this process's ancestors.
pub fn of(ctx: &Context) -> Audience {
    if std::io::stderr().is_terminal() {
        return Audience::Seen;
    }
    let by_vars = [
        vars::PIP_BUILD_TRACKER,
        vars::_PYPROJECT_HOOKS_BUILD_BACKEND,
    ]
    .iter()
    .any(|v| ctx.var_os(v).is_some_and(|x| !x.is_empty()));
    if by_vars || frontend_above() {
        Audience::Hidden
    } else {
        Audience::Seen
    }
}

/// Whether a frontend is among this process's ancestors (`/proc/<pid>/stat` and `cmdline`).
fn frontend_above() -> bool {
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..ANCESTORS {
        if pid <= 1 {
            return false;
        }
        let proc = Path::new("/proc").join(pid.to_string());
        if is_frontend(&read_small(&proc.join("cmdline"))) {
            return true;
        }
        match parent_of(&read_small(&proc.join("stat"))) {
            Some(parent) => pid = parent,
            None => return false,
        }
    }
    false
}

/// A `/proc` file of any process, through the bounded reader (empty when it cannot be read).
fn read_small(path: &Path) -> Vec<u8> {
    crate::outside::read(path, crate::outside::Kind::SystemFile).unwrap_or_default()
}

/// The parent pid in `/proc/<pid>/stat`: the field after the state, which follows the last
/// `)` (a program's name may hold one).
fn parent_of(stat: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(stat).ok()?;
    let (_, rest) = text.rsplit_once(") ")?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// A command line (NUL-separated) that runs a frontend: `pip …`, `uv …`, `python -m pip`,
/// `python -m build`.
fn is_frontend(cmdline: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let name = |a: &[u8]| {
        Path::new(OsStr::from_bytes(a))
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let program_is = |n: &str| {
        FRONTENDS.iter().any(|f| {
            n == *f
                || n.strip_prefix(f)
                    .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        })
    };
    let Some(first) = args.first() else {
        return false;
    };
    if program_is(&name(first)) {
        return true;
    }
    // `python -m pip`, `python3 /usr/bin/pip wheel` (a script run by its interpreter).
    let python = name(first).starts_with("python");
    python
        && args.windows(2).take(4).any(|w| {
            (w[0] == b"-m" && (program_is(&name(w[1])) || w[1] == b"build"))
                || program_is(&name(w[0]))
        })
}

/// Writes `text` to the controlling terminal on lines of its own ([`on_its_own_lines`]),
/// if this process has one that opens without blocking; whether it was written.
pub fn to_terminal(text: &str) -> bool {
    let tty = fs_err::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open("/dev/tty");
    match tty {
        Ok(mut t) => t.write_all(on_its_own_lines(text).as_bytes()).is_ok(),
        Err(_) => false,
    }
}

/// Rows a frontend's next redraw may take below the notice: indicatif (uv's bars) moves
/// the cursor up one row fewer than it drew, and a build shows a bar or two.
const REDRAW_ROWS: usize = 2;

/// `text` as the terminal gets it while a frontend draws there: pip leaves its status line
/// and spinner without a newline, so the notice starts on a new line; uv redraws its bars
/// from where the cursor is, so blank rows after the notice take that redraw instead of
/// the notice's end.
fn on_its_own_lines(text: &str) -> String {
    format!(
        "\n{}\n{}",
        text.trim_end_matches('\n'),
        "\n".repeat(REDRAW_ROWS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontends_by_their_command_lines() {
        for yes in [
            &b"/venv/bin/pip\0wheel\0."[..],
            b"pip3.11\0install\0.",
            b"/usr/bin/python3\0-m\0pip\0wheel\0.",
            b"python\0-m\0build",
            b"/root/.cargo/bin/uv\0pip\0install\0.",
            b"/usr/bin/python3.11\0/venv/bin/pip\0wheel\0.",
        ] {
            assert!(is_frontend(yes), "{}", String::from_utf8_lossy(yes));
        }
        for no in [
            &b"/usr/bin/ninja\0-v"[..],
            b"python3\0setup.py\0build_ext",
            b"/usr/bin/pipewire",
            b"cmake\0--build\0build",
            b"",
        ] {
            assert!(!is_frontend(no), "{}", String::from_utf8_lossy(no));
        }
    }

    #[test]
    fn a_terminal_notice_is_on_lines_of_its_own_with_rows_to_spare() {
        assert_eq!(on_its_own_lines("gpuenv: x\n"), "\ngpuenv: x\n\n\n");
    }

    #[test]
    fn the_parent_in_a_stat_line_whose_name_has_parens() {
        assert_eq!(parent_of(b"4242 (a) b) S 17 4242 4242 0 -1"), Some(17));
        assert_eq!(parent_of(b"garbage"), None);
    }
}
