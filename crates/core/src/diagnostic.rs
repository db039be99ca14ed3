//! One error model: an error's message is its `Display`, its causes are its `source()`
//! chain, and the ways out are data, `Diagnostic::hints`. `ui::error` renders all three.
//!
//! The edge holds an error whose chain yields plain `&dyn Error`s (the CLI an `anyhow::Error`,
//! the proxy a `ProxyError`). Rust cannot ask a `&dyn Error` whether its type implements
//! another trait, so each crate names its error types that have hints once, in
//! `diagnostics!`, which makes its `find` function (downcasting a cause to each in turn) and
//! is the only thing that implements `Listed`, a supertrait of `Diagnostic`: a type missing
//! from the list cannot implement `Diagnostic`, so every hint is reachable by construction.
//! The edge hands the renderer the `find`s of the crates it uses (`edges::hints::FIND` for core,
//! `gpuenv_install::FIND` for install and core). A `#[error(transparent)]` wrapper hides the
//! error it wraps from the chain, so its `hints()` must return the wrapped error's.

use std::error::Error;

/// An error that knows how to fix what went wrong. Only a type named in its crate's
/// `diagnostics!` can be one:
///
/// ```compile_fail
/// #[derive(Debug)]
/// struct Unlisted;
/// impl std::fmt::Display for Unlisted {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("unlisted")
///     }
/// }
/// impl std::error::Error for Unlisted {}
/// impl gpuenv_core::diagnostic::Diagnostic for Unlisted {
///     fn hints(&self) -> Vec<String> {
///         vec!["never shown".into()]
///     }
/// }
/// ```
pub trait Diagnostic: Error + Listed {
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

/// Implemented by `diagnostics!` alone, for the types it puts into its crate's `find`.
#[doc(hidden)]
pub trait Listed {}

/// `diagnostics!(pub fn find: TypeA, TypeB)`: the one list of a crate's error types that
/// have hints. Makes `find` (what the renderer asks) and lets each listed type, and only
/// those, implement `Diagnostic`:
///
/// ```
/// #[derive(Debug)]
/// struct Listed;
/// impl std::fmt::Display for Listed {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("listed")
///     }
/// }
/// impl std::error::Error for Listed {}
/// impl gpuenv_core::diagnostic::Diagnostic for Listed {
///     fn hints(&self) -> Vec<String> {
///         vec!["shown".into()]
///     }
/// }
/// gpuenv_core::diagnostics!(fn find: Listed);
///
/// let report = gpuenv_core::ui::Report::of(&Listed, &[find]);
/// assert_eq!(report.hints, ["shown"]);
/// ```
#[macro_export]
macro_rules! diagnostics {
    ($(#[$meta:meta])* $vis:vis fn $find:ident: $($ty:ty),+ $(,)?) => {
        $(impl $crate::diagnostic::Listed for $ty {})+

        $(#[$meta])*
        $vis fn $find<'a>(
            err: &'a (dyn ::std::error::Error + 'static),
        ) -> ::std::option::Option<&'a (dyn $crate::diagnostic::Diagnostic + 'static)> {
            $crate::find_diagnostic!(err, $($ty),+)
        }
    };
}

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
