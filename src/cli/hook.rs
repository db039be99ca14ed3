use super::named_arg::named;
use anyhow::{Context as _, Result};

use gpuenv_core::context::Context;
use gpuenv_core::shell::{hook, Shell};

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
        let code = match reading_shell(ctx) {
            Some(reader) if reader != self.shell => hook::wrong_shell_code(self.shell, reader),
            _ => hook::init_code(self.shell, &exe, &home.shims()),
        };
        super::stdout(&code)?;
        Ok(())
    }
}

/// The shell that reads this output right away (`eval "$(gpuenv hook …)"`, `… | source`):
/// the parent process, when stdout is a pipe and the parent is a shell gpuenv knows. Output
/// to a file is for any shell to source later.
fn reading_shell(ctx: &Context) -> Option<Shell> {
    use std::os::unix::fs::FileTypeExt;
    let proc = ctx.system_root().join("proc");
    let stdout = fs_err::metadata(proc.join("self/fd/1")).ok()?;
    if !stdout.file_type().is_fifo() {
        return None;
    }
    let parent = std::os::unix::process::parent_id();
    let comm = fs_err::read_to_string(proc.join(format!("{parent}/comm"))).ok()?;
    // A login shell's name starts with `-`.
    comm.trim().trim_start_matches('-').parse().ok()
}
