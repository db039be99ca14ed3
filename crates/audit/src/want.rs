//! What an object is compared with: the archs asked of it (and who asks), the toolchains
//! active here, what was asked when no GPU was found.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::arch::{CudaArch, GfxTarget};

/// Where an arch the object must cover comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "from", rename_all = "kebab-case")]
pub enum Source {
    /// `cuda-arch`/`rocm-arch` in a toolchain file, at this line.
    Pin { file: PathBuf, line: usize },
    /// An arch-list variable (TORCH_CUDA_ARCH_LIST, PYTORCH_ROCM_ARCH).
    Var { name: String },
    /// A GPU of this machine, as a tool (nvidia-smi, rocminfo) reported it.
    Gpu { tool: String },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Pin { file, line } => {
                let name = file.file_name().unwrap_or(file.as_os_str());
                write!(f, "pinned in {}:{line}", name.to_string_lossy())
            }
            Source::Var { name } => write!(f, "in {name}"),
            Source::Gpu { tool } => write!(f, "a GPU here, by {tool}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arch {
    /// A compute capability, with PTX when that was asked for too (`9.0+PTX`).
    Cuda(CudaArch),
    Rocm(GfxTarget),
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arch::Cuda(arch) if arch.has_ptx() => write!(f, "{}+PTX", arch.sm_name()),
            Arch::Cuda(arch) => f.write_str(&arch.sm_name()),
            Arch::Rocm(t) => write!(f, "{t}"),
        }
    }
}

/// An arch the object must run on, and who asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    pub arch: Arch,
    pub source: Source,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    Cuda,
    Rocm,
}

/// A toolchain active here: the runtime it provides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveToolchain {
    pub name: String,
    pub kind: ToolKind,
    /// Its release's major (13 for cuda-13.0.2, 5 for rocm-5.2-debian).
    pub major: u32,
}

/// Everything the comparison looks at.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// In order of weight: GPUs first, then pins, then variables; repeats are dropped.
    pub wants: Vec<Want>,
    pub active: Vec<ActiveToolchain>,
    /// What was asked when no GPU was found (`nvidia-smi: not on PATH`).
    pub no_gpu: Vec<String>,
    /// Whether a GPU was found at all.
    pub gpus_found: bool,
    /// The active Python's torch: its CUDA release (`13.2`), if a CUDA build.
    pub torch_cuda: Option<String>,
    /// The NVIDIA driver here (`580.65.06`), when known: PTX newer than it can compile is
    /// no kernel at all.
    pub driver: Option<String>,
    /// The compatibility data in effect: which driver each PTX ISA needs.
    pub facts: gpuenv_core::facts::Facts,
    /// The active ROCm made of AMD's wheels: its name and the ISAs whose device wheel (the
    /// libraries' kernels) it carries.
    pub rocm_device_wheels: Option<(String, Vec<String>)>,
}
