//! How much memory one job of a CUDA build takes, and the rule that sizes a build's
//! parallelism by it (`plan::build_jobs` applies it): data, with where each figure came from.
//!
//! A job is one `nvcc -c`: the host side (the preprocessor, `cudafe++`, the host compiler)
//! once, and for each target arch `cicc` then `ptxas`. `nvcc --threads T` runs up to T
//! targets' steps at once, so a job with T threads peaks near `HOST + T × DEVICE`.

/// One target arch's device steps, measured: the peak resident memory of `cicc` and of
/// `ptxas`, each a process of its own (`scripts/bench-build-memory.sh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevicePeak {
    /// `sm_XY` as XY (`90` for `sm_90`).
    pub sm: u16,
    pub cicc_mb: u32,
    pub ptxas_mb: u32,
}

/// Measured with CUDA 13.0.2 from NVIDIA's wheels (`nvidia-cuda-nvcc` 13.0.88) and g++ 12 on
/// x86_64: a kernel file as a PyTorch extension's (an elementwise op and a block reduction
/// dispatched over float, double, half and bfloat16, and CUB's radix sort, scan and reduce
/// for four key types), `-O3 -std=c++17`, one `-gencode` per run.
pub const MEASURED: &[DevicePeak] = &[
    DevicePeak {
        sm: 75,
        cicc_mb: 576,
        ptxas_mb: 131,
    },
    DevicePeak {
        sm: 80,
        cicc_mb: 577,
        ptxas_mb: 83,
    },
    DevicePeak {
        sm: 86,
        cicc_mb: 576,
        ptxas_mb: 83,
    },
    DevicePeak {
        sm: 90,
        cicc_mb: 580,
        ptxas_mb: 78,
    },
    DevicePeak {
        sm: 100,
        cicc_mb: 582,
        ptxas_mb: 78,
    },
    DevicePeak {
        sm: 120,
        cicc_mb: 582,
        ptxas_mb: 79,
    },
];

/// The host side of that kernel file: `cudafe++` (589 MB) was its largest step, then the
/// host compiler's compile of the result (332 MB).
pub const MEASURED_HOST_MB: u32 = 589;

/// Where the measured figures come from.
pub const MEASURED_SOURCE: &str =
    "scripts/bench-build-memory.sh with CUDA 13.0.2 (NVIDIA's wheels), g++ 12, x86_64";

/// What a job is budgeted, per target arch running at once. A build's `MAX_JOBS` set by
/// gpuenv replaces the project's own default, and some projects size theirs for far heavier
/// kernels than the one measured: FlashAttention's setup.py computes `MAX_JOBS` from free
/// memory at "around 9GB" per job "when threads = 4" (about 2.3 GB a target), and reads
/// `MAX_JOBS` first. The budget takes that heavier figure, so a job count gpuenv sets is
/// never the one that runs such a build out of memory; with `--threads` a job keeps several
/// cores busy, so fewer jobs still use the machine.
pub const DEVICE_BUDGET_MB: u32 = 2304;

/// The host side of a job: a PyTorch extension's `.cu` includes `torch/extension.h`, whose
/// host compile is larger than the measured file's.
pub const HOST_BUDGET_MB: u32 = 1024;

/// Where the budgets come from.
pub const BUDGET_SOURCE: &str = "flash-attention's setup.py (`get_default_max_jobs`: ~9 GB per job at NVCC_THREADS=4), above the measured peaks";

/// The share of the machine's memory a build may take (numerator, denominator): the rest
/// is for the system, the page cache and whatever else runs.
pub const MEMORY_SHARE: (u64, u64) = (3, 4);

/// The most jobs or threads gpuenv sets or accepts from a file: beyond any machine's cores.
pub const MAX_PARALLEL: u32 = 1024;

/// The measured peak of `sm`'s device steps, if it was measured.
pub fn measured(sm: u16) -> Option<&'static DevicePeak> {
    MEASURED.iter().find(|p| p.sm == sm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_above_every_measured_peak() {
        for p in MEASURED {
            assert!(p.cicc_mb.max(p.ptxas_mb) <= DEVICE_BUDGET_MB, "{p:?}");
        }
        const { assert!(MEASURED_HOST_MB <= HOST_BUDGET_MB) };
        const { assert!(MEMORY_SHARE.0 < MEMORY_SHARE.1) };
        assert!(measured(80).is_some());
    }
}
