//! The environment of an active set: one pure function computes an ordered change (set,
//! unset, prepend to a path list, remove entries), which is then applied to the current
//! values. Rendering it for a shell, or exec'ing with it, happens at the edges.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use crate::facts::arch::{self, CudaArch};
use crate::facts::{vars, Facts, InEffect, Platform};
use crate::plan::resolve::ActiveSet;
use crate::store::home::Home;
use crate::store::toolchain::registry::Registry;
use crate::store::toolchain::{system, view, Kind};

mod change;
mod foreign;

pub use change::{Applied, Change, Lookup, Op};
pub use foreign::{is_well_known, key as foreign_key, Foreign, Registered};

/// The path-list variables gpuenv edits.
pub use crate::facts::vars::PATH_LISTS;

fn path_str(p: &Path) -> OsString {
    p.as_os_str().to_owned()
}

/// What a trusted project's `[env]` and `[torch] index` need: the compatibility data in
/// effect (its copy is read only if the index is asked for) and the platform wheels must run
/// on (`None` on a board gpuenv knows no wheels for: no index then).
#[derive(Clone, Copy)]
pub struct ForProject<'a> {
    pub facts: &'a InEffect,
    pub platform: Option<Platform>,
}

/// The change that makes `active` the environment: the one function every other part uses.
/// `with_env`: given where the project's `[env]` and `[torch] index` may apply (once
/// trusted).
pub fn plan(
    active: &ActiveSet,
    registry: &Registry,
    home: &Home,
    with_env: Option<ForProject>,
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
        // front once, without copies. The registry is asked about each entry's ancestors
        // (a site store's hundreds are not gathered into sets on every call).
        // The home's views, and each upstream's that holds a view used here.
        let mut view_dirs = vec![home.views()];
        for dir in home.upstream_view_dirs() {
            if !view_dirs.iter().any(|x| x.as_os_str() == dir.as_os_str()) {
                view_dirs.push(dir.to_path_buf());
            }
        }
        let foreign = Foreign {
            dirs: Arc::default(),
            registered: Registered {
                toolchains: registry.toolchains.clone(),
                view_dirs,
            },
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
        if let Some(with) = with_env {
            for (k, v) in file.env().into_iter().flatten() {
                set(&mut ops, k, v.into());
            }
            if let Some(index) = file
                .torch_index()
                .and(with.platform)
                .and_then(|platform| torch_index(with.facts.facts(), active, platform))
            {
                // pip looks in both indexes; uv's own switch picks PyTorch's index itself.
                // Both lists keep the user's own indexes after gpuenv's (a company index
                // must not vanish inside a project: dependency confusion).
                let url = index.url();
                ops.push(Op::PrependWord(
                    vars::PIP_EXTRA_INDEX_URL.into(),
                    url.clone().into(),
                    None,
                ));
                if let Some(backend) = index.uv_backend() {
                    set(&mut ops, vars::UV_TORCH_BACKEND, backend.into());
                }
                // `uv lock`/`uv sync` ignore UV_TORCH_BACKEND (astral-sh/uv#17236); an index
                // named here is asked before PyPI, and its URL is recorded in uv.lock, so a
                // changed pin re-resolves torch.
                ops.push(Op::PrependWord(
                    vars::UV_INDEX.into(),
                    uv_index(&url).into(),
                    Some(format!("{UV_INDEX_NAME}=").into()),
                ));
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

/// The name gpuenv gives PyTorch's index in `UV_INDEX`.
const UV_INDEX_NAME: &str = "pytorch";

/// `UV_INDEX`'s entry for PyTorch's index: a named index, as `--index name=url` takes.
pub fn uv_index(url: &str) -> String {
    format!("{UV_INDEX_NAME}={url}")
}

/// PyTorch's wheel index for the project (the one chooser, `plan::torch_pick`); none when it
/// refuses (`gpuenv torch index` says why).
fn torch_index(
    facts: &Facts,
    active: &ActiveSet,
    platform: Platform,
) -> Option<crate::facts::torch_index::Chosen> {
    super::torch_pick::for_project(facts, active, platform)
        .ok()
        .map(|p| p.index)
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
