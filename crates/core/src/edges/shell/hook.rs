//! The init code `gpuenv hook <shell>` prints: the scripts in `shell/`, with the gpuenv
//! binary and the shims dir filled in (quoted for the shell).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{quote, Shell};

const BASH: &str = include_str!("../../../shell/gpuenv.bash");
const ZSH: &str = include_str!("../../../shell/gpuenv.zsh");
const FISH: &str = include_str!("../../../shell/gpuenv.fish");

/// The line that loads the hook, and the file it goes in.
pub fn setup_line(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => "eval \"$(gpuenv hook bash)\" in ~/.bashrc",
        Shell::Zsh => "eval \"$(gpuenv hook zsh)\" in ~/.zshrc",
        Shell::Fish => "gpuenv hook fish | source in ~/.config/fish/config.fish",
    }
}

/// What `gpuenv hook <hook_for>` prints when `reader`, another shell, runs it: code that
/// bash, zsh and fish all run alike (one `echo` of a single-quoted line, then `false`), so
/// the pasted line says which shell it is for and fails instead of doing nothing.
pub fn wrong_shell_code(hook_for: Shell, reader: Shell) -> Vec<u8> {
    let line = format!(
        "gpuenv: this is the hook for {hook_for}, but {reader} is reading it; put {} instead",
        setup_line(reader)
    );
    // Single quotes hold everything but a quote in all three shells; the line has none.
    debug_assert!(!line.contains('\''));
    format!("echo '{line}' >&2; false\n").into_bytes()
}

pub fn init_code(shell: Shell, gpuenv: &Path, shims: &Path) -> Vec<u8> {
    let q = |p: &Path| match shell {
        Shell::Bash | Shell::Zsh => quote::posix(p.as_os_str().as_bytes()),
        Shell::Fish => quote::fish(p.as_os_str().as_bytes()),
    };
    let template = match shell {
        Shell::Bash => BASH,
        Shell::Zsh => ZSH,
        Shell::Fish => FISH,
    };
    let (gpuenv, shims) = (q(gpuenv), q(shims));
    let mut out = Vec::with_capacity(template.len() + 4 * gpuenv.len());
    let mut rest = template;
    // The placeholders are ASCII; everything between them is copied as it is.
    while let Some(at) = rest.find('@') {
        out.extend_from_slice(&rest.as_bytes()[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("@GPUENV@") {
            out.extend_from_slice(&gpuenv);
            rest = after;
        } else if let Some(after) = tail.strip_prefix("@SHIMS@") {
            out.extend_from_slice(&shims);
            rest = after;
        } else {
            out.push(b'@');
            rest = &tail[1..];
        }
    }
    out.extend_from_slice(rest.as_bytes());
    out
}
