//! The environment of an active set: one pure function computes an ordered change (set,
//! unset, prepend to a path list, remove entries), which is then applied to the current
//! values. Rendering it for a shell, or exec'ing with it, happens at the edges.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::facts::arch::{self, CudaArch};
use crate::facts::{vars, Facts, InEffect};
use crate::path_list;
use crate::plan::resolve::ActiveSet;
use crate::store::home::Home;
use crate::store::toolchain::registry::Registry;
use crate::store::toolchain::{system, view, Kind};

/// The path-list variables gpuenv edits.
pub use crate::facts::vars::PATH_LISTS;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Set(String, OsString),
    Unset(String),
    /// Put these entries first in the list, removing their other copies.
    Prepend(String, Vec<OsString>),
    /// Drop the entries that belong to another toolchain of this kind.
    Remove(String, Foreign),
    /// Set, unless the variable holds a value of the user's: one that is not under the
    /// directory given (where gpuenv's own values for it live).
    Default(String, OsString, PathBuf),
    /// Unset, if the variable holds a value gpuenv set (one under the directory given); a
    /// value of the user's stays.
    Clear(String, PathBuf),
}

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
        // The driver's and forward compatibility's directories are nobody's toolkit.
        if crate::facts::driver_dirs::is_driver_dir(entry) {
            return false;
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

/// How a change reads the current value of a variable.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// A computed change, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Change {
    pub ops: Vec<Op>,
}

/// The variables a change touches: their values before and after (`None` = unset).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Applied {
    pub before: BTreeMap<String, Option<OsString>>,
    pub after: BTreeMap<String, Option<OsString>>,
}

impl Applied {
    /// Only the variables whose value differs, in name order.
    pub fn diff(&self) -> Vec<(&str, Option<&OsStr>)> {
        self.after
            .iter()
            .filter(|(k, v)| self.before.get(*k) != Some(v))
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect()
    }
}

impl Change {
    /// Applies the change to the current values, returning before and after for every
    /// variable it touches.
    pub fn apply(&self, current: Lookup) -> Applied {
        let mut applied = Applied::default();
        for op in &self.ops {
            let key = match op {
                Op::Set(k, _)
                | Op::Unset(k)
                | Op::Prepend(k, _)
                | Op::Remove(k, _)
                | Op::Default(k, _, _)
                | Op::Clear(k, _) => k,
            };
            let before = applied
                .before
                .entry(key.clone())
                .or_insert_with(|| current(key))
                .clone();
            let value = applied.after.get(key).cloned().unwrap_or(before);
            let new = match op {
                Op::Set(_, v) => Some(v.clone()),
                Op::Unset(_) => None,
                Op::Prepend(_, front) => {
                    let list = path_list::prepend(path_list::split(value.as_deref()), front);
                    Some(path_list::join(&list))
                }
                Op::Remove(_, foreign) => value.as_deref().map(|v| {
                    let list = path_list::remove(path_list::split(Some(v)), |e| foreign.matches(e));
                    path_list::join(&list)
                }),
                Op::Default(_, v, ours) => match value {
                    Some(user) if !user.is_empty() && !Path::new(&user).starts_with(ours) => {
                        Some(user)
                    }
                    _ => Some(v.clone()),
                },
                Op::Clear(_, ours) => value.filter(|v| !is_ours(v, ours)),
            };
            applied.after.insert(key.clone(), new);
        }
        applied
    }
}

/// A value gpuenv wrote: one naming a path under `ours` (as a whole, or after words such as
/// `ccache `).
fn is_ours(value: &OsStr, ours: &Path) -> bool {
    let (value, ours) = (value.as_bytes(), ours.as_os_str().as_bytes());
    (0..value.len()).any(|i| {
        (i == 0 || value[i - 1] == b' ')
            && value[i..].starts_with(ours)
            && value.get(i + ours.len()).is_none_or(|b| *b == b'/')
    })
}

fn path_str(p: &Path) -> OsString {
    p.as_os_str().to_owned()
}

/// The change that makes `active` the environment: the one function every other part uses.
/// `with_env`: the data in effect where the project's `[env]` and `[torch] index` may apply
/// (once trusted); its copy is read only if the index is asked for.
pub fn plan(
    active: &ActiveSet,
    registry: &Registry,
    home: &Home,
    with_env: Option<&InEffect>,
) -> Change {
    let mut ops = Vec::new();
    let set = |ops: &mut Vec<Op>, k: &str, v: OsString| ops.push(Op::Set(k.to_string(), v));
    let prepend = |ops: &mut Vec<Op>, k: &str, v: &Path| {
        ops.push(Op::Prepend(k.to_string(), vec![path_str(v)]))
    };
    // A dir the compilers or the loader search anyway is never pushed in front (Debian's
    // `/usr/include` there breaks libstdc++'s `#include_next <math.h>`).
    let prepend_dir = |ops: &mut Vec<Op>, k: &str, seen: &Path, real: &Path| {
        if !system::is_default_dir(real) {
            prepend(ops, k, seen);
        }
    };

    let kinds: Vec<Kind> = active.toolchains.iter().map(|t| t.entry.kind).collect();
    if !kinds.is_empty() {
        // Every registered toolchain of an active kind is foreign, the active ones included:
        // their real roots give way to the views prepended below, and the views move to the
        // front once, without copies.
        let of_kind = || {
            registry
                .toolchains
                .iter()
                .filter(|(_, e)| kinds.contains(&e.kind))
        };
        // The home's views, and each upstream's that holds a view used here.
        let mut view_dirs = vec![home.views()];
        // (Compared as bytes: they are joined from the same few roots, and hundreds of
        // component-wise comparisons are what this avoids.)
        for dir in home.upstream_views.values() {
            if !view_dirs.iter().any(|x| x.as_os_str() == dir.as_os_str()) {
                view_dirs.push(dir.to_path_buf());
            }
        }
        let foreign = Foreign {
            dirs: Arc::default(),
            views: Arc::new((view_dirs, of_kind().map(|(n, _)| n.clone()).collect())),
            // A system toolchain's prefix (`/usr`) is shared the same way.
            roots: Arc::new(
                of_kind()
                    .filter(|(_, e)| e.system.is_none())
                    .map(|(_, e)| e.root.clone())
                    .collect(),
            ),
            kinds: kinds.clone(),
        };
        for list in PATH_LISTS {
            ops.push(Op::Remove(list.to_string(), foreign.clone()));
        }
    }

    for t in &active.toolchains {
        let v = view::paths(home, &t.name, &t.entry);
        let root = path_str(&v.home);
        let e = &t.entry;
        match t.entry.kind {
            Kind::Cuda => {
                for k in Kind::Cuda.home_vars() {
                    set(&mut ops, k, root.clone());
                }
                set(&mut ops, vars::CUDACXX, path_str(&v.bin.join("nvcc")));
                // torch's extension builds run `$CUDA_HOME/bin/nvcc` (the proxy), behind
                // ccache or sccache when one is on PATH; PYTORCH_NVCC would turn that off, so
                // it is the user's alone (an older gpuenv's value is dropped).
                ops.push(Op::Clear(vars::PYTORCH_NVCC.into(), home.views()));
                torch_extensions(&mut ops, home, &t.name);
                jit_caches(&mut ops, home, &t.name);
                if let Some(cc) = active.host_compiler.as_ref().and_then(|c| c.compiler()) {
                    set(&mut ops, vars::CUDAHOSTCXX, path_str(cc));
                }
                prepend(&mut ops, vars::PATH, &v.bin);
                prepend_dir(&mut ops, vars::LD_LIBRARY_PATH, &v.lib, &e.lib_dir);
                prepend_dir(&mut ops, vars::LIBRARY_PATH, &v.lib, &e.lib_dir);
                prepend_dir(&mut ops, vars::CPATH, &v.include, &e.include_dir);
                if let Some(nccl) = &t.entry.collectives {
                    let through = |p: &Path| path_str(&v.through(&t.entry, p));
                    set(&mut ops, vars::NCCL_ROOT, through(&nccl.root));
                    set(&mut ops, vars::NCCL_INCLUDE_DIR, through(&nccl.include_dir));
                    set(&mut ops, vars::NCCL_LIB_DIR, through(&nccl.lib_dir));
                }
            }
            Kind::Rocm => {
                for k in Kind::Rocm.home_vars() {
                    set(&mut ops, k, root.clone());
                }
                set(&mut ops, vars::HIP_PLATFORM, "amd".into());
                if active.get(Kind::Cuda).is_none() {
                    torch_extensions(&mut ops, home, &t.name);
                }
                prepend(&mut ops, vars::PATH, &v.bin);
                prepend_dir(&mut ops, vars::LD_LIBRARY_PATH, &v.lib, &e.lib_dir);
                prepend_dir(&mut ops, vars::CPATH, &v.include, &e.include_dir);
                prepend_dir(&mut ops, vars::CMAKE_PREFIX_PATH, &v.home, &e.root);
                if let Some(rccl) = &t.entry.collectives {
                    set(
                        &mut ops,
                        vars::RCCL_HOME,
                        path_str(&v.through(&t.entry, &rccl.root)),
                    );
                }
            }
        }
    }

    if let Some(file) = &active.project {
        if !file.cuda_arch.is_empty() {
            set(
                &mut ops,
                vars::TORCH_CUDA_ARCH_LIST,
                arch::torch_list(&file.cuda_arch).into(),
            );
            // CMake >= 3.20 initialises CMAKE_CUDA_ARCHITECTURES from this variable (it never
            // reads CMAKE_CUDA_ARCHITECTURES from the environment).
            let cmake: Vec<String> = file.cuda_arch.iter().map(CudaArch::cmake).collect();
            set(&mut ops, vars::CUDAARCHS, cmake.join(";").into());
        }
        if !file.rocm_arch.is_empty() {
            let semicolons = arch::rocm_list(&file.rocm_arch, ";");
            set(&mut ops, vars::PYTORCH_ROCM_ARCH, semicolons.clone().into());
            set(&mut ops, vars::GPU_TARGETS, semicolons.into());
            // What the Perl hipcc of ROCm <= 5.x targets when the command line names none.
            set(
                &mut ops,
                vars::HCC_AMDGPU_TARGET,
                arch::rocm_list(&file.rocm_arch, ",").into(),
            );
        }
        // `env()` and `torch_index()` are empty until the file is trusted.
        if let Some(facts) = with_env {
            for (k, v) in file.env().into_iter().flatten() {
                set(&mut ops, k, v.into());
            }
            if let Some(index) = file
                .torch_index()
                .and_then(|_| torch_index(facts.facts(), active))
            {
                // pip looks in both indexes; uv's own switch picks PyTorch's index itself.
                set(&mut ops, vars::PIP_EXTRA_INDEX_URL, index.url().into());
                set(&mut ops, vars::UV_TORCH_BACKEND, index.name.into());
                // `uv lock`/`uv sync` ignore UV_TORCH_BACKEND (astral-sh/uv#17236); an index
                // named here is asked before PyPI, and its URL is recorded in uv.lock, so a
                // changed pin re-resolves torch.
                set(&mut ops, vars::UV_INDEX, uv_index(&index.url()).into());
            }
        }
    }

    if let Some(dir) = active
        .project
        .as_ref()
        .and_then(|f| f.path.parent())
        .filter(|_| !active.toolchains.is_empty())
    {
        // torch's `load()` compiles in TORCH_EXTENSIONS_DIR, outside the project: the proxy
        // finds the project's file from here (`proxy::jit`).
        set(&mut ops, vars::GPUENV_PROJECT_DIR, path_str(dir));
    }
    if !active.toolchains.is_empty() {
        let names: Vec<&str> = active.toolchains.iter().map(|t| t.name.as_str()).collect();
        set(&mut ops, vars::GPUENV_ACTIVE, names.join(",").into());
    }
    Change { ops }
}

/// `UV_INDEX`'s value for PyTorch's index: a named index, as `--index name=url` takes.
pub fn uv_index(url: &str) -> String {
    format!("pytorch={url}")
}

/// PyTorch's wheel index for the active CUDA toolkit's release, if PyTorch has one.
fn torch_index(facts: &Facts, active: &ActiveSet) -> Option<&'static crate::facts::TorchIndex> {
    let v = &active.get(Kind::Cuda)?.entry.version;
    crate::facts::torch_index::for_release(facts, (v.major(), v.minor().unwrap_or(0)))
}

/// `TORCH_EXTENSIONS_DIR`, unless the user set one: JIT extensions (`load()`) built by one
/// toolchain's compiler are never loaded or rebuilt over by another's.
fn torch_extensions(ops: &mut Vec<Op>, home: &Home, name: &str) {
    ops.push(Op::Default(
        vars::TORCH_EXTENSIONS_DIR.into(),
        path_str(&home.torch_extensions().join(name)),
        home.torch_extensions(),
    ));
}

/// The kernel caches of JIT compilers whose cache variables their docs name: one per CUDA
/// toolchain, so nothing one toolkit built is loaded with another's headers and runtime
/// (FlashInfer keys its cache by neither). A user's own value stays.
pub const JIT_CACHES: [(&str, &str); 3] = [
    (vars::TRITON_CACHE_DIR, "triton"),
    (vars::CUPY_CACHE_DIR, "cupy"),
    (vars::FLASHINFER_WORKSPACE_BASE, "flashinfer"),
];

fn jit_caches(ops: &mut Vec<Op>, home: &Home, name: &str) {
    for (var, lib) in JIT_CACHES {
        let ours = home.jit_caches().join(lib);
        ops.push(Op::Default(var.into(), path_str(&ours.join(name)), ours));
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

    #[test]
    fn apply_records_before_and_after_and_reverts_exactly() {
        let change = Change {
            ops: vec![
                Op::Set("CUDA_HOME".into(), "/v".into()),
                Op::Remove(
                    "PATH".into(),
                    Foreign {
                        kinds: vec![Kind::Cuda],
                        ..Foreign::default()
                    },
                ),
                Op::Prepend("PATH".into(), vec!["/v/bin".into()]),
                Op::Prepend("CPATH".into(), vec!["/v/include".into()]),
                Op::Unset("GONE".into()),
            ],
        };
        let current = |k: &str| match k {
            "PATH" => Some("/home/u/bin:/usr/local/cuda-11.3/bin:/usr/bin".into()),
            "GONE" => Some("x".into()),
            _ => None,
        };
        let applied = change.apply(&current);
        assert_eq!(
            applied.after["PATH"].as_deref(),
            Some("/v/bin:/home/u/bin:/usr/bin".as_ref())
        );
        assert_eq!(
            applied.after["CPATH"].as_deref(),
            Some("/v/include".as_ref())
        );
        assert_eq!(applied.after["GONE"], None);
        assert_eq!(applied.before["CPATH"], None);
        assert_eq!(applied.before["PATH"], current("PATH"));
        assert_eq!(applied.diff().len(), 4);
    }

    #[test]
    fn a_default_keeps_the_users_value_and_replaces_gpuenvs_own() {
        let op = Op::Default(
            "TORCH_EXTENSIONS_DIR".into(),
            "/h/te/b".into(),
            "/h/te".into(),
        );
        let change = Change { ops: vec![op] };
        let after = |v: Option<&str>| {
            let current = |_: &str| v.map(OsString::from);
            change.apply(&current).after["TORCH_EXTENSIONS_DIR"].clone()
        };
        let some = |s: &str| Some(OsString::from(s));
        assert_eq!(after(None), some("/h/te/b"));
        assert_eq!(after(Some("")), some("/h/te/b"));
        assert_eq!(after(Some("/h/te/a")), some("/h/te/b"));
        assert_eq!(after(Some("/mine")), some("/mine"));
    }

    #[test]
    fn a_clear_drops_gpuenvs_own_value_and_keeps_the_users() {
        let change = Change {
            ops: vec![Op::Clear("PYTORCH_NVCC".into(), "/h me/views".into())],
        };
        let after = |v: &str| {
            let current = |_: &str| Some(OsString::from(v));
            change.apply(&current).after["PYTORCH_NVCC"].clone()
        };
        assert_eq!(after("/h me/views/cuda-12.4/bin/nvcc"), None);
        assert_eq!(after("ccache /h me/views/cuda-12.4/bin/nvcc"), None);
        for mine in [
            "ccache nvcc",
            "/h me/views2/nvcc",
            "/usr/local/cuda/bin/nvcc",
        ] {
            assert_eq!(after(mine), Some(OsString::from(mine)), "{mine}");
        }
        let unset = |_: &str| None;
        assert_eq!(change.apply(&unset).after["PYTORCH_NVCC"], None);
    }
}
