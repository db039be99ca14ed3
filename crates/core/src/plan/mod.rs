//! Plan: from a directory and an environment to what should run and with which variables
//! (resolution, the environment change, the torch guard, the host compiler, the build
//! cache, the module step, stale build directories). Reads the store and the project file; renders and execs nothing.

pub mod auto_install;
pub mod build_cache;
pub mod env;
pub mod exec;
pub mod guard;
pub mod host_compiler;
pub mod install_hint;
pub mod jit;
pub mod module;
pub mod native;
pub mod resolve;
pub mod runtime;
pub mod stale;
pub mod torch_pick;
