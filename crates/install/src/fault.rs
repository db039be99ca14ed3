//! What can go wrong fetching and unpacking, as values the caller decides on (retry, fall
//! back to another source, report). Each message names the URL or archive; the ones with a
//! fix end with a `hint:` line.

#[derive(Debug, thiserror::Error)]
pub enum Fault {
    #[error("cannot resolve the host of {url}: {message}\nhint: check the network and the host name; mirrors are set with GPUENV_CUDA_MIRROR and GPUENV_PYPI_URL, and `--offline` installs from the download cache")]
    Dns { url: String, message: String },
    #[error("cannot connect to {url}: {message}\nhint: check the network, a proxy (HTTPS_PROXY) or the mirror; `--offline` installs from the download cache")]
    Connect { url: String, message: String },
    #[error("timed out fetching {url}\nhint: try again (a partial download resumes); GPUENV_HTTP_TIMEOUT sets the seconds to wait for data")]
    Timeout { url: String },
    #[error("{url} was not found (HTTP 404)\nhint: the mirror does not have this file; `gpuenv list --available cuda` shows what it has")]
    NotFound { url: String },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("the download of {url} ended early ({got} of {want} bytes)\nhint: try again: the part already fetched is kept and the download resumes")]
    ShortBody { url: String, got: u64, want: u64 },
    #[error("fetching {url} failed: {message}")]
    Transfer { url: String, message: String },
    #[error("{url} does not match its sha256 (expected {want}, got {got}); nothing was installed\nhint: the file on the server is corrupt or was replaced; try again later, and if it persists tell the mirror's owner")]
    HashMismatch {
        url: String,
        want: String,
        got: String,
    },
    #[error("the archive {archive} has an unsafe entry `{entry}`: {why}; nothing was installed\nhint: the archive is corrupt or hostile: check where it comes from")]
    UnsafeArchiveEntry {
        archive: String,
        entry: String,
        why: String,
    },
    #[error("the archive {archive} is corrupt: {message}; nothing was installed\nhint: remove it from the download cache ({path}) and try again")]
    CorruptArchive {
        archive: String,
        path: String,
        message: String,
    },
    #[error("{url} is not in the download cache, and --offline forbids fetching it\nhint: run the same install once without --offline")]
    NotCached { url: String },
    #[error("writing {path} failed: {message}")]
    Io { path: String, message: String },
}

impl Fault {
    /// Worth another attempt: the network may do better next time.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Fault::Connect { .. }
                | Fault::Timeout { .. }
                | Fault::ShortBody { .. }
                | Fault::Transfer { .. }
        ) || matches!(self, Fault::Status { status, .. } if *status >= 500 || *status == 429)
    }

    pub fn io(path: &std::path::Path, e: impl std::fmt::Display) -> Fault {
        Fault::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}
