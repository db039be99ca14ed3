//! Finding the toolchain file that applies to a directory.

use std::fs::Metadata;
use std::path::{Path, PathBuf};

use super::{ProjectError, FILE_NAMES};
use crate::fsutil;

/// A toolchain file found on disk, with the metadata the hook's change detection stamps.
#[derive(Debug)]
pub struct Found {
    pub path: PathBuf,
    pub meta: Metadata,
}

/// The nearest toolchain file at or above `dir`.
pub fn find(dir: &Path) -> Result<Option<PathBuf>, ProjectError> {
    Ok(locate(dir)?.map(|f| f.path))
}

/// The one definition of "the toolchain file here", used by resolution and by the hook's
/// change detection: in each directory from `dir` up, a directory entry with one of the
/// file names. Anything there but a regular file (or a link to one) is an error naming it,
/// never skipped: a directory, FIFO or device named gpuenv.toml is a mistake to show.
pub fn locate(dir: &Path) -> Result<Option<Found>, ProjectError> {
    for d in dir.ancestors() {
        let mut found: Option<Found> = None;
        for name in FILE_NAMES {
            let path = d.join(name);
            // lstat first: a missing name costs one call, and a dangling link is seen.
            if fs_err::symlink_metadata(&path).is_err() {
                continue;
            }
            let meta = fs_err::metadata(&path).map_err(|e| ProjectError::Unreadable {
                path: path.clone(),
                message: fsutil::io_reason(&e),
            })?;
            if let Some(what) = fsutil::not_regular(&meta) {
                return Err(ProjectError::NotRegular { path, what });
            }
            if found.is_some() {
                return Err(ProjectError::Both {
                    dir: d.to_path_buf(),
                });
            }
            found = Some(Found { path, meta });
        }
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_nearest_file_walking_up() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        fs_err::create_dir_all(&sub).unwrap();
        assert_eq!(find(&sub).unwrap(), None);
        fs_err::write(dir.path().join(".gpuenv.toml"), "").unwrap();
        assert_eq!(find(&sub).unwrap(), Some(dir.path().join(".gpuenv.toml")));
        fs_err::write(dir.path().join("a/gpuenv.toml"), "").unwrap();
        assert_eq!(find(&sub).unwrap(), Some(dir.path().join("a/gpuenv.toml")));
        fs_err::write(dir.path().join("a/.gpuenv.toml"), "").unwrap();
        assert!(matches!(find(&sub), Err(ProjectError::Both { .. })));
    }
}
