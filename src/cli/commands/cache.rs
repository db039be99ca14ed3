//! `gpuenv cache size|prune`: the download cache keeps each archive's files unpacked, each
//! file once by content (installed toolchains are hard links to them), so a reinstall needs
//! no network; archives are removed once unpacked unless `GPUENV_KEEP_ARCHIVES` is set.

use crate::cli::support;
use anyhow::Result;
use indicatif::HumanBytes;

use gpuenv_core::context::Context;
use gpuenv_core::ui;
use gpuenv_install::prune::{self, Installed, PARTS};
use gpuenv_install::retire::Census;
use gpuenv_install::Cache;

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
    Size {
        /// Machine-readable output on stdout (bytes)
        #[arg(long)]
        json: bool,
    },
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
        let cache = support::install_from::cache(ctx, &home)?;
        if matches!(self.action, Action::Prune { .. }) {
            // First, so what the deleted trees held is pruned too.
            support::uninstall::reap(ctx, &home, &Census::default(), false);
        }
        let installed = Installed::scan(&home.toolchains())?;
        match self.action {
            Action::Size { json } => size(&cache, &installed, json),
            Action::Prune { all } => prune(&cache, &home.toolchains(), all),
        }
    }
}

fn size(cache: &Cache, installed: &Installed, json: bool) -> Result<()> {
    let parts = prune::size(cache, installed)?;
    let total: u64 = parts.iter().map(|u| u.bytes).sum();
    let frees = prune::frees(cache, installed)?;
    if json {
        let rows: Vec<_> = PARTS
            .iter()
            .zip(&parts)
            .map(|((part, what), u)| {
                serde_json::json!({
                    "part": part,
                    "what": what,
                    "bytes": u.bytes,
                    "files": u.files,
                    "shared_with_installed": u.installed,
                })
            })
            .collect();
        let out = serde_json::json!({
            "cache": cache.root,
            "bytes": total,
            "parts": rows,
            "prune_frees": frees.prune,
            "prune_all_frees": frees.all,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
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
        "`gpuenv cache prune` frees {} (what no installed toolchain uses); `--all` frees {}",
        HumanBytes(frees.prune),
        HumanBytes(frees.all)
    ));
    ui::info("installed toolchains are not the cache: their files are hard links to its objects, so bytes they share are counted here once, stay on disk after any prune, and are freed by `gpuenv uninstall`");
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
