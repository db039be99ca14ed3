//! `gpuenv completions SHELL`: the shell completion script, naming the registered toolchains.

use crate::cli::support;
use anyhow::Result;
use clap::CommandFactory;
use support::named_arg::named;

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
        let mut script = Vec::new();
        clap_complete::generate(
            shell,
            &mut crate::cli::Cli::command(),
            "gpuenv",
            &mut script,
        );
        let script = String::from_utf8(script)?;
        support::stdout(with_toolchain_names(self.shell, &script).as_bytes())
    }
}

/// The commands whose arguments are toolchain names (or specs): Tab offers the registered
/// names there, asked of gpuenv each time (`gpuenv list --names`), so a toolchain installed
/// since the script was written is offered too.
const TAKE_NAMES: &[&str] = &[
    "use",
    "run",
    "pin",
    "default",
    "env",
    "prefix",
    "uninstall",
    "unlink",
    "update",
];

/// clap's script for `shell`, with the registered names offered after the commands in
/// [`TAKE_NAMES`]: in bash and zsh clap's `_gpuenv` becomes `_gpuenv_clap`, and a `_gpuenv`
/// that offers names first (for a word that is no option, before `--`) takes its place; in
/// fish one more `complete` line.
fn with_toolchain_names(shell: Shell, script: &str) -> String {
    let commands = TAKE_NAMES.join(" ");
    match shell {
        Shell::Fish => format!(
            "{script}\n# Toolchain names, asked of gpuenv at each completion.\ncomplete -c gpuenv -n \"__fish_seen_subcommand_from {commands}; and not contains -- -- (commandline -opc)\" -f -a \"(command gpuenv list --names 2>/dev/null)\"\n"
        ),
        Shell::Bash => {
            let renamed = script.replacen("\n_gpuenv() {", "\n_gpuenv_clap() {", 1);
            let renamed = if script.starts_with("_gpuenv() {") {
                renamed.replacen("_gpuenv() {", "_gpuenv_clap() {", 1)
            } else {
                renamed
            };
            let cases = TAKE_NAMES.join("|");
            format!(
                "{renamed}\n# Toolchain names, asked of gpuenv at each completion; the rest is clap's.\n_gpuenv() {{\n    local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" i\n    case \"${{COMP_WORDS[1]}}\" in\n        {cases})\n            for ((i = 2; i < COMP_CWORD; i++)); do [[ \"${{COMP_WORDS[i]}}\" == -- ]] && break; done\n            if ((i == COMP_CWORD)) && [[ \"$cur\" != -* ]]; then\n                COMPREPLY=($(compgen -W \"$(command gpuenv list --names 2>/dev/null)\" -- \"$cur\"))\n                ((${{#COMPREPLY[@]}})) && return 0\n            fi\n            ;;\n    esac\n    _gpuenv_clap \"$@\"\n}}\n"
            )
        }
        Shell::Zsh => {
            let renamed = script.replacen("\n_gpuenv() {", "\n_gpuenv_clap() {", 1);
            let cases = TAKE_NAMES.join("|");
            let wrapper = format!(
                "# Toolchain names, asked of gpuenv at each completion; the rest is clap's.\n_gpuenv() {{\n    local -a names\n    if (( CURRENT > 2 )) && [[ ${{words[2]}} == ({cases}) && ${{words[CURRENT]}} != -* ]] && (( ${{words[(I)--]}} == 0 || ${{words[(I)--]}} >= CURRENT )); then\n        names=(${{(f)\"$(command gpuenv list --names 2>/dev/null)\"}})\n        if (( ${{#names}} )); then\n            compadd -a names\n            return 0\n        fi\n    fi\n    _gpuenv_clap \"$@\"\n}}\n\n"
            );
            let at = renamed
                .rfind("if [ \"$funcstack[1]\" = \"_gpuenv\" ]; then")
                .unwrap_or(renamed.len());
            format!("{}{wrapper}{}", &renamed[..at], &renamed[at..])
        }
    }
}
