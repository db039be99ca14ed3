use std::path::PathBuf;

use anyhow::{bail, Result};

use gpuenv_core::context::Context;
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
                None => bail!(
                    "no gpuenv.toml or .gpuenv.toml in {} or above\nhint: give the file: gpuenv trust <file>",
                    ctx.cwd.display()
                ),
            },
        };
        let content = fs_err::read(&path)?;
        // Only a valid file can be trusted: what is trusted is what will be applied.
        project::parse(&path, &String::from_utf8_lossy(&content))?;
        Registry::update(&home, |r| {
            trust::trust(r, &path, &content);
            Ok::<_, anyhow::Error>(())
        })?;
        ui::info(format!("trusted {}", path.display()));
        Ok(())
    }
}
