//! Retired toolchains: installed ones `gpuenv uninstall` forgot while something may still
//! use them. The registry no longer has them, so no resolution, `list` row, pin or module
//! export picks them; their tree and view stay at the same paths (a running job's
//! environment names those), and `toolchains/.<name>.retired.toml` keeps the entry they had
//! and when they were retired. A proxy started from such a view still finds its toolchain
//! here. `gpuenv_install::retire` deletes the tree once nothing uses it.
//!
//! Whatever a record says, the tree it stands for is `toolchains/<name>` and the view
//! `views/<name>`, both from the checked name: a record naming another root is refused, so
//! nothing outside gpuenv's own directories is ever run or deleted for one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::store::home::Home;
use crate::store::toolchain::registry::{Entry, Source};
use crate::{fsutil, outside, pathpart};

const SUFFIX: &str = ".retired.toml";

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    /// Seconds since the epoch when it was retired: jobs that started before may use it.
    since: u64,
    toolchain: Entry,
}

/// A retired toolchain, as its record says and checked.
#[derive(Debug, Clone)]
pub struct Retired {
    pub name: String,
    pub entry: Entry,
    /// Seconds since the epoch when it was retired.
    pub since: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum RetiredError {
    #[error("{0}")]
    Read(outside::ReadError),
    #[error("{} is a link, not the file gpuenv writes there", path.display())]
    Link { path: PathBuf },
    #[error("{} is not a record gpuenv wrote: {message}", path.display())]
    Malformed { path: PathBuf, message: String },
    #[error("{} names {}, not {}: gpuenv retires only trees it installed there", path.display(), named.display(), own.display())]
    Elsewhere {
        path: PathBuf,
        named: PathBuf,
        own: PathBuf,
    },
}

impl RetiredError {
    pub fn path(&self) -> &Path {
        match self {
            RetiredError::Read(e) => &e.path,
            RetiredError::Link { path }
            | RetiredError::Malformed { path, .. }
            | RetiredError::Elsewhere { path, .. } => path,
        }
    }
}

impl Diagnostic for RetiredError {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "gpuenv deletes nothing for it; remove {} if gpuenv did not write it",
            self.path().display()
        )]
    }
}

/// Where the record of `name` is: beside its lock and its kept install record.
pub fn path(home: &Home, name: &str) -> PathBuf {
    home.toolchains().join(format!(".{name}{SUFFIX}"))
}

/// The tree of a retired `name`: always gpuenv's own `toolchains/<name>`.
pub fn tree(home: &Home, name: &str) -> PathBuf {
    home.toolchains().join(name)
}

/// The view of a retired `name` in this home (never an upstream's).
pub fn view(home: &Home, name: &str) -> PathBuf {
    home.views().join(name)
}

/// Records `name` (installed at `entry.root`) as retired at `since`.
pub fn write(home: &Home, name: &str, entry: &Entry, since: u64) -> std::io::Result<()> {
    let record = Record {
        since,
        toolchain: entry.clone(),
    };
    let text = toml::to_string(&record).map_err(std::io::Error::other)?;
    fsutil::write_atomic(&path(home, name), text.as_bytes())
}

/// The record of `name`, checked: `None` when there is none.
pub fn read(home: &Home, name: &str) -> Result<Option<Retired>, RetiredError> {
    let file = path(home, name);
    let malformed = |message: String| RetiredError::Malformed {
        path: file.clone(),
        message,
    };
    pathpart::part("toolchain name", name).map_err(|e| malformed(e.to_string()))?;
    match fs_err::symlink_metadata(&file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Ok(m) if m.file_type().is_symlink() => return Err(RetiredError::Link { path: file }),
        _ => {}
    }
    let text =
        outside::read_text(&file, outside::Kind::RetiredRecord).map_err(RetiredError::Read)?;
    let record: Record =
        toml::from_str(&text).map_err(|e| malformed(crate::ui::toml_message(e.message())))?;
    let entry = record.toolchain;
    let own = tree(home, name);
    if entry.source != Source::Installed || entry.system.is_some() {
        return Err(malformed("it is not a toolchain gpuenv installed".into()));
    }
    for named in [&entry.root, &entry.include_dir, &entry.lib_dir] {
        let inside = if named == &entry.root {
            named == &own
        } else {
            named.starts_with(&own) && !named.components().any(|c| c.as_os_str() == "..")
        };
        if !inside {
            return Err(RetiredError::Elsewhere {
                path: file,
                named: named.clone(),
                own,
            });
        }
    }
    Ok(Some(Retired {
        name: name.to_string(),
        entry,
        since: record.since,
    }))
}

/// The names that have a record in this home, checked or not (a name that cannot be a path
/// component is left out).
pub fn names(home: &Home) -> Vec<String> {
    let Ok(rd) = fs_err::read_dir(home.toolchains()) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let name = file.strip_prefix('.')?.strip_suffix(SUFFIX)?;
            pathpart::part("toolchain name", name).ok()?;
            Some(name.to_string())
        })
        .collect();
    names.sort();
    names
}

/// Drops the record of `name` (its tree is gone, or it is registered again).
pub fn forget(home: &Home, name: &str) -> std::io::Result<()> {
    match fs_err::remove_file(path(home, name)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::toolchain::detect;

    fn installed(home: &Home, name: &str) -> Entry {
        let root = tree(home, name);
        fs_err::create_dir_all(root.join("bin")).unwrap();
        fs_err::write(root.join("bin/nvcc"), "#!/bin/sh\n").unwrap();
        fs_err::write(
            root.join("version.json"),
            r#"{"cuda": {"version": "13.0.2"}}"#,
        )
        .unwrap();
        detect::detect(&root, Source::Installed).unwrap()
    }

    #[test]
    fn a_record_is_read_back_and_names_only_its_own_tree() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().join("gpuenv"));
        let entry = installed(&home, "cuda-13.0.2");
        write(&home, "cuda-13.0.2", &entry, 1_700_000_000).unwrap();
        let back = read(&home, "cuda-13.0.2").unwrap().unwrap();
        assert_eq!(back.entry, entry);
        assert_eq!(back.since, 1_700_000_000);
        assert_eq!(names(&home), ["cuda-13.0.2"]);
        assert!(read(&home, "cuda-12.4.1").unwrap().is_none());

        // The same record under another name points at a tree that is not that name's.
        fs_err::copy(path(&home, "cuda-13.0.2"), path(&home, "cuda-12.4.1")).unwrap();
        let e = read(&home, "cuda-12.4.1").unwrap_err();
        assert!(matches!(e, RetiredError::Elsewhere { .. }), "{e}");
        forget(&home, "cuda-12.4.1").unwrap();
        forget(&home, "cuda-12.4.1").unwrap();
        assert_eq!(names(&home), ["cuda-13.0.2"]);
    }
}
