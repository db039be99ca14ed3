//! `gpuenv hook-env`: what the shell hook runs at each prompt (the prompt itself is
//! `gpuenv_core::shell::prompt`).

use anyhow::Result;

use crate::cli::support;
use support::named_arg::named;

use gpuenv_core::context::Context;
use gpuenv_core::shell::Shell;

/// Internal: called by the shell hook at each prompt; prints the code that moves the shell
/// to the environment of the current directory
#[derive(Debug, clap::Args)]
#[command(hide = true)]
pub struct Args {
    #[arg(long, value_parser = named::<Shell>())]
    shell: Shell,
}

impl Args {
    /// The arguments exactly as the hook scripts pass them (`hook-env --shell bash`), or
    /// `None`.
    pub fn from_hook_call(args: impl Iterator<Item = std::ffi::OsString>) -> Option<Args> {
        gpuenv_core::shell::hook::prompt_call(args).map(|shell| Args { shell })
    }

    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let code = support::hook_prompt(ctx, &home, false).render(self.shell);
        support::stdout(&code)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Option<Shell> {
        Args::from_hook_call(args.iter().map(std::ffi::OsString::from)).map(|a| a.shell)
    }

    #[test]
    fn only_the_hooks_own_spelling_skips_clap() {
        assert_eq!(parse(&["hook-env", "--shell", "bash"]), Some(Shell::Bash));
        assert_eq!(parse(&["hook-env", "--shell", "fish"]), Some(Shell::Fish));
        // Everything else is clap's: its errors, its help and its other spellings.
        for other in [
            &["hook-env", "--shell", "tcsh"][..],
            &["hook-env", "--shell=bash"],
            &["hook-env", "--shell", "bash", "--verbose"],
            &["-v", "hook-env", "--shell", "bash"],
            &["hook-env", "--shell"],
            &["env", "--shell", "bash"],
            &[],
        ] {
            assert_eq!(parse(other), None, "{other:?}");
        }
        // A shell name that is not UTF-8 is clap's to refuse.
        use std::os::unix::ffi::OsStringExt;
        let odd = ["hook-env", "--shell"]
            .map(std::ffi::OsString::from)
            .into_iter()
            .chain([std::ffi::OsString::from_vec(b"bash\xff".to_vec())]);
        assert!(Args::from_hook_call(odd).is_none());
    }
}
