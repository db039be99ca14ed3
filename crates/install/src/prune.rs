//! What the download cache takes, and freeing it without touching installed toolchains.
//! Installed files are hard links to the cache's objects, so a file's bytes are counted once
//! (by inode) and those an installed toolchain links stay on disk whatever the cache drops.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use super::cache::{self, Cache, FileLock, Refused};
use super::dir::{kind, mine, Dir, Stat};
use rustix::fs::FileType;

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
        // The user's own directory (a link to it is theirs to make); nothing below is followed.
        if let Ok(dir) = Dir::open_path(toolchains) {
            for name in dir.names()? {
                dir.for_each_file(&name, &mut |st| {
                    set.insert((st.st_dev, st.st_ino));
                })?;
            }
        }
        Ok(Installed(set))
    }

    fn holds(&self, st: &Stat) -> bool {
        self.0.contains(&(st.st_dev, st.st_ino))
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
    fn add(&mut self, st: &Stat, installed: &Installed) {
        self.bytes += st.st_size as u64;
        self.files += 1;
        if installed.holds(st) {
            self.installed += st.st_size as u64;
        }
    }
}

/// What a prune did.
#[derive(Debug, Default)]
pub struct Pruned {
    pub freed: Usage,
    /// Entries gpuenv did not make, found in its parts and left alone.
    pub left: Vec<PathBuf>,
    /// Entries of other users (a shared cache), left to them.
    pub others: Vec<PathBuf>,
}

/// How much each of [`PARTS`] takes.
pub fn size(cache: &Cache, installed: &Installed) -> Result<Vec<Usage>, Refused> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (part, _) in PARTS {
        let mut u = Usage::default();
        if let Some(dir) = cache.part(part, false)? {
            for name in dir.names()? {
                let counted = dir.for_each_file(&name, &mut |st| {
                    if seen.insert((st.st_dev, st.st_ino)) {
                        u.add(st, installed);
                    }
                });
                match counted {
                    // Another user's private tree in a shared cache: not counted.
                    Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {}
                    other => other?,
                }
            }
        }
        out.push(u);
    }
    Ok(out)
}

/// Removes what no installed toolchain needs: partial downloads, archives, unpacked trees
/// no installed file links into, then the objects nothing links any more. With `all`,
/// everything: every unpacked tree, object and index page. Only names gpuenv makes are
/// removed (`cache::ours`), and no link is followed. Returns what was freed (bytes
/// installed toolchains keep are not counted). `waiting(name)` is called when an install
/// holds a lock. What the toolchains in `toolchains` hold is read once running installs
/// are done, so what they just linked counts as installed.
pub fn prune(
    cache: &Cache,
    toolchains: &Path,
    all: bool,
    waiting: &dyn Fn(&str),
) -> crate::Result<Pruned> {
    let mut pruned = Pruned::default();
    if cache.top(false)?.is_none() {
        return Ok(pruned);
    }
    // What running installs unpacked is not linked into their toolchains yet: wait for
    // them (they hold this lock shared until they are done).
    let _alone = cache.alone(|| waiting("the download cache"))?;
    let installed = &Installed::scan(toolchains)?;
    let mut seen = HashSet::new();
    for part in ["partial", "archives", "unpacked", "objects", "meta"] {
        if matches!(part, "objects" | "meta") && !all {
            continue;
        }
        let Some(dir) = cache.part(part, false)? else {
            continue;
        };
        if part == "objects" {
            let (bytes, files) = cache.objects().remove_all(&mut pruned.left)?;
            pruned.freed.bytes += bytes;
            pruned.freed.files += files;
            continue;
        }
        for name in dir.names()? {
            if !cache::ours(part, &name) {
                pruned.left.push(dir.join(&name));
                continue;
            }
            let Some(st) = dir.stat(&name)? else {
                continue;
            };
            // Another user's (root's too), in a shared cache: theirs to remove.
            if !mine(st.st_uid) {
                pruned.others.push(dir.join(&name));
                continue;
            }
            let name = name.to_string_lossy().into_owned();
            let _lock = lock_for(cache, part, &name, waiting)?;
            if part == "unpacked" && !all && in_use(&dir, &name, installed)? {
                continue;
            }
            let mut here = Usage::default();
            if kind(&st) == FileType::Directory {
                dir.for_each_file(&name, &mut |st| {
                    // Still linked from elsewhere (an object, another tree): not freed here.
                    if seen.insert((st.st_dev, st.st_ino))
                        && !installed.holds(st)
                        && st.st_nlink == 1
                    {
                        here.bytes += st.st_size as u64;
                        here.files += 1;
                    }
                })?;
            } else if st.st_nlink == 1 {
                // A link (planted: gpuenv makes none here) goes itself; what it leads to is
                // neither counted nor touched.
                here.bytes += st.st_size as u64;
                here.files += 1;
            }
            dir.remove_tree(&name)?;
            pruned.freed.bytes += here.bytes;
            pruned.freed.files += here.files;
        }
    }
    // Objects whose last tree went: their only link is the store's own.
    let (bytes, files) = cache.objects().remove_unused()?;
    pruned.freed.bytes += bytes;
    pruned.freed.files += files;
    Ok(pruned)
}

/// Removes the download cache's entries for these archives (their sha256s, as install
/// records name them): the kept archive, a partial download, the unpacked tree and its seal
/// (a file an installed toolchain shares stays on disk through its own link); then the
/// objects nothing links any more. For the archives of a release that was reaped, so nothing
/// of it stays in the cache.
pub fn drop_archives(
    cache: &Cache,
    toolchains: &Path,
    archives: &[String],
    waiting: &dyn Fn(&str),
) -> crate::error::Result<Pruned> {
    let mut pruned = Pruned::default();
    let keys: Vec<String> = archives
        .iter()
        .filter(|a| cache::is_sha256(a))
        .cloned()
        .collect();
    if keys.is_empty() || cache.top(false)?.is_none() {
        return Ok(pruned);
    }
    // What running installs unpacked is not linked into their toolchains yet: wait for them.
    let _alone = cache.alone(|| waiting("the download cache"))?;
    let installed = &Installed::scan(toolchains)?;
    for part in ["partial", "archives", "unpacked"] {
        let Some(dir) = cache.part(part, false)? else {
            continue;
        };
        for key in &keys {
            let names = if part == "unpacked" {
                vec![key.clone(), format!("{key}{}", cache::SEAL)]
            } else {
                vec![key.clone()]
            };
            let _lock = lock_for(cache, part, key, waiting)?;
            for name in names {
                let Some(st) = dir.stat(OsStr::new(&name))? else {
                    continue;
                };
                if !mine(st.st_uid) {
                    pruned.others.push(dir.join(OsStr::new(&name)));
                    continue;
                }
                let mut here = Usage::default();
                let count = &mut |st: &Stat| {
                    if !installed.holds(st) && st.st_nlink == 1 {
                        here.bytes += st.st_size as u64;
                        here.files += 1;
                    }
                };
                if kind(&st) == FileType::Directory {
                    dir.for_each_file(OsStr::new(&name), count)?;
                } else {
                    count(&st);
                }
                dir.remove_tree(OsStr::new(&name))?;
                pruned.freed.bytes += here.bytes;
                pruned.freed.files += here.files;
            }
        }
    }
    let (bytes, files) = cache.objects().remove_unused()?;
    pruned.freed.bytes += bytes;
    pruned.freed.files += files;
    Ok(pruned)
}

/// What a prune would free, and a prune `--all`: the bytes of every file whose links are
/// all in what it removes (so a file an installed toolchain, a kept tree or anything outside
/// the cache also links frees nothing). The objects a prune removes are those whose other
/// links all go with it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Frees {
    pub prune: u64,
    pub all: u64,
}

/// [`Frees`] of the cache as it is now, by the rules [`prune`] follows: only entries the
/// cache names and the user owns are removed; an unpacked tree an installed toolchain links
/// stays unless `--all`; index pages go only with `--all`.
pub fn frees(cache: &Cache, installed: &Installed) -> Result<Frees, Refused> {
    /// Per inode: size, links, links a prune removes, links the objects hold, links `--all`
    /// removes.
    #[derive(Default)]
    struct Links {
        size: u64,
        nlink: u64,
        pruned: u64,
        objects: u64,
        all: u64,
    }
    let mut inodes: std::collections::HashMap<(u64, u64), Links> = Default::default();
    if cache.top(false)?.is_none() {
        return Ok(Frees::default());
    }
    for (part, _) in PARTS {
        let Some(dir) = cache.part(part, false)? else {
            continue;
        };
        for name in dir.names()? {
            let Some(st) = dir.stat(&name)? else {
                continue;
            };
            let ours = part == "objects" || cache::ours(part, &name);
            if !ours || !mine(st.st_uid) {
                continue;
            }
            let text = name.to_string_lossy();
            let pruned = match part {
                "objects" | "meta" => false,
                "unpacked" => !in_use(&dir, &text, installed)?,
                _ => true,
            };
            dir.for_each_file(&name, &mut |st| {
                let l = inodes.entry((st.st_dev, st.st_ino)).or_default();
                l.size = st.st_size as u64;
                // u32 on some targets (aarch64).
                #[allow(clippy::unnecessary_cast)]
                {
                    l.nlink = st.st_nlink as u64;
                }
                l.pruned += u64::from(pruned);
                l.objects += u64::from(part == "objects");
                l.all += 1;
            })?;
        }
    }
    let mut out = Frees::default();
    for l in inodes.values() {
        if l.pruned + l.objects >= l.nlink {
            out.prune += l.size;
        }
        if l.all >= l.nlink {
            out.all += l.size;
        }
    }
    Ok(out)
}

/// `<sha256>`, `<sha256>.seal`, `.tmp-<sha256>@…`: an install working on that archive holds
/// its lock, so the prune waits for it.
fn lock_for(
    cache: &Cache,
    part: &str,
    name: &str,
    waiting: &dyn Fn(&str),
) -> crate::Result<Option<FileLock>> {
    if matches!(part, "objects" | "meta") {
        return Ok(None);
    }
    let key = name
        .trim_start_matches(".tmp-")
        .trim_start_matches(".old-")
        .split(['@', '.', '-'])
        .next()
        .and_then(|k| super::pathpart::Sha256::parse(k).ok());
    match key {
        None => Ok(None),
        Some(key) => Ok(Some(cache.lock(&key, || waiting(name))?)),
    }
}

/// An unpacked tree (or its seal) that an installed toolchain links into: kept, so
/// reinstalling it needs no download.
fn in_use(unpacked: &Dir, name: &str, installed: &Installed) -> io::Result<bool> {
    let tree = name.strip_suffix(cache::SEAL).unwrap_or(name);
    if !cache::is_sha256(tree) {
        return Ok(false);
    }
    let mut used = false;
    unpacked.for_each_file(OsStr::new(tree), &mut |st| used |= installed.holds(st))?;
    Ok(used)
}
