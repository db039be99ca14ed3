use super::named_arg::named;
use anyhow::Result;
use clap::CommandFactory;

use gpuenv_core::context::Context;
use gpuenv_core::shell::Shell;

/// Print shell completions for bash, zsh or fish (see --help for where each file goes)
#[derive(Debug, clap::Args)]
#[command(after_long_help = "Where the file goes, without root:

  bash  mkdir -p ~/.local/share/bash-completion/completions
        gpuenv completions bash > ~/.local/share/bash-completion/completions/gpuenv
        (read by the bash-completion package on the next shell)

  zsh   mkdir -p ~/.zfunc
        gpuenv completions zsh > ~/.zfunc/_gpuenv
        and in ~/.zshrc, before `compinit`:  fpath+=~/.zfunc

  fish  mkdir -p ~/.config/fish/completions
        gpuenv completions fish > ~/.config/fish/completions/gpuenv.fish

System-wide (as root): /usr/share/bash-completion/completions/gpuenv,
/usr/local/share/zsh/site-functions/_gpuenv, /usr/share/fish/vendor_completions.d/gpuenv.fish.")]
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
