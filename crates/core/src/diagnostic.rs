//! One error model: an error's message is its `Display`, its causes are its `source()`
//! chain, and the ways out are data, `Diagnostic::hints`. `ui::error` renders all three.
//!
//! The edge holds an error whose chain yields plain `&dyn Error`s (the CLI an `anyhow::Error`,
//! the proxy a `ProxyError`). Rust cannot ask a `&dyn Error` whether its type implements
//! another trait, so each crate lists its error types that have hints in one `find`
//! function, which downcasts a cause to each in turn; the edge hands the renderer the
//! `find`s of the crates it uses (`FIND` here for core, `gpuenv_install::FIND` for install
//! and core). A new error type with hints goes into its crate's `find`; the tests that
//! assert on its hint catch a forgotten one. A `#[error(transparent)]` wrapper hides the
//! error it wraps from the chain, so its `hints()` must return the wrapped error's.

use std::error::Error;

/// An error that knows how to fix what went wrong.
pub trait Diagnostic: Error {
    /// The ways out, one sentence each (exact commands where there are some); shown after
    /// the message and its causes, so the fix is the last thing on the screen.
    fn hints(&self) -> Vec<String>;
}

/// Recognises the error types of one crate that are `Diagnostic`s.
pub type Find = for<'a> fn(&'a (dyn Error + 'static)) -> Option<&'a (dyn Diagnostic + 'static)>;

/// Downcasts `$err` to each listed type and returns the first that fits as a `Diagnostic`.
#[macro_export]
macro_rules! find_diagnostic {
    ($err:expr, $($ty:ty),+ $(,)?) => {{
        let err: &(dyn ::std::error::Error + 'static) = $err;
        None$(.or_else(|| {
            err.downcast_ref::<$ty>()
                .map(|d| d as &(dyn $crate::diagnostic::Diagnostic + 'static))
        }))+
    }};
}

/// gpuenv-core's diagnostics.
pub fn find<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a (dyn Diagnostic + 'static)> {
    use crate::toolchain::{registry, upstream};
    use crate::{
        auto_install, build_cache, context, driver, guard, project, proxy, resolve, shell, shims,
        store,
    };
    find_diagnostic!(
        err,
        Hinted,
        auto_install::InstallFailed,
        auto_install::NotAllowed,
        build_cache::BadVar,
        context::NoHome,
        driver::DriverTooOld,
        shell::SlurmError,
        shims::ShimError,
        store::StoreError,
        upstream::SystemConfigError,
        guard::Refusal,
        project::ProjectError,
        proxy::ProxyError,
        resolve::ResolveError,
        registry::StateError,
    )
}

/// The finder of gpuenv-core, for the edges that use core alone (the proxy).
pub const FIND: &[Find] = &[find];

/// An error made on the spot, where no error type exists for it (code at the edge, or code
/// that uses `anyhow`): a message, hints, and optionally the error that caused it.
#[derive(Debug)]
pub struct Hinted {
    message: String,
    hints: Vec<String>,
    source: Option<Box<dyn Error + Send + Sync + 'static>>,
}

impl Hinted {
    pub fn new(message: impl Into<String>) -> Self {
        Hinted {
            message: message.into(),
            hints: Vec::new(),
            source: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// The error this one explains; it stays in the chain and is rendered as a cause.
    pub fn caused_by(mut self, source: impl Into<Box<dyn Error + Send + Sync + 'static>>) -> Self {
        self.source = Some(source.into());
        self
    }
}

impl std::fmt::Display for Hinted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for Hinted {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

impl Diagnostic for Hinted {
    fn hints(&self) -> Vec<String> {
        self.hints.clone()
    }
}
