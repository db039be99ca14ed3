//! Installing toolchains: a source (NVIDIA's redist manifests, NVIDIA's wheels on a Python
//! package index, or gpuenv's own manifest) says which archives make a release; they are
//! fetched into the download cache and checked against their sha256, unpacked safely,
//! assembled into a temp dir under `toolchains/`, renamed into place and registered, all
//! under a per-toolchain lock.
//!
//! Every fallible function returns [`InstallError`]; its hints reach the screen through
//! [`FIND`]. Modules are private unless the CLI calls into them by path; what else is
//! public is the `pub use` list below, and nothing more.

mod add;
mod archive;
mod assemble;
mod confine;
mod download;
mod error;
mod fault;
mod home;
mod install;
mod job;
mod objects;
mod pathpart;
mod plan;
mod progress;
mod seal;
mod stub;
mod therock;
mod toolchain_lock;
mod unpack;

// The namespaces the CLI calls into by module path (`record::read`, `lock::render`, …).
pub mod cache;
pub mod dir;
pub mod fetch;
pub mod hooks;
pub mod lock;
pub mod prune;
pub mod record;
pub mod retire;
pub mod source;
pub mod torch;
pub mod torch_rocm;

use gpuenv_core::diagnostic::Find;

// Errors, and how the CLI maps them to an exit status.
pub use error::{is_network_failure, NoSource};
pub use error::{InstallError, Result};
pub use fault::Fault;
// Choosing a release: sources, what was asked, what a source answers.
pub use archive::{Archive, Format, Mapping};
pub use plan::{Plan, Profile, Selection};
pub use reqwest::Url;
pub use source::{location, plan, Source};
// Installing it.
pub use home::{writable_home, ReadOnlyHome};
pub use install::Installed;
pub use job::Job;
pub use progress::Progress;
pub use toolchain_lock::{checked_name, lock_toolchain};

gpuenv_core::diagnostics!(
    /// gpuenv-install's error types that have hints (see `gpuenv_core::diagnostic`).
    pub fn find_diagnostic: InstallError, NoSource, fault::Fault, ReadOnlyHome, cache::Refused, cache::LockFailed, lock::LockError
);

/// The finders for every error an install can return: its own and gpuenv-core's.
pub const FIND: &[Find] = &[find_diagnostic, gpuenv_core::hints::find];
