//! What the environment must not break at run time: the libraries a Python environment's
//! NVIDIA wheels ship stay the ones the loader finds, and where no CUDA toolchain is active,
//! torch's guess of `CUDA_HOME` lands where it would without gpuenv's shims on PATH.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::facts::python::{nvidia_wheel_libs, site_packages_of_prefix};
use crate::facts::vars;
use crate::path_list;
use crate::plan::env::{Change, Foreign, Op};

/// The active Python environment's prefixes, found without running Python: `$VIRTUAL_ENV`,
/// `$CONDA_PREFIX`, else the prefix of the first `python3` on PATH (`<prefix>/bin/python3`,
/// not resolved through links: a venv's python is a link to the system's).
pub fn python_prefixes(
    virtual_env: Option<&Path>,
    conda_prefix: Option<&Path>,
    path: Option<&OsStr>,
) -> Vec<PathBuf> {
    let named: Vec<PathBuf> = [virtual_env, conda_prefix]
        .into_iter()
        .flatten()
        .map(Path::to_path_buf)
        .collect();
    if !named.is_empty() {
        return named;
    }
    crate::plan::guard::find_on_path(path, "python3")
        .and_then(|p| Some(p.parent()?.parent()?.to_path_buf()))
        .into_iter()
        .collect()
}

/// The libraries NVIDIA's CUDA wheels ship in these Python environments, by file name.
pub fn wheel_libs(prefixes: &[PathBuf]) -> Vec<(String, PathBuf)> {
    wheel_libs_in(&site_packages(prefixes))
}

/// The `site-packages` directories of these Python environments.
pub fn site_packages(prefixes: &[PathBuf]) -> Vec<PathBuf> {
    prefixes
        .iter()
        .flat_map(|p| site_packages_of_prefix(p))
        .collect()
}

/// [`wheel_libs`] of `site-packages` directories already found.
pub fn wheel_libs_in(sites: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let mut libs: Vec<(String, PathBuf)> = sites
        .iter()
        .flat_map(|site| nvidia_wheel_libs(site))
        .collect();
    libs.sort();
    libs.dedup_by(|a, b| a.0 == b.0);
    libs
}

/// The wheel libraries `dir` holds a file of the same name as: what a loader searching
/// `dir` first would take from there instead of from the wheel. Each (name, file in `dir`,
/// the wheel's file).
pub fn shadowed_in(dir: &Path, wheels: &[(String, PathBuf)]) -> Vec<(String, PathBuf, PathBuf)> {
    wheels
        .iter()
        .filter_map(|(name, wheel)| {
            let here = dir.join(name);
            // The wheel's own directory does not shadow itself.
            let same = here.canonicalize().ok() == wheel.canonicalize().ok();
            (here.exists() && !same).then(|| (name.clone(), here, wheel.clone()))
        })
        .collect()
}

/// Drops, from what the change prepends to `LD_LIBRARY_PATH`, every directory holding a
/// library the wheels ship (`LIBRARY_PATH` keeps them: linking still finds the toolkit's).
/// Returns the directories left out.
pub fn leave_wheels_unshadowed(change: &mut Change, wheels: &[(String, PathBuf)]) -> Vec<PathBuf> {
    let mut left_out = Vec::new();
    if wheels.is_empty() {
        return left_out;
    }
    for op in &mut change.ops {
        let Op::Prepend(key, entries) = op else {
            continue;
        };
        if key != vars::LD_LIBRARY_PATH {
            continue;
        }
        entries.retain(|e| {
            let shadows = !shadowed_in(Path::new(e), wheels).is_empty();
            if shadows {
                left_out.push(PathBuf::from(e));
            }
            !shadows
        });
    }
    change
        .ops
        .retain(|op| !matches!(op, Op::Prepend(_, entries) if entries.is_empty()));
    left_out
}

/// `CUDA_HOME` as `torch.utils.cpp_extension` would guess it without gpuenv's shims on
/// PATH: `dirname(dirname(which nvcc))` (not resolved through links, as torch does) for the
/// first `nvcc` on PATH outside `ours` (the shims and views), else `/usr/local/cuda` when it
/// is a directory; `None` when torch would find no CUDA either.
pub fn torch_cuda_home(path: Option<&OsStr>, ours: &[PathBuf]) -> Option<PathBuf> {
    let theirs: Vec<OsString> = path_list::dirs(path)
        .filter(|d| !ours.iter().any(|o| Path::new(d).starts_with(o)))
        .collect();
    let joined = path_list::join(&theirs);
    if let Some(nvcc) = crate::plan::guard::find_on_path(Some(&joined), "nvcc") {
        return Some(nvcc.parent()?.parent()?.to_path_buf());
    }
    let default = Path::new("/usr/local/cuda");
    default.is_dir().then(|| default.to_path_buf())
}

/// The op that takes gpuenv's shims dir off PATH, where nothing of gpuenv's is in effect
/// for CUDA and a program looking for `nvcc` on PATH must find what it would without
/// gpuenv (torch's `CUDA_HOME` guess would otherwise be gpuenv's home).
pub fn without_shims(shims: PathBuf) -> Op {
    Op::Remove(
        vars::PATH.into(),
        Foreign {
            dirs: std::sync::Arc::new([super::env::foreign_key(&shims)].into_iter().collect()),
            ..Foreign::default()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path) {
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, "x").unwrap();
    }

    #[test]
    fn a_toolkit_lib_dir_holding_a_wheel_library_is_left_off_ld_library_path() {
        let t = tempfile::tempdir().unwrap();
        let venv = t.path().join("venv");
        let wheel = venv.join("lib/python3.11/site-packages/nvidia/cu13/lib");
        write(&wheel.join("libnvJitLink.so.13"));
        write(&wheel.join("libcudart.so.13"));
        let toolkit = t.path().join("tk/lib64");
        write(&toolkit.join("libnvJitLink.so.13"));
        let other = t.path().join("other/lib");
        write(&other.join("libfoo.so.1"));
        let wheels = wheel_libs(&python_prefixes(Some(&venv), None, None));
        assert_eq!(wheels.len(), 2);
        let lp = |v: Vec<&Path>| {
            Op::Prepend(
                vars::LD_LIBRARY_PATH.into(),
                v.into_iter().map(|p| p.as_os_str().to_owned()).collect(),
            )
        };
        let mut change = Change {
            ops: vec![
                lp(vec![&toolkit]),
                lp(vec![&other]),
                Op::Prepend(vars::LIBRARY_PATH.into(), vec![toolkit.clone().into()]),
            ],
        };
        let out = leave_wheels_unshadowed(&mut change, &wheels);
        assert_eq!(out, vec![toolkit.clone()]);
        assert_eq!(change.ops.len(), 2, "{change:?}");
        assert!(change.ops.contains(&lp(vec![&other])));
        let shadow = shadowed_in(&toolkit, &wheels);
        assert_eq!(shadow[0].0, "libnvJitLink.so.13");
        // The wheel's directory itself shadows nothing.
        assert!(shadowed_in(&wheel, &wheels).is_empty());
    }

    #[test]
    fn torchs_guess_skips_gpuenvs_own_dirs() {
        let t = tempfile::tempdir().unwrap();
        let shims = t.path().join("home/shims");
        let sys = t.path().join("cuda-13/bin");
        for d in [&shims, &sys] {
            let nvcc = d.join("nvcc");
            write(&nvcc);
            use std::os::unix::fs::PermissionsExt;
            fs_err::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = path_list::join(&[shims.clone().into(), sys.clone().into()]);
        assert_eq!(
            torch_cuda_home(Some(&path), &[t.path().join("home")]),
            Some(t.path().join("cuda-13"))
        );
    }
}
