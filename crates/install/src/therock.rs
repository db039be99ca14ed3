//! AMD's ROCm wheels (TheRock) made into one ROCm tree. The wheels unpack into sibling
//! packages of one site-packages (`_rocm_sdk_core/`, `_rocm_sdk_libraries/` with each
//! `rocm-sdk-device-<gfx>` overlaying it); `rocm-sdk-devel` carries `_devel.tar`, which
//! `rocm-sdk init` expands into `_rocm_sdk_devel/` (what `rocm-sdk path --root` prints): a
//! relative link to the sibling for every file a runtime package has, its own files, soname
//! and tool links, directory links such as `llvm -> lib/llvm`. File links become hard links
//! there, except `bin/amdclang*`, which stay links. gpuenv makes the same tree with the
//! siblings folded in: every package's files at their own paths in one root (the layout of
//! TheRock's tarballs, where the build's relative RPATHs hold), then the devel tree's own
//! files and links on top.

use std::path::{Component, Path, PathBuf};

use crate::error::{Context as _, InstallError, Result};
use indicatif::ProgressBar;

use crate::fetch::Fetcher;
use crate::{cache, confine, Archive, Format, Mapping};
use gpuenv_core::diagnostic::Hinted;

/// Returns the error (a refusal with its hints) from the function.
macro_rules! bail {
    ($e:expr) => {
        return Err(InstallError::from($e))
    };
}

/// Where the packages keep their files: `_rocm_sdk_core`, `_rocm_sdk_libraries`,
/// `_rocm_sdk_devel`, each possibly with the build's name suffix.
pub const PLATFORM_PREFIX: &str = "_rocm_sdk_";

/// Links `rocm-sdk init` keeps as links in the devel tree's `bin/`.
const KEPT_LINKS: &[&str] = &[
    "amdclang",
    "amdclang++",
    "amdclang-cl",
    "amdclang-cpp",
    "amdflang",
    "amdlld",
    "amdllvm",
];

const HINT: &str = "the ROCm index's wheels are hostile or broken: check where they come from";

/// Where a runtime wheel's entry goes in the root: a platform package's files at their
/// path inside it; its `__init__.py`, the Python packages and `.dist-info` stay out.
pub fn runtime_place(parts: &[&std::ffi::OsStr]) -> Option<PathBuf> {
    let top = parts.first()?.to_str()?;
    if !top.starts_with(PLATFORM_PREFIX) || parts.len() < 2 {
        return None;
    }
    let rest = &parts[1..];
    if rest == [std::ffi::OsStr::new("__init__.py")] || rest.iter().any(|p| *p == "__pycache__") {
        return None;
    }
    Some(rest.iter().collect())
}

/// The devel wheel's `_devel.tar` (or `.tar.xz`), unpacked in the download cache as an
/// archive of its own (checked, sealed and shared like any other). Returns the directory
/// holding `_rocm_sdk_devel/`.
pub fn devel_tree(fetcher: &Fetcher, wheel: &Path, label: &str) -> Result<PathBuf> {
    let pkg = wheel.join("rocm_sdk_devel");
    let mut found = Vec::new();
    for (name, format) in [
        ("_devel.tar.xz", Format::TarXz),
        ("_devel.tar", Format::Tar),
    ] {
        let p = pkg.join(name);
        if fs_err::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            found.push((p, format));
        }
    }
    let Some((tar, format)) = found.into_iter().next() else {
        bail!(Hinted::new(format!(
            "{label} holds no rocm_sdk_devel/_devel.tar, so it cannot make a ROCm tree"
        ))
        .hint(HINT));
    };
    let sha256 = cache::sha256_file(&tar).with_context(|| format!("reading {}", tar.display()))?;
    let archive = Archive {
        component: "devel".into(),
        version: String::new(),
        url: reqwest::Url::from_file_path(&tar)
            .map_err(|()| InstallError::msg(format!("{} is not a usable path", tar.display())))?,
        sha256: crate::pathpart::Sha256::parse(&sha256)?,
        size: fs_err::metadata(&tar).ok().map(|m| m.len()),
        format,
        mapping: Mapping::Strip(String::new()),
    };
    fetcher
        .unpacked(&archive, &ProgressBar::hidden())
        .with_context(|| format!("unpacking the _devel tarball of {label}"))
}

/// Places the devel tree unpacked at `site` (holding `_rocm_sdk_devel*/`) into `root`,
/// which holds the runtime packages' files already: its own files first, then its links.
pub fn place_devel(site: &Path, root: &Path) -> Result<()> {
    let tops: Vec<String> = fs_err::read_dir(site)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let devel: Vec<&String> = tops
        .iter()
        .filter(|n| n.starts_with(&format!("{PLATFORM_PREFIX}devel")))
        .collect();
    let (Some(top), None) = (devel.first(), devel.get(1)) else {
        bail!(Hinted::new(format!(
            "the _devel tarball holds {} (expected one {PLATFORM_PREFIX}devel directory)",
            tops.join(", ")
        ))
        .hint(HINT));
    };
    let mut files = Vec::new();
    let mut links = Vec::new();
    let mut stack = vec![PathBuf::new()];
    let base = site.join(top);
    while let Some(rel_dir) = stack.pop() {
        for item in fs_err::read_dir(base.join(&rel_dir))? {
            let item = item?;
            let rel = rel_dir.join(item.file_name());
            let meta = fs_err::symlink_metadata(item.path())?;
            if meta.is_dir() {
                stack.push(rel);
            } else if meta.file_type().is_symlink() {
                links.push(rel);
            } else if rel != Path::new("__init__.py") {
                files.push(rel);
            }
        }
    }
    files.sort();
    links.sort();
    for rel in &files {
        put_file(&base.join(rel), rel, root)?;
    }
    for rel in &links {
        put_link(site, Path::new(top), rel, root)?;
    }
    Ok(())
}

/// The real directory (relative to `root`) that `parent` names once the root's links are
/// followed; refused when it leaves the root.
fn real_dir(root: &Path, parent: &Path, what: &Path) -> Result<PathBuf> {
    confine::resolve(root, Path::new(""), parent).map_err(|why| {
        Hinted::new(format!(
            "{} of the devel tree would be placed outside the ROCm tree ({why})",
            what.display()
        ))
        .hint(HINT)
        .into()
    })
}

fn put_file(from: &Path, rel: &Path, root: &Path) -> Result<()> {
    let parent = real_dir(root, rel.parent().unwrap_or(Path::new("")), rel)?;
    let dst = root
        .join(&parent)
        .join(rel.file_name().expect("a file has a name"));
    if fs_err::symlink_metadata(&dst).is_ok() {
        return Ok(());
    }
    fs_err::create_dir_all(root.join(&parent))?;
    if fs_err::hard_link(from, &dst).is_err() {
        fs_err::copy(from, &dst)?;
    }
    Ok(())
}

/// One link of the devel tree: where it leads among the sibling packages (`_rocm_sdk_X/Y`)
/// is `Y` in the folded root. A link to itself (`Y` is its own path) is a runtime package's
/// file, placed at that path already (or when that package is added); a file link becomes a
/// hard link to `Y`; a directory link, a link to what is not there (yet), and the kept
/// `bin/amdclang*` links stay links, rewritten to reach `Y` inside the root.
fn put_link(site: &Path, top: &Path, rel: &Path, root: &Path) -> Result<()> {
    let in_site = top.join(rel);
    let target = fs_err::read_link(site.join(&in_site))?;
    let from = in_site.parent().unwrap_or(Path::new(""));
    let outside = |why: String| -> InstallError {
        Hinted::new(format!(
            "the devel tree's link {} -> {} leads outside the ROCm packages ({why})",
            rel.display(),
            target.display()
        ))
        .hint(HINT)
        .into()
    };
    let lands = confine::resolve(site, from, &target).map_err(|w| outside(w.to_string()))?;
    let mut parts = lands.components();
    let package = match parts.next() {
        Some(Component::Normal(p)) => p.to_string_lossy().into_owned(),
        _ => {
            return Err(outside(
                "it leads to the site-packages directory itself".into(),
            ))
        }
    };
    if !package.starts_with(PLATFORM_PREFIX) {
        return Err(outside(format!("it leads into {package}")));
    }
    let y: PathBuf = parts.collect();
    if y.as_os_str().is_empty() {
        return Err(outside(format!("it leads to {package} itself")));
    }
    if y == rel {
        return Ok(());
    }
    let parent = real_dir(root, rel.parent().unwrap_or(Path::new("")), rel)?;
    let dst = root
        .join(&parent)
        .join(rel.file_name().expect("a link has a name"));
    if fs_err::symlink_metadata(&dst).is_ok() {
        return Ok(());
    }
    fs_err::create_dir_all(root.join(&parent))?;
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let kept = rel.parent() == Some(Path::new("bin")) && KEPT_LINKS.contains(&name);
    let lands_on_file = confine::resolve(root, Path::new(""), &y)
        .ok()
        .and_then(|r| fs_err::symlink_metadata(root.join(r)).ok())
        .is_some_and(|m| m.is_file());
    if lands_on_file && !kept {
        let real = confine::resolve(root, Path::new(""), &y).expect("resolved just now");
        fs_err::hard_link(root.join(real), &dst)
            .with_context(|| format!("linking {} to {}", dst.display(), y.display()))?;
    } else {
        let up = "../".repeat(parent.components().count());
        let relative = PathBuf::from(format!("{up}{}", y.display()));
        std::os::unix::fs::symlink(&relative, &dst)
            .with_context(|| format!("linking {} -> {}", dst.display(), relative.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn parts(p: &str) -> Vec<&std::ffi::OsStr> {
        Path::new(p).iter().collect()
    }

    #[test]
    fn runtime_wheels_fold_into_one_root() {
        let place = |p: &str| runtime_place(&parts(p)).map(|p| p.display().to_string());
        assert_eq!(place("_rocm_sdk_core/bin/hipcc").unwrap(), "bin/hipcc");
        assert_eq!(
            place("_rocm_sdk_libraries/.devel_links/gfx90a.json").unwrap(),
            ".devel_links/gfx90a.json"
        );
        assert_eq!(place("_rocm_sdk_core/__init__.py"), None);
        assert_eq!(place("rocm_sdk_core/_cli.py"), None);
        assert_eq!(place("rocm_sdk_core-7.14.0.dist-info/RECORD"), None);
    }

    #[test]
    fn devel_links_become_hard_links_except_amdclang_and_directories() {
        let t = tempfile::tempdir().unwrap();
        let (site, root) = (t.path().join("site"), t.path().join("root"));
        let d = site.join("_rocm_sdk_devel");
        for dir in ["bin", "lib/llvm/bin"] {
            fs_err::create_dir_all(d.join(dir)).unwrap();
            fs_err::create_dir_all(root.join(dir)).unwrap();
        }
        fs_err::write(root.join("lib/llvm/bin/clang"), "clang").unwrap();
        fs_err::write(root.join("lib/libamdhip64.so.5"), "hip").unwrap();
        symlink(
            "../../_rocm_sdk_core/lib/libamdhip64.so.5",
            d.join("lib/libamdhip64.so.5"),
        )
        .unwrap();
        symlink("libamdhip64.so.5", d.join("lib/libamdhip64.so")).unwrap();
        symlink("../lib/llvm/bin/clang", d.join("bin/amdclang")).unwrap();
        symlink("lib/llvm", d.join("llvm")).unwrap();
        symlink(
            "../../_rocm_sdk_libraries/lib/libhipblas.so.3",
            d.join("lib/libhipblas.so.3"),
        )
        .unwrap();
        fs_err::write(d.join("lib/hip-config.cmake"), "cmake").unwrap();
        place_devel(&site, &root).unwrap();
        use std::os::unix::fs::MetadataExt;
        let ino = |p: &str| fs_err::symlink_metadata(root.join(p)).unwrap().ino();
        assert_eq!(ino("lib/libamdhip64.so"), ino("lib/libamdhip64.so.5"));
        assert_eq!(
            fs_err::read_link(root.join("bin/amdclang")).unwrap(),
            Path::new("../lib/llvm/bin/clang")
        );
        assert_eq!(
            fs_err::read_link(root.join("llvm")).unwrap(),
            Path::new("lib/llvm")
        );
        assert!(root.join("llvm/bin/clang").is_file());
        // Its package is not installed: its own path, left for the wheel that brings it.
        assert!(fs_err::symlink_metadata(root.join("lib/libhipblas.so.3")).is_err());
        assert_eq!(
            fs_err::read_to_string(root.join("lib/hip-config.cmake")).unwrap(),
            "cmake"
        );
    }

    #[test]
    fn devel_links_out_of_the_packages_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let (site, root) = (t.path().join("site"), t.path().join("root"));
        fs_err::create_dir_all(site.join("_rocm_sdk_devel/bin")).unwrap();
        fs_err::create_dir_all(site.join("numpy")).unwrap();
        symlink("../../numpy/x", site.join("_rocm_sdk_devel/bin/x")).unwrap();
        let err = place_devel(&site, &root).unwrap_err();
        assert!(
            format!("{err:#}").contains("leads outside the ROCm packages"),
            "{err:#}"
        );
        fs_err::remove_file(site.join("_rocm_sdk_devel/bin/x")).unwrap();
        symlink("../../../etc/passwd", site.join("_rocm_sdk_devel/bin/x")).unwrap();
        let err = place_devel(&site, &root).unwrap_err();
        assert!(format!("{err:#}").contains("climbs above"), "{err:#}");
    }
}
