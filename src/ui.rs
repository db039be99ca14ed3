//! Messages for people, on stderr, coloured only on a terminal (anstream honours NO_COLOR).

use owo_colors::OwoColorize;

pub fn info(msg: impl std::fmt::Display) {
    anstream::eprintln!("{} {msg}", "info:".bold());
}

pub fn warn(msg: impl std::fmt::Display) {
    anstream::eprintln!("{} {msg}", "warning:".yellow().bold());
}

pub fn error(err: &anyhow::Error) {
    anstream::eprintln!("{} {err}", "error:".red().bold());
    for cause in err.chain().skip(1) {
        anstream::eprintln!("  {} {cause}", "caused by:".bold());
    }
}
