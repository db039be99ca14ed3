//! FM-06: a `CMakeCache.txt` left by an earlier configure (a CPU-only build, another
//! toolkit) makes the next build reuse it: `#error "Expected GLOO_USE_CUDA to be defined"`
//! after rebuilding PyTorch with CUDA. Caches in the directory and two levels below it
//! (build/, build/<x>/, <subproject>/build/) are compared with the active toolchains.

use std::path::{Path, PathBuf};

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::diagnostic::Diagnostic as _;
use gpuenv_core::facts::build_files::{cmake_cache, is_false};
use gpuenv_core::outside;
use gpuenv_core::resolve::Active;
use gpuenv_core::stale;
use gpuenv_core::toolchain::Kind;

pub const CHECK: Check = Check {
    id: "FM-06",
    name: "stale-cmake-cache",
};

const CACHE: &str = "CMakeCache.txt";
const DEPTH: usize = 2;

/// Every cache at or below `dir`, at most `DEPTH` levels down, hidden dirs skipped.
pub fn find(dir: &Path) -> Vec<PathBuf> {
    stale::find::cmake_trees(dir, DEPTH)
        .into_iter()
        .map(|tree| tree.join(CACHE))
        .collect()
}

/// The path keys that name a toolkit, per kind.
fn path_keys(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Cuda => &[
            "CUDA_TOOLKIT_ROOT_DIR",
            "CUDAToolkit_ROOT",
            "CMAKE_CUDA_COMPILER",
        ],
        Kind::Rocm => &["ROCM_PATH", "HIP_ROOT_DIR"],
    }
}

fn use_key(kind: Kind) -> &'static str {
    match kind {
        Kind::Cuda => "USE_CUDA",
        Kind::Rocm => "USE_ROCM",
    }
}

/// A cached path is the toolchain's if it is in its view or root (also after resolving
/// links), or is gpuenv's proxy, which resolves the active toolchain itself. A view's path
/// names its toolchain: its nvcc resolves to the proxy too, but runs that view's toolkit.
fn belongs(inputs: &Inputs, t: &Active, value: &str) -> bool {
    let p = Path::new(value);
    let canon = |p: &Path| fs_err::canonicalize(p).ok();
    if p.starts_with(inputs.home.views()) {
        return inputs.owned_by(t, p);
    }
    inputs.owned_by(t, p)
        || p.starts_with(inputs.shims_dir())
        || canon(p).is_some_and(|c| {
            c == inputs.home.proxy()
                || canon(&inputs.home.proxy()).is_some_and(|proxy| c == proxy)
                || canon(&t.entry.root).is_some_and(|r| c.starts_with(r))
        })
}

pub fn run(inputs: &Inputs) -> Finding {
    let dir = inputs.machine.cwd();
    let caches = find(dir);
    if inputs.active.toolchains.is_empty() {
        return CHECK.skip(format!(
            "no toolchain is active here to compare {} CMakeCache.txt with",
            caches.len()
        ));
    }
    let mut notes = Notes::default();
    for path in &caches {
        // Anyone's file: read as the proxy's stale check reads it, to a limit.
        let Some(text) = outside::read_head(path, outside::Kind::CMakeCache) else {
            notes.seen(format!("cannot read {}", path.display()));
            continue;
        };
        // One parser for build files: the proxy's stale check reads caches with it too.
        let cache: std::collections::BTreeMap<String, String> = cmake_cache(&text)
            .into_iter()
            .map(|(k, s)| (k, s.value))
            .collect();
        let build_dir = path.parent().unwrap_or(dir);
        let before = notes.problem_count();
        let enabled = |kind: Kind| cache.get(use_key(kind)).map(|v| !is_false(v));
        // A build for none of the active kinds: a CPU build (or one for the other kind).
        let active_kinds: Vec<Kind> = inputs
            .active
            .toolchains
            .iter()
            .map(|t| t.entry.kind)
            .collect();
        let all_off = active_kinds.iter().all(|k| enabled(*k) == Some(false));
        if all_off {
            for k in &active_kinds {
                let key = use_key(*k);
                let t = inputs.active(*k).expect("kind is active");
                notes.problem(
                    Status::Error,
                    format!(
                        "{} was configured with {key}={}, but {} is active",
                        path.display(),
                        cache[key],
                        t.name
                    ),
                );
            }
        }
        // A CUDA tree is judged as the proxy's stale check judges it, from the same files
        // (CMake's compiler file first) through the same parser; the cache's other keys
        // below only when that finds nothing.
        let mut cuda_judged = false;
        if let Some(t) = inputs.active(Kind::Cuda).filter(|_| !all_off) {
            if let Some(mut stale) = stale_tree(inputs, t, build_dir) {
                stale.source_dir = stale::find::source_dir(build_dir);
                stale.generator = stale::find::generator(build_dir);
                notes.problem(Status::Error, stale.to_string());
                notes.hint(stale.hints().into_iter().next().unwrap_or_default());
                cuda_judged = true;
            }
        }
        for t in &inputs.active.toolchains {
            if cuda_judged && t.entry.kind == Kind::Cuda {
                continue;
            }
            for key in path_keys(t.entry.kind) {
                let Some(value) = cache.get(*key).filter(|v| !is_false(v)) else {
                    continue;
                };
                if !belongs(inputs, t, value) {
                    notes.problem(
                        Status::Error,
                        format!(
                            "{} has {key}={value}, but the active toolkit is {} at {}",
                            path.display(),
                            t.name,
                            inputs.view(t).root.display()
                        ),
                    );
                }
            }
        }
        if notes.problem_count() > before && !cuda_judged {
            notes.hint(format!(
                "rm -rf {}   (then rebuild: CMake configures afresh for the active toolchain)",
                build_dir.display()
            ));
        }
    }
    let ok = match caches.len() {
        0 => format!(
            "no CMakeCache.txt in {} or {DEPTH} levels below",
            dir.display()
        ),
        n => format!(
            "{n} CMakeCache.txt under {} agree with the active toolchains",
            dir.display()
        ),
    };
    notes.finish(CHECK, ok)
}

/// The proxy's refusal for a compile in `build_dir` under `t`, if it would refuse.
fn stale_tree(inputs: &Inputs, t: &Active, build_dir: &Path) -> Option<stale::StaleBuild> {
    let recorded = stale::find::recorded(build_dir, &[build_dir])?;
    let known = stale::Toolchains {
        home: &inputs.home,
        registry: &inputs.registry,
    };
    stale::compare(&recorded, t, &t.reason.to_string(), &known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_caches_in_the_dir_and_two_levels_below_but_not_hidden_ones() {
        let dir = tempfile::tempdir().unwrap();
        for rel in [
            "CMakeCache.txt",
            "build/CMakeCache.txt",
            "ext/build/CMakeCache.txt",
            "a/b/c/CMakeCache.txt",
            ".git/x/CMakeCache.txt",
        ] {
            let p = dir.path().join(rel);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(&p, "").unwrap();
        }
        let found: Vec<String> = find(dir.path())
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(
            found,
            [
                "CMakeCache.txt",
                "build/CMakeCache.txt",
                "ext/build/CMakeCache.txt"
            ]
        );
    }
}
