use std::path::PathBuf;

use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::{project, trust, ui};

/// Allow a toolchain file's [env] to be applied (again after each edit)
#[derive(Debug, clap::Args)]
#[command(name = "trust")]
pub struct Args {
    /// The toolchain file; the nearest one from here up by default
    file: Option<PathBuf>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let path = match self.file {
            Some(f) => ctx.cwd.join(f),
            None => match project::find(&ctx.cwd)? {
                Some(p) => p,
                None => bail!(Hinted::new(format!(
                    "no gpuenv.toml or .gpuenv.toml in {} or above",
                    ctx.cwd.display()
                ))
                .hint("give the file: gpuenv trust <file>")),
            },
        };
        // Only a valid file can be trusted, and what is trusted is the content parsed here.
        let file = project::load(&path)?;
        Registry::update(&home, |r| {
            trust::trust(r, &file);
            Ok::<_, anyhow::Error>(())
        })?;
        ui::info(format!("trusted {}", path.display()));
        Ok(())
    }
}
