//! `gpuenv hook SHELL`: the shell init code that installs the prompt hook.

use crate::cli::support;
use anyhow::{Context as _, Result};
use support::named_arg::named;

use gpuenv_core::context::Context;
use gpuenv_core::shell::{hook, Shell};
use gpuenv_core::shims;

/// Print the shell init code: eval "$(gpuenv hook bash)" in ~/.bashrc, likewise zsh;
/// `gpuenv hook fish | source` in config.fish
#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(value_parser = named::<Shell>())]
    shell: Shell,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let exe = std::env::current_exe().context("cannot find the running gpuenv binary")?;
        let code = match other_shell_reading(self.shell) {
            Some(reader) => hook::wrong_shell_code(self.shell, reader),
            // Each prompt runs the proxy binary beside gpuenv (it answers as gpuenv would,
            // faster); without one (a bare `cargo build --bin gpuenv`), gpuenv itself.
            None => {
                let prompt = shims::proxy_source().unwrap_or_else(|_| exe.clone());
                hook::init_code(self.shell, &exe, &prompt, &home.shims())
            }
        };
        support::stdout(&code)?;
        Ok(())
    }
}

/// Another shell than `hook_for` that reads this output right away (`eval "$(gpuenv hook
/// …)"`, `… | source`): the parent process, when it is a shell gpuenv knows and holds the
/// pipe this writes to. Output to a file, or piped to a pager, is for any shell to read.
fn other_shell_reading(hook_for: Shell) -> Option<Shell> {
    // This process's own /proc, whatever machine root the probes are pointed at.
    let proc = std::path::PathBuf::from("/proc");
    let pipe = fs_err::read_link(proc.join("self/fd/1")).ok()?;
    if !pipe.to_string_lossy().starts_with("pipe:") {
        return None;
    }
    let parent = proc.join(std::os::unix::process::parent_id().to_string());
    let comm = gpuenv_core::outside::read_text(
        &parent.join("comm"),
        gpuenv_core::outside::Kind::SystemFile,
    )
    .ok()?;
    // A login shell's name starts with `-`.
    let reader: Shell = comm.trim().trim_start_matches('-').parse().ok()?;
    if reader == hook_for {
        return None;
    }
    let holds_it = || {
        fs_err::read_dir(parent.join("fd")).is_ok_and(|fds| {
            fds.flatten()
                .any(|fd| fs_err::read_link(fd.path()).is_ok_and(|p| p == pipe))
        })
    };
    // A shell starting `gpuenv hook zsh | less` holds the pipe for a moment after the fork;
    // one reading it (command substitution, `source`) holds it until gpuenv is done. Only
    // this rare case waits, a quarter of a second at most.
    for _ in 0..10 {
        if !holds_it() {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    Some(reader)
}
