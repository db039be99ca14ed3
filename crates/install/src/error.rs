//! `InstallError`: every way an install (or an uninstall, a prune, a lock) can fail, as a
//! value a caller can match on; its hints come through core's `Diagnostic` registry.

use std::error::Error;
use std::fmt::Display;

use gpuenv_core::diagnostic::{Diagnostic, Hinted};
use gpuenv_core::store::retired::RetiredError;
use gpuenv_core::store::StoreError;
use gpuenv_core::toolchain::Spec;
use gpuenv_core::ui::Report;

use crate::cache::{LockFailed, Refused};
use crate::fault::{Fault, Unreachable};
use crate::home::ReadOnlyHome;
use crate::lock::error::LockError;

pub type Result<T, E = InstallError> = std::result::Result<T, E>;

/// Why an install failed. The wrapping variants are transparent: the message, causes and
/// hints are those of the error they hold.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Fetching or unpacking failed: the network, a hash mismatch, a refused archive entry.
    #[error(transparent)]
    Fault(#[from] Fault),
    /// No source has the release; each source's reason inside.
    #[error(transparent)]
    NoSource(#[from] NoSource),
    /// The download cache is not one gpuenv can use.
    #[error(transparent)]
    Cache(#[from] Refused),
    /// A gpuenv.lock that cannot be read or is not valid.
    #[error(transparent)]
    LockFile(#[from] LockError),
    #[error(transparent)]
    ReadOnlyHome(#[from] ReadOnlyHome),
    /// A toolchain or cache lock could not be taken.
    #[error(transparent)]
    Lock(#[from] LockFailed),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A retired tree's record gpuenv did not write or cannot read.
    #[error(transparent)]
    Retired(#[from] RetiredError),
    /// A file operation (fs-err names the path in the message).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// What was being done when `source` (an `InstallError`) happened. Boxed as a `dyn
    /// Error` so that the chain yields the `InstallError` itself (a `Box<InstallError>` would
    /// be a link of its own that no downcast finds).
    #[error("{message}")]
    Context {
        message: String,
        #[source]
        source: Box<dyn Error + Send + Sync + 'static>,
    },
    /// A refusal made on the spot, with its ways out.
    #[error(transparent)]
    Refused(#[from] Hinted),
    /// A foreign error (a parse of JSON, TOML or a URL, a core type).
    #[error(transparent)]
    Other(Box<dyn Error + Send + Sync + 'static>),
}

impl Diagnostic for InstallError {
    fn hints(&self) -> Vec<String> {
        match self {
            InstallError::Fault(e) => e.hints(),
            InstallError::NoSource(e) => e.hints(),
            InstallError::Cache(e) => e.hints(),
            InstallError::LockFile(e) => e.hints(),
            InstallError::ReadOnlyHome(e) => e.hints(),
            InstallError::Lock(e) => e.hints(),
            InstallError::Refused(e) => e.hints(),
            // Transparent: the wrapped error is not in the chain, so its hints are said here.
            InstallError::Store(e) => hints_of(e),
            InstallError::Retired(e) => hints_of(e),
            InstallError::Other(e) => hints_of(e.as_ref()),
            InstallError::Io(_) | InstallError::Context { .. } => Vec::new(),
        }
    }
}

fn hints_of(e: &(dyn Error + 'static)) -> Vec<String> {
    crate::FIND
        .iter()
        .find_map(|f| f(e))
        .map(|d| d.hints())
        .unwrap_or_default()
}

impl InstallError {
    /// A refusal with no error type of its own: a message (hints are added to `Hinted`).
    pub fn msg(message: impl Into<String>) -> InstallError {
        InstallError::Refused(Hinted::new(message))
    }

    /// A foreign error with no variant of its own (a URL's parse error).
    pub fn other(e: impl Error + Send + Sync + 'static) -> InstallError {
        InstallError::Other(Box::new(e))
    }

    /// The network (or a server) failed, here or in what this error wraps: gpuenv exits
    /// with its own status for it, so a script can retry.
    pub fn is_network(&self) -> bool {
        is_network_failure(self)
    }
}

/// Whether `err` comes from the network (or a server) failing, anywhere in its chain.
pub fn is_network_failure(err: &(dyn Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        let network = e.is::<Unreachable>()
            || e.downcast_ref::<Fault>().is_some_and(Fault::is_network)
            || match e.downcast_ref::<InstallError>() {
                // Transparent wrappers hide what they hold from the chain.
                Some(InstallError::Fault(f)) => f.is_network(),
                Some(InstallError::NoSource(n)) => n.unreachable(),
                _ => false,
            };
        if network {
            return true;
        }
        next = e.source();
    }
    false
}

/// No source could install a release: each source's reason, and their hints.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct NoSource {
    /// What was asked.
    pub spec: String,
    /// Each source tried, with why it could not.
    pub reasons: Vec<(&'static str, InstallError)>,
    message: String,
    hints: Vec<String>,
    /// Set when every source failed for the network.
    #[source]
    unreachable: Option<Unreachable>,
}

impl NoSource {
    pub(crate) fn new(spec: &Spec, reasons: Vec<(&'static str, InstallError)>) -> NoSource {
        let mut message = format!("no source could install {spec}:");
        let mut hints = Vec::new();
        for (name, e) in &reasons {
            let report = Report::of(e, crate::FIND);
            message.push_str(&format!(
                "\n  {name}: {}",
                report.inline().replace('\n', "\n    ")
            ));
            hints.extend(report.hints.into_iter().map(|h| format!("{h} ({name})")));
        }
        let unreachable = (!reasons.is_empty()
            && reasons.iter().all(|(_, e)| is_network_failure(e)))
        .then_some(Unreachable);
        NoSource {
            spec: spec.to_string(),
            reasons,
            message,
            hints,
            unreachable,
        }
    }

    /// Every source failed for the network.
    pub fn unreachable(&self) -> bool {
        self.unreachable.is_some()
    }
}

impl Diagnostic for NoSource {
    fn hints(&self) -> Vec<String> {
        self.hints.clone()
    }
}

macro_rules! other {
    ($($ty:ty),+ $(,)?) => {
        $(impl From<$ty> for InstallError {
            fn from(e: $ty) -> InstallError {
                InstallError::Other(Box::new(e))
            }
        })+
    };
}

other!(
    serde_json::Error,
    toml::de::Error,
    toml::ser::Error,
    reqwest::Error,
    crate::pathpart::UnsafeValue,
    gpuenv_core::outside::ReadError,
    gpuenv_core::toolchain::registry::StateError,
    gpuenv_core::toolchain::NameError,
    gpuenv_core::toolchain::detect::NotAToolchain,
    gpuenv_core::facts::version::VersionError,
);

/// `.context(...)` for the install crate: says what was being done when an error
/// happened (the error stays as the cause).
pub(crate) trait Context<T> {
    fn context<C: Display>(self, message: C) -> Result<T>;
    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T>;
}

impl<T, E: Into<InstallError>> Context<T> for std::result::Result<T, E> {
    fn context<C: Display>(self, message: C) -> Result<T> {
        self.map_err(|e| InstallError::Context {
            message: message.to_string(),
            source: Box::new(e.into()) as Box<dyn Error + Send + Sync>,
        })
    }

    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T> {
        self.map_err(|e| InstallError::Context {
            message: f().to_string(),
            source: Box::new(e.into()) as Box<dyn Error + Send + Sync>,
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context<C: Display>(self, message: C) -> Result<T> {
        self.ok_or_else(|| InstallError::msg(message.to_string()))
    }

    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T> {
        self.ok_or_else(|| InstallError::msg(f().to_string()))
    }
}

/// `err` and its causes on one line, `message: cause: cause`.
pub fn one_line(err: &(dyn Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut next = err.source();
    while let Some(e) = next {
        text.push_str(": ");
        text.push_str(&e.to_string());
        next = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuenv_core::ui::Report;

    fn timeout() -> Result<()> {
        Err(Fault::Timeout {
            url: "https://mirror.example/x".into(),
        }
        .into())
    }

    #[test]
    fn a_context_keeps_what_it_wraps_visible_to_hints_and_the_exit_status() {
        let err = timeout()
            .context("fetching x")
            .context("installing cuda-13.0")
            .unwrap_err();
        assert!(matches!(&err, InstallError::Context { .. }));
        let report = Report::of(&err, crate::FIND);
        assert_eq!(report.message, "installing cuda-13.0");
        assert_eq!(
            report.causes,
            ["fetching x", "timed out fetching https://mirror.example/x"]
        );
        assert_eq!(report.hints.len(), 1, "{report:?}");
        assert!(report.hints[0].contains("GPUENV_HTTP_TIMEOUT"));
        assert!(err.is_network());
        assert_eq!(
            one_line(&err),
            "installing cuda-13.0: fetching x: timed out fetching https://mirror.example/x"
        );
    }

    #[test]
    fn a_refusal_is_not_a_network_failure() {
        let err: InstallError = Hinted::new("no such release").hint("try another").into();
        assert!(!err.is_network());
        assert_eq!(Report::of(&err, crate::FIND).hints, ["try another"]);
    }
}
