//! `$GPUENV_HOME/views/<name>/`: the toolchain root mirrored with links. Top-level entries
//! are linked whole, except `bin/`, whose entries are linked one by one so that `bin/nvcc`
//! and `bin/hipcc` can be the gpuenv proxy. Everything gpuenv exports points here.
//!
//! A view holds nothing but the mirror: what gpuenv knows about the toolchain is its entry
//! in the registry, which the proxy finds by the view's name. So no name in a root (a
//! `.gpuenv-view.toml` shipped by an archive, or a link planted to `~/.bashrc`) can meet a
//! file gpuenv writes, and a view is never written to after it is renamed into place.
//!
//! A system toolchain's view (Debian's packages) has only the compiler driver in `bin/`,
//! so putting it on PATH shadows nothing else; a distribution prefix itself (`/usr`, the
//! root of Debian's ROCm) is not mirrored at all: its tools expect `HIP_PATH=/usr`.

use std::path::{Path, PathBuf};

use super::registry::Entry;
use crate::fsutil::symlink;
use crate::store::home::Home;

#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("cannot create the view of {name} from {root}")]
    Create {
        name: String,
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the view of {name} is in an upstream ({}), which gpuenv never writes", path.display())]
    Upstream { name: String, path: PathBuf },
    #[error("cannot remove the view {path}")]
    Remove {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
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
pub fn create(home: &Home, name: &str, entry: &Entry, proxy: &Path) -> Result<PathBuf, ViewError> {
    let failed = |source| ViewError::Create {
        name: name.to_string(),
        root: entry.root.clone(),
        source,
    };
    let views = home.views();
    if let Some(theirs) = home.upstream_view(name) {
        return Err(ViewError::Upstream {
            name: name.to_string(),
            path: theirs,
        });
    }
    fs_err::create_dir_all(&views).map_err(failed)?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".tmp-{name}-"))
        .tempdir_in(&views)
        .map_err(failed)?;
    populate(tmp.path(), entry, proxy).map_err(failed)?;
    remove(home, name)?;
    let target = home.view(name);
    fs_err::rename(tmp.path(), &target).map_err(failed)?;
    // Renamed away: nothing left for the temp dir's guard to delete.
    let _ = tmp.keep();
    Ok(target)
}

fn populate(view: &Path, entry: &Entry, proxy: &Path) -> std::io::Result<()> {
    if entry.system.is_some() {
        populate_system(view, entry, proxy)
    } else {
        populate_mirror(view, entry, proxy)
    }
}

/// `bin/<compiler>` as the proxy and nothing else in `bin/`; the rest of a root of its own
/// (`/usr/lib/nvidia-cuda-toolkit`) mirrored, with the prefix's include and lib dirs.
fn populate_system(view: &Path, entry: &Entry, proxy: &Path) -> std::io::Result<()> {
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

fn populate_mirror(view: &Path, entry: &Entry, proxy: &Path) -> std::io::Result<()> {
    // A conda environment's bin/ also holds its python, pip and curl: its view's bin/ (first
    // on PATH where the toolchain is active) has the toolkit's programs only.
    let toolkit_only = super::is_shared_prefix(&entry.root);
    for item in fs_err::read_dir(&entry.root)? {
        let item = item?;
        let file_name = item.file_name();
        if file_name == "bin" && item.path().is_dir() {
            let bin = view.join("bin");
            fs_err::create_dir(&bin)?;
            for tool in fs_err::read_dir(item.path())? {
                let tool = tool?;
                let name = tool.file_name();
                let ours = name
                    .to_str()
                    .is_some_and(|n| super::system::is_toolkit_program(entry.kind, n));
                if toolkit_only && !ours {
                    continue;
                }
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
fn link_outside_dirs(view: &Path, entry: &Entry) -> std::io::Result<()> {
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

/// True if the view of `name` is there (a directory, not a link someone put in its place).
pub fn exists(home: &Home, name: &str) -> bool {
    fs_err::symlink_metadata(home.view(name)).is_ok_and(|m| m.is_dir())
}

/// The names of the views there are (not the temp dirs of changes under way).
pub fn names(home: &Home) -> Vec<String> {
    let Ok(rd) = fs_err::read_dir(home.views()) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.'))
        .collect()
}

/// Removes what changes killed midway left in `views/` (temp and set-aside views). Only
/// under the state lock, which every change of a view holds.
pub fn remove_leftovers(home: &Home) {
    let Ok(rd) = fs_err::read_dir(home.views()) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(".tmp-") || name.starts_with(".old-") {
            let _ = fs_err::remove_dir_all(e.path());
        }
    }
}

/// A view moved out of its place, until the change that moved it is saved or undone.
#[must_use]
pub struct Aside {
    place: PathBuf,
    moved: PathBuf,
}

impl Aside {
    /// Puts the view back where it was.
    pub fn restore(self) -> Result<(), ViewError> {
        fs_err::rename(&self.moved, &self.place).map_err(|source| ViewError::Remove {
            path: self.moved.clone(),
            source,
        })
    }

    pub fn discard(self) -> Result<(), ViewError> {
        // A link put where a view was is removed itself, never followed.
        fs_err::remove_dir_all(&self.moved).map_err(|source| ViewError::Remove {
            path: self.moved.clone(),
            source,
        })
    }
}

/// Moves the view of `name` out of its place (renamed, so a reader never sees half of
/// it), if there is one.
pub fn set_aside(home: &Home, name: &str) -> Result<Option<Aside>, ViewError> {
    let place = home.view(name);
    if fs_err::symlink_metadata(&place).is_err() {
        return Ok(None);
    }
    let moved = home
        .views()
        .join(format!(".old-{name}.{}", std::process::id()));
    fs_err::rename(&place, &moved).map_err(|source| ViewError::Remove {
        path: place.clone(),
        source,
    })?;
    Ok(Some(Aside { place, moved }))
}

/// Removes the view of `name` if there is one.
pub fn remove(home: &Home, name: &str) -> Result<(), ViewError> {
    match set_aside(home, name)? {
        Some(aside) => aside.discard(),
        None => Ok(()),
    }
}
