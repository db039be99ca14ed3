//! Messages for people, on stderr, coloured only on a terminal (anstream honours NO_COLOR).

use owo_colors::OwoColorize;

pub fn info(msg: impl std::fmt::Display) {
    anstream::eprintln!("{} {msg}", "info:".bold());
}

pub fn warn(msg: impl std::fmt::Display) {
    anstream::eprintln!("{} {msg}", "warning:".yellow().bold());
}

/// A one-line note from the shell hook, printed at a prompt: short and unstyled.
pub fn hook_note(msg: impl std::fmt::Display) {
    eprintln!("gpuenv: {msg}");
}

/// Prints an error and its causes; `hint:` lines from anywhere in the chain come last, so
/// the fix is the last thing on the screen.
pub fn error(err: &anyhow::Error) {
    let mut hints = Vec::new();
    for (i, cause) in err.chain().enumerate() {
        let text = cause.to_string();
        let (lines, hint_lines): (Vec<&str>, Vec<&str>) =
            text.lines().partition(|l| !l.starts_with("hint:"));
        hints.extend(hint_lines.into_iter().map(str::to_string));
        let msg = lines.join("\n");
        if i == 0 {
            anstream::eprintln!("{} {msg}", "error:".red().bold());
        } else if !msg.is_empty() {
            anstream::eprintln!("  {} {msg}", "caused by:".bold());
        }
    }
    for h in hints {
        let rest = h.trim_start_matches("hint:");
        anstream::eprintln!("{}{rest}", "hint:".cyan().bold());
    }
}
