//! What a source says a release is made of (`Plan`), what was asked for (`Selection`,
//! `Profile`), and the choice among sources (`plan`).

use gpuenv_core::diagnostic::Diagnostic;
use gpuenv_core::toolchain::{Kind, Spec, Version};
use gpuenv_core::ui::{self, Report};
use reqwest::Url;

use crate::archive::Archive;
use crate::error::{InstallError, Result};
use crate::fault::{self, Unreachable};
use crate::source::Source;
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

/// Chooses the release `spec` names from the first source that has it; when none has, the
/// error gives each source's reason.
pub fn plan(sources: &[Box<dyn Source + '_>], spec: &Spec, sel: &Selection) -> Result<Plan> {
    let mut reasons = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        match s.plan(spec, sel) {
            Ok(p) => return Ok(p),
            Err(e) if sources.len() == 1 => return Err(e),
            Err(e) => {
                // Say why before falling back, so a source that was never reached
                // (an unreachable host, a proxy) does not go unnoticed: one note, which
                // `-q` leaves out (should every source fail, the error gives each reason).
                if let Some(next) = sources.get(i + 1) {
                    let text = crate::error::one_line(&e);
                    let why = text.lines().next().unwrap_or_default();
                    ui::info(format!(
                        "the {} source cannot install {spec} ({why}); trying {}",
                        s.name(),
                        next.name()
                    ));
                }
                reasons.push((s.name(), e));
            }
        }
    }
    Err(NoSource::new(spec, reasons).into())
}

/// No source could install a release: each source's reason, and their hints.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct NoSource {
    /// What was asked.
    pub spec: String,
    /// Each source tried, with why it could not.
    pub reasons: Vec<(&'static str, InstallError)>,
    message: String,
    hints: Vec<String>,
    /// Set when every source failed for the network.
    #[source]
    unreachable: Option<Unreachable>,
}

impl NoSource {
    fn new(spec: &Spec, reasons: Vec<(&'static str, InstallError)>) -> NoSource {
        let mut message = format!("no source could install {spec}:");
        let mut hints = Vec::new();
        for (name, e) in &reasons {
            let report = Report::of(e, crate::FIND);
            message.push_str(&format!(
                "\n  {name}: {}",
                report.inline().replace('\n', "\n    ")
            ));
            hints.extend(report.hints.into_iter().map(|h| format!("{h} ({name})")));
        }
        let unreachable = (!reasons.is_empty()
            && reasons.iter().all(|(_, e)| fault::is_network_failure(e)))
        .then_some(Unreachable);
        NoSource {
            spec: spec.to_string(),
            reasons,
            message,
            hints,
            unreachable,
        }
    }

    /// Every source failed for the network.
    pub fn unreachable(&self) -> bool {
        self.unreachable.is_some()
    }
}

impl Diagnostic for NoSource {
    fn hints(&self) -> Vec<String> {
        self.hints.clone()
    }
}
