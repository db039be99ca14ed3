//! gpuenv's core: everything the CLI and the nvcc/hipcc proxy share. No CLI, network,
//! archive or progress-bar code lives here, so the proxy stays small.
//!
//! Layers, bottom to top; a module imports only its own layer and those below
//! (tests/it/core_layers.rs checks it): the base utilities at the root (`diagnostic`, `ui`,
//! `fsutil`, `outside` (every read of a file gpuenv did not write), `named`, `passwd`,
//! `path_list`, `pathpart`, `quote`, `stamp`), then `facts`, then `context` (the process
//! handle) with `ask` (every program gpuenv starts; it reads its deadline from the
//! context), then `store`, `project`, `plan`, `edges`. Below `edges` nothing prints: what
//! a user should be told is returned, or handed to a function the edge passed in
//! (tests/it/core_rules.rs checks both rules).

/// The project's home; messages link into its `docs/` from here (the one place naming it).
pub const REPOSITORY: &str = "https://github.com/gpuenv/gpuenv";

pub mod ask;
pub mod byte_search;
pub mod context;
pub mod diagnostic;
pub mod edges;
pub mod facts;
pub mod finding;
pub mod fsutil;
pub mod named;
pub mod outside;
pub mod passwd;
pub mod path_list;
pub mod pathpart;
pub mod plan;
pub mod project;
pub mod quote;
pub mod report_schema;
pub mod stamp;
pub mod store;
#[cfg(test)]
mod test_support;
pub mod ui;
pub mod user_file;

// The crate's public paths stay flat for the crates that use it; inside the core, code
// names the layer (`crate::plan::resolve`).
pub use edges::{hints, module_export, proxy, session, shell};
pub use facts::driver;
pub use plan::{
    auto_install, build_cache, env, guard, host_compiler, install_hint, module, resolve, stale,
};
pub use project::trust;
pub use store::{home, shims, toolchain};
