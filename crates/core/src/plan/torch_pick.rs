//! The chooser's inputs for a project, gathered once for every consumer that cannot probe the
//! GPUs (the environment, `--write-pyproject`, `check`, the guard's hint): the pinned
//! toolkit, the torch its pyproject.toml asks for, the host's platform (a Jetson's JetPack,
//! which the session reads off the board), and as the GPUs the archs the project declares
//! (`cuda-arch`, `rocm-arch`), so that they and `gpuenv torch index --gpu …` name the same
//! index.

use crate::facts::torch_choose::{self, NoIndex, Pick};
use crate::facts::torch_index::{Machine, Toolkit, TorchWanted};
use crate::facts::{Facts, Platform};
use crate::plan::resolve::ActiveSet;
use crate::store::toolchain::Kind;

/// The pinned or active toolkit as the chooser takes it (CUDA first, as the guard does).
pub fn toolkit(active: &ActiveSet) -> Option<Toolkit> {
    let mm = |k: Kind| {
        active.get(k).map(|t| {
            (
                t.entry.version.major(),
                t.entry.version.minor().unwrap_or(0),
            )
        })
    };
    mm(Kind::Cuda)
        .map(Toolkit::Cuda)
        .or_else(|| mm(Kind::Rocm).map(Toolkit::Rocm))
}

/// The GPUs the project declares it runs on: NVIDIA compute capabilities × 10, AMD targets.
pub fn declared_gpus(active: &ActiveSet) -> (Vec<u32>, Vec<String>) {
    let Some(file) = &active.project else {
        return (Vec::new(), Vec::new());
    };
    let mut cuda: Vec<u32> = file
        .cuda_arch
        .iter()
        .map(|a| u32::from(a.major) * 10 + u32::from(a.minor))
        .collect();
    cuda.sort_unstable();
    cuda.dedup();
    let mut amd: Vec<String> = file.rocm_arch.iter().map(|t| t.processor.clone()).collect();
    amd.sort();
    amd.dedup();
    (cuda, amd)
}

/// The torch releases the project's `pyproject.toml` (beside its toolchain file) asks for
/// in `[project] dependencies`; any when there is none, or it is not the user's own regular
/// file, or not TOML (`gpuenv check` says so).
pub fn pyproject_torch(active: &ActiveSet) -> TorchWanted {
    use std::os::unix::fs::MetadataExt as _;
    let Some(dir) = active.project.as_ref().and_then(|f| f.path.parent()) else {
        return TorchWanted::default();
    };
    let path = dir.join("pyproject.toml");
    let mine = fs_err::symlink_metadata(&path)
        .is_ok_and(|m| m.is_file() && m.uid() == crate::project::owner::me());
    if !mine {
        return TorchWanted::default();
    }
    let Ok(text) = crate::outside::read_text(&path, crate::outside::Kind::Pyproject) else {
        return TorchWanted::default();
    };
    let reqs = crate::project::pyproject::torch_requirements(&text).unwrap_or_default();
    let mut want = TorchWanted::default();
    for r in reqs.iter().filter_map(|r| TorchWanted::of_requirement(r)) {
        want.min = want.min.max(r.min);
        want.max = match (want.max, r.max) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    want
}

/// The machine as the project describes it, on `platform`.
pub fn project_machine(active: &ActiveSet, torch: TorchWanted, platform: Platform) -> Machine {
    let (gpus, amd_gpus) = declared_gpus(active);
    Machine {
        toolkit: toolkit(active),
        torch,
        platform,
        driver: None,
        gpus,
        amd_gpus,
    }
}

/// The index for the project on `platform`, for the torch its pyproject.toml asks for.
pub fn for_project(facts: &Facts, active: &ActiveSet, platform: Platform) -> Result<Pick, NoIndex> {
    let torch = pyproject_torch(active);
    torch_choose::choose(facts, &project_machine(active, torch, platform))
}
