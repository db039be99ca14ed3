//! An install job: what every install needs besides the release itself (where toolchains
//! go, how archives are fetched, how progress shows), so an install is `job.install(plan)`.

use gpuenv_core::store::Store;

use crate::error::Result;
use crate::fetch::Fetcher;
use crate::install::Installed;
use crate::plan::{Plan, Selection};
use crate::progress::Progress;
use crate::record::Record;

/// The store installs go into, the fetcher (download cache, network, offline), and the
/// progress bars: made once per command, shared by each install it makes.
#[derive(Clone, Copy)]
pub struct Job<'a> {
    pub store: &'a Store,
    pub fetcher: &'a Fetcher,
    pub progress: &'a Progress,
}

impl Job<'_> {
    /// Installs what `plan` describes, unless it is installed already; with `sel` the tree
    /// gets its record (what `gpuenv lock` reads).
    pub fn install(&self, plan: &Plan, sel: Option<&Selection>) -> Result<Installed> {
        crate::install::install(self, plan, sel)
    }

    /// Adds to the installed `plan.name` the archives of `plan` that `old` (its record) does
    /// not have; `sel` is what the new record says was asked for. Returns the components
    /// added.
    pub fn add(&self, plan: &Plan, old: &Record, sel: &Selection) -> Result<Vec<String>> {
        crate::add::add(self, plan, old, sel)
    }
}
