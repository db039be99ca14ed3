//! FM-03: a CPU-only torch (`cuda = None`, a `+cpu` local version) where the project uses
//! CUDA or ROCm, and torchvision/torchaudio built for another variant than torch (pip's
//! resolver swapping one of them for a PyPI build is a common way to get there).

use std::path::Path;

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::facts::torch_index::Machine;
use gpuenv_core::facts::{self, Facts};
use gpuenv_core::guard::{self, TorchVersion};
use gpuenv_core::resolve::Reason;
use gpuenv_core::toolchain::Kind;

pub const CHECK: Check = Check {
    id: "FM-03",
    name: "cpu-only-torch",
};

const COMPANIONS: [&str; 2] = ["torchvision", "torchaudio"];

/// The variant of a build: the local version (`cu121`, `rocm6.0`, `cpu`), else what
/// version.py's `cuda`/`hip` imply (PyPI's default Linux wheels carry no local version).
pub fn variant(t: &TorchVersion) -> Option<String> {
    if let Some((_, local)) = t.version.as_deref().and_then(|v| v.split_once('+')) {
        return Some(local.to_string());
    }
    if let Some(v) = t.built_for(Kind::Cuda) {
        return Some(format!("cu{}{}", v.major(), v.minor().unwrap_or(0)));
    }
    if let Some(v) = t.built_for(Kind::Rocm) {
        return Some(format!("rocm{v}"));
    }
    t.version.as_ref().map(|_| "cpu".to_string())
}

fn is_cpu_only(t: &TorchVersion) -> bool {
    (t.cuda.is_none() && t.hip.is_none()) || variant(t).as_deref() == Some("cpu")
}

/// The PyTorch wheel index the one chooser picks for a toolkit version and the installed
/// torch (`None`: it refuses; the guard's hint then says why and what works).
pub fn wheel_index(facts: &Facts, machine: &Machine) -> Option<String> {
    gpuenv_core::facts::torch_choose::choose(facts, machine)
        .ok()
        .map(|p| p.index.url())
}

pub fn run(inputs: &Inputs) -> Finding {
    let torch = match &inputs.torch {
        Ok(t) => t,
        Err(why) => return CHECK.skip(why.to_string()),
    };
    let mut notes = Notes::default();
    let label = torch.label();
    let shown = |v: &Option<String>| v.as_deref().map_or("None".into(), |v| format!("'{v}'"));
    notes.seen(format!(
        "torch {label} at {} (version.py: cuda = {}, hip = {})",
        torch.dir.display(),
        shown(&torch.cuda),
        shown(&torch.hip)
    ));

    for t in &inputs.active.toolchains {
        let kind = t.entry.kind;
        if torch.built_for(kind).is_some() && !is_cpu_only(torch) {
            continue;
        }
        // A torch built for the other GPU kind in a project that pins this toolkit, not
        // torch, may not be the project's at all: said, not an error.
        let pinned = match t.reason {
            Reason::Torch(..) => true,
            Reason::File(..) => is_cpu_only(torch),
            _ => false,
        };
        let status = if pinned { Status::Error } else { Status::Warn };
        let field = match kind {
            Kind::Cuda => "cuda",
            Kind::Rocm => "hip",
        };
        let what = if is_cpu_only(torch) {
            "CPU-only".to_string()
        } else {
            format!("not built for {kind}")
        };
        notes.problem(
            status,
            format!(
                "torch {label} is {what} (version.py: {field} = None), but {} is active here ({})",
                t.name, t.reason
            ),
        );
        let machine = gpuenv_core::guard::hint_machine(
            kind,
            &t.entry.version,
            torch,
            inputs.machine.platform(),
        );
        notes.hint(match wheel_index(&inputs.facts, &machine) {
            Some(index) => format!(
                "pip install --force-reinstall torch torchvision torchaudio --index-url {index}"
            ),
            None => gpuenv_core::guard::torch_for_toolkit(
                &inputs.facts,
                &machine,
                torch.version.as_deref(),
            )
            .trim_start_matches("or ")
            .to_string(),
        });
    }

    let site = torch.dir.parent().unwrap_or(Path::new("/"));
    let torch_variant = variant(torch);
    let mut agree = Vec::new();
    for name in COMPANIONS {
        let Ok(pkg) = guard::read_torch(&site.join(name)) else {
            continue;
        };
        let pkg_label = pkg.label();
        match (
            &torch_variant,
            pkg.version.as_deref().and_then(|v| v.split_once('+')),
        ) {
            (Some(tv), Some((_, pv))) if tv != pv => {
                notes.problem(
                    Status::Error,
                    format!("{name} {pkg_label} is a {pv} build, but torch {label} is {tv}"),
                );
                let index = format!("{}/{tv}", facts::wheel_base::base());
                notes.hint(format!(
                    "reinstall them together from one index: pip install --force-reinstall torch=={} torchvision torchaudio --index-url {index}",
                    label.split('+').next().unwrap_or(&label)
                ));
            }
            _ => agree.push(format!("{name} {pkg_label}")),
        }
    }

    let mut ok = match (
        torch_variant.as_deref(),
        inputs.active.toolchains.is_empty(),
    ) {
        (Some("cpu") | None, true) => {
            format!("torch {label} is CPU-only, and no toolchain is active here to need more")
        }
        _ => format!(
            "torch {label} has the build this project needs ({})",
            torch_variant.as_deref().unwrap_or("?")
        ),
    };
    if !agree.is_empty() {
        ok.push_str(&format!("; {} agree", agree.join(", ")));
    }
    notes.finish(CHECK, ok)
}
