//! gpuenv's core: everything the CLI and the nvcc/hipcc proxy share. No CLI, network,
//! archive or progress-bar code lives here, so the proxy stays small.

/// The project's home; messages link into its `docs/` from here (the one place naming it).
pub const REPOSITORY: &str = "https://github.com/gpuenv/gpuenv";

pub mod auto_install;
pub mod build_cache;
pub mod context;
pub mod cuda_tables;
pub mod diagnostic;
pub mod driver;
pub mod env;
pub mod facts;
pub mod fsutil;
pub mod guard;
pub mod home;
pub mod host_compiler;
pub mod module;
pub mod named;
pub mod passwd;
pub mod project;
pub mod proxy;
pub mod resolve;
pub mod shell;
pub mod shims;
pub mod store;
#[doc(hidden)]
pub mod test_support;
pub mod toolchain;
pub mod trust;
pub mod ui;
