//! The layout of a Python environment (a venv or conda prefix): where its site-packages
//! are, and which prefix a path inside one belongs to.

use std::path::{Path, PathBuf};

/// Where a Python environment's `site-packages` may hold torch, without running Python:
/// `$VIRTUAL_ENV` or `$CONDA_PREFIX` `/lib/python3*/site-packages`.
pub fn site_packages_of_prefix(prefix: &Path) -> Vec<PathBuf> {
    let lib = prefix.join("lib");
    let mut out: Vec<PathBuf> = fs_err::read_dir(&lib)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
                .map(|e| e.path().join("site-packages"))
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The Python environment a path lies in, by the same layout read backwards:
/// `<prefix>/lib/python3*/site-packages/…` gives `<prefix>`.
pub fn prefix_of_site_packages(path: &Path) -> Option<PathBuf> {
    let site = path
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "site-packages"))?;
    let python = site.parent()?;
    let lib = python.parent()?;
    let is_python = python
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("python3"));
    (is_python && lib.file_name().is_some_and(|n| n == "lib"))
        .then(|| lib.parent())?
        .map(Path::to_path_buf)
}

/// The shared libraries NVIDIA's CUDA wheels put in a `site-packages`
/// (`nvidia/<package>/lib/*.so*`, the 13.x `nvidia/cu13/lib` included), by file name, each
/// with its path; sorted by name. Only directories are read: nothing is opened or run.
pub fn nvidia_wheel_libs(site: &Path) -> Vec<(String, PathBuf)> {
    let list = |dir: &Path| -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = fs_err::read_dir(dir)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        out.sort();
        out
    };
    let mut libs = Vec::new();
    for package in list(&site.join("nvidia")) {
        for file in list(&package.join("lib")) {
            let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if name.contains(".so") && file.is_file() {
                libs.push((name.to_string(), file.clone()));
            }
        }
    }
    libs.sort();
    libs.dedup_by(|a, b| a.0 == b.0);
    libs
}

/// NCCL's wheel beside a CUDA wheel tree: `nvidia-nccl-cu13` installs `nvidia/nccl`
/// (`include/nccl.h`, `lib/libnccl.so.2` and no unversioned library) next to the merged
/// `nvidia/cu13` of the toolkit's wheels; `None` when it is not there.
pub fn nccl_wheel_beside(cuda_tree: &Path) -> Option<PathBuf> {
    let nccl = cuda_tree.parent()?.join("nccl");
    (nccl.join("include/nccl.h").is_file() && nccl.join("lib").is_dir()).then_some(nccl)
}

/// The frontend whose isolated build environment a path lies in, when it does: a build
/// run with isolation gets its own torch from the build requirements, which neither the
/// user's environment nor a `"torch"` pin (which reads that environment) can see.
/// pip installs into `$TMPDIR/pip-build-env-*/overlay|normal/` (`TempDirectory(kind=
/// "build-env")`, pip `src/pip/_internal/build_env`); uv makes a venv `.tmp*` (a `tempfile` directory) in
/// its cache's `builds-v0/` bucket (uv `crates/uv-cache`, `CacheBucket::Builds`); pypa/build makes
/// one in `$TMPDIR/build-env-*` (`tempfile.mkdtemp(prefix="build-env-")`, build `env.py`).
pub fn build_isolation_of(path: &Path) -> Option<&'static str> {
    path.ancestors().find_map(|a| {
        let name = a.file_name()?.to_string_lossy();
        let parent = a.parent()?.file_name().map(|n| n.to_string_lossy());
        if name.starts_with("pip-build-env-") {
            Some("pip")
        } else if parent.as_deref() == Some("builds-v0") && name.starts_with(".tmp") {
            Some("uv")
        } else if name.starts_with("build-env-") {
            Some("build")
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_isolated_build_environment_is_told_by_its_path() {
        let site = "lib/python3.12/site-packages/torch";
        for (dir, frontend) in [
            ("/tmp/pip-build-env-k2l_x9/overlay", Some("pip")),
            ("/home/a/.cache/uv/builds-v0/.tmpAbC123", Some("uv")),
            ("/tmp/build-env-3hdb_k1", Some("build")),
            ("/home/a/proj/.venv", None),
            ("/home/a/builds-v0", None),
        ] {
            let torch = Path::new(dir).join(site);
            assert_eq!(build_isolation_of(&torch), frontend, "{dir}");
        }
    }
}
