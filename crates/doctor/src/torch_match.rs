//! FM-01: does the active nvcc/hipcc match the CUDA/HIP version torch was built with? The
//! same comparison, policy and ways out as the guard in the proxy, without building. With
//! no toolchain active, the compiler torch's cpp_extension would pick (CUDA_HOME's, else
//! the one on PATH) is asked for its version instead.

use std::path::{Path, PathBuf};

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::context::vars;
use gpuenv_core::facts::torch_headers;
use gpuenv_core::guard::{self, Policy, Side, TorchVersion, Verdict};
use gpuenv_core::project::TorchCheck;
use gpuenv_core::toolchain::{detect, Kind};
use gpuenv_core::ui;

pub const CHECK: Check = Check {
    id: "FM-01",
    name: "torch-cuda-mismatch",
};

pub fn run(inputs: &Inputs) -> Finding {
    let torch = match &inputs.torch {
        Ok(t) => t,
        Err(why) => return CHECK.skip(why.to_string()),
    };
    let kind = if torch.hip.is_some() {
        Kind::Rocm
    } else if torch.cuda.is_some() {
        Kind::Cuda
    } else {
        return CHECK.skip(format!(
                "torch {} is CPU-only, so no compiler can mismatch it (FM-03 says whether that is a problem)",
                torch.label()
            ),
        );
    };

    let mut notes = Notes::default();
    let file = inputs.active.project.as_ref();
    let policy = match Policy::for_project(inputs.machine.var(vars::GPUENV_TORCH_CHECK), file) {
        Ok(p) => p,
        Err(msg) => {
            notes.problem(Status::Error, msg.to_string());
            notes.hint("set GPUENV_TORCH_CHECK to minor, major or off (or unset it)");
            return notes.finish(CHECK, "");
        }
    };
    // With the guard off, a mismatch still deserves a warning here.
    let (rule, status) = match policy.check {
        TorchCheck::Off => (TorchCheck::Minor, Status::Warn),
        other => (other, Status::Error),
    };
    let built = torch.built_for(kind).map_or("?".into(), |v| v.to_string());
    notes.seen(format!("torch: {}", torch.dir.display()));
    notes.seen(format!("policy: {} ({})", policy.check, policy.from));

    let Some(tc) = inputs.active(kind) else {
        return unmanaged(inputs, torch, kind, rule, status, notes);
    };
    let verdict = guard::compare(kind, &tc.entry.version, torch, rule);
    notes.seen(format!("toolchain: {} ({})", tc.name, tc.reason));
    if let Verdict::Mismatch { torch: built } = &verdict {
        notes.problem(
            status,
            format!(
                "torch {} is built for {kind} {built}, but the active {} is {} ({kind} {})",
                torch.label(),
                kind.compiler(),
                tc.name,
                tc.entry.version
            ),
        );
        let side = Side {
            name: &tc.name,
            kind,
            version: &tc.entry.version,
            root: &tc.entry.root,
            reason: tc.reason.to_string(),
            gpus: gpuenv_core::plan::torch_pick::declared_gpus(&inputs.active),
            platform: inputs.machine.platform(),
        };
        let refusal = guard::refusal(
            &inputs.facts,
            &inputs.registry,
            &side,
            torch,
            &verdict,
            &policy,
            guard::Occasion::Checking,
        )
        .unwrap_or_default();
        for h in refusal.hints {
            if policy.check == TorchCheck::Off && h.contains("GPUENV_TORCH_CHECK=off") {
                continue;
            }
            notes.hint(h);
        }
    }
    if kind == Kind::Cuda {
        let missing = torch_headers::missing(&tc.entry.include_dir);
        // A warning: only a CUDA extension build needs them, not every user of torch.
        if !missing.is_empty() {
            notes.problem(
                Status::Warn,
                format!(
                    "{} has no {} in {}: torch's ATen/cuda/CUDAContext.h includes them, so a CUDA extension of torch's cannot build with it",
                    tc.name,
                    missing.join(", "),
                    tc.entry.include_dir.display()
                ),
            );
            notes.hint("`gpuenv install torch` makes a toolkit of this torch's own CUDA wheels, which `cuda = \"torch\"` picks; or install a toolkit with those components (the default profile)");
        }
    }
    if let (Kind::Cuda, Some(value)) = (kind, nvcc_bypassing_gpuenv(inputs)) {
        notes.problem(
            Status::Warn,
            format!(
                "PYTORCH_NVCC={value} runs an nvcc that is not gpuenv's: torch's extension builds then skip {}, this guard and the project's [build] settings",
                tc.name
            ),
        );
        notes.hint("unset PYTORCH_NVCC (torch then runs $CUDA_HOME/bin/nvcc, gpuenv's, behind its own ccache), or end it with plain `nvcc` or the view's (`ccache nvcc`)");
    }
    notes.finish(
        CHECK,
        format!(
            "torch {} is built for {kind} {built}, matching {} ({kind} {}; policy {})",
            torch.label(),
            tc.name,
            tc.entry.version,
            policy.check
        ),
    )
}

/// A `PYTORCH_NVCC` whose compiler (its last word: torch allows a wrapper such as
/// `ccache nvcc`) is a path outside gpuenv's views and shims. A bare `nvcc` is found on PATH,
/// where gpuenv's view comes first.
fn nvcc_bypassing_gpuenv(inputs: &Inputs) -> Option<String> {
    let value = inputs.machine.var(vars::PYTORCH_NVCC)?;
    let compiler = Path::new(value.split_whitespace().last()?);
    let gpuenvs = compiler.components().count() == 1
        || compiler.starts_with(inputs.home.views())
        || compiler.starts_with(inputs.home.shims())
        || compiler == inputs.home.proxy();
    (!gpuenvs).then(|| ui::printable(value).into_owned())
}

/// The compiler torch.utils.cpp_extension would run with no gpuenv toolchain active.
fn compiler_torch_would_use(inputs: &Inputs, kind: Kind) -> Option<(PathBuf, String)> {
    let m = &inputs.machine;
    let homes: &[&str] = match kind {
        Kind::Cuda => &[vars::CUDA_HOME, vars::CUDA_PATH],
        Kind::Rocm => &[vars::ROCM_HOME, vars::ROCM_PATH],
    };
    let compiler = kind.compiler();
    homes
        .iter()
        .find_map(|var| {
            let p = PathBuf::from(m.var(var)?).join("bin").join(compiler);
            p.is_file().then(|| (p, format!("${var}/bin/{compiler}")))
        })
        .or_else(|| Some((m.which(compiler)?, format!("the {compiler} on PATH"))))
}

fn unmanaged(
    inputs: &Inputs,
    torch: &TorchVersion,
    kind: Kind,
    rule: TorchCheck,
    status: Status,
    mut notes: Notes,
) -> Finding {
    let label = torch.label();
    let Some((path, which)) = compiler_torch_would_use(inputs, kind) else {
        return CHECK.skip(format!(
                "torch {label} is a {kind} build, but no {kind} toolchain is active and no {} is reachable to compare",
                kind.compiler()
            ),
        );
    };
    let text = match inputs.machine.run(&path, &["--version"]) {
        Ok(text) => text,
        Err(e) => return CHECK.skip(e.to_string()),
    };
    let parsed = match kind {
        Kind::Cuda => detect::parse_nvcc_version(&text),
        Kind::Rocm => detect::parse_hip_version(&text),
    };
    let Some(version) = parsed else {
        return CHECK.skip(format!("`{} --version` printed no version", path.display()));
    };
    notes.seen(format!("{which}: {} ({kind} {version})", path.display()));
    if let Verdict::Mismatch { torch: built } = guard::compare(kind, &version, torch, rule) {
        notes.problem(
            status,
            format!(
                "torch {label} is built for {kind} {built}, but {which} ({}) is {kind} {version}, and no gpuenv toolchain is active to say otherwise",
                path.display()
            ),
        );
        notes.hint(format!(
            "pin the toolkit torch was built for: `gpuenv pin {kind}-{built}` (or `{kind} = \"torch\"` under [toolchain] in gpuenv.toml), then eval \"$(gpuenv env)\""
        ));
    }
    notes.finish(
        CHECK,
        format!(
            "torch {label} is built for {kind} {}, matching {which} ({kind} {version}; no gpuenv toolchain is active)",
            torch.built_for(kind).map_or("?".into(), |v| v.to_string())
        ),
    )
}
