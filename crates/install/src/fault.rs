//! What can go wrong fetching and unpacking, as values the caller decides on (retry, fall
//! back to another source, report). Each message names the URL or archive; the ones with a
//! fix have hints. `classify` turns an HTTP client's error into one.

use gpuenv_core::diagnostic::Diagnostic;
use reqwest::{StatusCode, Url};

#[derive(Debug, thiserror::Error)]
pub enum Fault {
    #[error("cannot resolve the host of {url}: {message}")]
    Dns { url: String, message: String },
    #[error("cannot connect to {url}: {message}")]
    Connect { url: String, message: String },
    #[error("timed out fetching {url}")]
    Timeout { url: String },
    #[error("{url} was not found (HTTP 404)")]
    NotFound { url: String },
    #[error("{path} does not exist")]
    NoSuchFile { path: String },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("the download of {url} ended early ({got} of {want} bytes)")]
    ShortBody { url: String, got: u64, want: u64 },
    /// A local archive (a directory or `file://` mirror) shorter than its manifest says:
    /// not a download cut short, so nothing to resume.
    #[error("{path} is {got} bytes, shorter than the {want} bytes its manifest gives: it is not the whole archive; nothing was installed")]
    ShortFile { path: String, got: u64, want: u64 },
    #[error("fetching {url} failed: {message}")]
    Transfer { url: String, message: String },
    #[error("{url} redirects in a loop, or through more redirects than anyone should: {message}")]
    Redirect { url: String, message: String },
    #[error("the certificate of {url} is not trusted here: {message}")]
    Certificate { url: String, message: String },
    #[error("{url} does not match its sha256 (expected {want}, got {got}); nothing was installed")]
    HashMismatch {
        url: String,
        want: String,
        got: String,
    },
    #[error("the archive {archive} has an unsafe entry `{entry}`: {why}; nothing was installed")]
    UnsafeArchiveEntry {
        archive: String,
        entry: String,
        why: String,
    },
    #[error("the archive {archive} is corrupt: {message}; nothing was installed")]
    CorruptArchive {
        archive: String,
        url: String,
        message: String,
    },
    #[error("{url} is not in the download cache, and --offline forbids fetching it")]
    NotCached { url: String },
    #[error("writing {path} failed: {message}")]
    Io { path: String, message: String },
    /// A reply (or a local file standing for one) past the cap of what it should be.
    #[error("{what} is larger than {limit} bytes from {url}; nothing of it was used")]
    TooLarge {
        url: String,
        limit: u64,
        what: String,
    },
}

impl Diagnostic for Fault {
    fn hints(&self) -> Vec<String> {
        let hint = match self {
            Fault::Dns { .. } => "check the network and the host name; mirrors are set with GPUENV_CUDA_MIRROR and GPUENV_PYPI_URL, and `--offline` installs from the download cache".into(),
            Fault::Connect { .. } => "check the network, a proxy (HTTPS_PROXY) or the mirror; `--offline` installs from the download cache".into(),
            Fault::Timeout { .. } => "try again (a partial download resumes); GPUENV_HTTP_TIMEOUT sets the seconds to wait for data".into(),
            Fault::NotFound { .. } => "the mirror does not have this file; `gpuenv list --available cuda` shows what it has".into(),
            Fault::ShortBody { .. } => "try again: the part already fetched is kept and the download resumes".into(),
            Fault::ShortFile { .. } => "copy the whole archive to that path again (a local file is read as it is, never resumed), or point GPUENV_CUDA_MIRROR or --manifest at a complete mirror".into(),
            Fault::HashMismatch { .. } => "the file on the server is corrupt or was replaced; try again later, and if it persists tell the mirror's owner".into(),
            Fault::UnsafeArchiveEntry { .. } => "the archive is corrupt or hostile: check where it comes from".into(),
            Fault::CorruptArchive { url, .. } => format!("it matches the sha256 its source gives, so the file published at {url} is itself broken: tell whoever publishes it (gpuenv removed its copy from the download cache)"),
            Fault::NoSuchFile { .. } => "check the path (a relative one is taken from the current directory)".into(),
            Fault::Redirect { .. } => "check the mirror's URL (GPUENV_CUDA_MIRROR, GPUENV_PYPI_URL, --manifest); if it is right, tell whoever runs the server".into(),
            Fault::Certificate { .. } => "a company mirror's CA must be in the system's roots (put it in /usr/local/share/ca-certificates and run `update-ca-certificates`)".into(),
            Fault::NotCached { .. } => "run the same install once without --offline".into(),
            Fault::TooLarge { .. } => "check the mirror's URL (GPUENV_CUDA_MIRROR, GPUENV_PYPI_URL, --manifest); if it is right, tell whoever runs the server".into(),
            Fault::Status { .. } | Fault::Transfer { .. } | Fault::Io { .. } => return Vec::new(),
        };
        vec![hint]
    }
}

impl Fault {
    /// Worth another attempt: the network may do better next time. A 404, a redirect loop,
    /// a certificate nobody trusts or a bad hash will be the same again.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Fault::Connect { .. }
                | Fault::Timeout { .. }
                | Fault::ShortBody { .. }
                | Fault::Transfer { .. }
        ) || matches!(self, Fault::Status { status, .. } if *status >= 500 || *status == 429)
    }

    /// The network (or the server at the other end) failed, not what was asked: gpuenv
    /// exits with its own status for it, so a script can retry.
    pub fn is_network(&self) -> bool {
        matches!(
            self,
            Fault::Dns { .. }
                | Fault::Connect { .. }
                | Fault::Timeout { .. }
                | Fault::Status { .. }
                | Fault::ShortBody { .. }
                | Fault::Transfer { .. }
                | Fault::Redirect { .. }
                | Fault::Certificate { .. }
        )
    }

    pub fn io(path: &std::path::Path, e: impl std::fmt::Display) -> Fault {
        Fault::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}

/// Every source failed for the network: the cause of "no source could install".
#[derive(Debug, thiserror::Error)]
#[error("no source could be reached: the network or the servers failed")]
pub struct Unreachable;

pub(super) fn first_line(f: &Fault) -> String {
    f.to_string().lines().next().unwrap_or_default().to_string()
}

pub(super) fn check_status(url: &Url, status: StatusCode) -> Result<(), Fault> {
    match status {
        s if s.is_success() => Ok(()),
        StatusCode::NOT_FOUND | StatusCode::GONE => Err(Fault::NotFound {
            url: url.to_string(),
        }),
        s => Err(Fault::Status {
            url: url.to_string(),
            status: s.as_u16(),
        }),
    }
}

/// The whole chain of an error, which is where reqwest says what really happened.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(c) = cur {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = c.source();
    }
    parts.join(": ")
}

pub(super) fn classify(url: &Url, e: &reqwest::Error) -> Fault {
    let message = chain(e);
    // The innermost cause says what happened ("failed to lookup address information: …").
    let root_cause = {
        let mut cur: &dyn std::error::Error = e;
        while let Some(next) = cur.source() {
            cur = next;
        }
        cur.to_string()
    };
    let url = url.to_string();
    let lower = message.to_lowercase();
    if e.is_timeout() {
        Fault::Timeout { url }
    } else if e.is_redirect() {
        Fault::Redirect { url, message }
    } else if lower.contains("certificate") {
        Fault::Certificate {
            url,
            message: root_cause,
        }
    } else if lower.contains("dns error")
        || lower.contains("failed to lookup address")
        || lower.contains("name or service not known")
    {
        Fault::Dns {
            url,
            message: root_cause,
        }
    } else if e.is_connect() {
        Fault::Connect {
            url,
            message: root_cause,
        }
    } else {
        Fault::Transfer { url, message }
    }
}
