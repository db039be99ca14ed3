//! `$GPUENV_HOME/views/<name>/`: the toolchain root mirrored with links. Top-level entries
//! are linked whole, except `bin/`, whose entries are linked one by one so that `bin/nvcc`
//! and `bin/hipcc` can be the gpuenv proxy. Everything gpuenv exports points here.

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
    let inside = |dir: &Path, fallback: &str| match dir.strip_prefix(&entry.root) {
        Ok(rel) => root.join(rel),
        Err(_) => root.join(fallback),
    };
    ViewPaths {
        bin: root.join("bin"),
        include: inside(&entry.include_dir, "include"),
        lib: inside(&entry.lib_dir, lib_fallback(entry)),
        root,
    }
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
    // Layouts that keep headers or libraries outside the root (Debian's package) get them
    // linked in, so `$CUDA_HOME/include` and `$CUDA_HOME/lib64` work as tools expect.
    for (dir, link) in [
        (&entry.include_dir, "include"),
        (&entry.lib_dir, lib_fallback(entry)),
    ] {
        if !dir.starts_with(&entry.root) && !view.join(link).exists() {
            symlink(dir, &view.join(link))?;
        }
    }
    let meta = ViewMeta {
        name: name.to_string(),
        entry: entry.clone(),
    };
    let text = toml::to_string_pretty(&meta).expect("view metadata always serializes");
    fs_err::write(view.join(META_FILE), text)?;
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
