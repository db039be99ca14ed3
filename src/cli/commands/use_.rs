//! `gpuenv use SPEC...`: toolchains for this shell only, through the shell hook.

use crate::cli::support;
use std::ffi::OsStr;

use anyhow::{bail, Result};
use support::named_arg::named;

use gpuenv_core::context::{vars, Context};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::install_hint;
use gpuenv_core::shell::{self, Shell};
use gpuenv_core::ui;

/// Use toolchains in this shell only (`none` goes back to the toolchain file and default);
/// needs the shell hook
#[derive(Debug, clap::Args)]
#[command(name = "use")]
pub struct Args {
    /// Specs such as cuda-10.2 rocm-6.2 (at most one per kind), or `none`
    #[arg(required = true)]
    specs: Vec<String>,
    /// Print the shell code instead (eval it to apply)
    #[arg(long)]
    print: bool,
    /// The shell to print code for (default: the hook's shell, else bash)
    #[arg(long, value_parser = named::<Shell>())]
    shell: Option<Shell>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let hook_shell = ctx
            .var(vars::GPUENV_SHELL)
            .and_then(|s| s.parse::<Shell>().ok());
        let shell = self.shell.or(hook_shell).unwrap_or(Shell::Bash);
        let value = if self.specs == ["none"] {
            None
        } else {
            let specs = support::parse_specs(&self.specs)?;
            let (_home, registry) = support::registry(ctx)?;
            for spec in &specs {
                if registry.find(spec).is_none() {
                    bail!(Hinted::new(format!(
                        "{spec} matches no registered toolchain; nothing was changed"
                    ))
                    .hint(format!(
                        "`gpuenv list` shows what is registered; {}",
                        install_hint::installs_it(spec)
                    )));
                }
            }
            Some(
                specs
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            )
        };
        if !self.print {
            let example = self.specs.join(" ");
            bail!(Hinted::new(
                "`gpuenv use` changes the current shell, which needs gpuenv's shell hook"
            )
            .hint(format!(
                "add `eval \"$(gpuenv hook {shell})\"` to your shell's rc file (fish: `gpuenv hook fish | source`), or apply it once with: eval \"$(gpuenv use --print {example})\""
            )));
        }

        let mut next = ctx.clone();
        match &value {
            Some(v) => next.vars.insert(vars::GPUENV_TOOLCHAIN.into(), v.into()),
            None => next.vars.remove(vars::GPUENV_TOOLCHAIN),
        };
        let home = ctx.gpuenv_home()?;
        let mut code = shell::render(
            &[(vars::GPUENV_TOOLCHAIN, value.as_deref().map(OsStr::new))],
            shell.format(),
        )?
        .bytes;
        code.extend(support::hook_prompt(&next, &home, true).render(shell));
        support::stdout(&code)?;
        match value {
            Some(v) => ui::info(format!("this shell now uses {v}")),
            None => ui::info("this shell is back to the toolchain file and the default"),
        }
        Ok(())
    }
}
