//! FM-12: the CUDA arch list (TORCH_CUDA_ARCH_LIST, else the `cuda-arch` pin that gpuenv
//! exports as it) against what the active nvcc can target, and no list at all on a machine
//! with no visible GPU (PyTorch's cpp_extension then fails with an IndexError).

use super::{Check, Finding, Inputs, Machine, Notes, Status};
use gpuenv_core::context::vars;
use gpuenv_core::facts::arch::{self, CudaArch, ListEntry, Problem};
use gpuenv_core::facts::{self, lookup, release_name, Coverage};
use gpuenv_core::install_hint;
use gpuenv_core::toolchain::Kind;
use gpuenv_core::ui::printable;

pub const CHECK: Check = Check {
    id: "FM-12",
    name: "arch-list",
};

/// Whether CUDA can see a GPU here: not hidden by CUDA_VISIBLE_DEVICES, and a device node.
pub fn gpu_visible(m: &Machine) -> bool {
    if let Some(v) = m.ctx.var(vars::CUDA_VISIBLE_DEVICES) {
        if matches!(v.trim(), "" | "-1" | "none" | "NoDevFiles") {
            return false;
        }
    }
    fs_err::read_dir(m.file("/dev")).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("nvidia")
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
    })
}

pub fn run(inputs: &Inputs) -> Finding {
    let Some(t) = inputs.active(Kind::Cuda) else {
        return CHECK.skip("no CUDA toolchain is active here");
    };
    let m = &inputs.machine;
    let mut notes = Notes::default();
    let (list, from) = match m.var(vars::TORCH_CUDA_ARCH_LIST) {
        // PyTorch asks the visible GPUs, as when the variable is unset.
        Some(v) if v.trim() == "native" => (Vec::new(), String::new()),
        Some(v) => (
            arch::parse_torch_list(v),
            vars::TORCH_CUDA_ARCH_LIST.to_string(),
        ),
        None => match &inputs.active.project {
            Some(p) if !p.cuda_arch.is_empty() => (
                p.cuda_arch.iter().map(pinned).collect(),
                format!("cuda-arch in {}", p.path.display()),
            ),
            _ => (Vec::new(), String::new()),
        },
    };

    if list.is_empty() {
        let cuda_torch = inputs
            .torch
            .as_ref()
            .is_ok_and(|torch| torch.cuda.is_some());
        if gpu_visible(m) {
            return notes.finish(
                CHECK,
                "no arch list; a GPU is visible, so PyTorch builds for the GPUs it finds",
            );
        }
        if !cuda_torch {
            return CHECK
                .skip("no arch list and no GPU visible, but no CUDA torch either to trip over it");
        }
        notes.problem(
            Status::Warn,
            "TORCH_CUDA_ARCH_LIST is unset and no GPU is visible: torch.utils.cpp_extension cannot pick archs and fails with an IndexError",
        );
        notes.hint("pin the compute capabilities you will run on, e.g. `gpuenv pin --arch 8.0,8.6,9.0+PTX` (exported as TORCH_CUDA_ARCH_LIST)");
        return notes.finish(CHECK, "");
    }

    // The toolkit's own answer wins over the data; `targets` lives as long as the run.
    let from_tree = t.entry.tool("nvcc").and_then(|nvcc| {
        gpuenv_core::toolchain::gpu_archs::gpu_archs(&nvcc, &inputs.home.tree_facts())
    });
    let (targets, exact, rel, release): (&[u32], bool, String, (u64, u64)) = match (
        &from_tree,
        lookup::archs(&inputs.facts, t.entry.version.release()).known(),
    ) {
        (Some(archs), _) => {
            notes.seen(format!(
                "{} targets the archs its nvcc --list-gpu-arch lists",
                t.name
            ));
            let release = (
                t.entry.version.major(),
                t.entry.version.minor().unwrap_or(0),
            );
            (
                archs,
                true,
                t.entry.version.truncated(2).to_string(),
                release,
            )
        }
        (None, Some(row)) => {
            let rel = release_name(row.release);
            if !row.exact {
                notes.seen(format!(
                    "CUDA {} has no row of its own in gpuenv's data: compared with CUDA {rel}'s archs",
                    t.entry.version
                ));
            }
            (row.value, row.exact, rel, row.release)
        }
        (None, None) => {
            let release = (
                t.entry.version.major(),
                t.entry.version.minor().unwrap_or(0),
            );
            let why = match lookup::archs(&inputs.facts, release) {
                Coverage::Newer(u) => format!("{u}; run `{}`", facts::REFRESH),
                _ => format!("gpuenv's data does not cover CUDA {}", t.entry.version),
            };
            return CHECK.skip(why);
        }
    };
    let (lo, hi) = (targets[0], targets[targets.len() - 1]);
    let status = if exact { Status::Error } else { Status::Warn };
    let mut kept: Vec<String> = Vec::new();
    let mut cannot = 0;
    for entry in &list {
        let a = match &entry.arch {
            Ok(a) => a,
            Err(why) => {
                let text = printable(&entry.text);
                notes.problem(
                    Status::Warn,
                    format!(
                        "{from} has `{}`, which is not an arch PyTorch takes ({why}): torch.utils.cpp_extension stops with \"Unknown CUDA arch ({}) or GPU not supported\"",
                        text, text
                    ),
                );
                notes.hint("separate entries with `;` or spaces, each like 8.6, 9.0a or 9.0+PTX, or a name such as Hopper or Blackwell");
                continue;
            }
        };
        if !arch::torch_takes(a) {
            notes.problem(
                Status::Warn,
                format!(
                    "{from} has {a}, which torch.utils.cpp_extension does not take (no family-specific `f` target is in its supported archs): an extension build stops with \"Unknown CUDA arch ({a}) or GPU not supported\""
                ),
            );
            notes.hint(format!(
                "for PyTorch extensions pin the portable or arch-specific target instead: {}.{} or {}.{}a",
                a.major, a.minor, a.major, a.minor
            ));
        }
        let problem = arch::problem_with(release, targets, a);
        let shown = match entry.name {
            Some(name) => format!("{a} ({}, from {name})", a.sm_name()),
            None => format!("{a} ({})", a.sm_name()),
        };
        let why = match problem {
            None => {
                kept.push(a.to_string());
                continue;
            }
            Some(Problem::NoSm) => format!("CUDA {rel} targets sm_{lo} to sm_{hi}"),
            Some(Problem::SuffixTooNew { from: first }) => format!(
                "{} targets need CUDA {} or newer",
                a.suffix.kind(),
                release_name(first)
            ),
        };
        cannot += 1;
        notes.problem(
            status,
            format!("{} cannot target {shown}, named in {from}: {why}", t.name),
        );
        if let Some(other) = arch::release_to_suggest(&inputs.facts, a, release) {
            let other = release_name(other);
            notes.hint(format!(
                "use a toolkit that targets {}: {} and `gpuenv pin cuda-{other}`",
                a.sm_name(),
                install_hint::get_cuda(&other)
            ));
        }
    }
    if cannot > 0 {
        arch::dedup(&mut kept);
        let keep = if kept.is_empty() {
            "8.0".to_string()
        } else {
            kept.join(",")
        };
        notes.hint(format!(
            "or drop what {} cannot build: `gpuenv pin --arch {keep}` (and unset TORCH_CUDA_ARCH_LIST if you set it by hand)",
            t.name
        ));
    }
    ptx_vs_driver(inputs, &t.name, release, &list, &mut notes);
    let shown: Vec<&str> = list.iter().map(|e| e.text.as_str()).collect();
    notes.finish(
        CHECK,
        format!(
            "{from} = {}: {} targets all of them",
            shown.join(";"),
            t.name
        ),
    )
}

/// A `cuda-arch` pin as an entry of the list.
fn pinned(a: &CudaArch) -> ListEntry {
    ListEntry {
        name: None,
        text: a.to_string(),
        arch: Ok(*a),
    }
}

/// The `+PTX` entries of the list, built by a toolkit whose PTX ISA the driver here cannot
/// compile: a GPU without SASS in the list then fails at launch with error 222.
fn ptx_vs_driver(
    inputs: &Inputs,
    toolkit: &str,
    release: (u64, u64),
    list: &[ListEntry],
    notes: &mut Notes,
) {
    let ptx: Vec<&CudaArch> = list
        .iter()
        .filter_map(|e| e.arch.as_ref().ok())
        .filter(|a| a.has_ptx())
        .collect();
    let Some(isa) = facts::ptx::isa_of_release(release).filter(|_| !ptx.is_empty()) else {
        return;
    };
    let Ok(driver) = super::driver::read_driver(&inputs.machine) else {
        return;
    };
    let Err(too_new) = facts::ptx::driver_loads(&inputs.facts, isa, &driver.text) else {
        return;
    };
    for a in ptx {
        let sm = a.sm();
        notes.problem(
            Status::Warn,
            format!(
                "{a} asks for PTX, and {toolkit} writes PTX ISA {}.{}, which needs {}; the driver here is {}: a GPU that runs only that PTX fails with error 222 (the provided PTX was compiled with an unsupported toolchain)",
                isa.0,
                isa.1,
                too_new.driver_needed(),
                driver.text
            ),
        );
        notes.hint(format!(
            "name each GPU's own arch in the list so no JIT is needed (`-gencode arch=compute_{sm},code=sm_{sm}` for {}), or update the driver (it needs {})",
            a.sm_name(),
            too_new.driver_needed()
        ));
    }
}
