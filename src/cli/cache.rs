//! `gpuenv cache size|prune`: the download cache keeps each archive's files unpacked, each
//! file once by content (installed toolchains are hard links to them), so a reinstall needs
//! no network; archives are removed once unpacked unless `GPUENV_KEEP_ARCHIVES` is set.

use anyhow::Result;
use indicatif::HumanBytes;

use gpuenv_core::context::Context;
use gpuenv_core::ui;
use gpuenv_install::cache::Cache;
use gpuenv_install::prune::{self, Installed, PARTS};

/// Show or free the space the download cache takes
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Installed toolchains never lose files to a prune: their files are hard links or copies.\n\nExamples:\n  gpuenv cache size\n  gpuenv cache prune          # what no installed toolchain uses\n  gpuenv cache prune --all    # everything: the next install downloads again"
)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// How much the cache takes, per part, and how much of it installed toolchains share
    Size,
    /// Remove what no installed toolchain uses: partial downloads, archives, unpacked
    /// archives and stored files (with --all: everything, index pages too)
    Prune {
        /// Everything: the next install, or reinstall, downloads again
        #[arg(long)]
        all: bool,
    },
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let cache = super::install::cache(ctx, &home)?;
        match self.action {
            Action::Size => size(&cache, &Installed::scan(&home.toolchains())?),
            Action::Prune { all } => prune(&cache, &home.toolchains(), all),
        }
    }
}

fn size(cache: &Cache, installed: &Installed) -> Result<()> {
    let parts = prune::size(cache, installed)?;
    let total: u64 = parts.iter().map(|u| u.bytes).sum();
    let kept: u64 = parts.iter().map(|u| u.installed).sum();
    let meta = parts[PARTS.len() - 1].bytes;
    println!("{}: {}", ui::shown(&cache.root), HumanBytes(total));
    for ((part, what), u) in PARTS.iter().zip(&parts) {
        let note = if u.installed > 0 {
            format!(
                ", {} of it shared with installed toolchains",
                HumanBytes(u.installed)
            )
        } else {
            String::new()
        };
        println!(
            "  {part:<9} {:>10}  {what} ({} files{note})",
            HumanBytes(u.bytes).to_string(),
            u.files
        );
    }
    ui::info(format!(
        "`gpuenv cache prune` frees up to {} (what no installed toolchain uses); `--all` frees up to {}",
        HumanBytes(total - kept - meta),
        HumanBytes(total - kept)
    ));
    Ok(())
}

fn prune(cache: &Cache, toolchains: &std::path::Path, all: bool) -> Result<()> {
    let pruned = prune::prune(cache, toolchains, all, &|name| {
        ui::info(format!("waiting for an install that uses {name}"))
    })?;
    if let Some(first) = pruned.left.first() {
        ui::warn(format!(
            "left {} entries gpuenv did not make in its download cache alone (such as {}); remove them yourself if they are not wanted",
            pruned.left.len(),
            ui::printable(&first.display().to_string())
        ));
    }
    if let Some(first) = pruned.others.first() {
        ui::info(format!(
            "left {} entries of other users alone (such as {}): theirs to prune",
            pruned.others.len(),
            ui::printable(&first.display().to_string())
        ));
    }
    let freed = pruned.freed;
    ui::info(format!(
        "removed {} files from {} ({} freed; files installed toolchains share stay on disk with them)",
        freed.files,
        ui::shown(&cache.root),
        HumanBytes(freed.bytes)
    ));
    Ok(())
}
