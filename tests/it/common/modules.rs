//! The real module systems: Debian's Lmod, and Tcl Environment Modules unpacked from its
//! .deb (it conflicts with lmod as a package) into the test cache, run with tclsh8.6.
//! `.ci/run` installs both.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Which module system a script starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    Lmod,
    Tcl,
}

pub const LMOD_INIT: &str = "/usr/share/lmod/lmod/init/bash";

fn cache() -> PathBuf {
    match std::env::var_os("GPUENV_TEST_CACHE") {
        Some(c) => PathBuf::from(c),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/gpuenv-tests"),
    }
}

/// `modulecmd.tcl` of the unpacked environment-modules package.
pub fn tcl_modulecmd() -> PathBuf {
    cache().join("environment-modules/usr/lib/x86_64-linux-gnu/modulecmd.tcl")
}

/// The bash line that defines `module`, or `None` (and a SKIPPED note; a panic under
/// CI) when the module system is not installed.
pub fn init_line(system: System) -> Option<String> {
    let (present, what) = match system {
        System::Lmod => (Path::new(LMOD_INIT).is_file(), "lmod (apt-get install lmod)"),
        System::Tcl => (
            tcl_modulecmd().is_file() && super::have_tool("tclsh8.6"),
            "environment-modules unpacked into $GPUENV_TEST_CACHE/environment-modules (.ci/run does it)",
        ),
    };
    if !present {
        super::cannot_run(format!("{what} is not installed"));
        return None;
    }
    Some(match system {
        System::Lmod => format!("source {LMOD_INIT}"),
        System::Tcl => format!(
            "eval \"$(tclsh8.6 {} bash autoinit)\"",
            tcl_modulecmd().display()
        ),
    })
}

/// Variables the module systems keep for themselves; everything else must come back
/// byte-exact after an unload.
pub fn is_bookkeeping(name: &str) -> bool {
    [
        "_LMFILES_",
        "LOADEDMODULES",
        "_ModuleTable",
        "__LMOD",
        "LMOD",
        "_LMOD",
        "__MODULES",
        "MODULES_",
        "BASH_FUNC_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// Runs `script` in bash (no rc files) after the module system's init, with the given
/// variables only. Panics with stderr when bash fails.
pub fn bash(init: &str, script: &str, vars: &[(&str, &std::ffi::OsStr)], cwd: &Path) -> Output {
    let out = Command::new("bash")
        .args([
            "--norc",
            "--noprofile",
            "-c",
            &format!("set -e\n{init}\n{script}"),
        ])
        .env_clear()
        .envs(vars.iter().map(|(k, v)| (*k, *v)))
        .current_dir(cwd)
        .output()
        .unwrap();
    super::succeeded(&out);
    out
}
