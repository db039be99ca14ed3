//! What a tree is: kind, version (read from the tree, never from its name) and where its
//! headers and libraries live. The parsers are pure; `detect` reads the tree.

use crate::outside;

const VERSION: outside::Kind = outside::Kind::VersionFile;
use crate::facts::lookup::{self, NvccRelease};
use crate::facts::{vars, Facts};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::system::{self, System};
use super::{Kind, Version};
use crate::ask::{self, AskError};

/// A toolchain tree as found on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detected {
    pub kind: Kind,
    pub version: Version,
    /// Where the version was read, for `list` and error messages.
    pub version_from: String,
    pub include_dir: PathBuf,
    pub lib_dir: PathBuf,
    /// NCCL (CUDA) or RCCL (ROCm) inside the tree or beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collectives: Option<Collectives>,
    /// Set for a toolchain spread over a distribution prefix (Debian's packages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<System>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collectives {
    pub root: PathBuf,
    pub include_dir: PathBuf,
    pub lib_dir: PathBuf,
}

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

/// Reads a tree. `root` should be absolute.
pub fn detect(root: &Path) -> Result<Detected, NotAToolchain> {
    detect_with(root, Run::Allowed)
}

/// Reads a tree, running nothing in it when `run` is [`Run::Never`].
pub fn detect_with(root: &Path, run: Run) -> Result<Detected, NotAToolchain> {
    if !root.exists() {
        return Err(NotAToolchain::Missing(root.to_path_buf()));
    }
    if !root.is_dir() {
        return Err(NotAToolchain::NotADir(root.to_path_buf()));
    }
    // Before bin/nvcc: Debian's `/usr/bin/nvcc` is a wrapper, `/usr` a ROCm prefix.
    if system::is_rocm_prefix(root) {
        detect_rocm_system(root)
    } else if root.join("bin/nvcc").is_file() {
        detect_cuda(root, run)
    } else if root.join("bin/hipcc").is_file() {
        detect_rocm(root, run)
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

/// What is wrong with a `version.json`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VersionJsonError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("no cuda.version or cuda_nvcc.version")]
    NoVersion,
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

fn detect_cuda(root: &Path, run: Run) -> Result<Detected, NotAToolchain> {
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
    Ok(Detected {
        kind: Kind::Cuda,
        version,
        version_from,
        include_dir,
        lib_dir,
        collectives,
        system: system::cuda_prefix_of(root).map(|p| system::describe(Kind::Cuda, &p)),
    })
}

/// `lib64`, else `targets/<arch>-linux/lib`, else `lib` (conda). Debian's
/// `nvidia-cuda-toolkit` keeps only bin/ under `<prefix>/lib/nvidia-cuda-toolkit` and puts
/// headers and libraries in the prefix's system directories.
fn cuda_dirs(root: &Path) -> (PathBuf, PathBuf) {
    let target = root.join(crate::facts::nvidia_target::target_dir());
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

fn detect_rocm(root: &Path, run: Run) -> Result<Detected, NotAToolchain> {
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
    Ok(Detected {
        kind: Kind::Rocm,
        version,
        version_from,
        include_dir: root.join("include"),
        lib_dir: root.join("lib"),
        collectives,
        system: None,
    })
}

/// Debian/Ubuntu's ROCm packages under a prefix: the version from HIP's files (running
/// Debian's `hipconfig` needs HIP_PATH set and is slower), libraries in the multiarch dir.
fn detect_rocm_system(prefix: &Path) -> Result<Detected, NotAToolchain> {
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
    Ok(Detected {
        kind: Kind::Rocm,
        version,
        version_from,
        include_dir: prefix.join("include"),
        lib_dir,
        collectives,
        system: Some(system::describe(Kind::Rocm, prefix)),
    })
}

/// `share/hip/version` of Debian's packages: `HIP_VERSION_MAJOR=5` / `HIP_VERSION_MINOR=2`
/// lines (the patch is a build number, as in `hipconfig --version`).
pub fn parse_hip_version_file(text: &str) -> Option<Version> {
    let value = |key: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))?
            .trim()
            .parse()
            .ok()
    };
    Some(Version::new(&[
        value("HIP_VERSION_MAJOR")?,
        value("HIP_VERSION_MINOR")?,
    ]))
}

fn run_hipconfig(tool: &Path) -> Result<String, AskError> {
    run_version(tool)
}

/// Where a CUDA tree's version is its release: version.json's `cuda.version`.
pub const FROM_VERSION_JSON: &str = "version.json";
/// Where it is nvcc's build number: `nvcc --version` (V13.0.88), or 11.x's version.json,
/// which dates its SDK (`11.8.20220929`) and so gives the `cuda_nvcc` component's version.
pub const FROM_NVCC: &str = "bin/nvcc --version";
pub const FROM_NVCC_JSON: &str = "version.json (cuda_nvcc)";

/// The CUDA release a tree is, as NVIDIA numbers it (13.2.2), from its version and where
/// that was read: version.json's `cuda.version` is the release; nvcc's build number
/// (V13.2.86) is the release the data's `[[nvcc-build]]` rows give it, when exactly one
/// release ships that build; otherwise (a build several releases share, one the data does
/// not list, `cuda.h`, version.txt) the major.minor only. ROCm's versions are its releases.
/// The one rule every name follows (installed, linked, discovered, module).
pub fn release(kind: Kind, version: &Version, version_from: &str) -> Version {
    release_by(crate::facts::current(), kind, version, version_from)
}

/// [`release`] by one copy of the data.
pub fn release_by(facts: &Facts, kind: Kind, version: &Version, version_from: &str) -> Version {
    if kind != Kind::Cuda || version_from == FROM_VERSION_JSON {
        return version.clone();
    }
    let nvcc_build = version_from == FROM_NVCC || version_from == FROM_NVCC_JSON;
    match nvcc_build.then(|| lookup::release_of_nvcc(facts, version)) {
        Some(NvccRelease::One(release)) => release,
        _ => version.truncated(2),
    }
}

impl Detected {
    /// [`release`] of this tree: the version its name carries.
    pub fn release(&self) -> Version {
        release(self.kind, &self.version, &self.version_from)
    }
}

/// version.json's `cuda.version` when it is a release (11.x writes a date there).
fn cuda_json_release(text: &str) -> Option<Version> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let v: Version = json.get("cuda")?.get("version")?.as_str()?.parse().ok()?;
    v.parts().get(2).is_none_or(|p| *p < 1_000_000).then_some(v)
}

/// `version.json` of CUDA 11.1+. 11.x writes a build date as the third component of
/// `cuda.version` (`11.8.20220929`), so the nvcc component's version is used there; newer
/// releases write the plain release label (`12.4.1`).
pub fn parse_cuda_version_json(text: &str) -> Result<Version, VersionJsonError> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| VersionJsonError::Json(e.to_string()))?;
    let field = |component: &str| -> Option<Version> {
        json.get(component)?.get("version")?.as_str()?.parse().ok()
    };
    let sdk = field("cuda");
    match sdk {
        Some(v) if v.parts().get(2).is_none_or(|p| *p < 1_000_000) => Ok(v),
        Some(v) => Ok(field("cuda_nvcc").unwrap_or_else(|| v.truncated(2))),
        None => field("cuda_nvcc").ok_or(VersionJsonError::NoVersion),
    }
}

/// `#define CUDA_VERSION 12040` in `cuda.h`: major * 1000 + minor * 10 (no patch).
pub fn parse_cuda_h(text: &str) -> Option<Version> {
    let n: u64 = text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next()? == "#define" && words.next()? == "CUDA_VERSION")
            .then(|| words.next()?.parse().ok())?
    })?;
    (n >= 1000).then(|| Version::new(&[n / 1000, (n % 1000) / 10]))
}

/// `CUDA Version 10.2.89` (10.2 and older).
pub fn parse_cuda_version_txt(text: &str) -> Option<Version> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("CUDA Version "))
        .and_then(|v| v.trim().parse().ok())
}

/// `nvcc --version`: the line `Cuda compilation tools, release 12.4, V12.4.131`. 10.2 has no
/// `Build` line after it, 11+ does; only this line matters.
pub fn parse_nvcc_version(text: &str) -> Option<Version> {
    let line = text
        .lines()
        .find(|l| l.starts_with("Cuda compilation tools, release "))?;
    let full = line
        .split(", ")
        .find_map(|part| part.trim().strip_prefix('V'))
        .and_then(|v| v.parse().ok());
    full.or_else(|| {
        let release = line.strip_prefix("Cuda compilation tools, release ")?;
        release.split(',').next()?.trim().parse().ok()
    })
}

/// ROCm's `.info/version`: `6.2.4` or `6.2.4-120` (the build number is dropped).
pub fn parse_rocm_info_version(text: &str) -> Option<Version> {
    let first = text.lines().next()?.trim();
    first.split('-').next()?.parse().ok()
}

/// `hipconfig --version` (`6.2.41133-dd7f95766`) or hipcc's `HIP version: …` line. HIP's third
/// component is a build number, not ROCm's patch, so only major.minor is kept.
pub fn parse_hip_version(text: &str) -> Option<Version> {
    let line = text.lines().map(|l| l.trim()).find(|l| !l.is_empty())?;
    let line = line.strip_prefix("HIP version:").unwrap_or(line).trim();
    let v: Version = line.split('-').next()?.parse().ok()?;
    (v.parts().len() >= 2).then(|| v.truncated(2))
}

/// `#define HIP_VERSION_MAJOR 6` / `HIP_VERSION_MINOR 2` in `include/hip/hip_version.h`.
pub fn parse_hip_version_h(text: &str) -> Option<Version> {
    let define = |name: &str| -> Option<u64> {
        text.lines().find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next()? == "#define" && words.next()? == name)
                .then(|| words.next()?.parse().ok())
                .flatten()
        })
    };
    Some(Version::new(&[
        define("HIP_VERSION_MAJOR")?,
        define("HIP_VERSION_MINOR")?,
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::captured;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn version_json_of_11_8_uses_the_nvcc_component_not_the_build_date() {
        assert_eq!(
            parse_cuda_version_json(&captured("cuda-version.json-11.8")),
            Ok(v("11.8.89"))
        );
        // Which is nvcc's build number: the release is 11.8.
        assert_eq!(cuda_json_release(&captured("cuda-version.json-11.8")), None);
        assert_eq!(
            release(Kind::Cuda, &v("11.8.89"), "version.json (cuda_nvcc)"),
            v("11.8")
        );
    }

    #[test]
    fn the_release_is_version_jsons_else_the_one_release_the_data_gives_nvccs_build() {
        let e = Facts::embedded();
        let rel = |version: &str, from: &str| release_by(e, Kind::Cuda, &v(version), from);
        assert_eq!(rel("13.0.2", FROM_VERSION_JSON), v("13.0.2"));
        // version.json wins over the data, whatever nvcc says.
        assert_eq!(rel("13.0.3", FROM_VERSION_JSON), v("13.0.3"));
        assert_eq!(rel("13.2.86", FROM_NVCC), v("13.2.2"));
        assert_eq!(rel("12.4.131", FROM_NVCC), v("12.4.1"));
        // 13.0.88 ships in 13.0.1, 13.0.2 and 13.0.3: never guessed.
        assert_eq!(rel("13.0.88", FROM_NVCC), v("13.0"));
        // A build past the data, cuda.h, version.txt: major.minor.
        assert_eq!(rel("13.9.12", FROM_NVCC), v("13.9"));
        assert_eq!(rel("12.4", "include/cuda.h"), v("12.4"));
        assert_eq!(rel("10.2.89", "version.txt"), v("10.2"));
        assert_eq!(
            release_by(e, Kind::Rocm, &v("6.2.4"), ".info/version"),
            v("6.2.4")
        );
    }

    #[test]
    fn a_newer_copy_of_the_data_can_name_a_build_the_built_in_one_does_not_know() {
        let text = include_str!("../../facts/cuda.toml").replace(
            "# PyTorch's CUDA wheel indexes",
            "[[nvcc-build]]\nrelease = \"13.9.0\"\nnvcc = \"13.9.12\"\nsource = \"a test\"\n\n# PyTorch's CUDA wheel indexes",
        );
        let copy = Facts::from_checked(crate::facts::schema::check(&text).unwrap());
        assert_eq!(
            release_by(&copy, Kind::Cuda, &v("13.9.12"), FROM_NVCC),
            v("13.9.0")
        );
    }

    #[test]
    fn version_json_with_a_plain_release_label() {
        let text = r#"{"cuda": {"name": "CUDA SDK", "version": "12.4.1"},
                       "cuda_nvcc": {"name": "CUDA NVCC", "version": "12.4.131"}}"#;
        assert_eq!(parse_cuda_version_json(text), Ok(v("12.4.1")));
        assert_eq!(cuda_json_release(text), Some(v("12.4.1")));
        assert!(parse_cuda_version_json("{")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON"));
        assert!(parse_cuda_version_json("{}").is_err());
    }

    #[test]
    fn version_txt_of_10_2() {
        assert_eq!(
            parse_cuda_version_txt(&captured("cuda-version.txt-10.2")),
            Some(v("10.2.89"))
        );
        assert_eq!(parse_cuda_version_txt("garbage"), None);
    }

    #[test]
    fn cuda_h_gives_major_and_minor() {
        let text = "#ifndef __cuda_cuda_h__\n#define CUDA_VERSION 12040\n";
        assert_eq!(parse_cuda_h(text), Some(v("12.4")));
        assert_eq!(parse_cuda_h("#define CUDA_VERSION 11080"), Some(v("11.8")));
        assert_eq!(parse_cuda_h("#define CUDA_VERSION_X 1"), None);
        assert_eq!(parse_cuda_h("#define CUDA_VERSION 12"), None);
    }

    #[test]
    fn nvcc_version_output_of_every_captured_release() {
        for (file, want) in [
            ("nvcc-version-10.2.txt", "10.2.89"),
            ("nvcc-version-11.8.txt", "11.8.89"),
            ("nvcc-version-12.4.txt", "12.4.131"),
            ("nvcc-version-13.2.txt", "13.2.86"),
        ] {
            assert_eq!(parse_nvcc_version(&captured(file)), Some(v(want)), "{file}");
        }
        assert_eq!(parse_nvcc_version("nvcc: command not found"), None);
    }

    #[test]
    fn rocm_versions_from_info_hipconfig_and_header() {
        assert_eq!(
            parse_rocm_info_version(&captured("rocm-info-version-6.2.0")),
            Some(v("6.2.0"))
        );
        assert_eq!(parse_rocm_info_version("6.2.4-120\n"), Some(v("6.2.4")));
        assert_eq!(
            parse_hip_version(&captured("hipcc-version-6.2.txt")),
            Some(v("6.2"))
        );
        assert_eq!(parse_hip_version("6.2.41133-dd7f95766"), Some(v("6.2")));
        let header = "#define HIP_VERSION_MAJOR 6\n#define HIP_VERSION_MINOR 2\n#define HIP_VERSION_PATCH 41133\n";
        assert_eq!(parse_hip_version_h(header), Some(v("6.2")));
        assert_eq!(parse_hip_version_h("#define HIP_VERSION_MAJOR 6\n"), None);
        let debian = "# Auto-generated by cmake\nHIP_PACKAGING_VERSION_PATCH=0\nHIP_VERSION_MAJOR=5\nHIP_VERSION_MINOR=2\nHIP_VERSION_PATCH=21153\n";
        assert_eq!(parse_hip_version_file(debian), Some(v("5.2")));
        assert_eq!(parse_hip_version_file("HIP_VERSION_MAJOR=5\n"), None);
    }
}
