//! FM-02: leftovers of other toolkits in this environment. Entries of PATH,
//! LD_LIBRARY_PATH, LIBRARY_PATH, CPATH and CMAKE_PREFIX_PATH that switching would remove
//! (the same `Foreign` rule `gpuenv env` uses); another toolkit's nvcc or libcudart found
//! before the active one's; `lib` vs `lib64` mixups; and CUDA_HOME / ROCM_PATH that
//! disagree with the compiler on PATH.

use std::path::{Path, PathBuf};

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::context::vars;
use gpuenv_core::env::{Op, PATH_LISTS};
use gpuenv_core::module;
use gpuenv_core::resolve::Active;
use gpuenv_core::session;
use gpuenv_core::toolchain::Kind;

pub const CHECK: Check = Check {
    id: "FM-02",
    name: "stale-path",
};

/// What marks a directory as part of a toolkit of each kind.
struct Marks {
    home_vars: &'static [&'static str],
    lib: &'static str,
}

fn marks(kind: Kind) -> Marks {
    match kind {
        Kind::Cuda => Marks {
            home_vars: &[vars::CUDA_HOME, vars::CUDA_PATH],
            lib: "libcudart.so",
        },
        Kind::Rocm => Marks {
            home_vars: &[vars::ROCM_PATH, vars::HIP_PATH],
            lib: "libamdhip64.so",
        },
    }
}

/// The fix for every leftover, and the way to never get them again.
fn fix(notes: &mut Notes) {
    notes.hint("eval \"$(gpuenv env)\" puts the active toolchains first and drops other toolkits' entries (fish: gpuenv env --shell fish | source)");
    notes.hint("to switch exactly on every cd, add eval \"$(gpuenv hook bash)\" to ~/.bashrc (zsh: gpuenv hook zsh; fish: gpuenv hook fish | source)");
}

pub fn run(inputs: &Inputs) -> Finding {
    let m = &inputs.machine;
    let mut notes = Notes::default();
    let mut flagged: Vec<String> = Vec::new();

    // Entries that switching removes, other than the active toolchains' own.
    let lmfiles = m.var(vars::_LMFILES_);
    let change = session::change_for(
        &inputs.active,
        &inputs.registry,
        &inputs.home,
        None,
        lmfiles,
    );
    let loaded = module::scan_loaded(lmfiles.unwrap_or_default(), m.var(vars::LOADEDMODULES));
    for op in &change.ops {
        let Op::Remove(list, foreign) = op else {
            continue;
        };
        for e in m.path_list(list) {
            let path = Path::new(&e);
            let own = inputs
                .active
                .toolchains
                .iter()
                .any(|t| inputs.owned_by(t, path));
            if foreign.matches(e.as_ref()) && !own && !flagged.contains(&e) {
                let module = loaded.roots.iter().find(|r| path.starts_with(&r.root));
                let whose = match (inputs.owner_of(path), module) {
                    (Some(n), _) => format!("{n}, which is not active here"),
                    (None, Some(r)) => {
                        notes.hint(format!(
                            "module unload {} (then eval \"$(gpuenv env)\")",
                            r.module
                        ));
                        format!(
                            "the toolkit at {} that the loaded module {} ({}) put there",
                            r.root.display(),
                            r.module,
                            r.file.display()
                        )
                    }
                    (None, None) => "another toolkit".to_string(),
                };
                notes.problem(Status::Error, format!("{list} has {e}, of {whose}"));
                fix(&mut notes);
                flagged.push(e);
            }
        }
    }

    for kind in Kind::ALL {
        match inputs.active(kind) {
            Some(t) => check_active(inputs, t, &mut notes, &flagged),
            None => check_unmanaged(inputs, kind, &mut notes),
        }
    }
    let lists = PATH_LISTS.join(", ");
    let ok = if inputs.active.toolchains.is_empty() {
        "no toolchain is active; CUDA_HOME and ROCM_PATH agree with the compilers on PATH"
            .to_string()
    } else {
        let names: Vec<&str> = inputs
            .active
            .toolchains
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        format!(
            "no other toolkit in {lists} or the toolkit variables (active: {})",
            names.join(", ")
        )
    };
    notes.finish(CHECK, ok)
}

/// The first directory in `list` holding a file whose name starts with `prefix`.
fn first_with(inputs: &Inputs, list: &str, prefix: &str) -> Option<String> {
    inputs.machine.path_list(list).into_iter().find(|d| {
        fs_err::read_dir(d).is_ok_and(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
        })
    })
}

fn check_active(inputs: &Inputs, t: &Active, notes: &mut Notes, flagged: &[String]) {
    let m = &inputs.machine;
    let kind = t.entry.kind;
    let marks = marks(kind);
    let owned = |p: &Path| inputs.owned_by(t, p) || p == inputs.shims_dir();

    // Another toolkit's compiler or runtime found first shadows the active one.
    let compiler = kind.compiler();
    if let Some(found) = m.which(compiler) {
        let dir = found.parent().unwrap_or(Path::new("/"));
        if !owned(dir) && !flagged.iter().any(|f| Path::new(f) == dir) {
            notes.problem(
                Status::Error,
                format!(
                    "the first {compiler} on PATH is {}, not {}'s",
                    found.display(),
                    t.name
                ),
            );
            fix(notes);
        }
    }
    if let Some(dir) = first_with(inputs, vars::LD_LIBRARY_PATH, marks.lib) {
        if !owned(Path::new(&dir)) && !flagged.contains(&dir) {
            notes.problem(
                Status::Error,
                format!(
                    "LD_LIBRARY_PATH finds {}* in {dir} before {}'s",
                    marks.lib, t.name
                ),
            );
            fix(notes);
        }
    }

    // `<root>/lib` where the toolkit keeps `lib64` (or the reverse): conda uses lib.
    let view = inputs.view(t);
    for list in [vars::LD_LIBRARY_PATH, vars::LIBRARY_PATH] {
        for e in m.path_list(list) {
            let p = Path::new(&e);
            let is_lib_dir = matches!(
                p.file_name().and_then(|n| n.to_str()),
                Some("lib" | "lib64")
            );
            if is_lib_dir && owned(p) && p != view.lib && p != t.entry.lib_dir {
                notes.problem(
                    Status::Warn,
                    format!(
                        "{list} has {e}, but {} keeps its libraries in {} (lib vs lib64)",
                        t.name,
                        view.lib.display()
                    ),
                );
                fix(notes);
            }
        }
    }

    for var in marks.home_vars {
        if let Some(value) = m.var(var) {
            if Path::new(value) == view.home {
                // What gpuenv sets: the view, or a distribution prefix such as Debian's /usr,
                // whose tools need it (the guard is reached through PATH there).
            } else if Path::new(value) == t.entry.root {
                // The right toolkit, but its real root: $CUDA_HOME/bin/nvcc is then the real
                // compiler, and PyTorch extension builds skip the torch guard.
                notes.problem(
                    Status::Warn,
                    format!(
                        "{var}={value} is {}'s real root, not its view {}: builds that use ${var}/bin/{compiler} skip gpuenv's torch guard",
                        t.name,
                        view.root.display()
                    ),
                );
                fix(notes);
            } else if !owned(Path::new(value)) {
                let whose = inputs
                    .owner_of(Path::new(value))
                    .map_or(String::new(), |n| format!(" ({n})"));
                notes.problem(
                    Status::Error,
                    format!(
                        "{var}={value}{whose} is not the active {}: builds that use ${var}/bin/{compiler} get another toolkit",
                        t.name
                    ),
                );
                fix(notes);
            }
        }
    }
}

/// No toolchain of this kind is active: the variables should still agree with PATH.
fn check_unmanaged(inputs: &Inputs, kind: Kind, notes: &mut Notes) {
    let m = &inputs.machine;
    let compiler = kind.compiler();
    let Some(found) = m.which(compiler) else {
        return;
    };
    for var in marks(kind).home_vars {
        let Some(value) = m.var(var) else { continue };
        let named = PathBuf::from(value).join("bin").join(compiler);
        let same = match (fs_err::canonicalize(&named), fs_err::canonicalize(&found)) {
            (Ok(a), Ok(b)) => a == b,
            _ => named == found,
        };
        if !same {
            let root = found
                .parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new("/"));
            notes.problem(
                Status::Error,
                format!(
                    "{var}={value}, but the {compiler} on PATH is {}: builds using ${var} and builds using PATH get different toolkits",
                    found.display()
                ),
            );
            notes.hint(format!(
                "export {var}={} to match PATH, or let gpuenv set both: `gpuenv pin {kind}-<version>` then eval \"$(gpuenv env)\"",
                root.display()
            ));
        }
    }
}
