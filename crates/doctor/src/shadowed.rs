//! FM-14: a directory on `LD_LIBRARY_PATH` that holds a library the active Python
//! environment's NVIDIA wheels also ship. The loader searches `LD_LIBRARY_PATH` before a
//! library's RUNPATH, so that copy is taken instead of the wheel's: JAX then prints "Unable
//! to load cuSPARSE" and falls back to the CPU. Whoever put the directory there (gpuenv, a
//! module, a profile) is named the same way.

use std::path::{Path, PathBuf};

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::context::vars;
use gpuenv_core::plan::runtime;

pub const CHECK: Check = Check {
    id: "FM-14",
    name: "shadowed-libraries",
};

pub fn run(inputs: &Inputs) -> Finding {
    let m = &inputs.machine;
    let prefixes = runtime::python_prefixes(
        m.ctx.path_var(vars::VIRTUAL_ENV).as_deref(),
        m.ctx.path_var(vars::CONDA_PREFIX).as_deref(),
        m.ctx.var_os(vars::PATH),
    );
    let wheels = runtime::wheel_libs(&prefixes);
    if wheels.is_empty() {
        let shown: Vec<String> = prefixes.iter().map(|p| p.display().to_string()).collect();
        return CHECK.skip(match shown.is_empty() {
            true => "no Python environment found (no VIRTUAL_ENV, CONDA_PREFIX or python3 on PATH)"
                .to_string(),
            false => format!("no NVIDIA CUDA wheels in {}", shown.join(", ")),
        });
    }
    let mut notes = Notes::default();
    let mut seen: Vec<PathBuf> = Vec::new();
    for entry in m.path_list(vars::LD_LIBRARY_PATH) {
        let dir = m.cwd().join(&entry);
        if seen.contains(&dir) {
            continue;
        }
        seen.push(dir.clone());
        for (lib, here, wheel) in runtime::shadowed_in(&dir, &wheels) {
            notes.problem(
                Status::Warn,
                format!(
                    "{lib}: {} on LD_LIBRARY_PATH shadows the wheel's {}",
                    here.display(),
                    wheel.display()
                ),
            );
            notes.hint(fix(&dir, inputs));
        }
    }
    let at: Vec<String> = prefixes.iter().map(|p| p.display().to_string()).collect();
    notes.seen(format!(
        "{} libraries of NVIDIA's CUDA wheels in {}",
        wheels.len(),
        at.join(", ")
    ));
    notes.finish(
        CHECK,
        "no directory on LD_LIBRARY_PATH shadows a library of the Python environment's NVIDIA wheels",
    )
}

/// The way out for one shadowing directory: gpuenv's own is left off by `gpuenv env`/the
/// hook; anyone else's comes off `LD_LIBRARY_PATH`.
fn fix(dir: &Path, inputs: &Inputs) -> String {
    let shown = dir.display();
    match inputs.owner_of(dir) {
        Some(name) => format!(
            "{shown} is {name}'s: gpuenv's own environment leaves it off LD_LIBRARY_PATH in this Python environment; run `gpuenv env`/open a new shell, or remove it from LD_LIBRARY_PATH where it was added (`gpuenv run --toolkit-libs -- CMD` gives one command the toolkit's libraries)"
        ),
        None => format!(
            "remove {shown} from LD_LIBRARY_PATH (the wheels' libraries find each other without it; linking uses LIBRARY_PATH)"
        ),
    }
}
