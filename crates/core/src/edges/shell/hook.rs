//! The init code `gpuenv hook <shell>` prints: the scripts in `shell/`, with the gpuenv
//! binary, the program each prompt runs and the shims dir filled in (quoted for the shell).

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{quote, Shell};
use crate::named::Named;

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

/// The shell a prompt's call is for, when `args` (after the program) are exactly what the
/// scripts pass (`hook-env --shell bash`); `None` for any other spelling.
pub fn prompt_call(mut args: impl Iterator<Item = OsString>) -> Option<Shell> {
    let mut next = || args.next();
    let (command, flag, shell) = (next()?, next()?, next()?);
    if command != "hook-env" || flag != "--shell" || next().is_some() {
        return None;
    }
    Shell::from_name(shell.to_str()?)
}

/// The scripts with their placeholders filled in: `@GPUENV@` the gpuenv binary (`use` and
/// every other command), `@PROMPT@` the program each prompt runs (`hook-env`: the proxy
/// binary beside gpuenv, which starts faster and hands over to gpuenv whatever it does not
/// answer itself, see `by_proxy`), `@SHIMS@` the shims directory.
pub fn init_code(shell: Shell, gpuenv: &Path, prompt: &Path, shims: &Path) -> Vec<u8> {
    let q = |p: &Path| match shell {
        Shell::Bash | Shell::Zsh => quote::posix(p.as_os_str().as_bytes()),
        Shell::Fish => quote::fish(p.as_os_str().as_bytes()),
    };
    let template = match shell {
        Shell::Bash => BASH,
        Shell::Zsh => ZSH,
        Shell::Fish => FISH,
    };
    let (gpuenv, prompt, shims) = (q(gpuenv), q(prompt), q(shims));
    let mut out = Vec::with_capacity(template.len() + 4 * gpuenv.len());
    let mut rest = template;
    // The placeholders are ASCII; everything between them is copied as it is.
    while let Some(at) = rest.find('@') {
        out.extend_from_slice(&rest.as_bytes()[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("@GPUENV@") {
            out.extend_from_slice(&gpuenv);
            rest = after;
        } else if let Some(after) = tail.strip_prefix("@PROMPT@") {
            out.extend_from_slice(&prompt);
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
