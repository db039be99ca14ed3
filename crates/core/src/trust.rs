//! Whether a toolchain file's `[env]` may be applied: trusted by path and content hash, so
//! an edited file needs trusting again.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::project::ProjectFile;
use crate::toolchain::registry::{Registry, Trusted};

pub fn content_hash(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

pub fn is_trusted(registry: &Registry, path: &Path, content: &[u8]) -> bool {
    let hash = content_hash(content);
    registry
        .trusted
        .iter()
        .any(|t| t.path == path && t.sha256 == hash)
}

/// Whether the `[env]` of the toolchain file in effect may be applied: it has one, and the
/// file is trusted as it is now.
pub fn env_allowed(registry: &Registry, project: Option<&ProjectFile>) -> std::io::Result<bool> {
    match project.filter(|p| !p.env.is_empty()) {
        Some(p) => Ok(is_trusted(registry, &p.path, &fs_err::read(&p.path)?)),
        None => Ok(false),
    }
}

/// What to tell the user when the file in effect has an `[env]` that is not applied
/// because it is not trusted (as it is now); `None` otherwise.
pub fn skipped_env_notice(project: Option<&ProjectFile>, trusted: bool) -> Option<String> {
    let p = project.filter(|p| !p.env.is_empty() && !trusted)?;
    Some(format!(
        "{} sets [env], which is not applied until you trust the file: gpuenv trust {}",
        p.path.display(),
        p.path.display()
    ))
}

/// Records `path` with its current content, replacing an older record of the same path.
pub fn trust(registry: &mut Registry, path: &Path, content: &[u8]) {
    registry.trusted.retain(|t| t.path != path);
    registry.trusted.push(Trusted {
        path: path.to_path_buf(),
        sha256: content_hash(content),
    });
}
