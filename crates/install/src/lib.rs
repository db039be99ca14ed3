//! Installing toolchains: a source (NVIDIA's redist manifests, NVIDIA's wheels on a Python
//! package index, or gpuenv's own manifest) says which archives make a release; they are
//! fetched into the download cache and checked against their sha256, unpacked safely,
//! assembled into a temp dir under `toolchains/`, renamed into place and registered, all
//! under a per-toolchain lock.
//!
//! Every fallible function returns [`InstallError`]; its hints reach the screen through
//! [`FIND`].

mod add;
mod archive;
pub mod assemble;
pub mod cache;
pub mod confine;
pub mod dir;
pub mod download;
mod error;
pub mod fault;
pub mod fetch;
mod home;
pub mod hooks;
mod install;
mod job;
pub mod lock;
pub mod objects;
pub mod pathpart;
mod plan;
mod progress;
pub mod prune;
pub mod record;
pub mod retire;
pub mod seal;
pub mod source;
pub mod stub;
pub mod torch;
pub mod unpack;

use gpuenv_core::diagnostic::Find;

pub use archive::{Archive, Format, Mapping};
pub use error::{InstallError, Result};
pub use fault::{is_network_failure, Fault};
pub use home::{checked_name, lock_toolchain, writable_home, ReadOnlyHome};
pub use install::Installed;
pub use job::Job;
pub use plan::{plan, NoSource, Plan, Profile, Selection};
pub use progress::Progress;
pub use reqwest::Url;
pub use source::{location, Source};

gpuenv_core::diagnostics!(
    /// gpuenv-install's error types that have hints (see `gpuenv_core::diagnostic`).
    pub fn find_diagnostic: InstallError, NoSource, fault::Fault, ReadOnlyHome, cache::Refused, lock::LockError
);

/// The finders for every error an install can return: its own and gpuenv-core's.
pub const FIND: &[Find] = &[find_diagnostic, gpuenv_core::hints::find];
