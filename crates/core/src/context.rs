//! The one handle on process state: working directory and environment variables, read once
//! at the edge and passed down, so everything below runs in tests without touching the
//! real process. Where gpuenv's home is (`Context::gpuenv_home`) is the store's to say
//! (`store::locate`).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// Every environment variable gpuenv reads or sets (the registry in `facts::vars`).
pub use crate::facts::vars;

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
