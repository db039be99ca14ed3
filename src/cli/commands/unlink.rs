//! `gpuenv unlink NAME`: forget a linked or discovered toolchain, leaving its files alone.

use crate::cli::support;
use anyhow::Result;

use gpuenv_core::context::Context;
use gpuenv_core::quote;
use gpuenv_core::store::Forget;
use gpuenv_core::toolchain::registry::Source as Origin;
use gpuenv_core::toolchain::Spec;
use gpuenv_core::ui;

/// Forget a linked or discovered toolchain (its files are left alone)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The registered name, as `gpuenv list` shows it
    name: String,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        support::refuse_upstream(ctx, &self.name, "unlink")?;
        let forgotten = support::store(ctx)?.forget(&self.name, Forget::InPlace)?;
        ui::info(format!("unlinked {}", self.name));
        support::warn_dropped_defaults(&forgotten.dropped_defaults);
        if let Ok(spec) = self.name.parse::<Spec>() {
            // Its files are where they were: registering them again puts it back.
            let again = match forgotten.entry.source {
                Origin::Discovered => "`gpuenv discover --register`".to_string(),
                _ => format!(
                    "`gpuenv link {spec} {}`",
                    quote::word(&forgotten.entry.root.to_string_lossy())
                ),
            };
            support::warn_about_pins(ctx, &forgotten.registry, &spec, &again);
        }
        Ok(())
    }
}
