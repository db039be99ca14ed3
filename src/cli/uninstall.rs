use anyhow::Result;

use gpuenv_core::context::Context;
use gpuenv_core::store::Forget;
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
        let rec = record::read(root);
        // What it was made of, so `gpuenv install NAME` brings the same profile and components.
        if let Err(e) = record::keep(root, &store.home().toolchains(), name) {
            ui::warn(format!(
                "cannot keep how {name} was installed ({e:#}); installing it again takes the default profile"
            ));
        }
        // Renamed away first, so the tree is gone at once however long deleting takes.
        gpuenv_install::dir::remove_tree(root)?;
        ui::info(format!("uninstalled {name} (removed {})", root.display()));
        super::warn_dropped_defaults(&forgotten.dropped_defaults);
        let registry = forgotten.registry;
        if let Ok(spec) = name.parse::<Spec>() {
            let again = record::reinstall_command(&spec, rec.as_ref());
            super::warn_about_pins(ctx, &registry, &spec, &again);
        }
        Ok(())
    }
}
