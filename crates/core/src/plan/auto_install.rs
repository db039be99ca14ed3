//! `GPUENV_AUTO_INSTALL=1`: a shim or the shell hook that meets a pinned toolkit nobody
//! installed yet installs it (saying so) instead of failing. Only what the user chose: a
//! trusted toolchain file's pins, the default, `GPUENV_TOOLCHAIN`, `+spec`; a cloned
//! project's untrusted file downloads nothing. The core never downloads: it asks an
//! [`Installer`], which the entry point hands in. Both run `gpuenv install <spec>` as a
//! child process (the hooks ignore SIGINT, and only a child gets it back, so Ctrl-C still
//! stops a download started at a prompt): the CLI its own binary, the proxy the gpuenv
//! found beside it (`$GPUENV_HOME/bin/gpuenv`) or on PATH.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::context::{vars, Context};
use crate::diagnostic::Diagnostic;
use crate::plan::install_hint;
use crate::plan::resolve::ResolveError;
use crate::store::toolchain::Spec;
use crate::ui;

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

/// Runs `gpuenv install <spec>` as a child process.
pub enum RunGpuenv<'a> {
    /// This program, gpuenv itself (the CLI and its shell hook).
    ThisProgram,
    /// The gpuenv beside the proxy binary at this path, else the first on PATH.
    BesideProxy(&'a Path),
}

impl Installer for RunGpuenv<'_> {
    fn install(&self, ctx: &Context, spec: &Spec, origin: &str) -> Result<(), InstallFailed> {
        let gpuenv = match *self {
            RunGpuenv::ThisProgram => {
                std::env::current_exe().map_err(|source| InstallFailed::CannotRun {
                    gpuenv: PathBuf::from("gpuenv"),
                    source,
                })?
            }
            RunGpuenv::BesideProxy(proxy) => {
                find_gpuenv(ctx, proxy).ok_or_else(|| InstallFailed::NoInstaller {
                    spec: spec.clone(),
                    origin: origin.to_string(),
                    beside: proxy.parent().unwrap_or(Path::new("/")).to_path_buf(),
                })?
            }
        };
        install(ctx, &gpuenv, spec, origin)
    }
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
            store: None,
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
            store: None,
        } if install_hint::install_command(spec).is_some() => Some(NotAllowed {
            spec: spec.clone(),
            origin: origin.clone(),
            file: file.clone(),
        }),
        _ => None,
    }
}

/// The gpuenv beside `exe` (the proxy's own directory), else the first on PATH.
pub fn find_gpuenv(ctx: &Context, exe: &Path) -> Option<PathBuf> {
    exe.parent()
        .map(|dir| dir.join("gpuenv"))
        .filter(|p| p.is_file())
        .or_else(|| crate::plan::guard::find_on_path(ctx.var_os(vars::PATH), "gpuenv"))
}

/// Runs `gpuenv install <spec>` with its output on stderr (a proxy's stdout belongs to the
/// tool it runs; a hook's to the shell).
pub fn install(
    ctx: &Context,
    gpuenv: &Path,
    spec: &Spec,
    origin: &str,
) -> Result<(), InstallFailed> {
    ui::info(format!(
        "{spec} is not installed ({origin} asks for it); installing it now because GPUENV_AUTO_INSTALL is set"
    ));
    let mut cmd = Command::new(gpuenv);
    cmd.arg("install")
        .arg(spec.to_string())
        .current_dir(&ctx.cwd)
        .stdin(Stdio::null())
        .stdout(std::io::stderr());
    // The shell hooks ignore SIGINT while they run (a prompt is never left half-applied),
    // and an ignored signal stays ignored across exec: without this, Ctrl-C could not stop
    // a long download started at a prompt.
    // SAFETY: signal(2) is async-signal-safe, and nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let status = cmd.status().map_err(|source| InstallFailed::CannotRun {
        gpuenv: gpuenv.to_path_buf(),
        source,
    })?;
    if !status.success() {
        return Err(InstallFailed::Failed {
            spec: spec.clone(),
            status,
        });
    }
    Ok(())
}
