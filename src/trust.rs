//! Whether a toolchain file's `[env]` may be applied: trusted by path and content hash, so
//! an edited file needs trusting again.

use std::path::Path;

use sha2::{Digest, Sha256};

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

/// Records `path` with its current content, replacing an older record of the same path.
pub fn trust(registry: &mut Registry, path: &Path, content: &[u8]) {
    registry.trusted.retain(|t| t.path != path);
    registry.trusted.push(Trusted {
        path: path.to_path_buf(),
        sha256: content_hash(content),
    });
}
