//! `gpuenv reshim`: the views and shims regenerated.

use crate::cli::support;
use anyhow::Result;

use gpuenv_core::context::Context;
use gpuenv_core::ui;

use support::Exit;

/// Regenerate the views and shims (after moving or rebuilding gpuenv, or when a root is back)
#[derive(Debug, clap::Args)]
pub struct Args {}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let store = support::store(ctx)?;
        let repaired = store.repair()?;
        support::warn_unshimmed(&repaired.shims);
        ui::info(format!(
            "views: {} remade; shims in {}: {} added, {} removed",
            repaired.views.len(),
            store.home().shims().display(),
            repaired.shims.added.len(),
            repaired.shims.removed.len()
        ));
        if !repaired.orphans.is_empty() {
            ui::info(format!(
                "removed the views of toolchains no longer registered: {}",
                repaired.orphans.join(", ")
            ));
        }
        if repaired.broken.is_empty() {
            return Ok(());
        }
        for e in repaired.broken {
            support::print_error(&anyhow::Error::from(e));
        }
        Err(Exit(1).into())
    }
}
