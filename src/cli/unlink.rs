use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::toolchain::registry::{Registry, Source};
use gpuenv_core::toolchain::{view, Spec};
use gpuenv_core::{shims, ui};

/// Forget a linked or discovered toolchain (its files are left alone)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The registered name, as `gpuenv list` shows it
    name: String,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let dropped_defaults = Registry::update(&home, |registry| {
            let Some(entry) = registry.toolchains.get(&self.name) else {
                bail!(
                    "no toolchain named {} is registered\nhint: `gpuenv list` shows the registered names",
                    self.name
                );
            };
            if entry.source == Source::Installed {
                bail!(
                    "{} was installed by gpuenv\nhint: remove it with `gpuenv uninstall {}`",
                    self.name,
                    self.name
                );
            }
            registry.toolchains.remove(&self.name);
            // A default that now selects nothing would break every directory without a pin.
            let (keep, dropped): (Vec<String>, Vec<String>) =
                registry.default.iter().cloned().partition(|d| {
                    d.parse::<Spec>()
                        .map(|s| registry.find(&s).is_some())
                        .unwrap_or(false)
                });
            registry.default = keep;
            view::remove(&home, &self.name)?;
            shims::reshim(&home, registry)?;
            Ok(dropped)
        })?;
        ui::info(format!("unlinked {}", self.name));
        for d in dropped_defaults {
            ui::warn(format!(
                "the default {d} no longer matches a registered toolchain and was cleared; set another with `gpuenv default <spec>`"
            ));
        }
        Ok(())
    }
}
