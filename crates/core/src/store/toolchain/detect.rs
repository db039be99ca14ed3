//! Reading what a tree is ([`Entry`]): kind, version (read from the tree, never from its
//! name) and where its headers and libraries live. The parsers are pure ([`versions`]);
//! `detect` reads the tree.

mod versions;

use versions::cuda_json_release;
pub use versions::{
    parse_cuda_h, parse_cuda_version_json, parse_cuda_version_txt, parse_hip_version,
    parse_hip_version_file, parse_hip_version_h, parse_nvcc_version, parse_rocm_info_version,
    VersionJsonError,
};

use crate::outside;

const VERSION: outside::Kind = outside::Kind::VersionFile;
use crate::facts::vars;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::entry::{Collectives, Entry, Source, FROM_NVCC, FROM_NVCC_JSON, FROM_VERSION_JSON};
use super::system;
use super::{Kind, Version};
use crate::ask::{self, AskError};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NotAToolchain {
    #[error("{0} does not exist")]
    Missing(PathBuf),
    #[error("{0} is not a directory")]
    NotADir(PathBuf),
    #[error("{root} is not a CUDA Toolkit or ROCm tree: found neither bin/nvcc nor bin/hipcc")]
    NoCompiler { root: PathBuf },
    #[error("{root} has bin/nvcc but its version could not be read: {why}")]
    CudaVersion { root: PathBuf, why: String },
    #[error("{root} has bin/hipcc but its version could not be read: {why}")]
    RocmVersion { root: PathBuf, why: String },
}

/// Whether detection may run the tree's own programs (`nvcc --version`, `hipconfig
/// --version`) when no file says the version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// A tree the user named (`link`, the standard places of `discover`).
    Allowed,
    /// A tree a file gpuenv did not write named (a site's module file): its version comes
    /// from files only (`version.json`, `version.txt`, `cuda.h`, `hip_version.h`).
    Never,
}

/// Reads a tree into the entry it is registered as, from `source`. `root` should be
/// absolute.
pub fn detect(root: &Path, source: Source) -> Result<Entry, NotAToolchain> {
    detect_with(root, source, Run::Allowed)
}

/// [`detect`], running nothing in the tree when `run` is [`Run::Never`].
pub fn detect_with(root: &Path, source: Source, run: Run) -> Result<Entry, NotAToolchain> {
    if !root.exists() {
        return Err(NotAToolchain::Missing(root.to_path_buf()));
    }
    if !root.is_dir() {
        return Err(NotAToolchain::NotADir(root.to_path_buf()));
    }
    // Before bin/nvcc: Debian's `/usr/bin/nvcc` is a wrapper, `/usr` a ROCm prefix.
    if system::is_rocm_prefix(root) {
        detect_rocm_system(root, source)
    } else if root.join("bin/nvcc").is_file() {
        detect_cuda(root, source, run)
    } else if root.join("bin/hipcc").is_file() {
        detect_rocm(root, source, run)
    } else {
        Err(NotAToolchain::NoCompiler {
            root: root.to_path_buf(),
        })
    }
}

/// A version file or header of the tree: `None` when there is none; one that is there but
/// cannot be read (a FIFO, a device, too large, not text) is an error naming it.
fn read(path: &Path, kind: outside::Kind) -> Result<Option<String>, outside::ReadError> {
    outside::read_text_if_present(path, kind)
}

/// `<tool> --version` in a fixed, minimal environment: what the tree prints must not depend
/// on the caller's variables (a gpuenv proxy's depth, another toolkit's CUDA_HOME, the locale).
fn run_version(tool: &Path) -> Result<String, AskError> {
    let out = ask::output(
        Command::new(tool)
            .arg("--version")
            .env_clear()
            .env(vars::PATH, "/usr/bin:/bin")
            .env(vars::LC_ALL, "C"),
    )?;
    Ok(out.text())
}

fn detect_cuda(root: &Path, source: Source, run: Run) -> Result<Entry, NotAToolchain> {
    let err = |why: String| NotAToolchain::CudaVersion {
        root: root.to_path_buf(),
        why,
    };
    let (include_dir, lib_dir) = cuda_dirs(root);
    let (version, version_from) = if let Some(text) =
        read(&root.join("version.json"), VERSION).map_err(|e| err(e.to_string()))?
    {
        let v = parse_cuda_version_json(&text).map_err(|e| err(format!("version.json: {e}")))?;
        // 11.x dates its SDK (`11.8.20220929`): the version is then cuda_nvcc's build.
        let from = if cuda_json_release(&text).is_some() {
            FROM_VERSION_JSON
        } else {
            FROM_NVCC_JSON
        };
        (v, from.to_string())
    } else if let Some(text) =
        read(&root.join("version.txt"), VERSION).map_err(|e| err(e.to_string()))?
    {
        let v = parse_cuda_version_txt(&text)
            .ok_or_else(|| err("version.txt has no `CUDA Version X.Y.Z` line".into()))?;
        (v, "version.txt".to_string())
    } else if run == Run::Never {
        let header = include_dir.join("cuda.h");
        let v = read(&header, outside::Kind::Header)
            .map_err(|e| err(e.to_string()))?
            .and_then(|t| parse_cuda_h(&t))
            .ok_or_else(|| {
                err("no version.json, version.txt or `#define CUDA_VERSION` in include/cuda.h (bin/nvcc is not run for a tree a module file names)".into())
            })?;
        (v, "include/cuda.h".to_string())
    } else {
        let text = run_version(&root.join("bin/nvcc")).map_err(|e| err(e.to_string()))?;
        let v = parse_nvcc_version(&text).ok_or_else(|| {
            err("no version.json or version.txt, and `nvcc --version` printed no `release X.Y, VX.Y.Z` line".into())
        })?;
        (v, FROM_NVCC.to_string())
    };
    let collectives = find_nccl(root, &lib_dir);
    Ok(Entry {
        kind: Kind::Cuda,
        version,
        root: root.to_path_buf(),
        source,
        version_from,
        include_dir,
        lib_dir,
        collectives,
        system: system::cuda_prefix_of(root).map(|p| system::describe(Kind::Cuda, &p)),
    })
}

/// `lib64`, else `targets/<arch>-linux/lib` (on aarch64 `sbsa-linux`, else JetPack 6's
/// `aarch64-linux`), else `lib` (conda). Debian's
/// `nvidia-cuda-toolkit` keeps only bin/ under `<prefix>/lib/nvidia-cuda-toolkit` and puts
/// headers and libraries in the prefix's system directories.
fn cuda_dirs(root: &Path) -> (PathBuf, PathBuf) {
    let arch = std::env::consts::ARCH;
    let dirs = crate::facts::nvidia_target::target_dirs_for(arch);
    let target = dirs
        .iter()
        .map(|d| root.join(d))
        .find(|t| t.is_dir())
        .unwrap_or_else(|| root.join(&dirs[0]));
    // conda-forge's CUDA 12+ keeps its headers in targets/ while the prefix's include/
    // holds the rest of the environment's headers.
    let include = if root.join("include/cuda_runtime.h").is_file() {
        root.join("include")
    } else if target.join("include").is_dir() {
        target.join("include")
    } else if root.join("include").is_dir() {
        root.join("include")
    } else if let Some(prefix) = system::cuda_prefix_of(root) {
        prefix.join("include")
    } else {
        root.join("include")
    };
    let lib = if root.join("lib64").is_dir() {
        root.join("lib64")
    } else if target.join("lib").is_dir() {
        target.join("lib")
    } else if root.join("lib").is_dir() {
        root.join("lib")
    } else if let Some(prefix) = system::cuda_prefix_of(root) {
        prefix.join("lib").join(system::multiarch())
    } else {
        root.join("lib64")
    };
    (include, lib)
}

fn find_nccl(root: &Path, lib_dir: &Path) -> Option<Collectives> {
    let inside = root.join("include/nccl.h").is_file() && has_lib(lib_dir, "libnccl");
    if inside {
        return Some(Collectives {
            root: root.to_path_buf(),
            include_dir: root.join("include"),
            lib_dir: lib_dir.to_path_buf(),
        });
    }
    // Beside it: `<parent>/nccl`, the shape of NVIDIA's wheels (`nvidia/cu13`, `nvidia/nccl`).
    let beside = root.parent()?.join("nccl");
    if beside.join("include/nccl.h").is_file() && has_lib(&beside.join("lib"), "libnccl") {
        return Some(Collectives {
            include_dir: beside.join("include"),
            lib_dir: beside.join("lib"),
            root: beside,
        });
    }
    None
}

fn has_lib(dir: &Path, stem: &str) -> bool {
    fs_err::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(stem))
        })
        .unwrap_or(false)
}

/// A ROCm tree in a venv as AMD's wheels lay it out (`site-packages/_rocm_sdk_devel`, or
/// `_rocm_sdk_core` before `rocm-sdk init`): its release is the version of the
/// `rocm-sdk-core` wheel installed beside it (`rocm_sdk_core-7.14.0.dist-info`).
fn wheel_release(root: &Path) -> Option<(Version, String)> {
    let name = root.file_name()?.to_str()?;
    if !name.starts_with("_rocm_sdk_") {
        return None;
    }
    let site = root.parent()?;
    let mut found: Vec<(crate::facts::pep440::PyVersion, String)> = fs_err::read_dir(site)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.to_string();
            let v = n
                .strip_prefix("rocm_sdk_core-")?
                .strip_suffix(".dist-info")?;
            Some((crate::facts::pep440::PyVersion::parse(v)?, n))
        })
        .collect();
    found.sort();
    let (py, dist) = found.pop()?;
    Some((Version::new(&py.short_release()), format!("../{dist}")))
}

fn detect_rocm(root: &Path, source: Source, run: Run) -> Result<Entry, NotAToolchain> {
    let err = |why: String| NotAToolchain::RocmVersion {
        root: root.to_path_buf(),
        why,
    };
    let (version, version_from) = if let Some(text) =
        read(&root.join(".info/version"), VERSION).map_err(|e| err(e.to_string()))?
    {
        let v = parse_rocm_info_version(&text)
            .ok_or_else(|| err(format!(".info/version holds `{}`", text.trim())))?;
        (v, ".info/version".to_string())
    } else if let Some(found) = wheel_release(root) {
        found
    } else if run == Run::Allowed && root.join("bin/hipconfig").is_file() {
        let text = run_hipconfig(&root.join("bin/hipconfig")).map_err(|e| err(e.to_string()))?;
        let v = parse_hip_version(&text)
            .ok_or_else(|| err(format!("`hipconfig --version` printed `{}`", text.trim())))?;
        (v, "bin/hipconfig --version".to_string())
    } else if let Some(text) = read(
        &root.join("include/hip/hip_version.h"),
        outside::Kind::Header,
    )
    .map_err(|e| err(e.to_string()))?
    {
        let v = parse_hip_version_h(&text).ok_or_else(|| {
            err("include/hip/hip_version.h has no HIP_VERSION_MAJOR/MINOR".into())
        })?;
        (v, "include/hip/hip_version.h".to_string())
    } else {
        return Err(err(
            "no .info/version, bin/hipconfig or include/hip/hip_version.h".into(),
        ));
    };
    let collectives = ["include/rccl/rccl.h", "include/rccl.h"]
        .iter()
        .any(|h| root.join(h).is_file())
        .then(|| Collectives {
            root: root.to_path_buf(),
            include_dir: root.join("include"),
            lib_dir: root.join("lib"),
        });
    Ok(Entry {
        kind: Kind::Rocm,
        version,
        root: root.to_path_buf(),
        source,
        version_from,
        include_dir: root.join("include"),
        lib_dir: root.join("lib"),
        collectives,
        system: None,
    })
}

/// Debian/Ubuntu's ROCm packages under a prefix: the version from HIP's files (running
/// Debian's `hipconfig` needs HIP_PATH set and is slower), libraries in the multiarch dir.
fn detect_rocm_system(prefix: &Path, source: Source) -> Result<Entry, NotAToolchain> {
    let err = |why: String| NotAToolchain::RocmVersion {
        root: prefix.to_path_buf(),
        why,
    };
    let (version, version_from) = if let Some(v) = read(&prefix.join("share/hip/version"), VERSION)
        .map_err(|e| err(e.to_string()))?
        .and_then(|t| parse_hip_version_file(&t))
    {
        (v, "share/hip/version".to_string())
    } else {
        let text = read(
            &prefix.join("include/hip/hip_version.h"),
            outside::Kind::Header,
        )
        .map_err(|e| err(e.to_string()))?
        .ok_or_else(|| err("no share/hip/version or include/hip/hip_version.h".into()))?;
        let v = parse_hip_version_h(&text).ok_or_else(|| {
            err("include/hip/hip_version.h has no HIP_VERSION_MAJOR/MINOR".into())
        })?;
        (v, "include/hip/hip_version.h".to_string())
    };
    let lib_dir = prefix.join("lib").join(system::multiarch());
    let collectives = prefix
        .join("include/rccl/rccl.h")
        .is_file()
        .then(|| Collectives {
            root: prefix.to_path_buf(),
            include_dir: prefix.join("include"),
            lib_dir: lib_dir.clone(),
        });
    Ok(Entry {
        kind: Kind::Rocm,
        version,
        root: prefix.to_path_buf(),
        source,
        version_from,
        include_dir: prefix.join("include"),
        lib_dir,
        collectives,
        system: Some(system::describe(Kind::Rocm, prefix)),
    })
}

fn run_hipconfig(tool: &Path) -> Result<String, AskError> {
    run_version(tool)
}
