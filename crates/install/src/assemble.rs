//! Assembling a toolchain root from unpacked archives: each archive's files are mapped to
//! their place (the runfile layout for NVIDIA's pieces) and hard-linked from the cache
//! (copied across file systems), then the runfile's conveniences are added.

use std::path::{Component, Path, PathBuf};

use crate::error::{Context as _, Result};

use super::{confine, Mapping};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::nvidia_target::target_dir;
use gpuenv_core::toolchain::Version;

const HINT: &str =
    "the archives are hostile, or their strip-prefix is wrong: check where they come from";

/// Places the files of one unpacked archive into `root`. Returns how many were placed.
pub fn place(unpacked: &Path, mapping: &Mapping, component: &str, root: &Path) -> Result<usize> {
    let mut placed = 0;
    let mut stack = vec![PathBuf::new()];
    while let Some(rel_dir) = stack.pop() {
        let dir = unpacked.join(&rel_dir);
        for item in fs_err::read_dir(&dir)? {
            let item = item?;
            let rel = rel_dir.join(item.file_name());
            let meta = fs_err::symlink_metadata(item.path())?;
            if meta.is_dir() {
                stack.push(rel);
                continue;
            }
            let Some(to) = map_path(mapping, component, &rel) else {
                continue;
            };
            // Where `to` really is, following the links placed so far by every archive.
            let parent = to.parent().unwrap_or(Path::new(""));
            let real_parent = confine::resolve(root, Path::new(""), parent).map_err(|why| {
                Hinted::new(format!(
                    "{} would be placed at {}, outside the toolchain ({why})",
                    rel.display(),
                    to.display()
                ))
                .hint(HINT)
            })?;
            let dir = root.join(&real_parent);
            let dst = dir.join(to.file_name().expect("mapped paths end in a name"));
            if fs_err::symlink_metadata(&dst).is_ok() {
                // Shared by two components (a license, a cmake helper): the first stays.
                continue;
            }
            fs_err::create_dir_all(&dir)?;
            if meta.file_type().is_symlink() {
                let target = fs_err::read_link(item.path())?;
                // Checked when unpacked, but another archive's links, or a strip-prefix that
                // moves it up, can make it lead elsewhere here.
                confine::resolve(root, &real_parent, &target).map_err(|why| {
                    Hinted::new(format!(
                        "{} links to {}, outside the toolchain once placed at {} ({why})",
                        rel.display(),
                        target.display(),
                        to.display()
                    ))
                    .hint(HINT)
                })?;
                std::os::unix::fs::symlink(&target, &dst).with_context(|| {
                    format!("linking {} -> {}", dst.display(), target.display())
                })?;
            } else if fs_err::hard_link(item.path(), &dst).is_err() {
                fs_err::copy(item.path(), &dst)?;
            }
            placed += 1;
        }
    }
    Ok(placed)
}

/// After every archive is placed and the tree finished: no link in it leads outside.
pub fn links_stay_inside(root: &Path) -> Result<()> {
    if let Some((link, target, why)) = confine::check_tree(root)? {
        return Err(Hinted::new(format!(
            "the assembled tree has the link {} -> {}, which leads outside it ({why}); nothing was installed",
            link.display(),
            target.display()
        ))
        .hint(HINT).into());
    }
    Ok(())
}

/// Where an archive entry goes in the toolchain root, or `None` to leave it out.
pub fn map_path(mapping: &Mapping, component: &str, rel: &Path) -> Option<PathBuf> {
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    match mapping {
        // `cuda_nvcc-linux-x86_64-12.4.131-archive/bin/nvcc`
        Mapping::Redist => runfile_place(&parts[1.min(parts.len())..], component),
        // `nvidia/cu13/bin/nvcc` (13.x) or `nvidia/cuda_nvcc/bin/ptxas` (12.x); the rest
        // (`*.dist-info`, `nvidia/__init__.py`) is Python packaging.
        Mapping::Wheel => {
            if parts.len() < 3 || parts[0] != "nvidia" {
                return None;
            }
            let rest = &parts[2..];
            if rest
                .iter()
                .any(|p| *p == "__init__.py" || *p == "__pycache__")
            {
                return None;
            }
            runfile_place(rest, component)
        }
        Mapping::TheRock => crate::therock::runtime_place(&parts),
        // Its `_devel.tar` is placed by `therock::place_devel`, not file by file.
        Mapping::TheRockDevel => None,
        Mapping::Strip(prefix) => {
            let stripped = rel.strip_prefix(prefix).ok()?;
            (!stripped.as_os_str().is_empty()).then(|| stripped.to_path_buf())
        }
    }
}

/// `include/` and `lib/` go under `targets/<arch>-linux/`; loose top-level files and hidden
/// directories (licenses, build metadata, which every component has) under
/// `share/doc/<component>/`; everything else (`bin/`, `nvvm/`, …) stays.
fn runfile_place(parts: &[&std::ffi::OsStr], component: &str) -> Option<PathBuf> {
    let first = parts.first()?.to_str()?;
    let rest: PathBuf = parts[1..].iter().collect();
    let path = if parts.len() == 1 || first.starts_with('.') {
        Path::new("share/doc")
            .join(component)
            .join(parts.iter().collect::<PathBuf>())
    } else if first == "include" || first == "lib" {
        Path::new(&target_dir()).join(first).join(rest)
    } else {
        parts.iter().collect()
    };
    Some(path)
}

/// What makes NVIDIA's pieces a runfile-style root: `include` and `lib64` links into
/// `targets/`, unversioned `libX.so` links (so `-lcudart` works), and `version.json`. A
/// `lib` link too: the 13.2.78+ wheels' `nvcc.profile` searches `$(TOP)/lib/stubs` and
/// `$(TOP)/lib`, not `targets/`, so without it their nvcc finds no library to link.
pub fn finish_cuda(root: &Path, release: &Version, components: &[(String, String)]) -> Result<()> {
    let target = target_dir();
    for (link, dir) in [("include", "include"), ("lib64", "lib"), ("lib", "lib")] {
        let to = root.join(&target).join(dir);
        if to.is_dir() && fs_err::symlink_metadata(root.join(link)).is_err() {
            std::os::unix::fs::symlink(format!("{target}/{dir}"), root.join(link))
                .with_context(|| format!("linking {}", root.join(link).display()))?;
        }
    }
    unversioned_links(&root.join(&target).join("lib"))?;
    let version_json = root.join("version.json");
    if !version_json.exists() {
        let mut doc = serde_json::Map::new();
        doc.insert(
            "cuda".into(),
            serde_json::json!({"name": "CUDA SDK", "version": release.to_string()}),
        );
        for (name, version) in components {
            doc.insert(
                name.clone(),
                serde_json::json!({"name": name, "version": version}),
            );
        }
        let text = serde_json::to_string_pretty(&serde_json::Value::Object(doc))? + "\n";
        // Never through a link an archive put there.
        gpuenv_core::fsutil::write_atomic(&version_json, text.as_bytes())?;
    }
    Ok(())
}

/// Links the files of a wheel tree (`<tree>/include`, `<tree>/lib`: `nvidia/cu13` in a
/// venv) into the runfile layout of `root`, where nothing placed there already: entries are
/// symlinks into the tree, never copies; directories that exist on both sides are real
/// directories in `root`, so nothing gpuenv adds later is written into the tree.
pub fn link_wheel_tree(tree: &Path, root: &Path) -> Result<()> {
    let target = target_dir();
    for dir in ["include", "lib"] {
        let from = tree.join(dir);
        if from.is_dir() {
            link_children(&from, &root.join(&target).join(dir))?;
        }
    }
    Ok(())
}

/// Links the files of a venv's ROCm package (`site-packages/_rocm_sdk_core`) into `root`
/// at their own paths, where nothing is placed already, as [`link_wheel_tree`] does for
/// CUDA; its Python `__init__.py` stays out.
pub fn link_rocm_tree(tree: &Path, root: &Path) -> Result<()> {
    fs_err::create_dir_all(root)?;
    for item in fs_err::read_dir(tree)? {
        let item = item?;
        let name = item.file_name();
        if name == "__init__.py" || name == "__pycache__" {
            continue;
        }
        let dst = root.join(&name);
        match fs_err::symlink_metadata(&dst) {
            Ok(m) if m.is_dir() && item.path().is_dir() => link_children(&item.path(), &dst)?,
            Ok(_) => {}
            Err(_) => std::os::unix::fs::symlink(item.path(), &dst).with_context(|| {
                format!("linking {} -> {}", dst.display(), item.path().display())
            })?,
        }
    }
    Ok(())
}

fn link_children(from: &Path, to: &Path) -> Result<()> {
    fs_err::create_dir_all(to)?;
    for item in fs_err::read_dir(from)? {
        let item = item?;
        let dst = to.join(item.file_name());
        match fs_err::symlink_metadata(&dst) {
            Ok(m) if m.is_dir() && item.path().is_dir() => link_children(&item.path(), &dst)?,
            Ok(_) => {}
            Err(_) => std::os::unix::fs::symlink(item.path(), &dst).with_context(|| {
                format!("linking {} -> {}", dst.display(), item.path().display())
            })?,
        }
    }
    Ok(())
}

/// `libcudart.so -> libcudart.so.13` for every versioned library without its plain name
/// (the wheels ship only the versioned one; the linker looks for the plain one).
pub fn unversioned_links(lib: &Path) -> Result<()> {
    let Ok(rd) = fs_err::read_dir(lib) else {
        return Ok(());
    };
    let mut best: std::collections::BTreeMap<String, String> = Default::default();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(i) = name.find(".so.") else { continue };
        let suffix = &name[i + 4..];
        if !suffix
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let base = name[..i + 3].to_string();
        let shorter = best.get(&base).is_none_or(|b| name.len() < b.len());
        if shorter {
            best.insert(base, name);
        }
    }
    for (base, versioned) in best {
        let link = lib.join(&base);
        if fs_err::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(&versioned, &link)
                .with_context(|| format!("linking {}", link.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(m: &Mapping, p: &str) -> Option<String> {
        map_path(m, "cuda_nvcc", Path::new(p)).map(|p| p.display().to_string())
    }

    #[test]
    fn redist_archives_take_the_runfile_layout() {
        let t = target_dir();
        let m = Mapping::Redist;
        assert_eq!(
            map(&m, "cuda_nvcc-linux-x86_64-12.4.131-archive/bin/nvcc").unwrap(),
            "bin/nvcc"
        );
        assert_eq!(
            map(
                &m,
                "cuda_nvcc-linux-x86_64-12.4.131-archive/include/crt/host_config.h"
            )
            .unwrap(),
            format!("{t}/include/crt/host_config.h")
        );
        assert_eq!(
            map(&m, "cuda_nvcc-linux-x86_64-12.4.131-archive/LICENSE").unwrap(),
            "share/doc/cuda_nvcc/LICENSE"
        );
        assert_eq!(
            map(&m, "cuda_nvcc-linux-x86_64-12.4.131-archive/nvvm/bin/cicc").unwrap(),
            "nvvm/bin/cicc"
        );
    }

    #[test]
    fn wheels_keep_only_the_nvidia_tree() {
        let t = target_dir();
        let m = Mapping::Wheel;
        assert_eq!(map(&m, "nvidia/cu13/bin/nvcc").unwrap(), "bin/nvcc");
        assert_eq!(
            map(&m, "nvidia/cu13/lib/libcudart.so.13").unwrap(),
            format!("{t}/lib/libcudart.so.13")
        );
        assert_eq!(
            map(&m, "nvidia/cu13/.metadata/provenance.txt").unwrap(),
            "share/doc/cuda_nvcc/.metadata/provenance.txt"
        );
        assert_eq!(map(&m, "nvidia_cuda_nvcc-13.0.88.dist-info/RECORD"), None);
        assert_eq!(map(&m, "nvidia/__init__.py"), None);
        assert_eq!(map(&m, "nvidia/cu13/__init__.py"), None);
    }

    #[test]
    fn manifests_strip_their_prefix() {
        let m = Mapping::Strip("rocm-6.2.4".into());
        assert_eq!(map(&m, "rocm-6.2.4/bin/hipcc").unwrap(), "bin/hipcc");
        assert_eq!(map(&m, "rocm-6.2.4"), None);
        assert_eq!(map(&m, "other/x"), None);
        assert_eq!(
            map(&Mapping::Strip(String::new()), "bin/hipcc").unwrap(),
            "bin/hipcc"
        );
    }

    #[test]
    fn links_moved_up_by_a_strip_prefix_must_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        let unpacked = dir.path().join("u");
        fs_err::create_dir_all(unpacked.join("a/b/lib")).unwrap();
        std::os::unix::fs::symlink("../../../x", unpacked.join("a/b/lib/l")).unwrap();
        let err = place(
            &unpacked,
            &Mapping::Strip("a/b".into()),
            "c",
            &dir.path().join("root"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("outside the toolchain"), "{err}");
    }

    #[test]
    fn versioned_libraries_get_their_plain_name() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "libcudart.so.13",
            "libcudart.so.13.0.96",
            "libnvvm.so.4",
            "libfoo.so",
            "libfoo.so.1",
            "libx.so.1.bak",
        ] {
            fs_err::write(dir.path().join(f), "").unwrap();
        }
        unversioned_links(dir.path()).unwrap();
        assert_eq!(
            fs_err::read_link(dir.path().join("libcudart.so")).unwrap(),
            Path::new("libcudart.so.13")
        );
        assert_eq!(
            fs_err::read_link(dir.path().join("libnvvm.so")).unwrap(),
            Path::new("libnvvm.so.4")
        );
        assert!(!dir.path().join("libfoo.so").is_symlink());
        assert!(!dir.path().join("libx.so").exists());
    }
}
