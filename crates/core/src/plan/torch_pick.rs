//! The chooser's inputs for a project, gathered once for every consumer that cannot probe the
//! GPUs (the environment, `--write-pyproject`, the guard's hint): the pinned toolkit, this
//! host's platform, and as the GPUs the archs the project declares (`cuda-arch`,
//! `rocm-arch`), so that they and `gpuenv torch index --gpu …` name the same index.

use crate::facts::torch_index::{self, Machine, NoIndex, Pick, Toolkit, TorchWanted};
use crate::facts::{Facts, Platform};
use crate::resolve::ActiveSet;
use crate::toolchain::Kind;

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

/// The index for the project on this host.
pub fn for_project(facts: &Facts, active: &ActiveSet, torch: TorchWanted) -> Result<Pick, NoIndex> {
    torch_index::choose(facts, &project_machine(active, torch, Platform::for_host()))
}
