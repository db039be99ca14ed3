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
        super::stdout(&hook::init_code(self.shell, &exe, &home.shims()))?;
        Ok(())
    }
}
