use anyhow::Result;

use gpuenv_core::context::Context;
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::toolchain::view;
use gpuenv_core::{shims, ui};

/// Regenerate the shims and the views' proxies (after moving or rebuilding gpuenv)
#[derive(Debug, clap::Args)]
pub struct Args {}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let report = Registry::update(&home, |registry| {
            let proxy = shims::install_proxy(&home)?;
            for (name, entry) in &registry.toolchains {
                view::create(&home, name, entry, &proxy)?;
            }
            shims::reshim(&home, registry)
        })?;
        ui::info(format!(
            "shims in {}: {} added, {} removed",
            home.shims().display(),
            report.added.len(),
            report.removed.len()
        ));
        Ok(())
    }
}
