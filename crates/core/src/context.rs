//! The one handle on process state: working directory and environment variables, read once
//! at the edge and passed down, so everything below runs in tests without touching the
//! real process.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::diagnostic::Diagnostic;

use crate::home::Home;
use crate::toolchain::upstream;

/// Every environment variable gpuenv reads or sets (the registry in `facts::vars`).
pub use crate::facts::vars;

#[derive(Debug, thiserror::Error)]
pub enum NoHome {
    #[error(
        "neither GPUENV_HOME nor HOME is set, and the password database has no home for this account"
    )]
    Unset,
    #[error("gpuenv's home {dir} (from {from}) contains `:`, which separates PATH entries: its shims dir cannot be put on PATH")]
    Colon { dir: String, from: &'static str },
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read the current directory")]
pub struct NoCwd(#[source] pub std::io::Error);

impl Diagnostic for NoHome {
    fn hints(&self) -> Vec<String> {
        vec![match self {
            NoHome::Unset => "set GPUENV_HOME to the directory gpuenv should keep its state in",
            NoHome::Colon { .. } => "set GPUENV_HOME to a directory without `:` in its path",
        }
        .into()]
    }
}

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

    /// `GPUENV_HOME`, else `$XDG_DATA_HOME/gpuenv`, else `~/.local/share/gpuenv`; with the
    /// upstreams the environment and the system config name. A home whose path has a `:`
    /// is refused: its shims dir could not be an entry of PATH.
    pub fn gpuenv_home(&self) -> Result<Home, NoHome> {
        let (dir, from) = if let Some(h) = self.path_var(vars::GPUENV_HOME) {
            (self.cwd.join(h), vars::GPUENV_HOME)
        } else if let Some(x) = self.path_var(vars::XDG_DATA_HOME) {
            (x.join("gpuenv"), vars::XDG_DATA_HOME)
        } else {
            let home = self.home_dir().ok_or(NoHome::Unset)?;
            (home.join(".local/share/gpuenv"), vars::HOME)
        };
        if dir.as_os_str().as_bytes().contains(&b':') {
            return Err(NoHome::Colon {
                dir: crate::ui::printable(&dir.to_string_lossy()).to_string(),
                from,
            });
        }
        let mut home = Home::new(dir);
        home.upstreams = upstream::from_context(self).0;
        Ok(home)
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
