//! The one handle on process state: working directory and environment variables, read once
//! at the edge and passed down, so everything below runs in tests without touching the
//! real process. Where gpuenv's home is (`Context::gpuenv_home`) is the store's to say
//! (`store::locate`).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// Every environment variable gpuenv reads (besides the path lists it edits).
pub mod vars {
    pub const GPUENV_HOME: &str = "GPUENV_HOME";
    pub const GPUENV_TOOLCHAIN: &str = "GPUENV_TOOLCHAIN";
    pub const GPUENV_DISCOVER_ROOTS: &str = "GPUENV_DISCOVER_ROOTS";
    /// Other gpuenv homes (a site's shared store), colon-separated, read-only.
    pub const GPUENV_UPSTREAMS: &str = "GPUENV_UPSTREAMS";
    /// The system config (default `/etc/gpuenv/config.toml`).
    pub const GPUENV_SYSTEM_CONFIG: &str = "GPUENV_SYSTEM_CONFIG";
    /// Directories of module files (Lmod, Environment Modules).
    pub const MODULEPATH: &str = "MODULEPATH";
    /// The module files loaded now (set by Lmod and Environment Modules).
    pub const LMFILES: &str = "_LMFILES_";
    /// The names of the modules loaded now, in `_LMFILES_`'s order.
    pub const LOADEDMODULES: &str = "LOADEDMODULES";
    pub const XDG_DATA_HOME: &str = "XDG_DATA_HOME";
    pub const HOME: &str = "HOME";
    pub const CONDA_PREFIX: &str = "CONDA_PREFIX";
    /// The active venv: where a `torch` pin and the guard look for torch first.
    pub const VIRTUAL_ENV: &str = "VIRTUAL_ENV";
    /// The torch guard's policy: `minor` (default), `major` or `off`.
    pub const GPUENV_TORCH_CHECK: &str = "GPUENV_TORCH_CHECK";
    /// The compiler cache the proxy compiles through: ccache, sccache or off.
    pub const GPUENV_BUILD_CACHE: &str = "GPUENV_BUILD_CACHE";
    /// Set by the hook scripts to the shell they run in (`gpuenv use` prints that shell's code).
    pub const GPUENV_SHELL: &str = "GPUENV_SHELL";
    /// How many gpuenv proxies are running in a chain; the proxy stops at 3.
    pub const GPUENV_SHIM_DEPTH: &str = "GPUENV_SHIM_DEPTH";
    // Read by `gpuenv doctor` to diagnose, never acted on.
    pub const TORCH_CUDA_ARCH_LIST: &str = "TORCH_CUDA_ARCH_LIST";
    pub const PYTORCH_ROCM_ARCH: &str = "PYTORCH_ROCM_ARCH";
    /// A host compiler the user gives nvcc here (`-ccbin` in the flags, or NVCC_CCBIN): the
    /// proxy then adds no `-ccbin` of its own.
    pub const NVCC_CCBIN: &str = "NVCC_CCBIN";
    pub const NVCC_PREPEND_FLAGS: &str = "NVCC_PREPEND_FLAGS";
    pub const NVCC_APPEND_FLAGS: &str = "NVCC_APPEND_FLAGS";
    pub const CUDA_VISIBLE_DEVICES: &str = "CUDA_VISIBLE_DEVICES";
    pub const NCCL_ROOT: &str = "NCCL_ROOT";
    pub const NCCL_INCLUDE_DIR: &str = "NCCL_INCLUDE_DIR";
    pub const NCCL_LIB_DIR: &str = "NCCL_LIB_DIR";
    pub const RCCL_HOME: &str = "RCCL_HOME";
    pub const SLURM_JOB_ID: &str = "SLURM_JOB_ID";
    pub const SLURMD_NODENAME: &str = "SLURMD_NODENAME";
    pub const SLURM_EXPORT_ENV: &str = "SLURM_EXPORT_ENV";
    /// How many nodes the allocation has (`doctor --all-nodes` expects a report from each).
    pub const SLURM_JOB_NUM_NODES: &str = "SLURM_JOB_NUM_NODES";
    pub const NO_COLOR: &str = "NO_COLOR";
    /// How much to say: quiet, info (default), verbose (`-q` / `-v` win over it).
    pub const GPUENV_LOG: &str = "GPUENV_LOG";
    /// `1`: a shim or the shell hook installs a pinned toolkit that is missing (through
    /// `gpuenv install`) instead of failing.
    pub const GPUENV_AUTO_INSTALL: &str = "GPUENV_AUTO_INSTALL";
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
    /// `1`: keep each archive in the download cache after it is unpacked (a mirror of what
    /// was fetched); by default only the unpacked files a reinstall links are kept.
    pub const GPUENV_KEEP_ARCHIVES: &str = "GPUENV_KEEP_ARCHIVES";
    /// Seconds to wait for data before a download counts as timed out (default 60).
    pub const GPUENV_HTTP_TIMEOUT: &str = "GPUENV_HTTP_TIMEOUT";
    /// Seconds a program gpuenv asks something (`g++ --version`, `nvidia-smi`) may take
    /// before it is stopped (default 10).
    pub const GPUENV_PROBE_TIMEOUT: &str = "GPUENV_PROBE_TIMEOUT";
    pub const HTTPS_PROXY: &str = "HTTPS_PROXY";
    pub const HTTP_PROXY: &str = "HTTP_PROXY";
    pub const ALL_PROXY: &str = "ALL_PROXY";
    pub const NO_PROXY: &str = "NO_PROXY";
    /// Debug builds only: stop at an install stage for crash tests (`<stage>:<marker file>`).
    pub const GPUENV_TEST_HANG_AT: &str = "GPUENV_TEST_HANG_AT";
    /// Debug builds only: wait at an install stage until the marker file is deleted.
    pub const GPUENV_TEST_PAUSE_AT: &str = "GPUENV_TEST_PAUSE_AT";
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read the current directory")]
pub struct NoCwd(#[source] pub std::io::Error);

/// The process's working directory and environment. Values are bytes (`OsString`): one
/// that is not UTF-8 (a directory named in Latin-1 on PATH) is kept exactly as it is.
/// Variables whose *name* is not UTF-8 are left out; gpuenv never sets them, and a command
/// it runs inherits them untouched.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub cwd: PathBuf,
    pub vars: BTreeMap<String, OsString>,
}

impl Context {
    pub fn from_process() -> Result<Context, NoCwd> {
        let cwd = std::env::current_dir().map_err(NoCwd)?;
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
            .collect();
        Ok(Context { cwd, vars })
    }

    /// A value gpuenv has to understand (a spec, a number, a URL): `None` when unset or
    /// not UTF-8.
    pub fn var(&self, key: &str) -> Option<&str> {
        self.vars.get(key).and_then(|v| v.to_str())
    }

    /// A value as bytes, for values gpuenv passes on or edits (path lists).
    pub fn var_os(&self, key: &str) -> Option<&OsStr> {
        self.vars.get(key).map(OsString::as_os_str)
    }

    /// A variable that is set, not empty, and UTF-8.
    pub fn var_nonempty(&self, key: &str) -> Option<&str> {
        self.var(key).filter(|v| !v.is_empty())
    }

    /// A yes/no variable: on when set to 1, true, yes or on (any case).
    pub fn flag(&self, key: &str) -> bool {
        matches!(
            self.var_nonempty(key)
                .map(str::to_ascii_lowercase)
                .as_deref(),
            Some("1" | "true" | "yes" | "on")
        )
    }

    /// A variable naming a directory or file: set and not empty, any bytes.
    pub fn path_var(&self, key: &str) -> Option<PathBuf> {
        self.var_os(key)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }

    /// `HOME`, else the account's home from the password database (a SLURM step started
    /// with `--export=NONE` has no HOME).
    pub fn home_dir(&self) -> Option<PathBuf> {
        self.path_var(vars::HOME)
            .or_else(crate::passwd::account_home)
    }

    /// The prefix of every absolute system path gpuenv reads (`/proc`, `/dev`, `/.dockerenv`):
    /// `GPUENV_DOCTOR_ROOT`, else `/`.
    pub fn system_root(&self) -> PathBuf {
        self.path_var(vars::GPUENV_DOCTOR_ROOT)
            .unwrap_or_else(|| PathBuf::from("/"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_is_on_only_for_the_usual_yes_words() {
        let ctx = |value: &str| Context {
            cwd: PathBuf::from("/"),
            vars: [("F".to_string(), OsString::from(value))].into(),
        };
        for on in ["1", "true", "YES", "On"] {
            assert!(ctx(on).flag("F"), "{on}");
        }
        for off in ["", "0", "no", "off", "2", "y", " 1", "true\n"] {
            assert!(!ctx(off).flag("F"), "{off:?}");
        }
        assert!(!Context::default().flag("F"));
    }
}
