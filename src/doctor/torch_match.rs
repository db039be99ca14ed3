//! FM-01: does the active nvcc/hipcc match the CUDA/HIP version torch was built with? The
//! same comparison, policy and ways out as the guard in the proxy, without building.

use super::{Check, Finding, Inputs, Notes, Status};
use crate::guard::{self, Policy, Side, Verdict};
use crate::project::TorchCheck;
use crate::toolchain::Kind;

pub const CHECK: Check = Check {
    id: "FM-01",
    name: "torch-cuda-mismatch",
};

pub fn run(inputs: &Inputs) -> Finding {
    let torch = match &inputs.torch {
        Ok(t) => t,
        Err(why) => return Finding::skip(CHECK, why.clone()),
    };
    let kind = if torch.hip.is_some() {
        Kind::Rocm
    } else if torch.cuda.is_some() {
        Kind::Cuda
    } else {
        return Finding::skip(
            CHECK,
            format!(
                "torch {} is CPU-only, so no compiler can mismatch it (FM-03 says whether that is a problem)",
                torch.label()
            ),
        );
    };
    let built = torch.built_for(kind).map_or("?".into(), |v| v.to_string());
    let Some(tc) = inputs.active(kind) else {
        return Finding::skip(
            CHECK,
            format!(
                "torch {} is built for {kind} {built}, but no {kind} toolchain is active here to compare",
                torch.label()
            ),
        );
    };

    let mut notes = Notes::default();
    let file = inputs.active.project.as_ref();
    let policy = match Policy::choose(
        inputs.machine.var("GPUENV_TORCH_CHECK"),
        file.and_then(|f| Some((f.torch_check?, f.path.as_path()))),
    ) {
        Ok(p) => p,
        Err(msg) => {
            notes.problem(Status::Error, msg);
            notes.hint("set GPUENV_TORCH_CHECK to minor, major or off (or unset it)");
            return notes.finish(CHECK, "");
        }
    };
    // With the guard off, a mismatch still deserves a warning here.
    let rule = match policy.check {
        TorchCheck::Off => TorchCheck::Minor,
        other => other,
    };
    let verdict = guard::compare(kind, &tc.entry.version, torch, rule);
    notes.seen(format!("toolchain: {} ({})", tc.name, tc.reason));
    notes.seen(format!("torch: {}", torch.dir.display()));
    notes.seen(format!("policy: {} ({})", policy.check, policy.from));
    if let Verdict::Mismatch { torch: built } = &verdict {
        let status = if policy.check == TorchCheck::Off {
            Status::Warn
        } else {
            Status::Error
        };
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
        };
        let refusal = guard::refusal(&side, torch, &verdict, &policy).unwrap_or_default();
        for h in refusal.lines().filter_map(|l| l.strip_prefix("hint: ")) {
            if policy.check == TorchCheck::Off && h.contains("GPUENV_TORCH_CHECK=off") {
                continue;
            }
            notes.hint(h);
        }
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
