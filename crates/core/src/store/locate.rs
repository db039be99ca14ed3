//! Where gpuenv's home is, for a context: `GPUENV_HOME`, XDG, or HOME, with the upstream
//! homes the environment and the system config name. The context reads the process; the
//! store says what its variables mean for the home.

use std::os::unix::ffi::OsStrExt;

use crate::context::{vars, Context};
use crate::diagnostic::Diagnostic;
use crate::store::home::Home;
use crate::store::toolchain::upstream;

#[derive(Debug, thiserror::Error)]
pub enum NoHome {
    #[error(
        "neither GPUENV_HOME nor HOME is set, and the password database has no home for this account"
    )]
    Unset,
    #[error("gpuenv's home {dir} (from {from}) contains `:`, which separates PATH entries: its shims dir cannot be put on PATH")]
    Colon { dir: String, from: &'static str },
    #[error("the account's home {dir} ({from}) does not exist here, and gpuenv keeps its state under it; nothing was read or written")]
    Missing { dir: String, from: &'static str },
    #[error(transparent)]
    Relative(#[from] RelativeDir),
}

/// A variable that names one of gpuenv's directories by a relative path, which would be
/// another directory in each directory gpuenv runs in (another home per project).
#[derive(Debug, thiserror::Error)]
#[error(
    "{var}={} is a relative path: it would name another directory in each directory gpuenv runs in",
    crate::ui::printable(value)
)]
pub struct RelativeDir {
    pub var: &'static str,
    pub value: String,
}

impl Diagnostic for RelativeDir {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "set {} to an absolute path (`export {}=\"$PWD/{}\"` in the directory you meant)",
            self.var,
            self.var,
            crate::ui::printable(&self.value)
        )]
    }
}

impl Diagnostic for NoHome {
    fn hints(&self) -> Vec<String> {
        vec![match self {
            NoHome::Unset => "set GPUENV_HOME to the directory gpuenv should keep its state in",
            NoHome::Colon { .. } => "set GPUENV_HOME to a directory without `:` in its path",
            NoHome::Missing { .. } => {
                "set GPUENV_HOME to a directory that exists on every node (a shared file system), or have the admin create the home on this node; with `srun --export=NONE`, `--export=GPUENV_HOME` passes it on"
            }
            NoHome::Relative(e) => return e.hints(),
        }
        .into()]
    }
}

impl Context {
    /// `GPUENV_HOME`, else `$XDG_DATA_HOME/gpuenv`, else `~/.local/share/gpuenv`; with the
    /// upstreams the environment and the system config name. A home whose path has a `:`
    /// is refused: its shims dir could not be an entry of PATH.
    pub fn gpuenv_home(&self) -> Result<Home, NoHome> {
        let mut home = self.own_home()?;
        home.upstreams = upstream::from_context(self).0;
        Ok(home)
    }

    /// The user's own home alone, its upstreams not looked up (the system config not read).
    pub fn own_home(&self) -> Result<Home, NoHome> {
        let (dir, from) = if let Some(h) = self.absolute_dir(vars::GPUENV_HOME)? {
            (h, vars::GPUENV_HOME)
        } else if let Some(x) = self
            .path_var(vars::XDG_DATA_HOME)
            // The XDG spec: a relative path there is invalid and ignored.
            .filter(|x| x.is_absolute())
        {
            (x.join("gpuenv"), vars::XDG_DATA_HOME)
        } else {
            let (home, from) = match self.path_var(vars::HOME) {
                Some(h) => (h, vars::HOME),
                None => (
                    crate::passwd::account_home().ok_or(NoHome::Unset)?,
                    "from the password database; HOME is unset",
                ),
            };
            // gpuenv makes its own directories under the account's home, never the home
            // itself: a node that lacks it (not mounted, never created) gets a message
            // instead of an empty registry and files written into a stray `/home/...`.
            if fs_err::symlink_metadata(&home).is_err() {
                return Err(NoHome::Missing {
                    dir: crate::ui::printable(&home.to_string_lossy()).to_string(),
                    from,
                });
            }
            (home.join(".local/share/gpuenv"), vars::HOME)
        };
        if dir.as_os_str().as_bytes().contains(&b':') {
            return Err(NoHome::Colon {
                dir: crate::ui::printable(&dir.to_string_lossy()).to_string(),
                from,
            });
        }
        Ok(Home::new(dir))
    }

    /// A variable naming one of gpuenv's directories (`GPUENV_HOME`,
    /// `GPUENV_DOWNLOAD_CACHE`): unset or empty is `None`, a relative path is refused.
    pub fn absolute_dir(
        &self,
        key: &'static str,
    ) -> Result<Option<std::path::PathBuf>, RelativeDir> {
        match self.path_var(key) {
            Some(dir) if dir.is_relative() => Err(RelativeDir {
                var: key,
                value: dir.to_string_lossy().into_owned(),
            }),
            dir => Ok(dir),
        }
    }
}
