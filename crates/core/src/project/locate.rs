//! Finding the toolchain file that applies to a directory.

use std::fs::Metadata;
use std::path::{Path, PathBuf};

use super::owner::{self, Facts, Foreign};
use super::{ProjectError, FILE_NAMES};
use crate::fsutil;

/// A toolchain file found on disk, with the metadata the hook's change detection stamps.
#[derive(Debug)]
pub struct Found {
    pub path: PathBuf,
    pub meta: Metadata,
    /// The directory entry itself (`lstat`): the link, when the name is one.
    pub link: Metadata,
}

/// The toolchain file this user applies at `dir`: the nearest one at or above it that is
/// theirs ([`owner`]) or in a directory of `safe`, and the nearer ones passed over.
#[derive(Debug, Default)]
pub struct Here {
    pub path: Option<PathBuf>,
    pub passed_over: Vec<Foreign>,
}

/// The nearest toolchain file at or above `dir` that this user may apply (see [`Here`]).
/// Someone else's entry is passed over before it is looked at: a FIFO or directory planted
/// in `/tmp` under the name is not this user's error to see.
pub fn find(dir: &Path, safe: &[PathBuf]) -> Result<Here, ProjectError> {
    let me = owner::me();
    let mut here = Here::default();
    for d in dir.ancestors() {
        let names = entries(d);
        if names.is_empty() {
            continue;
        }
        // The directory's own mode: one more stat, only where a file is.
        let dir_meta = fs_err::metadata(d).ok();
        let why = |file: &Metadata, link: &Metadata| match &dir_meta {
            Some(dm) => owner::why_foreign(Facts::of(file, link, dm), me),
            None => Some(owner::Why::OpenDirectory),
        };
        let mut foreign: Vec<Foreign> = names
            .iter()
            .filter_map(|(path, link)| {
                let why = why(link, link)?;
                Some(Foreign {
                    path: path.clone(),
                    dir: d.to_path_buf(),
                    why,
                })
            })
            .collect();
        if foreign.is_empty() {
            let Some(found) = one_file(d, names)? else {
                continue;
            };
            match why(&found.meta, &found.link) {
                None => {
                    here.path = Some(found.path);
                    return Ok(here);
                }
                Some(why) => foreign.push(Foreign {
                    path: found.path,
                    dir: d.to_path_buf(),
                    why,
                }),
            }
        }
        if owner::accepted(d, safe) {
            here.path = one_file(d, entries(d))?.map(|f| f.path);
            return Ok(here);
        }
        here.passed_over.extend(foreign);
    }
    Ok(here)
}

/// The one definition of "the nearest toolchain file", whoever it belongs to (the hook's
/// change detection stamps it; [`find`] decides whether it applies): in each directory from
/// `dir` up, a directory entry with one of the file names.
pub fn locate(dir: &Path) -> Result<Option<Found>, ProjectError> {
    for d in dir.ancestors() {
        if let Some(found) = one_file(d, entries(d))? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The entries in `d` with a toolchain file's name, and their `lstat`: a missing name
/// costs one call, and a dangling link is seen.
fn entries(d: &Path) -> Vec<(PathBuf, Metadata)> {
    FILE_NAMES
        .iter()
        .filter_map(|name| {
            let path = d.join(name);
            fs_err::symlink_metadata(&path).ok().map(|m| (path, m))
        })
        .collect()
}

/// The toolchain file of `d`'s `entries`. Anything there but a regular file (or a link to
/// one) is an error naming it, never skipped: a directory, FIFO or device named
/// gpuenv.toml is a mistake to show.
fn one_file(d: &Path, entries: Vec<(PathBuf, Metadata)>) -> Result<Option<Found>, ProjectError> {
    let mut found: Option<Found> = None;
    for (path, link) in entries {
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
        found = Some(Found { path, meta, link });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_nearest_file_walking_up() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        fs_err::create_dir_all(&sub).unwrap();
        let find = |d: &Path| find(d, &[]).map(|h| h.path);
        assert_eq!(find(&sub).unwrap(), None);
        fs_err::write(dir.path().join(".gpuenv.toml"), "").unwrap();
        assert_eq!(find(&sub).unwrap(), Some(dir.path().join(".gpuenv.toml")));
        fs_err::write(dir.path().join("a/gpuenv.toml"), "").unwrap();
        assert_eq!(find(&sub).unwrap(), Some(dir.path().join("a/gpuenv.toml")));
        fs_err::write(dir.path().join("a/.gpuenv.toml"), "").unwrap();
        assert!(matches!(find(&sub), Err(ProjectError::Both { .. })));
    }

    #[test]
    fn a_file_in_a_directory_anyone_may_write_is_passed_over_for_the_next_one_up() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        fs_err::create_dir_all(&open).unwrap();
        fs_err::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        fs_err::write(open.join("gpuenv.toml"), "").unwrap();
        fs_err::write(dir.path().join("gpuenv.toml"), "").unwrap();
        let here = find(&open, &[]).unwrap();
        assert_eq!(here.path, Some(dir.path().join("gpuenv.toml")));
        assert_eq!(here.passed_over.len(), 1, "{here:?}");
        assert_eq!(here.passed_over[0].dir, open);
        // Accepted, it applies.
        let here = find(&open, std::slice::from_ref(&open)).unwrap();
        assert_eq!(here.path, Some(open.join("gpuenv.toml")));
        assert!(here.passed_over.is_empty());
    }
}
