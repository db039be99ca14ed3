//! gpuenv: rustup for GPU stacks.

/// The project's home; messages link into its `docs/` from here (the one place naming it).
pub const REPOSITORY: &str = "https://github.com/gpuenv/gpuenv";

pub mod auto_install;
pub mod cli;
pub mod context;
pub mod doctor;
pub mod env;
pub mod fsutil;
pub mod guard;
pub mod install;
pub mod project;
pub mod resolve;
pub mod shell;
pub mod shims;
#[cfg(test)]
mod test_support;
pub mod toolchain;
pub mod trust;
pub mod ui;
