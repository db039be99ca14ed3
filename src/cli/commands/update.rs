//! `gpuenv update [NAME]`: the newest patch release of each installed toolkit's minor
//! (cuda-12.4.0 -> cuda-12.4.1) from its source, with the same components; the default is
//! re-pointed to it and the old one removed (unless `--keep`).

use crate::cli::support;
use std::io::IsTerminal;

use anyhow::Result;

use support::outdated::{outdated, selection_of, From};

use gpuenv_core::context::Context;
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::toolchain::Spec;
use gpuenv_core::ui;
use gpuenv_install::record;
use gpuenv_install::Progress;

/// Install newer patch releases of installed toolkits (cuda-12.4.0 -> 12.4.1) and re-point
/// the default to them
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpuenv outdated              # what would change\n  gpuenv update                # every installed toolkit\n  gpuenv update cuda-12.4.0 --keep"
)]
pub struct Args {
    /// Installed toolkits to update (names or specs); default: all of them
    #[arg(value_name = "NAME")]
    names: Vec<String>,
    /// Keep the old release installed (by default it is uninstalled once the new one works)
    #[arg(long)]
    keep: bool,
    #[command(flatten)]
    from: From,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        // An install links the proxy (the store needs it): check before downloading anything.
        let store = support::store(ctx)?;
        let found = outdated(ctx, &home, &self.names, &self.from)?;
        if found.is_empty() {
            ui::info("every installed toolkit is on the newest patch release of its minor");
            return Ok(());
        }
        let fetcher = support::install_from::fetcher(ctx, &home, false)?;
        let sources = support::install_from::sources(
            ctx,
            &fetcher,
            self.from.source,
            self.from.manifest.as_deref(),
        )?;
        let progress =
            Progress::new(ui::level() >= ui::Level::Normal && std::io::stderr().is_terminal());
        for o in found {
            let spec = Spec {
                kind: o.entry.kind,
                version: o.newer.clone(),
                label: None,
            };
            ui::info(format!("updating {} to {spec} (from {})", o.name, o.source));
            // The old tree's record says its selection; older trees, their version.json.
            let sel = record::read(&o.entry.root)
                .map(|r| r.selection())
                .unwrap_or_else(|| selection_of(&o.entry));
            let plan = gpuenv_install::plan(&sources, &spec, &sel)?;
            let job = gpuenv_install::Job {
                store: &store,
                fetcher: &fetcher,
                progress: &progress,
            };
            let done = job.install(&plan, Some(&sel))?;
            let repointed = Registry::update(&home, |r| {
                let mut n = 0;
                for d in r.default.iter_mut().filter(|d| **d == o.name) {
                    *d = done.name.clone();
                    n += 1;
                }
                Ok::<_, anyhow::Error>(n)
            })?;
            if repointed > 0 {
                ui::info(format!("the default is now {} (was {})", done.name, o.name));
            }
            if self.keep {
                ui::info(format!(
                    "installed {}; kept {} (`gpuenv uninstall {}` removes it)",
                    done.name, o.name, o.name
                ));
            } else {
                support::uninstall::Uninstall { now: false }.run(ctx, &o.name)?;
                ui::info(format!("{} replaces {}", done.name, o.name));
            }
        }
        Ok(())
    }
}
