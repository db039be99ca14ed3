//! Removing an installed toolchain (`uninstall`, and `update` for the release it
//! replaced), and deleting the retired trees nothing uses any more.

use anyhow::Result;

use crate::cli::support;

use gpuenv_core::context::{vars, Context};
use gpuenv_core::home::Home;
use gpuenv_core::store::{retired, Forget, Store};
use gpuenv_core::toolchain::registry::{Registry, Source};
use gpuenv_core::toolchain::Spec;
use gpuenv_core::ui;
use gpuenv_install::record;
use gpuenv_install::retire::{self, Census, Users};

/// The uninstall of one name; `now`: delete the tree at once, even while something uses it.
pub struct Uninstall {
    pub now: bool,
}

impl Uninstall {
    pub fn run(&self, ctx: &Context, name: &str) -> Result<()> {
        let census = Census::default();
        gpuenv_install::checked_name(name)?;
        support::refuse_upstream(ctx, name, "uninstall")?;
        let store = support::store(ctx)?;
        gpuenv_install::writable_home(store.home())?;
        {
            let _lock = gpuenv_install::lock_toolchain(store.home(), name)?;
            self.uninstall(ctx, &store, name, &census)?;
        }
        // The name's lock is free again: the reap takes each retired name's own.
        reap(ctx, store.home(), &census, false);
        Ok(())
    }

    fn uninstall(&self, ctx: &Context, store: &Store, name: &str, census: &Census) -> Result<()> {
        let home = store.home();
        let entry = Registry::load(home)?.toolchains.get(name).cloned();
        if entry.is_none() && retired::read(home, name)?.is_some() {
            return self.retired_already(home, name, census);
        }
        // Who may still use it; an installed tree only (anything else is refused below).
        let since = retire::now();
        let users = entry
            .filter(|e| e.source == Source::Installed && !self.now)
            .map(|_| census.users(home, name, since))
            .filter(|u| !u.none());
        let forgotten = match &users {
            Some(_) => retire::retire(store, name, since)?,
            None => store.forget(name, Forget::Installed)?,
        };
        let root = &forgotten.entry.root;
        let rec = record::read(root);
        // What it was made of, so `gpuenv install NAME` brings the same profile and components.
        if let Err(e) = record::keep(root, &home.toolchains(), name).map_err(anyhow::Error::from) {
            ui::warn(format!(
                "cannot keep how {name} was installed ({e:#}); installing it again takes the default profile"
            ));
        }
        match &users {
            Some(users) => say_retired(name, users, census),
            None => {
                // Renamed away first, so the tree is gone at once however long deleting takes.
                gpuenv_install::remove_tree(root)?;
                ui::info(format!("uninstalled {name} (removed {})", root.display()));
            }
        }
        support::warn_dropped_defaults(&forgotten.dropped_defaults);
        let registry = forgotten.registry;
        if let Ok(spec) = name.parse::<Spec>() {
            let again = record::reinstall_command(&spec, rec.as_ref());
            support::warn_about_pins(ctx, &registry, &spec, &again);
        }
        Ok(())
    }

    /// `uninstall NAME` of a name that is retired already: deleted now if nothing uses it
    /// (or with `--now`), else said who keeps it.
    fn retired_already(&self, home: &Home, name: &str, census: &Census) -> Result<()> {
        let users = match self.now {
            true => Users::default(),
            false => {
                let r = retired::read(home, name)?.expect("checked by the caller, under the lock");
                census.users(home, name, r.since)
            }
        };
        if users.none() {
            retire::delete(home, name)?;
            ui::info(format!(
                "deleted the retired {name} (removed {})",
                retired::tree(home, name).display()
            ));
        } else {
            say_retired(name, &users, census);
        }
        Ok(())
    }
}

fn say_retired(name: &str, users: &Users, census: &Census) {
    if let Some(why) = census.jobs_unknown_unsaid() {
        ui::warn(format!(
            "cannot ask SLURM which jobs run ({why}), so {name} is kept as if one used it"
        ));
    }
    ui::info(format!(
        "{name} is retired: gpuenv no longer picks it, and its tree stays until nothing uses it (now {users}); `gpuenv uninstall --now {name}` deletes it at once"
    ));
}

/// Deletes the retired trees of `home` nothing uses any more, and says so; `all` says also
/// what is kept and why (`--reap`). Never fails the command that ran it.
pub fn reap(ctx: &Context, home: &Home, census: &Census, all: bool) {
    let reaped = retire::reap(home, census);
    for name in &reaped.deleted {
        ui::info(format!(
            "deleted the retired {name}: nothing uses it any more (removed {})",
            retired::tree(home, name).display()
        ));
    }
    if all && !reaped.archives.is_empty() {
        drop_archives(ctx, home, &reaped.archives);
    }
    for e in &reaped.refused {
        ui::warn_with_hints(e, gpuenv_core::diagnostic::Diagnostic::hints(e));
    }
    for (name, e) in reaped.failed {
        let e = anyhow::Error::from(e);
        ui::warn(format!("cannot delete the retired {name}: {e:#}"));
    }
    if let Some(why) = census.jobs_unknown_unsaid() {
        ui::warn(format!(
            "cannot ask SLURM which jobs run ({why}), so retired toolchains are kept as if one used them"
        ));
    }
    if all {
        for (name, users) in &reaped.kept {
            ui::info(format!(
                "kept the retired {name} for {users}; `gpuenv uninstall --now {name}` deletes it at once"
            ));
        }
        if reaped.deleted.is_empty() && reaped.kept.is_empty() && reaped.refused.is_empty() {
            ui::info("no retired toolchains to delete");
        }
    }
}

/// `--reap`: the download cache's archives of the releases it deleted, unless an installed
/// toolchain still links them, so nothing of a reaped release is left in the store. Only the
/// home's own cache: one named by `GPUENV_DOWNLOAD_CACHE` is shared with other homes (that is
/// what the variable is for), so what it keeps is `gpuenv cache prune`'s to decide.
fn drop_archives(ctx: &Context, home: &Home, archives: &[String]) {
    if ctx.var_nonempty(vars::GPUENV_DOWNLOAD_CACHE).is_some() {
        ui::verbose(format!(
            "the reaped releases' archives stay in the download cache {} names (shared; `gpuenv cache prune` removes what nothing links)",
            vars::GPUENV_DOWNLOAD_CACHE
        ));
        return;
    }
    let dropped = super::install_from::cache(ctx, home).and_then(|cache| {
        gpuenv_install::prune::drop_archives(&cache, &home.toolchains(), archives, &|what| {
            ui::info(format!("waiting for an install using {what}"))
        })
        .map(|pruned| (cache, pruned))
        .map_err(anyhow::Error::from)
    });
    match dropped {
        Ok((cache, pruned)) if pruned.freed.files > 0 => ui::info(format!(
            "removed their archives from the download cache {} ({} freed)",
            cache.root.display(),
            indicatif::HumanBytes(pruned.freed.bytes)
        )),
        Ok(_) => {}
        Err(e) => ui::warn(format!(
            "cannot remove the reaped releases' archives from the download cache: {e:#}"
        )),
    }
}
