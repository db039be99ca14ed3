//! The one handle on process state: working directory and environment variables, read once
//! at the edge and passed down, so everything below runs in tests without touching the
//! real process.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result};

use crate::toolchain::registry::Home;

/// Every environment variable gpuenv reads (besides the path lists it edits).
pub mod vars {
    pub const GPUENV_HOME: &str = "GPUENV_HOME";
    pub const GPUENV_TOOLCHAIN: &str = "GPUENV_TOOLCHAIN";
    pub const GPUENV_DISCOVER_ROOTS: &str = "GPUENV_DISCOVER_ROOTS";
    pub const XDG_DATA_HOME: &str = "XDG_DATA_HOME";
    pub const HOME: &str = "HOME";
    pub const CONDA_PREFIX: &str = "CONDA_PREFIX";
    pub const NO_COLOR: &str = "NO_COLOR";
    /// `gpuenv doctor` reads `/proc`, `/dev` and `/.dockerenv` under this root (default `/`).
    pub const GPUENV_DOCTOR_ROOT: &str = "GPUENV_DOCTOR_ROOT";
    // Installing.
    /// NVIDIA's redist root (a URL, `file://` URL or directory).
    pub const GPUENV_CUDA_MIRROR: &str = "GPUENV_CUDA_MIRROR";
    /// The package index for the pypi source; else pip's `PIP_INDEX_URL`; else PyPI.
    pub const GPUENV_PYPI_URL: &str = "GPUENV_PYPI_URL";
    pub const PIP_INDEX_URL: &str = "PIP_INDEX_URL";
    /// The download cache (default `$GPUENV_HOME/downloads`).
    pub const GPUENV_DOWNLOAD_CACHE: &str = "GPUENV_DOWNLOAD_CACHE";
    /// Seconds to wait for data before a download counts as timed out (default 60).
    pub const GPUENV_HTTP_TIMEOUT: &str = "GPUENV_HTTP_TIMEOUT";
    pub const HTTPS_PROXY: &str = "HTTPS_PROXY";
    pub const HTTP_PROXY: &str = "HTTP_PROXY";
    pub const ALL_PROXY: &str = "ALL_PROXY";
    pub const NO_PROXY: &str = "NO_PROXY";
    /// Debug builds only: stop at an install stage for crash tests (`<stage>:<marker file>`).
    pub const GPUENV_TEST_HANG_AT: &str = "GPUENV_TEST_HANG_AT";
}

#[derive(Debug, Clone, Default)]
pub struct Context {
    pub cwd: PathBuf,
    pub vars: BTreeMap<String, String>,
}

impl Context {
    pub fn from_process() -> Result<Context> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        Ok(Context { cwd, vars })
    }

    pub fn var(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str)
    }

    /// A variable that is set and not empty.
    pub fn var_nonempty(&self, key: &str) -> Option<&str> {
        self.var(key).filter(|v| !v.is_empty())
    }

    pub fn home_dir(&self) -> Option<PathBuf> {
        self.var_nonempty(vars::HOME).map(PathBuf::from)
    }

    /// `GPUENV_HOME`, else `$XDG_DATA_HOME/gpuenv`, else `~/.local/share/gpuenv`.
    pub fn gpuenv_home(&self) -> Result<Home> {
        if let Some(h) = self.var_nonempty(vars::GPUENV_HOME) {
            return Ok(Home::new(self.cwd.join(h)));
        }
        if let Some(x) = self.var_nonempty(vars::XDG_DATA_HOME) {
            return Ok(Home::new(PathBuf::from(x).join("gpuenv")));
        }
        let home = self
            .home_dir()
            .context("neither GPUENV_HOME nor HOME is set\nhint: set GPUENV_HOME to the directory gpuenv should keep its state in")?;
        Ok(Home::new(home.join(".local/share/gpuenv")))
    }
}
