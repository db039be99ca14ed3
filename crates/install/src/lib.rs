//! Installing toolchains: a source (NVIDIA's redist manifests, NVIDIA's wheels on a Python
//! package index, or gpuenv's own manifest) says which archives make a release; they are
//! fetched into the download cache and checked against their sha256, unpacked safely,
//! assembled into a temp dir under `toolchains/`, renamed into place and registered, all
//! under a per-toolchain lock.
//!
//! Every fallible function returns [`InstallError`]; its hints reach the screen through
//! [`FIND`]. Modules are private; what is public is the list below (a few namespaces the
//! CLI calls by module path, and the `pub use` items), and nothing more:
//! `tests/it/core_layers.rs` fails on a `pub mod` not on its list.

mod add;
mod archive;
mod assemble;
mod cache;
mod confine;
mod dir;
mod download;
mod error;
mod fault;
mod fetch;
mod home;
mod hooks;
mod install;
mod job;
mod objects;
mod pathpart;
mod plan;
mod progress;
mod seal;
mod source;
mod stub;
mod therock;
mod toolchain_lock;
mod unpack;

// Namespaces: each is a set of verbs on one thing that the CLI calls as `lock::render`,
// `record::read`, `retire::reap`, `torch::for_venv` (flat, `read` or `for_venv` would say
// nothing, and the two `for_venv`s would collide). Each module's `pub` items are its
// part of this list; everything else in it is `pub(crate)`.
// `gpuenv.lock`: load, parse, render, and compare with what is installed.
pub mod lock;
// Cleaning the download cache: what it holds, what a prune frees, pruning.
pub mod prune;
// The install record in a toolchain's tree: read, keep on uninstall, digest.
pub mod record;
// Retiring a toolchain something may still use, and deleting it once nothing does.
pub mod retire;
// The CUDA toolkit a venv's torch was built for, and a plan cut to match it.
pub mod torch;
// The ROCm a venv's torch was built for, and a plan cut to match it.
pub mod torch_rocm;

use gpuenv_core::diagnostic::Find;

// Errors, and how the CLI maps them to an exit status; each type an `InstallError` wraps is
// public so a caller can match on why an install failed.
pub use cache::{LockFailed, Refused};
pub use error::{is_network_failure, InstallError, NoSource, Result};
pub use fault::Fault;
pub use home::ReadOnlyHome;

// Choosing a release: what was asked, what a source answers, the plan it makes.
pub use archive::{Archive, Format, Mapping};
pub use plan::{Plan, Profile, Selection};
pub use reqwest::Url;
pub use source::{location, plan, Choice, Source};

// The sources, with their defaults and what building one takes (fetcher, cache, hooks).
pub use cache::Cache;
pub use fetch::{Fetcher, Net};
pub use hooks::Hooks;
pub use source::amd::{prerelease_label, Amd};
pub use source::manifest::ManifestSource;
pub use source::nvidia::{nvidia_releases, Nvidia, NVIDIA_MIRROR};
pub use source::pypi::{Pypi, PYPI_INDEX};

// A component's names: the table entry any of them names, and how a record spells it.
pub use source::components::{component, recorded_component};

// Installing and removing: the job, its progress, the home's and a toolchain's locks, and
// deleting a tree that may hold read-only directories.
pub use dir::{remove_all, remove_tree};
pub use home::writable_home;
pub use install::Installed;
pub use job::Job;
pub use progress::Progress;
pub use toolchain_lock::{checked_name, lock_toolchain};

gpuenv_core::diagnostics!(
    /// gpuenv-install's error types that have hints (see `gpuenv_core::diagnostic`).
    pub(crate) fn find_diagnostic: InstallError, NoSource, Fault, ReadOnlyHome, Refused, LockFailed, lock::LockError
);

/// The finders for every error an install can return: its own and gpuenv-core's.
pub const FIND: &[Find] = &[find_diagnostic, gpuenv_core::hints::find];
