//! The machine as the checks see it: a file-system root (`/` for real, a fixture tree in
//! tests) under which `/proc`, `/dev` and `/etc` are read, and the environment, whose PATH
//! is where tools such as `nvidia-smi` or `gcc` are found and run.

use gpuenv_core::context::vars;
use std::path::{Path, PathBuf};
use std::process::Command;

use gpuenv_core::ask::{self, AskError};
use gpuenv_core::context::Context;
use gpuenv_core::guard;

#[derive(Debug, Clone)]
pub struct Machine {
    /// Prefix of every absolute system path read (`GPUENV_DOCTOR_ROOT`, default `/`).
    pub root: PathBuf,
    /// The environment, and the directory being diagnosed as `cwd`.
    pub ctx: Context,
}

/// Why a tool gave no output to read.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// It could not be started, or did not answer in time (`gpuenv_core::ask`).
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error("`{command}` exited with {status}: {output}")]
    Failed {
        command: String,
        status: std::process::ExitStatus,
        output: String,
    },
}

impl Machine {
    /// `abs` (an absolute system path such as `/proc/mounts`) under the root.
    pub fn file(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    pub fn read(&self, abs: &str) -> Option<String> {
        gpuenv_core::outside::read_text(&self.file(abs), gpuenv_core::outside::Kind::SystemFile)
            .ok()
    }

    /// A variable that is set and not empty.
    pub fn var(&self, key: &str) -> Option<&str> {
        self.ctx.var_nonempty(key)
    }

    /// `key` split as a path list (empty entries dropped).
    pub fn path_list(&self, key: &str) -> Vec<String> {
        gpuenv_core::path_list::dirs(self.ctx.var_os(key))
            .map(|e| e.to_string_lossy().into_owned())
            .collect()
    }

    pub fn cwd(&self) -> &Path {
        &self.ctx.cwd
    }

    /// The first executable `tool` on PATH.
    pub fn which(&self, tool: &str) -> Option<PathBuf> {
        guard::find_on_path(self.ctx.var_os(vars::PATH), tool)
    }

    /// Runs `tool` from PATH with the machine's environment; `None` if it is not on PATH.
    pub fn run_tool(&self, tool: &str, args: &[&str]) -> Option<Result<String, RunError>> {
        let path = self.which(tool)?;
        Some(self.run(&path, args))
    }

    /// Runs `program` with the machine's environment (and nothing else), returning stdout
    /// and stderr together. A non-zero exit is an error carrying the output; a tool that
    /// hangs (nvidia-smi on a wedged driver does) is stopped at `ask`'s deadline.
    pub fn run(&self, program: &Path, args: &[&str]) -> Result<String, RunError> {
        let answer = ask::output(
            Command::new(program)
                .args(args)
                .env_clear()
                .envs(&self.ctx.vars)
                .current_dir(&self.ctx.cwd),
        )?;
        let text = answer.text();
        if answer.status.success() {
            Ok(text)
        } else {
            let shown = format!("{} {}", program.display(), args.join(" "));
            Err(RunError::Failed {
                command: shown.trim().to_string(),
                status: answer.status,
                output: text.trim().to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_paths_are_read_under_the_root() {
        let m = Machine {
            root: PathBuf::from("/fixture"),
            ctx: Context::default(),
        };
        assert_eq!(
            m.file("/proc/driver/nvidia/version"),
            Path::new("/fixture/proc/driver/nvidia/version")
        );
    }
}
