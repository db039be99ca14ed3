//! `gpuenv prefix [NAME]`: the root directory of a toolchain, or of those active here.

use crate::cli::support;
use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::install_hint;
use gpuenv_core::toolchain::Spec;

/// Print the root directory of a toolchain (or of those active here)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpuenv prefix cuda-12.4        # the root of the highest registered 12.4.x\n  ls \"$(gpuenv prefix cuda-13)\"/bin"
)]
pub struct Args {
    /// A toolchain name or spec; default: the toolchains active here
    #[arg(value_name = "NAME")]
    name: Option<String>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let mut session = support::session(ctx)?;
        let Some(name) = self.name else {
            let active = support::resolve_here(&mut session, &[], None)?;
            if active.toolchains.is_empty() {
                bail!(Hinted::new(format!(
                    "no toolchain is active in {}, so there is no prefix to print",
                    ctx.cwd.display()
                ))
                .hint("name one: `gpuenv prefix cuda-12.4` (`gpuenv list` shows them)"));
            }
            for t in &active.toolchains {
                println!("{}", t.entry.root.display());
            }
            return Ok(());
        };
        let spec: Spec = support::parse_specs(std::slice::from_ref(&name))?.remove(0);
        match session.registry().find(&spec) {
            Some((_, e)) => {
                println!("{}", e.root.display());
                Ok(())
            }
            None => bail!(
                Hinted::new(format!("no registered toolchain matches {spec}")).hint(format!(
                    "`gpuenv list` shows what is registered; {}",
                    install_hint::installs_it(&spec)
                ))
            ),
        }
    }
}
