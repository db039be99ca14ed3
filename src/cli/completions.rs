use super::named_arg::named;
use anyhow::Result;
use clap::CommandFactory;

use gpuenv_core::context::Context;
use gpuenv_core::shell::Shell;

/// Print shell completions: gpuenv completions bash > /etc/bash_completion.d/gpuenv
#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(value_parser = named::<Shell>())]
    shell: Shell,
}

impl Args {
    pub fn run(self, _ctx: &Context) -> Result<()> {
        let shell = match self.shell {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
        };
        clap_complete::generate(
            shell,
            &mut super::Cli::command(),
            "gpuenv",
            &mut std::io::stdout(),
        );
        Ok(())
    }
}
