//! Real bash, zsh and fish sessions for tests: run a script with a clean environment, in
//! each shell's dialect, and read back what `env -0` saw, byte for byte.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::{Command, Output};

use fs_err as fs;

pub const SHELLS: [&str; 3] = ["bash", "zsh", "fish"];

/// Runs `script` in `shell` (no rc files) in `cwd`, with only `env` in its environment.
/// Does not check the exit status.
pub fn run(shell: &str, script: &str, cwd: &Path, env: &[(&str, &OsStr)]) -> Output {
    let mut cmd = Command::new(shell);
    match shell {
        "bash" => cmd.args(["--norc", "--noprofile", "-c", script]),
        "zsh" => cmd.args(["-f", "-c", script]),
        "fish" => cmd.args(["--no-config", "-c", script]),
        _ => unreachable!("not a shell under test: {shell}"),
    };
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// Per shell: how to source the hook (the binary in `$GPUENV_BIN`), what a prompt runs
/// (these shells are not interactive), and what is needed after a `cd` (bash waits for the
/// prompt; zsh's chpwd and fish's PWD handler fire on their own).
pub fn dialect(shell: &str) -> (&'static str, &'static str, &'static str) {
    match shell {
        "bash" => (
            "eval \"$(\"$GPUENV_BIN\" hook bash)\"",
            "_gpuenv_hook",
            "_gpuenv_hook",
        ),
        "zsh" => ("eval \"$(\"$GPUENV_BIN\" hook zsh)\"", "_gpuenv_hook", ":"),
        "fish" => ("$GPUENV_BIN hook fish | source", "__gpuenv_hook", "true"),
        _ => unreachable!("not a shell under test: {shell}"),
    }
}

/// The variables in an `env -0` dump, values as bytes.
pub fn env_vars(path: &Path) -> BTreeMap<String, OsString> {
    fs::read(path)
        .unwrap()
        .split(|b| *b == 0)
        .filter_map(|kv| {
            let at = kv.iter().position(|b| *b == b'=')?;
            let key = String::from_utf8_lossy(&kv[..at]).into_owned();
            Some((key, OsString::from_vec(kv[at + 1..].to_vec())))
        })
        .collect()
}

/// `env -0` output as sorted lines, without what the shell itself changes on `cd`.
pub fn env_dump(path: &Path) -> Vec<String> {
    env_vars(path)
        .into_iter()
        .filter(|(k, _)| k != "OLDPWD" && k != "_")
        .map(|(k, v)| format!("{k}={}", String::from_utf8_lossy(v.as_bytes())))
        .collect()
}

/// The programs a run under `strace -f -e trace=execve -o <trace>` started, in order (the
/// execs that failed, as a PATH search's misses, left out).
pub fn started(trace: &Path) -> Vec<String> {
    fs::read_to_string(trace)
        .unwrap()
        .lines()
        .filter(|l| l.contains("execve(\"") && !l.contains("= -1"))
        .filter_map(|l| l.split('"').nth(1))
        .map(str::to_string)
        .collect()
}
