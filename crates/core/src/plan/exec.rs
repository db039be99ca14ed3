//! What to run in gpuenv's place: a program, its arguments and the environment changes.
//! Planned here (the proxy, the build cache); exec'd at the edges.

use std::ffi::OsString;
use std::path::PathBuf;

/// What the proxy (or `gpuenv run`) runs in its own place: the real tool, its arguments, and the
/// environment changes (`None` removes the variable), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// What changes in the environment (`None` = unset); values are bytes, passed on as they are.
    pub env: Vec<(String, Option<OsString>)>,
}
