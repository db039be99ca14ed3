//! What a `python3` answered for its `sys.path`, remembered, so that resolving a
//! `cuda = "torch"` pin (the shell hook does it after every `cd` into such a project) starts
//! no process after the first time: about 70-190 ms a `cd` otherwise.
//!
//! An entry is used only while everything the answer depends on is as it was: the
//! interpreter's path and the file it leads to (device, inode, size, modification and change
//! times), the `pyvenv.cfg` beside it, the variables Python reads for its path
//! (`PYTHONPATH`, `PYTHONHOME`, the user site's), and every directory of the answer (a package
//! installed or removed there, a `.pth` file added, changes the directory's times). Then torch
//! is looked for in those directories and its `version.py` read, as after asking: a torch
//! installed, upgraded or removed is seen at once. Entries live under
//! `Home::python_paths()`, one per interpreter path and variables, written atomically, read
//! only when they are the user's own file (`outside::read`); one that cannot be written is
//! only not remembered. Nothing changed in the last two seconds is remembered (file times
//! tick coarsely).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::fsutil;
use crate::stamp::Stamp;

/// The variables Python's start-up reads to build `sys.path`.
const PATH_VARS: [&str; 7] = [
    crate::facts::vars::PYTHONPATH,
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH",
    "PYTHONPLATLIBDIR",
    crate::facts::vars::HOME,
];

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Entry {
    python: String,
    /// What `sys.path` depended on, as stamps (`None`: absent): the interpreter's file, its
    /// `pyvenv.cfg` candidates, the answer's directories.
    stamps: Vec<(String, Option<String>)>,
    vars: Vec<(String, Option<String>)>,
    sys_path: Vec<String>,
}

fn stamp_of(path: &Path) -> Option<String> {
    Stamp::at(path).map(|s| s.to_string())
}

/// The `pyvenv.cfg` a venv's interpreter reads: beside it, or one directory up.
fn venv_configs(python: &Path) -> Vec<PathBuf> {
    let bin = python.parent();
    [bin, bin.and_then(Path::parent)]
        .into_iter()
        .flatten()
        .map(|d| d.join("pyvenv.cfg"))
        .collect()
}

fn vars_of(envs: &[(String, OsString)]) -> Vec<(String, Option<String>)> {
    PATH_VARS
        .iter()
        .map(|k| {
            let v = envs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned());
            (k.to_string(), v)
        })
        .collect()
}

/// What `sys.path` of `python` (as found on PATH) depends on besides its directories.
fn fixed_stamps(python: &Path) -> Vec<(String, Option<String>)> {
    std::iter::once(python.to_path_buf())
        .chain(venv_configs(python))
        .map(|p| (p.to_string_lossy().into_owned(), stamp_of(&p)))
        .collect()
}

/// The entry's file in `dir` for `python` and the variables.
fn entry_path(dir: &Path, python: &str, vars: &[(String, Option<String>)]) -> PathBuf {
    let mut key = python.to_string();
    for (k, v) in vars {
        key.push('\0');
        key.push_str(k);
        key.push('=');
        key.push_str(v.as_deref().unwrap_or("\u{1}unset"));
    }
    dir.join(format!("{}.json", fsutil::cache_name(&key)))
}

/// The remembered `sys.path` of `python` with `envs`, while nothing it depends on changed.
pub fn read(dir: &Path, python: &Path, envs: &[(String, OsString)]) -> Option<Vec<PathBuf>> {
    let name = python.to_str()?;
    let vars = vars_of(envs);
    let at = entry_path(dir, name, &vars);
    let bytes = crate::outside::read(&at, crate::outside::Kind::CacheEntry).ok()?;
    let entry: Entry = serde_json::from_slice(&bytes).ok()?;
    if entry.python != name || entry.vars != vars {
        return None;
    }
    let mut expected = fixed_stamps(python);
    expected.extend(dir_stamps(&entry.sys_path));
    (entry.stamps == expected).then(|| entry.sys_path.iter().map(PathBuf::from).collect())
}

fn dir_stamps(sys_path: &[String]) -> Vec<(String, Option<String>)> {
    sys_path
        .iter()
        .map(|d| (d.clone(), stamp_of(Path::new(d))))
        .collect()
}

/// Remembers `sys_path` as `python`'s answer with `envs`, when `before` (taken before it
/// was asked) still holds and nothing in it changed in the last seconds.
pub fn write(
    dir: &Path,
    python: &Path,
    envs: &[(String, OsString)],
    before: &[(String, Option<String>)],
    sys_path: &[PathBuf],
    now: SystemTime,
) {
    let Some(name) = python.to_str() else { return };
    let Some(sys_path) = sys_path
        .iter()
        .map(|p| p.to_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()
    else {
        return;
    };
    if fixed_stamps(python) != before {
        return;
    }
    let paths = std::iter::once(python.to_path_buf())
        .chain(venv_configs(python))
        .chain(sys_path.iter().map(PathBuf::from));
    let settled = paths.filter_map(|p| Stamp::at(&p)).all(|s| s.settled(now));
    if !settled {
        return;
    }
    let vars = vars_of(envs);
    let mut stamps = before.to_vec();
    stamps.extend(dir_stamps(&sys_path));
    let entry = Entry {
        python: name.to_string(),
        stamps,
        vars: vars.clone(),
        sys_path,
    };
    let Ok(text) = serde_json::to_string(&entry) else {
        return;
    };
    if fs_err::create_dir_all(dir).is_ok() {
        let _ = fsutil::write_atomic(&entry_path(dir, name, &vars), text.as_bytes());
    }
}

/// What [`write`] compares with after asking: the stamps taken before.
pub fn before(python: &Path) -> Vec<(String, Option<String>)> {
    fixed_stamps(python)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_answer_is_used_until_a_directory_or_the_interpreter_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        let python = tmp.path().join("venv/bin/python3");
        let site = tmp.path().join("venv/lib/site-packages");
        fs_err::create_dir_all(&site).unwrap();
        fs_err::create_dir_all(python.parent().unwrap()).unwrap();
        fs_err::write(&python, "#!/bin/sh\n").unwrap();
        let envs = vec![("PYTHONPATH".to_string(), OsString::from("/x"))];
        let later = SystemTime::now() + Duration::from_secs(60);
        let answer = vec![site.clone()];

        let before = before(&python);
        write(&dir, &python, &envs, &before, &answer, later);
        assert_eq!(read(&dir, &python, &envs), Some(answer.clone()));
        // Another PYTHONPATH is another answer.
        let other = vec![("PYTHONPATH".to_string(), OsString::from("/y"))];
        assert_eq!(read(&dir, &python, &other), None);
        // A package installed in a directory of the answer: asked again.
        std::thread::sleep(Duration::from_millis(20));
        fs_err::create_dir(site.join("torch")).unwrap();
        assert_eq!(read(&dir, &python, &envs), None);
        write(&dir, &python, &envs, &before, &answer, later);
        assert_eq!(read(&dir, &python, &envs), Some(answer.clone()));
        // A venv made over it (pyvenv.cfg appears): asked again.
        fs_err::write(tmp.path().join("venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(read(&dir, &python, &envs), None);
        // Nothing is remembered that changed just now.
        let before = super::before(&python);
        write(&dir, &python, &envs, &before, &answer, SystemTime::now());
        assert_eq!(read(&dir, &python, &envs), None);
    }
}
