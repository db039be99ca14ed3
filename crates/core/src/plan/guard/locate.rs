//! Finding the torch of the active Python without importing it: site-packages of
//! `$VIRTUAL_ENV` / `$CONDA_PREFIX`, else the `python3` on PATH asked for its `sys.path`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::context::vars;
use crate::context::Context;

use super::{read_torch, sys_path_cache, TorchVersion};
use crate::facts::python::site_packages_of_prefix;
use std::time::SystemTime;

/// Asks a Python interpreter for its `sys.path` (one process; torch is not imported).
pub fn python_sys_path(
    python: &Path,
    envs: &[(String, OsString)],
) -> std::io::Result<Vec<PathBuf>> {
    let out = crate::ask::output(
        std::process::Command::new(python)
            .args([
                "-c",
                "import sys; print('\\n'.join(p for p in sys.path if p))",
            ])
            .env_clear()
            .envs(envs.iter().map(|(k, v)| (k, v))),
    )
    .map_err(std::io::Error::other)?;
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "{} exited with {}: {}",
            python.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect())
}

/// Why no torch could be read.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    #[error("cannot ask {} for its sys.path: {source}", python.display())]
    SysPath {
        python: PathBuf,
        source: std::io::Error,
    },
    #[error("no torch package was found (looked in: {})", looked.join(", "))]
    NotFound { looked: Vec<String> },
    #[error("{0}")]
    Unreadable(crate::outside::ReadError),
}

/// Finds the torch of the active Python without importing it: `python` if given, else
/// `$VIRTUAL_ENV` and `$CONDA_PREFIX` site-packages, else the `python3` on PATH asked for
/// its `sys.path` once.
pub fn locate_torch(ctx: &Context, python: Option<&Path>) -> Result<TorchVersion, LocateError> {
    let mut looked: Vec<String> = Vec::new();
    let envs: Vec<(String, OsString)> = ctx
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Asked once per interpreter and what its answer depends on (`sys_path_cache`).
    let cache = ctx.own_home().ok().map(|h| h.python_paths());
    let ask = |python: &Path| -> std::io::Result<Vec<PathBuf>> {
        if let Some(known) = cache
            .as_deref()
            .and_then(|c| sys_path_cache::read(c, python, &envs))
        {
            return Ok(known);
        }
        let before = sys_path_cache::before(python);
        let dirs = python_sys_path(python, &envs)?;
        if let Some(c) = &cache {
            sys_path_cache::write(c, python, &envs, &before, &dirs, SystemTime::now());
        }
        Ok(dirs)
    };
    let from_python =
        |python: &Path, looked: &mut Vec<String>| -> Result<Option<PathBuf>, LocateError> {
            let dirs = ask(python).map_err(|source| LocateError::SysPath {
                python: python.to_path_buf(),
                source,
            })?;
            looked.push(format!("sys.path of {}", python.display()));
            Ok(find_torch_in(&dirs))
        };
    let found = if let Some(python) = python {
        from_python(&ctx.cwd.join(python), &mut looked)?
    } else {
        let mut found = None;
        for var in [vars::VIRTUAL_ENV, vars::CONDA_PREFIX] {
            if let Some(prefix) = ctx.path_var(var) {
                looked.push(format!("${var}/lib/python3*/site-packages"));
                found = find_torch_in(&site_packages_of_prefix(&prefix));
                if found.is_some() {
                    break;
                }
            }
        }
        match found {
            Some(f) => Some(f),
            None => match find_on_path(ctx.var_os(vars::PATH), "python3") {
                Some(python) => from_python(&python, &mut looked)?,
                None => {
                    looked.push("python3 on PATH (none found)".into());
                    None
                }
            },
        }
    };
    let dir = found.ok_or(LocateError::NotFound { looked })?;
    read_torch(&dir).map_err(LocateError::Unreadable)
}

/// The first executable `name` in a PATH value.
pub fn find_on_path(path: Option<&OsStr>, name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    crate::path_list::dirs(path)
        .map(|d| PathBuf::from(d).join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The first `torch` package with a `version.py` among `dirs`.
pub fn find_torch_in(dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter()
        .map(|d| d.join("torch"))
        .find(|t| t.join("version.py").is_file())
}
