use anyhow::Result;
use clap::CommandFactory;

use crate::context::Context;
use crate::shell::Shell;

/// Print shell completions: gpuenv completions bash > /etc/bash_completion.d/gpuenv
#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(value_enum)]
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
