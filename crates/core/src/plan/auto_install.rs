//! `GPUENV_AUTO_INSTALL=1`: a shim or the shell hook that meets a pinned toolkit nobody
//! installed yet installs it (saying so) instead of failing. Only what the user chose: a
//! trusted toolchain file's pins, the default, `GPUENV_TOOLCHAIN`, `+spec`; a cloned
//! project's untrusted file downloads nothing. The core never downloads: it asks an
//! [`Installer`], which the entry point hands in (`edges::installer`, which runs
//! `gpuenv install <spec>` and says so).

use std::path::PathBuf;

use crate::context::{vars, Context};
use crate::diagnostic::Diagnostic;
use crate::plan::install_hint;
use crate::plan::resolve::ResolveError;
use crate::store::toolchain::Spec;

/// Why an automatic install did not install.
#[derive(Debug, thiserror::Error)]
pub enum InstallFailed {
    #[error("cannot run {}", gpuenv.display())]
    CannotRun {
        gpuenv: PathBuf,
        source: std::io::Error,
    },
    #[error("`gpuenv install {spec}` failed ({status})")]
    Failed {
        spec: Spec,
        status: std::process::ExitStatus,
    },
    /// No gpuenv to install with (`beside` is the directory looked in first, the proxy's own).
    #[error("{spec} is not installed ({origin} asks for it), and GPUENV_AUTO_INSTALL found no gpuenv to install it with: none in {} or on PATH", beside.display())]
    NoInstaller {
        spec: Spec,
        origin: String,
        beside: PathBuf,
    },
}

impl Diagnostic for InstallFailed {
    fn hints(&self) -> Vec<String> {
        match self {
            InstallFailed::CannotRun { .. } => Vec::new(),
            InstallFailed::Failed { .. } => {
                vec!["run it yourself to see why, or unset GPUENV_AUTO_INSTALL".into()]
            }
            InstallFailed::NoInstaller { spec, beside, .. } => vec![
                format!(
                    "put gpuenv on PATH, or link it beside the proxy as {}",
                    beside.join("gpuenv").display()
                ),
                format!("or install it yourself: `gpuenv install {spec}`"),
            ],
        }
    }
}

/// Installs a pinned toolkit that resolution found missing; the session then reads the
/// registry again.
pub trait Installer {
    fn install(&self, ctx: &Context, spec: &Spec, origin: &str) -> Result<(), InstallFailed>;
}

/// `GPUENV_AUTO_INSTALL` met a pin of a toolchain file nobody trusted: it installs nothing
/// and says what it would install.
#[derive(Debug, thiserror::Error)]
#[error("{spec} is not installed ({origin} asks for it); GPUENV_AUTO_INSTALL would install it, but {} is not trusted", crate::ui::printable(&file.to_string_lossy()))]
pub struct NotAllowed {
    pub spec: Spec,
    pub origin: String,
    pub file: PathBuf,
}

impl Diagnostic for NotAllowed {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "`gpuenv trust {}` lets it install what the file pins (read the file first), or `gpuenv install {}` installs it now",
            crate::ui::shell_word(&self.file),
            self.spec
        )]
    }
}

/// At most this many installs for one command (one per kind), so a pin that an install
/// cannot satisfy never loops.
pub const MAX_INSTALLS: usize = 2;

pub fn enabled(ctx: &Context) -> Result<bool, crate::context::BadFlag> {
    ctx.flag(vars::GPUENV_AUTO_INSTALL)
}

/// The spec to install when resolution failed only because it is not installed, the user
/// chose it (not an untrusted file), and `gpuenv install` can install it (else the error
/// stands, with its hint of what can).
pub fn missing(err: &ResolveError) -> Option<(&Spec, &str)> {
    match err {
        ResolveError::NotRegistered {
            spec,
            origin,
            untrusted_file: None,
        } if install_hint::install_command(spec).is_some() => Some((spec, origin.as_str())),
        _ => None,
    }
}

/// What an automatic install would have installed, had the file pinning it been trusted.
pub fn not_allowed(err: &ResolveError) -> Option<NotAllowed> {
    match err {
        ResolveError::NotRegistered {
            spec,
            origin,
            untrusted_file: Some(file),
        } if install_hint::install_command(spec).is_some() => Some(NotAllowed {
            spec: spec.clone(),
            origin: origin.clone(),
            file: file.clone(),
        }),
        _ => None,
    }
}
