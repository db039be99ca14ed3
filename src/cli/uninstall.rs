use anyhow::Result;

use gpuenv_core::context::Context;
use gpuenv_core::project::{self, PinValue};
use gpuenv_core::store::Forget;
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::toolchain::Spec;
use gpuenv_core::ui;
use gpuenv_install::record;

/// Remove a toolchain gpuenv installed: its tree, its view and its shims
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The installed name, as `gpuenv list` shows it
    name: String,
}

impl Args {
    /// The uninstall of one name, as `gpuenv update` runs it for the release it replaced.
    pub fn named(name: &str) -> Args {
        Args {
            name: name.to_string(),
        }
    }

    pub fn run(self, ctx: &Context) -> Result<()> {
        let name = self.name.as_str();
        gpuenv_install::checked_name(name)?;
        super::refuse_upstream(ctx, name, "uninstall")?;
        let store = super::store(ctx)?;
        gpuenv_install::writable_home(store.home())?;
        let _lock = gpuenv_install::lock_toolchain(store.home(), name)?;
        let forgotten = store.forget(name, Forget::Installed)?;
        let root = &forgotten.entry.root;
        // What it was made of, so `gpuenv install NAME` brings the same profile and components.
        if let Err(e) = record::keep(root, &store.home().toolchains(), name) {
            ui::warn(format!(
                "cannot keep how {name} was installed ({e:#}); installing it again takes the default profile"
            ));
        }
        // Renamed away first, so the tree is gone at once however long deleting takes.
        gpuenv_core::fsutil::remove_tree(root)?;
        ui::info(format!("uninstalled {name} (removed {})", root.display()));
        super::warn_dropped_defaults(&forgotten.dropped_defaults);
        let registry = forgotten.registry;
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
    if let Ok(Some(here)) = project::find(&ctx.cwd, &registry.safe_directories).map(|h| h.path) {
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
