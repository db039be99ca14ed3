//! `gpuenv uninstall NAME`: remove a toolchain gpuenv installed (the removal and the reap are
//! `support::uninstall`).

use anyhow::Result;

use gpuenv_core::context::Context;
use gpuenv_install::retire::Census;

use crate::cli::support::uninstall::{reap, Uninstall};

/// Remove a toolchain gpuenv installed: its tree, its view and its shims
#[derive(Debug, clap::Args)]
#[command(
    after_help = "A toolchain something may still use (a process on this node, a SLURM job that started before) is retired: forgotten at once, its tree and view kept at the same paths until nothing uses them. The next install, uninstall, update or `cache prune` deletes it then, or `gpuenv uninstall --reap`.\n\nExamples:\n  gpuenv uninstall cuda-12.4.1\n  gpuenv uninstall --now cuda-12.4.1   # delete the tree at once, even in use\n  gpuenv uninstall --reap              # delete the retired trees nothing uses any more"
)]
pub struct Args {
    /// The installed name, as `gpuenv list` shows it
    #[arg(required_unless_present = "reap")]
    name: Option<String>,
    /// Delete the tree at once, even while something uses it (also a retired one)
    #[arg(long)]
    now: bool,
    /// Delete every retired tree that nothing uses any more
    #[arg(long, conflicts_with_all = ["name", "now"])]
    reap: bool,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let census = Census::default();
        let Some(name) = self.name.as_deref() else {
            let home = ctx.gpuenv_home()?;
            gpuenv_install::writable_home(&home)?;
            reap(&home, &census, true);
            return Ok(());
        };
        Uninstall { now: self.now }.run(ctx, name)
    }
}
