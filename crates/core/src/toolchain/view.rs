//! `$GPUENV_HOME/views/<name>/`: the toolchain root mirrored with links. Top-level entries
//! are linked whole, except `bin/`, whose entries are linked one by one so that `bin/nvcc`
//! and `bin/hipcc` can be the gpuenv proxy. Everything gpuenv exports points here.
//!
//! A system toolchain's view (Debian's packages) has only the compiler driver in `bin/`,
//! so putting it on PATH shadows nothing else; a distribution prefix itself (`/usr`, the
//! root of Debian's ROCm) is not mirrored at all: its tools expect `HIP_PATH=/usr`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::registry::{Entry, Home};

/// Metadata kept inside each view, so a proxy invoked as `<view>/bin/nvcc` knows its
/// toolchain by reading one small file.
pub const META_FILE: &str = ".gpuenv-view.toml";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewMeta {
    pub name: String,
    pub entry: Entry,
}

/// Where a view's parts are; pure, so the environment can be computed without the disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewPaths {
    pub root: PathBuf,
    /// What `CUDA_HOME` / `ROCM_PATH` point at: the view, or for a toolchain whose root is
    /// a distribution prefix, the prefix itself.
    pub home: PathBuf,
    pub bin: PathBuf,
    pub include: PathBuf,
    pub lib: PathBuf,
}

impl ViewPaths {
    /// `dir` as seen through the view when it is inside the toolchain root, else unchanged.
    pub fn through(&self, entry: &Entry, dir: &Path) -> PathBuf {
        match dir.strip_prefix(&entry.root) {
            Ok(rel) if rel.as_os_str().is_empty() => self.root.clone(),
            Ok(rel) => self.root.join(rel),
            Err(_) => dir.to_path_buf(),
        }
    }
}

pub fn paths(home: &Home, name: &str, entry: &Entry) -> ViewPaths {
    let root = home.view(name);
    if is_prefix_root(entry) {
        return ViewPaths {
            bin: root.join("bin"),
            home: entry.root.clone(),
            include: entry.include_dir.clone(),
            lib: entry.lib_dir.clone(),
            root,
        };
    }
    let inside = |dir: &Path, fallback: &str| match dir.strip_prefix(&entry.root) {
        Ok(rel) => root.join(rel),
        Err(_) => root.join(fallback),
    };
    ViewPaths {
        bin: root.join("bin"),
        include: inside(&entry.include_dir, "include"),
        lib: inside(&entry.lib_dir, lib_fallback(entry)),
        home: root.clone(),
        root,
    }
}

/// The toolchain's root is the distribution prefix its files are spread over (`/usr`).
fn is_prefix_root(entry: &Entry) -> bool {
    entry
        .system
        .as_ref()
        .is_some_and(|s| s.prefix == entry.root)
}

fn lib_fallback(entry: &Entry) -> &'static str {
    match entry.kind {
        super::Kind::Cuda => "lib64",
        super::Kind::Rocm => "lib",
    }
}

/// (Re)creates the view of `name`, with `proxy` as its `bin/nvcc` or `bin/hipcc`. Built
/// beside and renamed into place.
pub fn create(home: &Home, name: &str, entry: &Entry, proxy: &Path) -> Result<PathBuf> {
    let views = home.views();
    fs_err::create_dir_all(&views)?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".tmp-{name}-"))
        .tempdir_in(&views)
        .with_context(|| format!("creating a temporary view in {}", views.display()))?;
    populate(tmp.path(), name, entry, proxy)
        .with_context(|| format!("creating the view of {name} from {}", entry.root.display()))?;
    let target = home.view(name);
    remove(home, name)?;
    let built = tmp.keep();
    fs_err::rename(&built, &target)?;
    Ok(target)
}

fn populate(view: &Path, name: &str, entry: &Entry, proxy: &Path) -> Result<()> {
    if entry.system.is_some() {
        populate_system(view, entry, proxy)?;
    } else {
        populate_mirror(view, entry, proxy)?;
    }
    let meta = ViewMeta {
        name: name.to_string(),
        entry: entry.clone(),
    };
    let text = toml::to_string_pretty(&meta).expect("view metadata always serializes");
    fs_err::write(view.join(META_FILE), text)?;
    Ok(())
}

/// `bin/<compiler>` as the proxy and nothing else in `bin/`; the rest of a root of its own
/// (`/usr/lib/nvidia-cuda-toolkit`) mirrored, with the prefix's include and lib dirs.
fn populate_system(view: &Path, entry: &Entry, proxy: &Path) -> Result<()> {
    fs_err::create_dir(view.join("bin"))?;
    symlink(proxy, &view.join("bin").join(entry.kind.compiler()))?;
    if is_prefix_root(entry) {
        return Ok(());
    }
    for item in fs_err::read_dir(&entry.root)? {
        let item = item?;
        if item.file_name() != "bin" {
            symlink(&item.path(), &view.join(item.file_name()))?;
        }
    }
    link_outside_dirs(view, entry)
}

fn populate_mirror(view: &Path, entry: &Entry, proxy: &Path) -> Result<()> {
    for item in fs_err::read_dir(&entry.root)? {
        let item = item?;
        let file_name = item.file_name();
        if file_name == "bin" && item.path().is_dir() {
            let bin = view.join("bin");
            fs_err::create_dir(&bin)?;
            for tool in fs_err::read_dir(item.path())? {
                let tool = tool?;
                // The compiler driver is the proxy, so `$CUDA_HOME/bin/nvcc` is guarded.
                let target = if tool.file_name() == entry.kind.compiler() {
                    proxy.to_path_buf()
                } else {
                    tool.path()
                };
                symlink(&target, &bin.join(tool.file_name()))?;
            }
        } else {
            symlink(&item.path(), &view.join(&file_name))?;
        }
    }
    link_outside_dirs(view, entry)
}

/// Layouts that keep headers or libraries outside the root (Debian's package) get them
/// linked in, so `$CUDA_HOME/include` and `$CUDA_HOME/lib64` work as tools expect.
fn link_outside_dirs(view: &Path, entry: &Entry) -> Result<()> {
    for (dir, link) in [
        (&entry.include_dir, "include"),
        (&entry.lib_dir, lib_fallback(entry)),
    ] {
        if !dir.starts_with(&entry.root) && !view.join(link).exists() {
            symlink(dir, &view.join(link))?;
        }
    }
    Ok(())
}

fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("linking {} -> {}: {e}", link.display(), target.display()),
        )
    })
}

/// Removes the view of `name` if there is one. Renamed away first, so a reader never sees
/// a half-removed view.
pub fn remove(home: &Home, name: &str) -> Result<()> {
    Ok(crate::fsutil::remove_tree(&home.view(name))?)
}

pub fn read_meta(view: &Path) -> Result<ViewMeta> {
    let path = view.join(META_FILE);
    let text = fs_err::read_to_string(&path)?;
    toml::from_str(&text).with_context(|| format!("{} is corrupt", path.display()))
}
