//! Messages for people, on stderr, coloured only on a terminal (anstream honours NO_COLOR).
//! Every message passes through `printable` on its way out: text from files, archives,
//! servers and the environment never reaches the terminal as control characters.

use std::borrow::Cow;
use std::fmt::Write as _;

use owo_colors::OwoColorize;

use crate::fsutil::split_fs_err;

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

pub fn info(msg: impl std::fmt::Display) {
    anstream::eprintln!("{} {}", "info:".bold(), lines(&msg.to_string()));
}

pub fn warn(msg: impl std::fmt::Display) {
    anstream::eprintln!("{} {}", "warning:".yellow().bold(), lines(&msg.to_string()));
}

/// A one-line note from the shell hook, printed at a prompt: short and unstyled, its first
/// line only.
pub fn hook_note(msg: impl std::fmt::Display) {
    let text = msg.to_string();
    eprintln!(
        "gpuenv: {}",
        printable(text.lines().next().unwrap_or_default())
    );
}

/// An error and its causes as the lines to show, `hint:` lines from anywhere in the chain
/// last. A cause that repeats the path its parent already names (fs-err's "failed to open
/// file `P`: reason") shows only its reason.
pub fn error_lines(err: &anyhow::Error) -> (Vec<String>, Vec<String>) {
    let mut shown: Vec<String> = Vec::new();
    let mut hints = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        let (msg, hint_lines): (Vec<&str>, Vec<&str>) =
            text.lines().partition(|l| !l.starts_with("hint:"));
        hints.extend(
            hint_lines
                .into_iter()
                .map(|h| h.trim_start_matches("hint:").to_string()),
        );
        let msg = drop_repeated_paths(&msg.join("\n"), &shown);
        if shown.is_empty() || !msg.is_empty() {
            shown.push(msg);
        }
    }
    (shown, hints)
}

/// Removes fs-err's "failed to <verb> `P`: " where `P` was already named, earlier in the
/// same message or in a message shown before it, keeping the reason.
fn drop_repeated_paths(msg: &str, shown: &[String]) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(at) = rest.find("failed to ") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        match split_fs_err(tail) {
            Some((path, reason))
                if out.contains(path) || shown.iter().any(|s| s.contains(path)) =>
            {
                rest = reason;
            }
            _ => {
                out.push_str("failed to ");
                rest = &tail["failed to ".len()..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The error on one line (for the hook): causes joined with `: `.
pub fn error_one_line(err: &anyhow::Error) -> String {
    error_lines(err).0.join(": ").replace('\n', " ")
}

/// Prints an error and its causes; `hint:` lines from anywhere in the chain come last, so
/// the fix is the last thing on the screen.
pub fn error(err: &anyhow::Error) {
    let (shown, hints) = error_lines(err);
    for (i, msg) in shown.iter().enumerate() {
        if i == 0 {
            anstream::eprintln!("{} {}", "error:".red().bold(), lines(msg));
        } else {
            anstream::eprintln!("  {} {}", "caused by:".bold(), lines(msg));
        }
    }
    for h in hints {
        anstream::eprintln!("{}{}", "hint:".cyan().bold(), lines(&h));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("plain /p/a b"), "plain /p/a b");
        assert_eq!(
            printable("\u{1b}]52;c;aGk=\u{7}x\ny\u{9b}"),
            "\\x1b]52;c;aGk=\\x07x\\ny\\x9b"
        );
        assert_eq!(printable("a\u{202e}b"), "a\\u{202e}b");
    }

    #[test]
    fn a_path_already_named_is_not_repeated() {
        let io = fs_err::read("/nonexistent/gpuenv.toml").unwrap_err();
        let err = anyhow::Error::new(io).context("cannot read /nonexistent/gpuenv.toml");
        let (shown, _) = error_lines(&err);
        assert_eq!(shown[0], "cannot read /nonexistent/gpuenv.toml");
        assert_eq!(shown[1], "No such file or directory (os error 2)");

        let io = fs_err::read("/nonexistent/settings.toml").unwrap_err();
        let err = anyhow::anyhow!("cannot read the state file /nonexistent/settings.toml: {io}");
        let (shown, _) = error_lines(&err);
        assert_eq!(
            shown[0],
            "cannot read the state file /nonexistent/settings.toml: No such file or directory (os error 2)"
        );
    }
}
