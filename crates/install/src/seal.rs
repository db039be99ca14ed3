//! Installed files are hard links into the download cache's unpacked trees (fast, and the
//! bytes are stored once), so a write to one is a write to both. Both are therefore made
//! read-only (files lose their write bits, as in the Nix and uv stores), and each unpacked
//! tree is sealed: a list of its entries with mode, size and sha256 is kept beside it and
//! checked before the tree is reused, so a tree changed since (by root, or by someone who
//! made a file writable again) is unpacked anew from its verified archive instead.
//!
//! The list, one entry a line, paths relative and escaped (`%XX` for bytes outside
//! printable ASCII, space and `%`), in sorted order:
//!
//! ```text
//! gpuenv-seal 1
//! d bin
//! f 555 1234 <sha256> bin/nvcc
//! l lib/libcudart.so libcudart.so.12
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::cache::sha256_file;
use super::dir::trusted_owner;
use super::objects::Objects;
use super::pathpart::Sha256;

const HEADER: &str = "gpuenv-seal 1";

/// What differs between a tree and its list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Changed {
    #[error("it has no list of its files")]
    NoList,
    #[error("`{0}` is not as it was unpacked")]
    Entry(String),
    #[error("`{0}` was added")]
    Added(String),
    #[error("`{0}` is missing")]
    Missing(String),
    #[error("`{0}` belongs to user {1}, not to you or root")]
    Foreign(String, u32),
}

/// Removes the write bits of every file under `root` (links and directories stay as
/// they are).
pub fn read_only(root: &Path) -> io::Result<()> {
    walk(root, &mut |_, path, kind| {
        if kind.is_file() {
            let mode = fs_err::symlink_metadata(path)?.permissions().mode();
            if mode & 0o222 != 0 {
                fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode & !0o222))?;
            }
        }
        Ok(())
    })
}

/// Makes the files of `tree` read-only, stores each once in `objects` (identical files of
/// other trees become the same inode) and writes their list to `list`.
pub fn seal(tree: &Path, list: &Path, objects: &Objects) -> io::Result<()> {
    read_only(tree)?;
    let text = describe(
        tree,
        &mut |path, sha256| {
            let sha256 = Sha256::parse(sha256).expect("sha256_file gives 64 hex digits");
            objects.share(path, &sha256).map(drop)
        },
        &mut |_, _| {},
    )?;
    // Readable by every user the tree is (`write_atomic` makes it rw-r--r--).
    gpuenv_core::fsutil::write_atomic(list, text.as_bytes())
}

/// Checks `tree` against the list written by [`seal`]. When it matches, each of its files
/// is stored once in `objects`, so a tree unpacked before gpuenv had a store joins it.
pub fn verify(tree: &Path, list: &Path, objects: &Objects) -> Result<(), Changed> {
    // Only a list and a tree that the user or root made are believed: anyone else could
    // have written both to match.
    let foreign = |path: &Path, meta: &std::fs::Metadata| {
        (!trusted_owner(meta.uid()))
            .then(|| Changed::Foreign(path.display().to_string(), meta.uid()))
    };
    match fs_err::symlink_metadata(list) {
        Ok(meta) if meta.is_file() => {
            if let Some(changed) = foreign(list, &meta) {
                return Err(changed);
            }
        }
        _ => return Err(Changed::NoList),
    }
    if let Some(changed) = fs_err::symlink_metadata(tree)
        .ok()
        .and_then(|m| foreign(tree, &m))
    {
        return Err(changed);
    }
    let Ok(want) = gpuenv_core::outside::read_text(list, gpuenv_core::outside::Kind::FileList)
    else {
        return Err(Changed::NoList);
    };
    let mut files = Vec::new();
    let mut stranger = None;
    let got = describe(
        tree,
        &mut |path, sha256| {
            files.push((path.to_path_buf(), sha256.to_string()));
            Ok(())
        },
        &mut |rel, meta| {
            if stranger.is_none() && !trusted_owner(meta.uid()) {
                stranger = Some(Changed::Foreign(escape(rel), meta.uid()));
            }
        },
    )
    .map_err(|_| Changed::Entry(".".into()))?;
    if let Some(changed) = stranger {
        return Err(changed);
    }
    if got == want {
        for (path, sha256) in files {
            let sha256 = Sha256::parse(&sha256).expect("sha256_file gives 64 hex digits");
            // Only an optimisation: a file the store cannot take stays as it is.
            let _ = objects.share(&path, &sha256);
        }
        return Ok(());
    }
    // Name the first entry that differs.
    let entries = |text: &str| -> BTreeMap<String, String> {
        text.lines()
            .skip(1)
            .filter_map(|l| {
                let path = l.rsplit(' ').next()?.to_string();
                let path = if l.starts_with("l ") {
                    l.split(' ').nth(1)?.to_string()
                } else {
                    path
                };
                Some((path, l.to_string()))
            })
            .collect()
    };
    let (want, got) = (entries(&want), entries(&got));
    for (path, line) in &want {
        match got.get(path) {
            None => return Err(Changed::Missing(path.clone())),
            Some(l) if l != line => return Err(Changed::Entry(path.clone())),
            Some(_) => {}
        }
    }
    let added = got.keys().find(|p| !want.contains_key(*p));
    Err(Changed::Added(added.cloned().unwrap_or_default()))
}

/// The list of `tree`'s entries, hashing every file; `hashed(path, sha256)` is called for
/// each file once its bytes are hashed, `seen(relative path, metadata)` for every entry.
fn describe(
    tree: &Path,
    hashed: &mut dyn FnMut(&Path, &str) -> io::Result<()>,
    seen: &mut dyn FnMut(&Path, &std::fs::Metadata),
) -> io::Result<String> {
    let mut lines: BTreeMap<PathBuf, String> = BTreeMap::new();
    walk(tree, &mut |rel, path, kind| {
        seen(rel, &fs_err::symlink_metadata(path)?);
        let line = if kind.is_dir() {
            format!("d {}", escape(rel))
        } else if kind.is_symlink() {
            let target = fs_err::read_link(path)?;
            format!("l {} {}", escape(rel), escape(&target))
        } else {
            let meta = fs_err::symlink_metadata(path)?;
            let sha256 = sha256_file(path)?;
            hashed(path, &sha256)?;
            format!(
                "f {:o} {} {sha256} {}",
                meta.permissions().mode() & 0o7777,
                meta.len(),
                escape(rel)
            )
        };
        lines.insert(rel.to_path_buf(), line);
        Ok(())
    })?;
    let mut out = format!("{HEADER}\n");
    for line in lines.values() {
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// Calls `f(relative path, path, type)` for every entry below `root`, never following links.
pub(crate) fn walk(
    root: &Path,
    f: &mut dyn FnMut(&Path, &Path, std::fs::FileType) -> io::Result<()>,
) -> io::Result<()> {
    let mut stack = vec![PathBuf::new()];
    while let Some(dir) = stack.pop() {
        for item in fs_err::read_dir(root.join(&dir))? {
            let item = item?;
            let rel = dir.join(item.file_name());
            let kind = item.file_type()?;
            f(&rel, &item.path(), kind)?;
            if kind.is_dir() {
                stack.push(rel);
            }
        }
    }
    Ok(())
}

fn escape(p: &Path) -> String {
    let mut out = String::new();
    for &b in p.as_os_str().as_bytes() {
        if b.is_ascii_graphic() && b != b'%' {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(tree: &Path) -> Objects {
        Objects::new(tree.with_file_name("objects"))
    }

    fn sealed() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("t");
        fs_err::create_dir_all(tree.join("bin")).unwrap();
        fs_err::write(tree.join("bin/nvcc"), "#!/bin/sh\n").unwrap();
        fs_err::write(tree.join("a b%"), "x").unwrap();
        std::os::unix::fs::symlink("nvcc", tree.join("bin/link")).unwrap();
        let list = dir.path().join("t.seal");
        seal(&tree, &list, &Objects::new(dir.path().join("objects"))).unwrap();
        (dir, tree, list)
    }

    #[test]
    fn a_sealed_tree_is_read_only_and_verifies() {
        let (_d, tree, list) = sealed();
        let mode = fs_err::metadata(tree.join("bin/nvcc"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o222, 0);
        assert_eq!(verify(&tree, &list, &objects(&tree)), Ok(()));
        assert!(fs_err::read_to_string(&list)
            .unwrap()
            .contains(" a%20b%25\n"));
    }

    #[test]
    fn every_change_is_named() {
        let (_d, tree, list) = sealed();
        let nvcc = tree.join("bin/nvcc");
        fs_err::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o644)).unwrap();
        fs_err::write(&nvcc, "#!/bin/sh\necho pwned\n").unwrap();
        assert_eq!(
            verify(&tree, &list, &objects(&tree)),
            Err(Changed::Entry("bin/nvcc".into()))
        );
        fs_err::remove_file(&nvcc).unwrap();
        assert_eq!(
            verify(&tree, &list, &objects(&tree)),
            Err(Changed::Missing("bin/nvcc".into()))
        );
        let (_d, tree, list) = sealed();
        fs_err::write(tree.join("bin/extra"), "").unwrap();
        assert_eq!(
            verify(&tree, &list, &objects(&tree)),
            Err(Changed::Added("bin/extra".into()))
        );
        fs_err::remove_file(&list).unwrap();
        assert_eq!(verify(&tree, &list, &objects(&tree)), Err(Changed::NoList));
    }
}
