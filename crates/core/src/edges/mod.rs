//! Edges: where a plan meets the outside (shell code, the proxy's exec, module files).
//! The top layer: nothing in the core imports it.

pub mod hints;
pub mod installer;
pub mod module_export;
pub mod proxy;
pub mod session;
pub mod shell;
