//! The store: the registered toolchains with their views and shims. Every change goes
//! through [`Store::register`] or [`Store::forget`], made under the state lock, and either
//! completes (registry saved, views and shims in step) or leaves everything as it was: the
//! registry is saved last, and what was done before it is undone if any step fails.
//! The store layer holds the home, the toolchains and their registry, upstreams, views and
//! shims; above the facts, below the project file.

use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::store::home::Home;
use crate::store::shims::{Reshim, ShimError};
use crate::store::toolchain::registry::{Entry, Locked, Registry, Source, StateError};
use crate::store::toolchain::view::{self, ViewError};
use crate::store::toolchain::{upstream, Kind, Spec};

mod health;
pub mod home;
pub mod locate;
pub mod marker;
pub mod retired;
pub mod shims;
pub mod toolchain;
pub use health::{health, tree_problem, NotOnThisNode, Problem};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    View(#[from] ViewError),
    #[error(transparent)]
    Shims(#[from] ShimError),
    #[error(transparent)]
    TooManyTools(#[from] shims::TooManyTools),
    #[error("{name} is already registered (at {})", root.display())]
    Taken { name: String, root: PathBuf },
    #[error("no toolchain named {name} is registered")]
    NotRegistered { name: String },
    #[error("{name} is retired, and its view stays at {} while what uses it runs", view.display())]
    Retired { name: String, view: PathBuf },
    #[error("{name} was installed by gpuenv")]
    Installed { name: String },
    #[error("{name} was {how} by hand, not installed by gpuenv, so its files are not gpuenv's to remove")]
    NotInstalled { name: String, how: &'static str },
    #[error("{} is inside GPUENV_HOME ({}), whose files only gpuenv manages", root.display(), home.display())]
    InsideHome { root: PathBuf, home: PathBuf },
    #[error("{}/bin/{tool} is the gpuenv proxy, not a real {tool}: {} is a gpuenv view or shims dir", root.display(), root.display())]
    RootIsProxy { root: PathBuf, tool: &'static str },
    #[error("{problem}")]
    Missing { problem: Problem },
}

impl Diagnostic for StoreError {
    fn hints(&self) -> Vec<String> {
        const REAL_ROOT: &str = "link the toolchain at its real root, e.g. /usr/local/cuda-12.4 (`gpuenv list` shows the registered roots)";
        vec![match self {
            StoreError::State(e) => return e.hints(),
            StoreError::Shims(e) => return e.hints(),
            StoreError::View(_) => return Vec::new(),
            StoreError::TooManyTools(e) => return e.hints(),
            StoreError::Taken { name, .. } => {
                format!("`gpuenv unlink {name}` first, or choose another name such as {name}-local")
            }
            StoreError::NotRegistered { .. } => "`gpuenv list` shows the registered names".into(),
            StoreError::Retired { name, .. } => format!(
                "choose another name, or once nothing uses it `gpuenv uninstall --reap`; `gpuenv uninstall --now {name}` deletes it at once"
            ),
            StoreError::Installed { name } => format!("remove it with `gpuenv uninstall {name}`"),
            StoreError::NotInstalled { name, .. } => {
                format!("`gpuenv unlink {name}` forgets it and leaves its files alone")
            }
            StoreError::InsideHome { .. } | StoreError::RootIsProxy { .. } => REAL_ROOT.into(),
            StoreError::Missing { problem } => problem.hint(),
        }]
    }
}

/// Which registrations a [`Store::forget`] may remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forget {
    /// `unlink`: linked or discovered toolchains, whose files are left alone.
    InPlace,
    /// `uninstall`: toolchains gpuenv installed (the caller removes the tree).
    Installed,
    /// `uninstall` of an installed toolchain something may still use: its view stays where
    /// a running job's environment names it (the caller records it as retired first).
    Retire,
}

/// The outcome of a change: the registry as saved, and what happened to the shims.
#[derive(Debug)]
pub struct Changed {
    pub registry: Registry,
    pub shims: Reshim,
}

#[derive(Debug)]
pub struct Forgotten {
    pub entry: Entry,
    /// Defaults that selected only the forgotten toolchain, and were cleared.
    pub dropped_defaults: Vec<String>,
    pub registry: Registry,
}

/// What `gpuenv reshim` did: each registered toolchain's view remade where its root is
/// there, and the shims.
#[derive(Debug)]
pub struct Repaired {
    pub views: Vec<String>,
    pub broken: Vec<StoreError>,
    /// Views of names no longer registered (left by an interrupted change), removed.
    pub orphans: Vec<String>,
    pub shims: Reshim,
}

pub struct Store {
    home: Home,
    /// The proxy binary built beside gpuenv, put into the home by every change.
    proxy_source: PathBuf,
}

impl Store {
    pub fn new(home: Home, proxy_source: PathBuf) -> Store {
        Store { home, proxy_source }
    }

    pub fn home(&self) -> &Home {
        &self.home
    }

    /// Refuses a root gpuenv must not register: one inside its own home (a view, the
    /// shims, another toolchain's files), unless gpuenv installed it there, and one whose
    /// compiler is the gpuenv proxy, which would call itself. Checked before anything in
    /// the tree is run.
    pub fn admissible(&self, root: &Path, source: Source) -> Result<(), StoreError> {
        if source != Source::Installed {
            let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            let (root, home) = (canon(root), canon(&self.home.root));
            if root.starts_with(&home) {
                return Err(StoreError::InsideHome { root, home });
            }
        }
        let proxies = [self.home.proxy(), self.proxy_source.clone()];
        let proxies: Vec<&Path> = proxies.iter().map(PathBuf::as_path).collect();
        for kind in Kind::ALL {
            let tool = kind.compiler();
            if shims::is_proxy(&root.join("bin").join(tool), &proxies) {
                return Err(StoreError::RootIsProxy {
                    root: root.to_path_buf(),
                    tool,
                });
            }
        }
        Ok(())
    }

    /// Registers toolchains, each with its view, and updates the shims. A name already
    /// registered is refused, except an installed toolchain registered again at the same
    /// root (a reinstall).
    pub fn register(&self, new: Vec<(String, Entry)>) -> Result<Changed, StoreError> {
        for (name, entry) in &new {
            self.admissible(&entry.root, entry.source)?;
            shims::tools_of(name, entry)?;
        }
        let mut locked = Registry::lock(&self.home)?;
        for (name, entry) in &new {
            // Its view is where running jobs find the retired tree.
            if fs_err::symlink_metadata(retired::path(&self.home, name)).is_ok() {
                return Err(StoreError::Retired {
                    name: name.clone(),
                    view: retired::view(&self.home, name),
                });
            }
            if let Some(old) = locked.registry.toolchains.get(name) {
                let reinstall = old.source == Source::Installed
                    && entry.source == Source::Installed
                    && old.root == entry.root;
                if !reinstall {
                    return Err(StoreError::Taken {
                        name: name.clone(),
                        root: old.root.clone(),
                    });
                }
            }
        }
        let before = locked.registry.clone();
        let proxy = shims::install_proxy(&self.home, &self.proxy_source)?;
        let mut made = Vec::new();
        let result = (|| {
            for (name, entry) in &new {
                made.push(name.as_str());
                view::create(&self.home, name, entry, &proxy)?;
                locked
                    .registry
                    .toolchains
                    .insert(name.clone(), entry.clone());
            }
            self.commit(&mut locked, &proxy)
        })();
        if result.is_err() {
            for name in made {
                match before.toolchains.get(name) {
                    Some(old) => drop(view::create(&self.home, name, old, &proxy)),
                    None => drop(view::remove(&self.home, name)),
                }
            }
            let _ = shims::reshim(&self.home, &before, &proxy);
        }
        result
    }

    /// Forgets a registered toolchain: its registration, its view, its shims, and the
    /// defaults that selected only it. Never touches its files.
    pub fn forget(&self, name: &str, which: Forget) -> Result<Forgotten, StoreError> {
        let mut locked = Registry::lock(&self.home)?;
        let Some(entry) = locked.registry.toolchains.get(name).cloned() else {
            return Err(StoreError::NotRegistered {
                name: name.to_string(),
            });
        };
        match (which, entry.source) {
            (Forget::InPlace, Source::Installed) => {
                return Err(StoreError::Installed {
                    name: name.to_string(),
                })
            }
            (Forget::Installed | Forget::Retire, Source::Linked | Source::Discovered) => {
                return Err(StoreError::NotInstalled {
                    name: name.to_string(),
                    how: entry.source.as_str(),
                })
            }
            _ => {}
        }
        let before = locked.registry.clone();
        let registry = &mut locked.registry;
        registry.toolchains.remove(name);
        // A default that now selects nothing would break every directory without a pin.
        // An upstream's toolchain may be the default too.
        let all = upstream::layered(&mut self.home.clone(), registry.clone()).registry;
        let (keep, dropped_defaults): (Vec<String>, Vec<String>) = registry
            .default
            .iter()
            .cloned()
            .partition(|d| d.parse::<Spec>().is_ok_and(|s| all.find(&s).is_some()));
        registry.default = keep;

        let proxy = shims::install_proxy(&self.home, &self.proxy_source)?;
        let aside = match which {
            Forget::Retire => None,
            Forget::InPlace | Forget::Installed => view::set_aside(&self.home, name)?,
        };
        match self.commit(&mut locked, &proxy) {
            Ok(changed) => {
                if let Some(aside) = aside {
                    // The view is already out of place; deleting it can only leave litter
                    // that `gpuenv reshim` clears.
                    let _ = aside.discard();
                }
                Ok(Forgotten {
                    entry,
                    dropped_defaults,
                    registry: changed.registry,
                })
            }
            Err(e) => {
                if let Some(aside) = aside {
                    let _ = aside.restore();
                }
                let _ = shims::reshim(&self.home, &before, &proxy);
                Err(e)
            }
        }
    }

    /// Remakes every view whose toolchain's root is there and the shims; reports each
    /// toolchain it could not repair instead of stopping at the first.
    pub fn repair(&self) -> Result<Repaired, StoreError> {
        let locked = Registry::lock(&self.home)?;
        let registry = &locked.registry;
        let proxy = shims::install_proxy(&self.home, &self.proxy_source)?;
        let mut views = Vec::new();
        let mut broken = Vec::new();
        for (name, entry) in &registry.toolchains {
            if !entry.root.is_dir() {
                // Its view stays: a root on an unmounted file system comes back with it.
                broken.push(StoreError::Missing {
                    problem: Problem::RootMissing {
                        name: name.to_string(),
                        root: entry.root.clone(),
                        source: entry.source,
                    },
                });
                continue;
            }
            match view::create(&self.home, name, entry, &proxy) {
                Ok(_) => views.push(name.to_string()),
                Err(e) => broken.push(e.into()),
            }
        }
        // Upstream toolchains whose store has no view get one here.
        let mut home = self.home.clone();
        let all = upstream::layered(&mut home, registry.clone());
        for name in &all.missing_views(&home) {
            match view::create(&self.home, name, &all.registry.toolchains[name], &proxy) {
                Ok(_) => views.push(name.clone()),
                Err(e) => broken.push(e.into()),
            }
        }
        view::remove_leftovers(&self.home);
        // A retired toolchain's view stays until its tree goes (`retired`).
        let retired = retired::names(&self.home);
        let mut orphans = Vec::new();
        for name in view::names(&self.home) {
            if !all.registry.toolchains.contains_key(&name)
                && !retired.contains(&name)
                && view::remove(&self.home, &name).is_ok()
            {
                orphans.push(name);
            }
        }
        let shims = shims::reshim(&self.home, registry, &proxy)?;
        Ok(Repaired {
            views,
            broken,
            orphans,
            shims,
        })
    }

    /// The last steps of every change: shims for the new registry, then the registry itself.
    fn commit(&self, locked: &mut Locked<'_>, proxy: &Path) -> Result<Changed, StoreError> {
        let shims = shims::reshim(&self.home, &locked.registry, proxy)?;
        locked.save()?;
        Ok(Changed {
            registry: locked.registry.clone(),
            shims,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::toolchain::detect;

    /// A home, a proxy file, and a CUDA tree at `<dir>/<name>`.
    fn world() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let proxy = dir.path().join("gpuenv-shim");
        fs_err::write(&proxy, "the proxy").unwrap();
        let store = Store::new(Home::new(dir.path().join("gpuenv")), proxy);
        (dir, store)
    }

    fn cuda(dir: &Path, version: &str) -> Entry {
        let root = dir.join(format!("cuda-{version}"));
        fs_err::create_dir_all(root.join("bin")).unwrap();
        fs_err::write(root.join("bin/nvcc"), "#!/bin/sh\n").unwrap();
        fs_err::write(
            root.join("version.json"),
            format!(r#"{{"cuda": {{"version": "{version}"}}}}"#),
        )
        .unwrap();
        detect::detect(&root, Source::Linked).unwrap()
    }

    #[test]
    fn a_register_that_fails_at_its_last_step_leaves_nothing() {
        let (dir, store) = world();
        let first = cuda(dir.path(), "12.1.105");
        store.register(vec![("cuda-12.1".into(), first)]).unwrap();
        let settings = fs_err::read_to_string(store.home().settings()).unwrap();
        // Saving fails: a directory is where the backup's temp file is renamed to.
        let blocker = store.home().root.join("settings.toml.bak");
        fs_err::create_dir_all(blocker.join("x")).unwrap();
        let second = cuda(dir.path(), "11.8.89");
        let err = store.register(vec![("cuda-11.8".into(), second)]);
        assert!(matches!(err, Err(StoreError::State(_))), "{err:?}");
        assert!(!store.home().view("cuda-11.8").exists(), "its view is gone");
        assert!(view::exists(store.home(), "cuda-12.1"), "the other stays");
        let after = fs_err::read_to_string(store.home().settings()).unwrap();
        assert_eq!(after, settings);
        let leftovers: Vec<String> = fs_err::read_dir(store.home().views())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(leftovers, ["cuda-12.1"]);
    }

    #[test]
    fn a_forget_that_fails_puts_the_view_back() {
        let (dir, store) = world();
        let entry = cuda(dir.path(), "12.1.105");
        store
            .register(vec![("cuda-12.1".into(), entry.clone())])
            .unwrap();
        store
            .register(vec![("cuda-12.1-b".into(), {
                let mut e = entry;
                e.root = dir.path().join("cuda-12.1.105");
                e
            })])
            .unwrap();
        let blocker = store.home().root.join("settings.toml.bak");
        fs_err::remove_file(&blocker).unwrap();
        fs_err::create_dir_all(blocker.join("x")).unwrap();
        assert!(store.forget("cuda-12.1", Forget::InPlace).is_err());
        assert!(view::exists(store.home(), "cuda-12.1"));
        let registry = Registry::load(store.home()).unwrap();
        assert!(registry.toolchains.contains_key("cuda-12.1"));
        assert!(store.home().shims().join("nvcc").is_symlink());
    }
}
