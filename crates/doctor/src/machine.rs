//! The machine as the checks see it: a file-system root (`/` for real, a fixture tree in
//! tests) under which `/proc`, `/dev` and `/etc` are read, and the environment, whose PATH
//! is where tools such as `nvidia-smi` or `gcc` are found and run.

use gpuenv_core::context::vars;
use std::path::{Path, PathBuf};

use gpuenv_core::context::Context;
use gpuenv_core::guard;
use gpuenv_core::plan::native;

#[derive(Debug, Clone)]
pub struct Machine {
    /// Prefix of every absolute system path read (`GPUENV_DOCTOR_ROOT`, default `/`).
    pub root: PathBuf,
    /// The environment, and the directory being diagnosed as `cwd`.
    pub ctx: Context,
}

pub use gpuenv_core::plan::native::RunError;

impl Machine {
    /// `abs` (an absolute system path such as `/proc/mounts`) under the root.
    pub fn file(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    /// The platform wheels must run on: a Jetson's JetPack read off the board, else what the
    /// CPU implies (also for a Jetson gpuenv knows no wheels for; `torch index` says why).
    pub fn platform(&self) -> gpuenv_core::facts::Platform {
        gpuenv_core::facts::tegra::platform(&self.root, std::env::consts::ARCH)
            .unwrap_or_else(|_| gpuenv_core::facts::Platform::for_host())
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

    /// Runs `program` with the machine's environment (see [`native::run`]).
    pub fn run(&self, program: &Path, args: &[&str]) -> Result<String, RunError> {
        native::run(&self.ctx, program, args)
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
