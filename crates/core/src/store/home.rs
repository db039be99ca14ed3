//! The layout of `GPUENV_HOME`: where each part of gpuenv's own state lives. Everything
//! gpuenv writes is under one of these directories.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The proxy binary's file name, beside `gpuenv` and in `$GPUENV_HOME/bin/`.
pub const PROXY_NAME: &str = "gpuenv-shim";

/// Every entry gpuenv makes directly in `GPUENV_HOME`, and whether it holds toolchains
/// (what `self uninstall --keep-toolchains` keeps). Nothing else there is gpuenv's.
pub const OWN_ENTRIES: &[(&str, bool)] = &[
    ("toolchains", true),
    ("downloads", true),
    ("settings.toml", true),
    ("settings.toml.bak", true),
    ("views", false),
    ("shims", false),
    ("bin", false),
    ("cache", false),
    ("stamps", false),
    ("facts", false),
    ("torch-extensions", false),
    ("jit", false),
    (".lock", false),
];

/// The directories under `GPUENV_HOME`, and the upstream homes read after it.
#[derive(Debug, Clone)]
pub struct Home {
    pub root: PathBuf,
    /// Upstreams named by the environment and the system config (see `toolchain::upstream`).
    pub upstreams: Vec<PathBuf>,
    /// Upstream toolchains and the `views/` directory of their upstream (set by
    /// `upstream::layered`): the view is there when the upstream has one, else under
    /// `root`. Asked of the layered registry by name, and no stat of each: a site's
    /// hundreds are asked about only when used ([`Home::view`]).
    pub upstream_views: Option<Arc<dyn UpstreamViews>>,
}

/// Which upstream's `views/` directory a toolchain's view is in (the layered registry
/// answers).
pub trait UpstreamViews: fmt::Debug + Send + Sync {
    /// The `views/` directory of the upstream `name` comes from; `None` for the own home's.
    fn views_of(&self, name: &str) -> Option<&Path>;
    /// The `views/` directories of the upstreams some toolchain comes from, each once.
    fn dirs(&self) -> Vec<Arc<Path>>;
}

impl Home {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Home {
            root: root.into(),
            upstreams: Vec::new(),
            upstream_views: None,
        }
    }
    /// Registered toolchains, the default and trusted files.
    pub fn settings(&self) -> PathBuf {
        self.root.join("settings.toml")
    }
    /// The settings as they were before the last write.
    pub fn settings_backup(&self) -> PathBuf {
        self.root.join("settings.toml.bak")
    }
    /// Serialises every change to the settings, views and shims.
    pub fn lock_file(&self) -> PathBuf {
        self.root.join(".lock")
    }
    pub fn views(&self) -> PathBuf {
        self.root.join("views")
    }
    pub fn view(&self, name: &str) -> PathBuf {
        self.upstream_view(name)
            .unwrap_or_else(|| self.views().join(name))
    }
    /// The view an upstream has of its toolchain `name`: a directory (not a link) there.
    pub fn upstream_view(&self, name: &str) -> Option<PathBuf> {
        let view = self.upstream_views.as_ref()?.views_of(name)?.join(name);
        fs_err::symlink_metadata(&view)
            .is_ok_and(|m| m.is_dir())
            .then_some(view)
    }
    /// The `views/` directories of the upstreams some registered toolchain comes from.
    pub fn upstream_view_dirs(&self) -> Vec<Arc<Path>> {
        self.upstream_views
            .as_ref()
            .map(|u| u.dirs())
            .unwrap_or_default()
    }
    /// The home a view directory belongs to, and the view's name: `<home>/views/<name>`.
    pub fn of_view(view: &Path) -> Option<(Home, String)> {
        let name = view.file_name()?.to_str()?.to_string();
        let views = view.parent()?;
        if views.file_name()? != "views" {
            return None;
        }
        Some((Home::new(views.parent()?), name))
    }
    pub fn shims(&self) -> PathBuf {
        self.root.join("shims")
    }
    pub fn toolchains(&self) -> PathBuf {
        self.root.join("toolchains")
    }
    /// The installed copy of the proxy binary every shim links to.
    pub fn proxy(&self) -> PathBuf {
        self.root.join("bin").join(PROXY_NAME)
    }
    pub fn downloads(&self) -> PathBuf {
        self.root.join("downloads")
    }
    /// Files whose modification times the shell hook compares against (`shell::fast_path`).
    pub fn stamps(&self) -> PathBuf {
        self.root.join("stamps")
    }
    /// The shell hook's ways back to the directory before a run (`shell::hop`).
    pub fn hops(&self) -> PathBuf {
        self.root.join("cache/hops")
    }
    /// What each host compiler's `--version` printed (`host_compiler::cache`).
    pub fn host_compilers(&self) -> PathBuf {
        self.root.join("cache/host-compilers")
    }
    /// Each `python3`'s remembered `sys.path` (`plan::guard::sys_path_cache`).
    pub fn python_paths(&self) -> PathBuf {
        self.root.join("cache/python-paths")
    }
    /// Compact copies of settings files, the own and the upstreams' (`registry_cache`).
    pub fn registry_cache(&self) -> PathBuf {
        self.root.join("cache/registry")
    }
    /// What each nvcc answered to `--list-gpu-arch` (`facts::tree`).
    pub fn tree_facts(&self) -> PathBuf {
        self.root.join("cache/tree-facts")
    }
    /// A newer copy of gpuenv's data (`facts::copies`).
    pub fn facts_file(&self) -> PathBuf {
        self.root.join(crate::facts::copies::FILE)
    }
    /// The data in effect here: the newest good copy in this home or its upstreams, when
    /// as new as the embedded data (read at the first question).
    pub fn facts_in_effect(&self) -> crate::facts::InEffect {
        crate::facts::InEffect::of_homes(
            std::iter::once(self.root.clone()).chain(self.upstreams.iter().cloned()),
        )
    }
    /// The proxy's markers of what it said about a build's archs (`proxy::archs`).
    pub fn arch_notices(&self) -> PathBuf {
        self.root.join("cache/arch-notices")
    }
    /// `TORCH_EXTENSIONS_DIR` of each toolchain: `torch-extensions/<name>`.
    pub fn torch_extensions(&self) -> PathBuf {
        self.root.join("torch-extensions")
    }
    /// Other JIT compilers' caches per toolchain: `jit/<library>/<name>`.
    pub fn jit_caches(&self) -> PathBuf {
        self.root.join("jit")
    }
    /// What each Triton `ptxas` said its release was, keyed on the file.
    pub fn ptxas_releases(&self) -> PathBuf {
        self.root.join("cache/ptxas")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_dir_names_its_home_and_toolchain() {
        let (home, name) = Home::of_view(Path::new("/h/gpuenv/views/cuda-12.1")).unwrap();
        assert_eq!(home.root, Path::new("/h/gpuenv"));
        assert_eq!(name, "cuda-12.1");
        assert_eq!(home.view(&name), Path::new("/h/gpuenv/views/cuda-12.1"));
        assert!(Home::of_view(Path::new("/opt/cuda-12.1")).is_none());
    }
}
