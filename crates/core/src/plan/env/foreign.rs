//! Which path-list entries belong to other toolchains than the active ones: what switching
//! removes.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::store::toolchain::toolchains::{root_key, Toolchains};
use crate::store::toolchain::Kind;

/// Which path-list entries belong to other toolchains: registered roots and views, and the
/// well-known install places.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Foreign {
    /// Sets, so an entry is looked up by its ancestors. Shared by the path lists of one
    /// change, not copied into each. Kept as bytes ([`key`]), compared as bytes.
    pub dirs: Arc<BTreeSet<OsString>>,
    /// The registered toolchains of these kinds, asked about an entry's ancestors.
    pub registered: Registered,
    pub kinds: Vec<Kind>,
}

/// The registry's toolchains, asked about a path-list entry's ancestors by name and by
/// root: a site store's hundreds cost each entry a few lookups, not a comparison with each,
/// and nothing is built of them for a call (`Toolchains::with_root`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Registered {
    /// Shared with the registry (a clone shares what was read).
    pub toolchains: Toolchains,
    /// The `views/` directories a view of a registered name is in: the home's and the
    /// upstreams'.
    pub view_dirs: Vec<PathBuf>,
}

impl Registered {
    /// `<views>/<name>`, for a views directory here and a toolchain of one of `kinds`.
    fn is_view(&self, a: &Path, kinds: &[Kind]) -> bool {
        // `a` is a key (as `key` writes it), compared as bytes with each directory's key.
        let under = |p: &Path| {
            let p = p.as_os_str().as_bytes();
            self.view_dirs.iter().any(|d| *root_key(d) == *p)
        };
        a.parent().is_some_and(under)
            && a.file_name()
                .and_then(OsStr::to_str)
                .and_then(|n| self.toolchains.get(n))
                .is_some_and(|e| kinds.contains(&e.kind))
    }

    /// The root of a toolchain of one of `kinds` that is not a system toolchain (whose
    /// prefix, `/usr`, is shared).
    fn is_root(&self, a: &Path, kinds: &[Kind]) -> bool {
        self.toolchains
            .with_root(a.as_os_str().as_bytes())
            .any(|e| e.system.is_none() && kinds.contains(&e.kind))
    }
}

impl Foreign {
    pub fn matches(&self, entry: &OsStr) -> bool {
        // The driver's and forward compatibility's directories are nobody's toolkit: only one
        // named exactly (a compat dir this driver cannot use, `Session::for_compat`) goes.
        if crate::facts::driver_dirs::is_driver_dir(entry) {
            return self.dirs.contains(entry);
        }
        // A registered root is foreign unless it is a shared prefix (`/usr`, a conda
        // environment): that costs a stat, so it is asked only of a root an entry is under.
        let registered = |a: &Path| {
            self.dirs.contains(a.as_os_str())
                || self.registered.is_view(a, &self.kinds)
                || self.registered.is_root(a, &self.kinds)
                    && !crate::store::toolchain::is_shared_prefix(a)
        };
        !entry.is_empty()
            && Path::new(OsStr::from_bytes(&root_key(Path::new(entry))))
                .ancestors()
                .any(registered)
            || self.kinds.iter().any(|k| is_well_known(*k, entry))
    }
}

/// `path` as the sets hold it: as written, unless it has an empty or `.` component or a
/// trailing `/`, which comparing by components ignores: then rebuilt from its components.
pub fn key(path: &Path) -> OsString {
    OsString::from_vec(root_key(path).into_owned())
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

    fn toolchains(entries: &[(&str, &str)]) -> Toolchains {
        use crate::store::toolchain::registry::Entry;
        entries
            .iter()
            .map(|(name, root)| {
                let version = name.trim_start_matches("cuda-");
                (name.to_string(), Entry::linked_cuda(root, version))
            })
            .collect()
    }

    #[test]
    fn views_of_registered_names_and_registered_roots_are_foreign() {
        let foreign = Foreign {
            registered: Registered {
                toolchains: toolchains(&[
                    ("cuda-11.8", "/tools/cuda-11.8"),
                    ("cuda-12.4", "/tools//cuda-12.4/"),
                ]),
                view_dirs: vec!["/home/u/gpuenv/views".into(), "/site/gpuenv/views".into()],
            },
            kinds: vec![Kind::Cuda],
            ..Foreign::default()
        };
        for e in [
            "/home/u/gpuenv/views/cuda-11.8/bin",
            "/site/gpuenv/views/cuda-12.4/bin",
            "/site/gpuenv/views/cuda-12.4",
            "/tools/cuda-11.8/lib64",
            "/tools//cuda-11.8/./lib64/",
            "/tools/cuda-11.8/",
            "/tools/cuda-12.4/bin",
        ] {
            assert!(foreign.matches(e.as_ref()), "{e}");
        }
        for e in [
            "/home/u/gpuenv/views/cuda-10.2/bin",
            "/elsewhere/views/cuda-12.4/bin",
            "/home/u/gpuenv/views",
            "/tools/cuda-11.8x/bin",
            "/usr/bin",
            "",
        ] {
            assert!(!foreign.matches(e.as_ref()), "{e}");
        }
        let rocm = Foreign {
            kinds: vec![Kind::Rocm],
            ..foreign
        };
        for e in [
            "/home/u/gpuenv/views/cuda-11.8/bin",
            "/tools/cuda-11.8/lib64",
        ] {
            assert!(!rocm.matches(e.as_ref()), "another kind's: {e}");
        }
    }

    #[test]
    fn driver_and_forward_compat_dirs_are_never_foreign() {
        let foreign = Foreign {
            registered: Registered {
                toolchains: toolchains(&[("cuda-13.4", "/usr/local/cuda-13.4")]),
                view_dirs: Vec::new(),
            },
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
