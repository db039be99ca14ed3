//! FM-11: inside a SLURM job, the environment must carry the active toolchain (PATH with
//! its view or gpuenv's shims), and `SLURM_EXPORT_ENV=NONE` (from `--export=NONE`) would
//! start `srun` steps without it: works on the login node, CPU torch or the wrong toolkit
//! under srun.

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::context::vars;

pub const CHECK: Check = Check {
    id: "FM-11",
    name: "cluster-node",
};

/// `NONE`, `NIL`, or a variable list without `ALL`: steps do not inherit this environment.
pub fn export_drops_env(value: &str) -> bool {
    let parts: Vec<String> = value
        .split(',')
        .map(|p| p.trim().to_ascii_uppercase())
        .collect();
    match parts.first().map(String::as_str) {
        Some("NONE" | "NIL") => true,
        _ => !parts.iter().any(|p| p == "ALL"),
    }
}

pub fn run(inputs: &Inputs) -> Finding {
    let m = &inputs.machine;
    let Some(job) = m.var(vars::SLURM_JOB_ID) else {
        return CHECK.skip("not in a SLURM job (SLURM_JOB_ID is unset)");
    };
    let node = m.var(vars::SLURMD_NODENAME).unwrap_or("this node");
    let mut notes = Notes::default();
    notes.seen(format!("SLURM job {job} on {node}"));
    if inputs.active.toolchains.is_empty() {
        return notes.finish(
            CHECK,
            format!("SLURM job {job}: no toolchain is active here, so none can be missing"),
        );
    }
    let path = m.path_list(vars::PATH);
    let shims = inputs.shims_dir();
    let on_path = |dir: &std::path::Path| path.iter().any(|e| std::path::Path::new(e) == dir);
    let names: Vec<&str> = inputs
        .active
        .toolchains
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    let step = format!("srun gpuenv run {} -- <command>", names.join(" "));
    for t in &inputs.active.toolchains {
        let bin = inputs.view(t).bin;
        if !on_path(&bin) && !on_path(&shims) {
            notes.problem(
                Status::Error,
                format!(
                    "this job's environment lacks {}: PATH has neither {} nor {}, so tools come from whatever {node} has",
                    t.name,
                    bin.display(),
                    shims.display()
                ),
            );
            notes.hint(format!(
                "in the batch script, before srun: eval \"$(gpuenv env)\"; or run each step through gpuenv: {step}"
            ));
        }
    }
    if let Some(export) = m
        .var(vars::SLURM_EXPORT_ENV)
        .filter(|v| export_drops_env(v))
    {
        notes.problem(
            Status::Warn,
            format!(
                "SLURM_EXPORT_ENV={export}: srun steps start without this environment, dropping {}",
                names.join(", ")
            ),
        );
        notes.hint(format!(
            "submit with --export=ALL, or set the environment inside each step: {step}"
        ));
    }
    notes.finish(
        CHECK,
        format!(
            "SLURM job {job}: the environment carries {} and srun steps inherit it",
            names.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_export_settings_drop_the_environment() {
        for drops in ["NONE", "none", "NIL", "CUDA_VISIBLE_DEVICES"] {
            assert!(export_drops_env(drops), "{drops}");
        }
        for keeps in ["ALL", "ALL,FOO=bar"] {
            assert!(!export_drops_env(keeps), "{keeps}");
        }
    }
}
