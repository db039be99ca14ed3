use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::project::{self, PinValue};
use gpuenv_core::toolchain::registry::{Registry, Source};
use gpuenv_core::toolchain::{view, Spec};
use gpuenv_core::{shims, ui};

/// Remove a toolchain gpuenv installed: its tree, its view and its shims
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The installed name, as `gpuenv list` shows it
    name: String,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let name = self.name.as_str();
        let _lock = gpuenv_install::lock_toolchain(&home, name)?;
        let (root, dropped_defaults, registry) = Registry::update(&home, |registry| {
            let Some(entry) = registry.toolchains.get(name) else {
                bail!("no toolchain named {name} is registered\nhint: `gpuenv list` shows the registered names");
            };
            if entry.source != Source::Installed {
                bail!(
                    "{name} was {} by hand, not installed by gpuenv, so its files are not gpuenv's to remove\nhint: `gpuenv unlink {name}` forgets it and leaves its files alone",
                    entry.source.as_str()
                );
            }
            let root = entry.root.clone();
            registry.toolchains.remove(name);
            let (keep, dropped): (Vec<String>, Vec<String>) =
                registry.default.iter().cloned().partition(|d| {
                    d.parse::<Spec>()
                        .map(|s| registry.find(&s).is_some())
                        .unwrap_or(false)
                });
            registry.default = keep;
            view::remove(&home, name)?;
            shims::reshim(&home, registry)?;
            Ok((root, dropped, registry.clone()))
        })?;
        // Renamed away first, so the tree is gone at once however long deleting takes.
        gpuenv_core::fsutil::remove_tree(&root)?;
        ui::info(format!("uninstalled {name} (removed {})", root.display()));
        for d in dropped_defaults {
            ui::warn(format!(
                "the default {d} no longer matches a registered toolchain and was cleared; set another with `gpuenv default <spec>`"
            ));
        }
        warn_about_pins(ctx, &registry, name);
        Ok(())
    }
}

/// Toolchain files (the one here, and the trusted ones gpuenv knows of) whose pin selected
/// the removed toolchain.
fn warn_about_pins(ctx: &Context, registry: &Registry, name: &str) {
    let Ok(removed) = name.parse::<Spec>() else {
        return;
    };
    let mut files: Vec<std::path::PathBuf> =
        registry.trusted.iter().map(|t| t.path.clone()).collect();
    if let Ok(Some(here)) = project::find(&ctx.cwd) {
        files.insert(0, here);
    }
    files.dedup();
    for file in files {
        let Ok(p) = project::load(&file) else {
            continue;
        };
        for pin in &p.pins {
            let PinValue::Spec(spec) = &pin.value else {
                continue;
            };
            if !spec.matches(&removed) {
                continue;
            }
            let now = match registry.find(spec) {
                Some((other, _)) => format!("now selects {other}"),
                None => "now selects nothing".to_string(),
            };
            ui::warn(format!(
                "{} pins {spec}, which {now}; `gpuenv install {name}` puts it back",
                pin.at
            ));
        }
    }
}
