//! Retiring an installed toolchain while something may still use it, and deleting it once
//! nothing does. `gpuenv uninstall NAME` forgets NAME at once; when a process on this node
//! or a SLURM job that started before may use its tree, the tree and its view stay at the
//! same paths (a running job's environment names them) and a record says so
//! (`gpuenv_core::store::retired`). The next install, uninstall, update or `cache prune` of
//! the home, or `gpuenv uninstall --reap`, deletes every retired tree nothing uses any more.
//!
//! "Using" is decided by `users` (this node's processes, as far as `/proc` lets this user
//! see) and `jobs` (SLURM's running jobs, whoever's, where `squeue` answers).

mod jobs;
mod users;

pub use jobs::CLOCK_SLACK;

use std::cell::{Cell, OnceCell};
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::error::{InstallError, Result};

use gpuenv_core::ask;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::home::Home;
use gpuenv_core::store::retired::{self, RetiredError};
use gpuenv_core::store::{Forget, Forgotten, Store};
use gpuenv_core::toolchain::registry::Registry;
use jobs::Jobs;

/// What may use a retired tree.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Users {
    pub pids: Vec<u32>,
    pub jobs: Vec<String>,
    /// Why the answer may be short (`squeue` failed, `/proc` took too long): the tree is
    /// kept as if used.
    pub unsure: Option<String>,
}

impl Users {
    /// Nothing uses it, as far as gpuenv can tell.
    pub fn none(&self) -> bool {
        self.pids.is_empty() && self.jobs.is_empty() && self.unsure.is_none()
    }
}

/// "2 processes (pids 10, 11) and 1 SLURM job (42)".
impl fmt::Display for Users {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn listed<T: fmt::Display>(items: &[T]) -> String {
            let mut words: Vec<String> = items.iter().take(5).map(T::to_string).collect();
            if items.len() > 5 {
                words.push("…".into());
            }
            words.join(", ")
        }
        let mut parts = Vec::new();
        match self.pids.as_slice() {
            [] => {}
            [one] => parts.push(format!("1 process (pid {one})")),
            many => parts.push(format!("{} processes (pids {})", many.len(), listed(many))),
        }
        match self.jobs.as_slice() {
            [] => {}
            [one] => parts.push(format!("1 SLURM job ({one})")),
            many => parts.push(format!("{} SLURM jobs ({})", many.len(), listed(many))),
        }
        if self.unsure.is_some() {
            parts.push("what gpuenv could not ask about".into());
        }
        f.write_str(&parts.join(" and "))
    }
}

/// Asks who uses retired trees: `/proc` for each, `squeue` once per command.
pub struct Census {
    proc: PathBuf,
    jobs: OnceCell<Jobs>,
    said: Cell<bool>,
}

impl Default for Census {
    fn default() -> Self {
        Census {
            proc: PathBuf::from("/proc"),
            jobs: OnceCell::new(),
            said: Cell::new(false),
        }
    }
}

impl Census {
    /// What may use the tree and view of `name` in `home`, retired at `since`.
    pub fn users(&self, home: &Home, name: &str, since: u64) -> Users {
        let dirs = [retired::tree(home, name), retired::view(home, name)];
        let scan = users::processes_using(&self.proc, &dirs, ask::limit());
        let jobs = self.jobs.get_or_init(Jobs::ask);
        let started = jobs.started_before(since);
        Users {
            pids: scan.pids,
            jobs: started.clone().unwrap_or_default(),
            unsure: scan.unfinished.or_else(|| match (jobs, started) {
                (Jobs::Unknown(why), None) => Some(why.clone()),
                _ => None,
            }),
        }
    }

    /// Why SLURM could not be asked this time, the first time it is asked for: a command
    /// says it once, however many trees it kept for it.
    pub fn jobs_unknown_unsaid(&self) -> Option<&str> {
        match self.jobs.get() {
            Some(Jobs::Unknown(why)) if !self.said.replace(true) => Some(why),
            _ => None,
        }
    }
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs()
}

/// Forgets the installed `name` and keeps its tree and view, recorded as retired at
/// `since`. Call it holding `name`'s toolchain lock.
pub fn retire(store: &Store, name: &str, since: u64) -> Result<Forgotten> {
    let home = store.home();
    let registry = Registry::load(home)?;
    let Some(entry) = registry.toolchains.get(name) else {
        // Not registered: the forget says so, with its hint.
        return Ok(store.forget(name, Forget::Retire)?);
    };
    // Recorded first: a registered name's record is never acted on, and a forget that
    // fails leaves the toolchain as it was.
    retired::write(home, name, entry, since)?;
    match store.forget(name, Forget::Retire) {
        Ok(forgotten) => Ok(forgotten),
        Err(e) => {
            let _ = retired::forget(home, name);
            Err(e.into())
        }
    }
}

/// Deletes the retired `name`: its tree, its view, then its record (so a delete killed
/// midway is finished by the next). Call it holding `name`'s toolchain lock.
pub fn delete(home: &Home, name: &str) -> Result<()> {
    crate::dir::remove_tree(&retired::tree(home, name))?;
    // Views change under the state lock; a name registered again has its own view now.
    let state = Registry::lock(home)?;
    if !state.registry.toolchains.contains_key(name) {
        crate::dir::remove_tree(&retired::view(home, name))?;
    }
    retired::forget(home, name)?;
    Ok(())
}

/// What a reap did.
#[derive(Debug, Default)]
pub struct Reaped {
    pub deleted: Vec<String>,
    /// The sha256s of the archives the deleted trees were made of (their install records'),
    /// for the download cache to drop what nothing installed still links.
    pub archives: Vec<String>,
    pub kept: Vec<(String, Users)>,
    /// Records gpuenv did not write or cannot read: nothing is deleted for them.
    pub refused: Vec<RetiredError>,
    pub failed: Vec<(String, crate::InstallError)>,
}

/// Deletes every retired tree of `home` that nothing uses any more.
pub fn reap(home: &Home, census: &Census) -> Reaped {
    let mut reaped = Reaped::default();
    for name in retired::names(home) {
        match reap_one(home, &name, census) {
            Ok(Some(Ok(archives))) => {
                // The name's lock file goes too, once released: nothing of the release is
                // left (an install of it makes a new one).
                let _ = fs_err::remove_file(home.toolchains().join(format!(".{name}.lock")));
                reaped.archives.extend(archives);
                reaped.deleted.push(name);
            }
            Ok(Some(Err(users))) => reaped.kept.push((name, users)),
            Ok(None) => {}
            Err(InstallError::Retired(refused)) => reaped.refused.push(refused),
            Err(e) => reaped.failed.push((name, e)),
        }
    }
    reaped
}

/// `Some(Ok(archives))`: deleted (the sha256s of the archives it was made of);
/// `Some(Err(users))`: kept for them; `None`: nothing to do.
fn reap_one(
    home: &Home,
    name: &str,
    census: &Census,
) -> Result<Option<Result<Vec<String>, Users>>> {
    // Checked before the lock too: a record gpuenv did not write takes no lock of its name.
    if retired::read(home, name)?.is_none() {
        return Ok(None);
    }
    let _lock = crate::lock_toolchain(home, name)?;
    let Some(r) = retired::read(home, name)? else {
        return Ok(None);
    };
    if Registry::load(home)?.toolchains.contains_key(name) {
        // Left by a retirement whose forget never finished: the toolchain is in use as
        // registered, and only the record goes.
        retired::forget(home, name)?;
        return Ok(None);
    }
    let users = census.users(home, name, r.since);
    if !users.none() {
        return Ok(Some(Err(users)));
    }
    let archives = crate::record::read(&retired::tree(home, name))
        .map(|rec| rec.archives.into_iter().map(|a| a.sha256).collect())
        .unwrap_or_default();
    delete(home, name)?;
    // Reaped, not uninstalled to be installed again: its kept record goes with it.
    crate::record::forget_kept(&home.toolchains(), name);
    Ok(Some(Ok(archives)))
}

/// Before `name` is installed again (under its toolchain lock): a retired copy nothing uses
/// any more is deleted; one still in use keeps its path, and the install is refused.
pub(crate) fn clear_for_install(home: &Home, name: &str) -> Result<()> {
    let Some(r) = retired::read(home, name)? else {
        return Ok(());
    };
    let census = Census::default();
    let users = census.users(home, name, r.since);
    if users.none() {
        return delete(home, name);
    }
    Err(Hinted::new(format!(
        "{name} was uninstalled, but its retired tree at {} is still used by {users}: a new {name} cannot take its path until they end",
        retired::tree(home, name).display()
    ))
    .hint(format!(
        "install it again once they end; `gpuenv uninstall --now {name}` deletes the retired tree at once (what uses it fails), then `gpuenv install {name}`"
    ))
    .into())
}
