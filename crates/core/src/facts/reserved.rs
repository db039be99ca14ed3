//! Variables a toolchain file's `[env]` may not set, even when trusted: those that steer
//! gpuenv itself, the shell running the hook, or what every program loads. One list, here.

use crate::facts::vars::{self, PATH_LISTS};

/// Shell variables by exact name: prompts and hooks (a value here runs code at every
/// prompt or removes gpuenv's hook), startup files, and what word splitting depends on.
const SHELL: [&str; 22] = [
    "PROMPT_COMMAND",
    "BASH_ENV",
    "ENV",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT",
    "PROMPT2",
    "PROMPT3",
    "PROMPT4",
    "RPROMPT",
    "RPS1",
    "precmd_functions",
    "preexec_functions",
    "chpwd_functions",
    "ZDOTDIR",
    "IFS",
    "SHELL",
    vars::HOME,
    "CDPATH",
];

/// The dynamic loader's injection points.
const LOADER: [&str; 2] = ["LD_PRELOAD", "LD_AUDIT"];

/// Why `name` may not be set from `[env]`, or `None` when it may.
pub fn why(name: &str) -> Option<&'static str> {
    if name.starts_with("GPUENV_") || name.starts_with("__GPUENV") {
        Some("variables named GPUENV_* control gpuenv itself")
    } else if name.starts_with("fish_") || SHELL.contains(&name) || name.starts_with("BASH_FUNC_") {
        Some("it controls the shell that runs gpuenv's hook")
    } else if LOADER.contains(&name) {
        Some("it makes every program load code")
    } else if PATH_LISTS.contains(&name) {
        Some("gpuenv computes this path list from the active toolchains")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_steer_gpuenv_or_the_shell_are_refused() {
        for name in [
            "GPUENV_TOOLCHAIN",
            "__GPUENV_STATE",
            "PROMPT_COMMAND",
            "PS1",
            "precmd_functions",
            "fish_prompt",
            "LD_PRELOAD",
            "PATH",
            "LD_LIBRARY_PATH",
            "IFS",
        ] {
            assert!(why(name).is_some(), "{name}");
        }
        for name in [
            "NCCL_DEBUG",
            "CUDA_VISIBLE_DEVICES",
            "OMP_NUM_THREADS",
            "PS",
        ] {
            assert_eq!(why(name), None, "{name}");
        }
    }
}
