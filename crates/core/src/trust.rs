//! Whether a toolchain file's `[env]` may be applied: trusted by path and content hash, so
//! an edited file needs trusting again. The hash is the one of the bytes that were parsed
//! (`ProjectFile::sha256`): the file is never read a second time to check it.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::project::ProjectFile;
use crate::toolchain::registry::{Registry, Trusted};

pub fn content_hash(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

pub fn is_trusted(registry: &Registry, path: &Path, sha256: &str) -> bool {
    registry
        .trusted
        .iter()
        .any(|t| t.path == path && t.sha256 == sha256)
}

/// Whether the `[env]` (and `[torch] index`) of the toolchain file in effect may be
/// applied: it has one, and the file was trusted with exactly the content it was parsed from.
pub fn env_allowed(registry: &Registry, project: Option<&ProjectFile>) -> bool {
    project
        .filter(|p| !p.env.is_empty() || p.torch_index.is_some())
        .is_some_and(|p| is_trusted(registry, &p.path, &p.sha256()))
}

/// What to tell the user when the file in effect has an `[env]` that is not applied
/// because it is not trusted (as it is now); `None` otherwise.
pub fn skipped_env_notice(project: Option<&ProjectFile>, trusted: bool) -> Option<String> {
    let p = project.filter(|p| (!p.env.is_empty() || p.torch_index.is_some()) && !trusted)?;
    let what = if p.env.is_empty() {
        "[torch] index"
    } else {
        "[env]"
    };
    Some(format!(
        "{} sets {what}, which is not applied until you trust the file: gpuenv trust {}",
        p.path.display(),
        p.path.display()
    ))
}

/// Records the file as parsed, replacing an older record of the same path.
pub fn trust(registry: &mut Registry, file: &ProjectFile) {
    registry.trusted.retain(|t| t.path != file.path);
    registry.trusted.push(Trusted {
        path: file.path.clone(),
        sha256: file.sha256(),
    });
}
