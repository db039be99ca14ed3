//! The [`Installer`] the entry points hand to resolution for `GPUENV_AUTO_INSTALL`: runs
//! `gpuenv install <spec>` as a child process attached to the terminal (the hooks ignore
//! SIGINT, and only a child gets it back, so Ctrl-C still stops a download started at a
//! prompt): the CLI its own binary, the proxy the gpuenv found beside it
//! (`$GPUENV_HOME/bin/gpuenv`) or on PATH. An edge: it says what it installs.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::ask;
use crate::context::{vars, Context};
use crate::plan::auto_install::{InstallFailed, Installer};
use crate::store::toolchain::Spec;
use crate::ui;

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
    let status = ask::attached(&mut cmd).map_err(|source| InstallFailed::CannotRun {
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
