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
