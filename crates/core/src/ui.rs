//! Messages for people, on stderr, coloured only on a terminal (anstream honours NO_COLOR).
//! How much is said is one process-wide level: `-q` keeps warnings and errors, `-v` adds
//! what gpuenv reads and decides (`GPUENV_LOG` sets the same without flags).

use std::sync::atomic::{AtomicU8, Ordering};

use owo_colors::OwoColorize;

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

pub fn info(msg: impl std::fmt::Display) {
    if level() >= Level::Normal {
        anstream::eprintln!("{} {msg}", "info:".bold());
    }
}

/// What gpuenv read or decided; shown with `-v` / `GPUENV_LOG=verbose`.
pub fn verbose(msg: impl std::fmt::Display) {
    if level() >= Level::Verbose {
        anstream::eprintln!("{} {msg}", "verbose:".dimmed());
    }
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
