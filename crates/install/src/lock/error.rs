//! `LockError`: a gpuenv.lock that cannot be read or is not valid, at file:line:column.

use std::path::{Path, PathBuf};

use gpuenv_core::diagnostic::Diagnostic;
use gpuenv_core::project::Location;
use gpuenv_core::ui::printable;

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{at}: {message}")]
    Invalid { at: Location, message: String },
    #[error("cannot read {}: {message}", shown(path))]
    Unreadable { path: PathBuf, message: String },
}

impl Diagnostic for LockError {
    fn hints(&self) -> Vec<String> {
        vec!["`gpuenv lock` writes a valid gpuenv.lock from the toolchains pinned here; a lock from elsewhere is checked, never trusted".into()]
    }
}

fn shown(path: &Path) -> String {
    printable(&path.to_string_lossy()).into_owned()
}
