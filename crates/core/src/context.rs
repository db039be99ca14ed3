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
/// A yes/no variable set to something else.
#[derive(Debug, thiserror::Error)]
#[error("{name}={} is not a yes/no value", crate::ui::printable(value))]
pub struct BadFlag {
    pub name: String,
    pub value: String,
}

impl crate::diagnostic::Diagnostic for BadFlag {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "set {} to one of {} (yes) or {} (no), or unset it",
            self.name,
            vars::YES.join(", "),
            vars::NO.join(", ")
        )]
    }
}

#[derive(Debug, Clone, Default)]
pub struct Context {
    pub cwd: PathBuf,
    pub vars: BTreeMap<String, OsString>,
}

impl Context {
    pub fn from_process() -> Result<Context, NoCwd> {
        Ok(Context::at(std::env::current_dir().map_err(NoCwd)?))
    }

    fn at(cwd: PathBuf) -> Context {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
            .collect();
        Context { cwd, vars }
    }

    /// [`Context::from_process`] for the prompt hook: a working directory deleted under
    /// the shell is the shell's `$PWD` as it still names it (resolution walks up from
    /// there, so the toolchain of a deleted project is taken back once, not an error at
    /// every prompt).
    pub fn from_process_at_prompt() -> Result<Context, NoCwd> {
        let cwd = match std::env::current_dir() {
            Ok(cwd) => cwd,
            Err(e) => std::env::var_os(vars::PWD)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .ok_or(NoCwd(e))?,
        };
        Ok(Context::at(cwd))
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

    /// A yes/no variable of the registry ([`vars::YES`], [`vars::NO`], any case; unset or
    /// empty is no). Any other value is an error: `maybe` is not taken for "no".
    pub fn flag(&self, key: &str) -> Result<bool, BadFlag> {
        debug_assert!(
            vars::find(key).is_some_and(|v| v.yes_no),
            "{key} is not a yes/no variable of facts::vars"
        );
        let Some(value) = self.vars.get(key).filter(|v| !v.is_empty()) else {
            return Ok(false);
        };
        let word = value.to_str().map(str::to_ascii_lowercase);
        match word.as_deref() {
            Some(w) if vars::YES.contains(&w) => Ok(true),
            Some(w) if vars::NO.contains(&w) => Ok(false),
            _ => Err(BadFlag {
                name: key.to_string(),
                value: value.to_string_lossy().into_owned(),
            }),
        }
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
    fn a_flag_is_yes_no_or_an_error_naming_it() {
        let var = vars::GPUENV_KEEP_ARCHIVES;
        let ctx = |value: &str| Context {
            cwd: PathBuf::from("/"),
            vars: [(var.to_string(), OsString::from(value))].into(),
        };
        for on in ["1", "true", "YES", "On", "y"] {
            assert!(ctx(on).flag(var).unwrap(), "{on}");
        }
        for off in ["", "0", "no", "OFF", "False", "n"] {
            assert!(!ctx(off).flag(var).unwrap(), "{off:?}");
        }
        assert!(!Context::default().flag(var).unwrap());
        for bad in ["maybe", "2", " 1", "true\n"] {
            let err = ctx(bad).flag(var).unwrap_err();
            assert_eq!(err.value, bad);
            assert!(
                err.to_string().starts_with("GPUENV_KEEP_ARCHIVES="),
                "{err}"
            );
        }
        assert_eq!(
            ctx("\x1b]0;x").flag(var).unwrap_err().to_string(),
            "GPUENV_KEEP_ARCHIVES=\\x1b]0;x is not a yes/no value"
        );
    }
}
