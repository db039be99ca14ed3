//! Which path-list entries belong to other toolchains than the active ones: what switching
//! removes.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::store::toolchain::Kind;

/// Which path-list entries belong to other toolchains: registered roots and views, and the
/// well-known install places.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Foreign {
    /// Sets, so an entry is looked up by its ancestors: a site store's hundreds of
    /// toolchains cost each PATH entry a few lookups, not a comparison with each. Shared by
    /// the path lists of one change, not copied into each.
    pub dirs: Arc<BTreeSet<PathBuf>>,
    /// Registered roots: foreign unless the root is a shared prefix (`/usr`, a conda
    /// environment). That costs a stat, so it is asked only of a root an entry is under,
    /// not of every registered one on every call.
    pub roots: Arc<BTreeSet<PathBuf>>,
    /// Views: `<views>/<name>` for one of these `views/` directories (the home's and the
    /// upstreams') and a registered name. Names, not hundreds of joined paths to order.
    pub views: Arc<(Vec<PathBuf>, BTreeSet<String>)>,
    pub kinds: Vec<Kind>,
}

impl Foreign {
    pub fn matches(&self, entry: &OsStr) -> bool {
        // The driver's and forward compatibility's directories are nobody's toolkit: only one
        // named exactly (a compat dir this driver cannot use, `Session::for_compat`) goes.
        if crate::facts::driver_dirs::is_driver_dir(entry) {
            return self.dirs.contains(Path::new(entry));
        }
        let (view_dirs, names) = &*self.views;
        let view = |a: &Path| {
            a.file_name()
                .and_then(OsStr::to_str)
                .is_some_and(|n| names.contains(n))
                && a.parent().is_some_and(|p| view_dirs.iter().any(|d| d == p))
        };
        let registered = |a: &Path| {
            self.dirs.contains(a)
                || view(a)
                || self.roots.contains(a) && !crate::store::toolchain::is_shared_prefix(a)
        };
        !entry.is_empty() && Path::new(entry).ancestors().any(registered)
            || self.kinds.iter().any(|k| is_well_known(*k, entry))
    }
}

/// `/usr/local/cuda`, `/usr/local/cuda-*`, `/opt/cuda*`, conda's `pkgs/cudatoolkit-*` for CUDA;
/// `/opt/rocm*` for ROCm.
pub fn is_well_known(kind: Kind, entry: &OsStr) -> bool {
    let comps: Vec<&[u8]> = Path::new(entry)
        .components()
        .take(4)
        .map(|c| c.as_os_str().as_bytes())
        .collect();
    let conda_pkg = || {
        entry
            .as_bytes()
            .windows(b"/pkgs/cudatoolkit-".len())
            .any(|w| w == b"/pkgs/cudatoolkit-")
    };
    match (kind, comps.as_slice()) {
        (Kind::Cuda, [b"/", b"usr", b"local", dir, ..]) => {
            *dir == b"cuda" || dir.starts_with(b"cuda-")
        }
        (Kind::Cuda, [b"/", b"opt", dir, ..]) => dir.starts_with(b"cuda"),
        (Kind::Cuda, _) => conda_pkg(),
        (Kind::Rocm, [b"/", b"opt", dir, ..]) => dir.starts_with(b"rocm"),
        (Kind::Rocm, _) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn well_known_places_by_kind() {
        for e in [
            "/usr/local/cuda/bin",
            "/usr/local/cuda-11.3/lib64",
            "/opt/cuda/bin",
            "/opt/cuda-12/lib",
            "/home/u/miniconda3/pkgs/cudatoolkit-11.3.1-h2bc3f7f_2/lib",
        ] {
            assert!(is_well_known(Kind::Cuda, e.as_ref()), "{e}");
            assert!(!is_well_known(Kind::Rocm, e.as_ref()), "{e}");
        }
        for e in ["/opt/rocm/bin", "/opt/rocm-6.2.0/lib"] {
            assert!(is_well_known(Kind::Rocm, e.as_ref()), "{e}");
        }
        for e in [
            "/usr/local/bin",
            "/usr/local/cudatools",
            "/opt/rocks",
            "/usr/bin",
            "",
        ] {
            assert!(!is_well_known(Kind::Cuda, e.as_ref()), "{e}");
            assert!(!is_well_known(Kind::Rocm, e.as_ref()), "{e}");
        }
    }

    #[test]
    fn views_of_registered_names_and_registered_roots_are_foreign() {
        let names = ["cuda-11.8", "cuda-12.4"].map(String::from).into();
        let foreign = Foreign {
            views: Arc::new((
                vec!["/home/u/gpuenv/views".into(), "/site/gpuenv/views".into()],
                names,
            )),
            roots: Arc::new(["/opt/cuda-11.8".into()].into()),
            ..Foreign::default()
        };
        for e in [
            "/home/u/gpuenv/views/cuda-11.8/bin",
            "/site/gpuenv/views/cuda-12.4/bin",
            "/site/gpuenv/views/cuda-12.4",
            "/opt/cuda-11.8/lib64",
        ] {
            assert!(foreign.matches(e.as_ref()), "{e}");
        }
        for e in [
            "/home/u/gpuenv/views/cuda-10.2/bin",
            "/elsewhere/views/cuda-12.4/bin",
            "/home/u/gpuenv/views",
            "/opt/cuda-11.8x/bin",
            "/usr/bin",
            "",
        ] {
            assert!(!foreign.matches(e.as_ref()), "{e}");
        }
    }

    #[test]
    fn driver_and_forward_compat_dirs_are_never_foreign() {
        let foreign = Foreign {
            roots: Arc::new(["/usr/local/cuda-13.4".into()].into()),
            kinds: vec![Kind::Cuda],
            ..Foreign::default()
        };
        for e in [
            "/usr/local/cuda/compat/lib.real",
            "/usr/local/cuda-13.4/compat",
            "/usr/local/nvidia/lib64",
            "/.singularity.d/libs",
        ] {
            assert!(!foreign.matches(e.as_ref()), "{e}");
        }
        assert!(foreign.matches("/usr/local/cuda-13.4/lib64".as_ref()));
    }
}
