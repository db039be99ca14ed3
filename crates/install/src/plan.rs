//! What a source says a release is made of (`Plan`), and what was asked for
//! (`Selection`, `Profile`).

use gpuenv_core::toolchain::{Kind, Version};
use reqwest::Url;

use crate::archive::Archive;
use crate::torch;

/// What a source says a release is made of.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub kind: Kind,
    pub version: Version,
    pub source: &'static str,
    pub archives: Vec<Archive>,
    /// NVIDIA's pieces: assemble the runfile layout and write version.json.
    pub cuda_layout: bool,
    /// Trees laid out like a CUDA wheel's (`include/`, `lib/`) whose files the toolchain
    /// links to rather than downloads: the NVIDIA wheels a torch venv already has.
    pub linked: Vec<torch::Linked>,
    /// The gpuenv manifest it comes from, if it does: the record keeps it, so an uninstall
    /// can name the command that installs it again.
    pub manifest: Option<Url>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    Minimal,
    #[default]
    Default,
}

impl gpuenv_core::named::Named for Profile {
    const ALL: &'static [Profile] = &[Profile::Minimal, Profile::Default];
    fn name(self) -> &'static str {
        match self {
            Profile::Minimal => "minimal",
            Profile::Default => "default",
        }
    }
    fn help(self) -> &'static str {
        match self {
            Profile::Minimal => "What `nvcc -c` needs: nvcc, cudart, cccl (plus crt and nvvm from 13.0)",
            Profile::Default => "Minimal plus what a PyTorch CUDA extension includes: cuBLAS, cuSPARSE, cuSOLVER, cuRAND, cuFFT",
        }
    }
}

/// The components asked for.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub profile: Profile,
    pub components: Vec<String>,
}
