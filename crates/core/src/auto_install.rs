//! `GPUENV_AUTO_INSTALL=1`: a shim or the shell hook that meets a pinned toolkit nobody
//! installed yet installs it (saying so) instead of failing. The installer is not linked
//! into the proxy: it runs `gpuenv install <spec>`, the gpuenv found beside the proxy
//! (`$GPUENV_HOME/bin/gpuenv`) or on PATH.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::context::{vars, Context};
use crate::diagnostic::Diagnostic;
use crate::resolve::ResolveError;
use crate::toolchain::Spec;
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
}

impl Diagnostic for InstallFailed {
    fn hints(&self) -> Vec<String> {
        match self {
            InstallFailed::CannotRun { .. } => Vec::new(),
            InstallFailed::Failed { .. } => {
                vec!["run it yourself to see why, or unset GPUENV_AUTO_INSTALL".into()]
            }
        }
    }
}

/// At most this many installs for one command (one per kind), so a pin that an install
/// cannot satisfy never loops.
pub const MAX_INSTALLS: usize = 2;

pub fn enabled(ctx: &Context) -> bool {
    ctx.flag(vars::GPUENV_AUTO_INSTALL)
}

/// The spec to install when resolution failed only because it is not installed.
pub fn missing(err: &ResolveError) -> Option<(&Spec, &str)> {
    match err {
        ResolveError::NotRegistered { spec, origin } if spec.label.is_none() => {
            Some((spec, origin.as_str()))
        }
        _ => None,
    }
}

/// The gpuenv beside `exe` (the proxy's own directory), else the first on PATH.
pub fn find_gpuenv(ctx: &Context, exe: &Path) -> Option<PathBuf> {
    exe.parent()
        .map(|dir| dir.join("gpuenv"))
        .filter(|p| p.is_file())
        .or_else(|| crate::guard::find_on_path(ctx.var_os(vars::PATH), "gpuenv"))
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
