//! FM-12: the CUDA arch list (TORCH_CUDA_ARCH_LIST, else the `cuda-arch` pin that gpuenv
//! exports as it) against what the active nvcc can target, and no list at all on a machine
//! with no visible GPU (PyTorch's cpp_extension then fails with an IndexError).

use super::{Check, Finding, Inputs, Machine, Notes, Status};
use gpuenv_core::context::vars;
use gpuenv_core::cuda_tables::{self as tables, release_name};
use gpuenv_core::facts::{self, lookup, Coverage};
use gpuenv_core::toolchain::Kind;

pub const CHECK: Check = Check {
    id: "FM-12",
    name: "arch-list",
};

/// PyTorch's named archs (torch/utils/cpp_extension.py, `named_arches`).
const NAMED: &[(&str, &str)] = &[
    ("Kepler+Tesla", "3.7"),
    ("Kepler", "3.5+PTX"),
    ("Maxwell+Tegra", "5.3"),
    ("Maxwell", "5.0;5.2+PTX"),
    ("Pascal", "6.0;6.1+PTX"),
    ("Volta+Tegra", "7.2"),
    ("Volta", "7.0+PTX"),
    ("Turing", "7.5+PTX"),
    ("Ampere+Tegra", "8.7"),
    ("Ampere", "8.0;8.6+PTX"),
    ("Ada", "8.9+PTX"),
    ("Hopper", "9.0+PTX"),
];

/// `8.6`, `9.0+PTX`, `9.0a`, `10.0f`, `sm_86` -> the SM number (86, 90, 90, 100, 86).
pub fn sm_of(arch: &str) -> Option<u32> {
    let a = arch.trim().trim_end_matches("+PTX");
    let a = a
        .strip_prefix("sm_")
        .or_else(|| a.strip_prefix("compute_"))
        .map_or_else(|| a.replace('.', ""), str::to_string);
    a.trim_end_matches(['a', 'f']).parse().ok()
}

/// The entries of an arch list, named archs expanded: `"Ampere 9.0"` -> 8.0, 8.6+PTX, 9.0.
pub fn split_list(list: &str) -> Vec<String> {
    list.split([';', ' ', ','])
        .filter(|a| !a.is_empty())
        .flat_map(|a| match NAMED.iter().find(|(n, _)| *n == a) {
            Some((_, expanded)) => expanded.split(';').map(str::to_string).collect(),
            None => vec![a.to_string()],
        })
        .collect()
}

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
        return Finding::skip(CHECK, "no CUDA toolchain is active here");
    };
    let m = &inputs.machine;
    let mut notes = Notes::default();
    let (list, from) = match m.var(vars::TORCH_CUDA_ARCH_LIST) {
        Some(v) => (split_list(v), "TORCH_CUDA_ARCH_LIST".to_string()),
        None => match &inputs.active.project {
            Some(p) if !p.cuda_arch.is_empty() => (
                p.cuda_arch.clone(),
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
            return Finding::skip(
                CHECK,
                "no arch list and no GPU visible, but no CUDA torch either to trip over it",
            );
        }
        notes.problem(
            Status::Warn,
            "TORCH_CUDA_ARCH_LIST is unset and no GPU is visible: torch.utils.cpp_extension cannot pick archs and fails with an IndexError",
        );
        notes.hint("pin the compute capabilities you will run on, e.g. `gpuenv pin --arch 8.0,8.6,9.0+PTX` (exported as TORCH_CUDA_ARCH_LIST)");
        return notes.finish(CHECK, "");
    }

    // The toolkit's own answer wins over the data; `targets` lives as long as the run.
    let from_tree = t
        .entry
        .tool("nvcc")
        .and_then(|nvcc| facts::tree::gpu_archs(&nvcc, &inputs.home.tree_facts()));
    let (targets, exact, rel): (&[u32], bool, String) = match (
        &from_tree,
        tables::sm_archs(&t.entry.version),
    ) {
        (Some(archs), _) => {
            notes.seen(format!(
                "{} targets the archs its nvcc --list-gpu-arch lists",
                t.name
            ));
            (archs, true, t.entry.version.truncated(2).to_string())
        }
        (None, Some(row)) => {
            let rel = release_name(row.release);
            if !row.exact {
                notes.seen(format!(
                    "CUDA {} has no row of its own in gpuenv's data: compared with CUDA {rel}'s archs",
                    t.entry.version
                ));
            }
            (row.value, row.exact, rel)
        }
        (None, None) => {
            let release = (
                t.entry.version.major(),
                t.entry.version.minor().unwrap_or(0),
            );
            let why = match lookup::archs(facts::current(), release) {
                Coverage::Newer(u) => format!("{u}; run `{}`", facts::REFRESH),
                _ => format!("gpuenv's data does not cover CUDA {}", t.entry.version),
            };
            return Finding::skip(CHECK, why);
        }
    };
    let (lo, hi) = (targets[0], targets[targets.len() - 1]);
    let mut kept: Vec<String> = Vec::new();
    for arch in &list {
        let Some(sm) = sm_of(arch) else {
            notes.seen(format!("{arch} is not a compute capability; not checked"));
            continue;
        };
        if targets.contains(&sm) {
            kept.push(arch.clone());
            continue;
        }
        let status = if exact { Status::Error } else { Status::Warn };
        notes.problem(
            status,
            format!(
                "{} cannot target {arch} (sm_{sm}), named in {from}: CUDA {rel} targets sm_{lo} to sm_{hi}",
                t.name
            ),
        );
        if let Some((oldest, newest)) = tables::releases_for_sm(sm) {
            let other = release_name(if sm > hi { oldest } else { newest });
            notes.hint(format!(
                "use a toolkit that targets sm_{sm}: `gpuenv install cuda-{other}` and `gpuenv pin cuda-{other}`"
            ));
        }
    }
    if notes.problem_count() > 0 {
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
    notes.finish(
        CHECK,
        format!(
            "{from} = {}: {} targets all of them",
            list.join(";"),
            t.name
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_spellings_to_sm_numbers() {
        for (arch, sm) in [
            ("8.6", 86),
            ("9.0+PTX", 90),
            ("9.0a", 90),
            ("10.0f", 100),
            ("sm_86", 86),
            ("12.0", 120),
        ] {
            assert_eq!(sm_of(arch), Some(sm), "{arch}");
        }
        assert_eq!(sm_of("Ampere"), None);
    }

    #[test]
    fn lists_split_on_semicolons_or_spaces_and_expand_names() {
        assert_eq!(
            split_list("7.5 8.0;Ampere"),
            ["7.5", "8.0", "8.0", "8.6+PTX"]
        );
    }
}
