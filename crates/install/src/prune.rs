//! What the download cache takes, and freeing it without touching installed toolchains.
//! Installed files are hard links to the cache's objects, so a file's bytes are counted once
//! (by inode) and those an installed toolchain links stay on disk whatever the cache drops.

use std::collections::HashSet;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::cache::{self, Cache, FileLock};
use super::pathpart::Sha256;

/// The parts of the cache, in the order their bytes are counted: a file shared by an
/// unpacked tree and the objects counts as an object.
pub const PARTS: [(&str, &str); 5] = [
    ("objects", "each unpacked file once, by content"),
    (
        "unpacked",
        "the unpacked archives (links to objects) and their seals",
    ),
    (
        "archives",
        "archives kept after unpacking (GPUENV_KEEP_ARCHIVES)",
    ),
    ("partial", "unfinished downloads"),
    ("meta", "index pages and manifests"),
];

/// Files (by device and inode) that installed toolchains hold.
#[derive(Debug, Default)]
pub struct Installed(HashSet<(u64, u64)>);

impl Installed {
    /// The files of every toolchain tree under `toolchains` (leftovers `.tmp-…` included:
    /// an install may be running).
    pub fn scan(toolchains: &Path) -> io::Result<Installed> {
        let mut set = HashSet::new();
        if toolchains.is_dir() {
            for_each_file(toolchains, &mut |meta| {
                set.insert((meta.dev(), meta.ino()));
            })?;
        }
        Ok(Installed(set))
    }

    fn holds(&self, meta: &std::fs::Metadata) -> bool {
        self.0.contains(&(meta.dev(), meta.ino()))
    }
}

/// Bytes and files, each inode counted once.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub bytes: u64,
    pub files: u64,
    /// Of those, what installed toolchains also link (freed only with them).
    pub installed: u64,
}

impl Usage {
    fn add(&mut self, meta: &std::fs::Metadata, installed: &Installed) {
        self.bytes += meta.len();
        self.files += 1;
        if installed.holds(meta) {
            self.installed += meta.len();
        }
    }
}

/// How much each of [`PARTS`] takes.
pub fn size(cache: &Cache, installed: &Installed) -> io::Result<Vec<Usage>> {
    let mut seen = HashSet::new();
    PARTS
        .iter()
        .map(|(part, _)| {
            let mut u = Usage::default();
            let dir = cache.root.join(part);
            if dir.is_dir() {
                for_each_file(&dir, &mut |meta| {
                    if seen.insert((meta.dev(), meta.ino())) {
                        u.add(meta, installed);
                    }
                })?;
            }
            Ok(u)
        })
        .collect()
}

/// Removes what no installed toolchain needs: partial downloads, archives, unpacked trees
/// no installed file links into, then the objects nothing links any more. With `all`,
/// everything: every unpacked tree, object and index page. Returns what was freed (bytes installed
/// toolchains keep are not counted). `waiting(name)` is called when an install holds a lock.
pub fn prune(
    cache: &Cache,
    installed: &Installed,
    all: bool,
    waiting: &dyn Fn(&str),
) -> anyhow::Result<Usage> {
    let mut freed = Usage::default();
    let mut seen = HashSet::new();
    let mut count = |path: &Path, freed: &mut Usage| -> io::Result<()> {
        if is_real_dir(path) {
            for_each_file(path, &mut |meta| {
                // Still linked from elsewhere (an object, another tree): not freed here.
                if seen.insert((meta.dev(), meta.ino()))
                    && !installed.holds(meta)
                    && meta.nlink() == 1
                {
                    freed.bytes += meta.len();
                    freed.files += 1;
                }
            })
        } else if let Ok(meta) = path.symlink_metadata() {
            if meta.nlink() == 1 {
                freed.bytes += meta.len();
                freed.files += 1;
            }
            Ok(())
        } else {
            Ok(())
        }
    };
    for part in ["partial", "archives", "unpacked", "objects", "meta"] {
        if matches!(part, "objects" | "meta") && !all {
            continue;
        }
        let dir = cache.root.join(part);
        let Ok(entries) = fs_err::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let _lock = lock_for(cache, part, &name, waiting)?;
            if part == "unpacked" && !all && in_use(cache, &name, installed)? {
                continue;
            }
            count(&path, &mut freed)?;
            if is_real_dir(&path) {
                // Renamed first so a half-removed tree is never taken for a whole one.
                let doomed = dir.join(format!(".prune-{}-{name}", std::process::id()));
                fs_err::rename(&path, &doomed)?;
                gpuenv_core::fsutil::remove_tree(&doomed)?;
            } else if path.symlink_metadata().is_ok() {
                fs_err::remove_file(&path)?;
            }
        }
    }
    // Objects whose last tree went: their only link is the store's own.
    let (bytes, files) = cache.objects().remove_unused()?;
    freed.bytes += bytes;
    freed.files += files;
    Ok(freed)
}

/// `<sha256>`, `<sha256>.seal`, `.tmp-<sha256>@…`: an install working on that archive holds
/// its lock, so the prune waits for it.
fn lock_for(
    cache: &Cache,
    part: &str,
    name: &str,
    waiting: &dyn Fn(&str),
) -> anyhow::Result<Option<FileLock>> {
    if matches!(part, "objects" | "meta") {
        return Ok(None);
    }
    let key = name
        .trim_start_matches(".tmp-")
        .split(['@', '.', '-'])
        .next()
        .and_then(|k| Sha256::parse(k).ok());
    match key {
        None => Ok(None),
        Some(key) => Ok(Some(cache::lock(&cache.lock_path(&key), || waiting(name))?)),
    }
}

/// An unpacked tree (or its seal) that an installed toolchain links into: kept, so
/// reinstalling it needs no download.
fn in_use(cache: &Cache, name: &str, installed: &Installed) -> io::Result<bool> {
    let tree = name.strip_suffix(".seal").unwrap_or(name);
    let Ok(key) = Sha256::parse(tree) else {
        return Ok(false);
    };
    let dir = cache.unpacked(&key);
    let mut used = false;
    if is_real_dir(&dir) {
        for_each_file(&dir, &mut |meta| used |= installed.holds(meta))?;
    }
    Ok(used)
}

/// A directory itself, not a link to one: what is planted in the cache is never followed.
fn is_real_dir(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.is_dir())
}

/// Calls `f` with the metadata of every regular file below `dir`, never following links.
fn for_each_file(dir: &Path, f: &mut dyn FnMut(&std::fs::Metadata)) -> io::Result<()> {
    crate::seal::walk(dir, &mut |_, path, kind| {
        if kind.is_file() {
            if let Ok(meta) = path.symlink_metadata() {
                f(&meta);
            }
        }
        Ok(())
    })
}
