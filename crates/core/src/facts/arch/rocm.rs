//! An AMD GPU target as LLVM names it: a processor (`gfx90a`, `gfx942`, `gfx1100`) and
//! target features after single colons (`gfx942:sramecc+:xnack-`).

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

/// The target features a target ID may set, each at most once, on (`+`) or off (`-`).
const FEATURES: &[&str] = &["sramecc", "xnack"];

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RocmTarget {
    /// `gfx90a`: what `rocminfo` names the GPU.
    pub processor: String,
    /// (`xnack`, true) for `:xnack+`, in the order written.
    pub features: Vec<(&'static str, bool)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RocmTargetError {
    #[error("expected forms like \"gfx90a\", \"gfx942\" or \"gfx90a:xnack+\"")]
    Form,
    #[error("a target feature is empty: features follow single colons, as in \"gfx90a:xnack+\"")]
    EmptyFeature,
    #[error("`{0}` is not a target feature: a target takes `:sramecc+`/`-` and `:xnack+`/`-`, each once, after single colons")]
    Feature(String),
}

impl RocmTarget {
    /// `gfx` and 3 or 4 lower-case hex digits, the first one or two a decimal major
    /// (`gfx906`, `gfx90a`, `gfx1151`), then `:feature+` / `:feature-`.
    pub fn parse(text: &str) -> Result<RocmTarget, RocmTargetError> {
        let mut parts = text.split(':');
        let processor = parts.next().unwrap_or_default();
        if !is_processor(processor) {
            return Err(RocmTargetError::Form);
        }
        let mut features: Vec<(&'static str, bool)> = Vec::new();
        for part in parts {
            if part.is_empty() {
                return Err(RocmTargetError::EmptyFeature);
            }
            let bad = || RocmTargetError::Feature(part.to_string());
            let (name, on) = match (part.strip_suffix('+'), part.strip_suffix('-')) {
                (Some(n), _) => (n, true),
                (_, Some(n)) => (n, false),
                _ => return Err(bad()),
            };
            let name = FEATURES.iter().find(|f| **f == name).ok_or_else(bad)?;
            if features.iter().any(|(f, _)| f == name) {
                return Err(bad());
            }
            features.push((name, on));
        }
        Ok(RocmTarget {
            processor: processor.to_string(),
            features,
        })
    }
}

fn is_processor(p: &str) -> bool {
    let Some(id) = p.strip_prefix("gfx") else {
        return false;
    };
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    let b = id.as_bytes();
    let major_digits = b.len().saturating_sub(2);
    matches!(b.len(), 3 | 4)
        && b.iter().all(|c| hex(*c))
        && b[..major_digits].iter().all(u8::is_ascii_digit)
        && b[0] != b'0'
}

/// The spelling every consumer takes (`PYTORCH_ROCM_ARCH`, `GPU_TARGETS`,
/// `--offload-arch=`): as written.
impl fmt::Display for RocmTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        for (name, on) in &self.features {
            write!(f, ":{name}{}", if *on { '+' } else { '-' })?;
        }
        Ok(())
    }
}

impl PartialEq<&str> for RocmTarget {
    fn eq(&self, other: &&str) -> bool {
        RocmTarget::parse(other).is_ok_and(|o| o == *self)
    }
}

/// `PYTORCH_ROCM_ARCH` / `GPU_TARGETS` (`;`) or `HCC_AMDGPU_TARGET` (`,`).
pub fn rocm_list(targets: &[RocmTarget], separator: &str) -> String {
    let shown: Vec<String> = targets.iter().map(RocmTarget::to_string).collect();
    shown.join(separator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processors_and_target_ids() {
        for ok in [
            "gfx906",
            "gfx90a",
            "gfx90c",
            "gfx942",
            "gfx1100",
            "gfx1151",
            "gfx90a:xnack+",
            "gfx90a:xnack-",
            "gfx942:sramecc+:xnack-",
        ] {
            let t = RocmTarget::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert_eq!(t.to_string(), ok);
        }
        let t = RocmTarget::parse("gfx942:sramecc+:xnack-").unwrap();
        assert_eq!(t.processor, "gfx942");
        assert_eq!(t.features, [("sramecc", true), ("xnack", false)]);
    }

    #[test]
    fn what_is_not_a_target_and_why() {
        for form in [
            "",
            "gfx",
            "gfx9",
            "gfx12345",
            "GFX90A",
            "gfx90A",
            "gfx000",
            "gfx0900",
            "gfxa0a",
            "gfx9a0a",
            "sm_86",
            "8.6",
            "gfx90a;gfx942",
            "gfx90a,gfx942",
            "gfx90a gfx942",
            " gfx90a",
        ] {
            assert_eq!(
                RocmTarget::parse(form),
                Err(RocmTargetError::Form),
                "{form:?}"
            );
        }
        for empty in ["gfx90a:", "gfx90a::xnack+", "gfx90a:xnack+:"] {
            assert_eq!(RocmTarget::parse(empty), Err(RocmTargetError::EmptyFeature));
        }
        for (text, feature) in [
            ("gfx90a:xnack", "xnack"),
            ("gfx90a:xnack+:xnack-", "xnack-"),
            ("gfx90a:tgsplit+", "tgsplit+"),
            ("gfx90a:xnack+,gfx942", "xnack+,gfx942"),
            ("gfx90a:XNACK+", "XNACK+"),
        ] {
            assert_eq!(
                RocmTarget::parse(text),
                Err(RocmTargetError::Feature(feature.into())),
                "{text:?}"
            );
        }
    }
}

/// Where a ROCm tree keeps its device libraries, under its root: AMD's packages
/// (`/opt/rocm-6.2/amdgcn/bitcode`), Debian's (`/usr/lib/x86_64-linux-gnu/amdgcn/bitcode`).
/// hipcc links one `oclc_isa_version_<n>.bc` per target: a target without one cannot be
/// compiled for ("cannot find ROCm device library for gfx1100").
const DEVICE_LIB_DIRS: &[&str] = &[
    "amdgcn/bitcode",
    "lib/x86_64-linux-gnu/amdgcn/bitcode",
    "lib/aarch64-linux-gnu/amdgcn/bitcode",
];

/// The processors a ROCm tree has device libraries for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceLibs {
    pub dir: PathBuf,
    /// `gfx90a`, from `oclc_isa_version_90a.bc`.
    pub processors: BTreeSet<String>,
}

impl DeviceLibs {
    /// The targets of `pins` it has no device library for.
    pub fn missing<'a>(&self, pins: &'a [RocmTarget]) -> Vec<&'a RocmTarget> {
        pins.iter()
            .filter(|t| !self.processors.contains(&t.processor))
            .collect()
    }
}

/// The device libraries of the ROCm tree at `root`, or None when it has no directory of
/// them where gpuenv looks (nothing is then said about its targets). Names only: nothing
/// in the directory is opened.
pub fn device_libs(root: &Path) -> Option<DeviceLibs> {
    DEVICE_LIB_DIRS.iter().find_map(|rel| {
        let dir = root.join(rel);
        let processors: BTreeSet<String> = fs_err::read_dir(&dir)
            .ok()?
            .flatten()
            .filter_map(|e| isa_processor(&e.file_name().to_string_lossy()))
            .collect();
        (!processors.is_empty()).then_some(DeviceLibs { dir, processors })
    })
}

/// The GPU ISAs whose `rocm-sdk-device-<gfx>` wheel (AMD's ROCm wheels: the kernels of
/// rocBLAS, hipBLASLt, MIOpen… for one ISA) a ROCm tree carries, by the
/// `.devel_links/<gfx>.json` manifest each ships: in a tree gpuenv installed, or beside a
/// venv's tree in `_rocm_sdk_libraries*/`. None when the tree has no such manifest place
/// (not made of AMD's wheels with their libraries): nothing is then said about its kernels.
pub fn device_wheels(root: &Path) -> Option<BTreeSet<String>> {
    let mut dirs = vec![root.join(".devel_links")];
    if let Some(site) = root.parent() {
        if let Ok(rd) = fs_err::read_dir(site) {
            dirs.extend(rd.flatten().filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("_rocm_sdk_libraries")
                    .then(|| e.path().join(".devel_links"))
            }));
        }
    }
    let dirs: Vec<PathBuf> = dirs.into_iter().filter(|d| d.is_dir()).collect();
    if dirs.is_empty() {
        return None;
    }
    Some(
        dirs.iter()
            .filter_map(|d| fs_err::read_dir(d).ok())
            .flat_map(|rd| rd.flatten())
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                let isa = n.strip_suffix(".json")?;
                is_processor(isa).then(|| isa.to_string())
            })
            .collect(),
    )
}

/// `oclc_isa_version_90a.bc` -> `gfx90a`.
fn isa_processor(file: &str) -> Option<String> {
    let n = file
        .strip_prefix("oclc_isa_version_")?
        .strip_suffix(".bc")?;
    let p = format!("gfx{n}");
    is_processor(&p).then_some(p)
}

#[cfg(test)]
mod device_lib_tests {
    use super::*;

    #[test]
    fn device_wheels_are_named_by_their_manifests() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("_rocm_sdk_devel");
        fs_err::create_dir_all(&root).unwrap();
        assert_eq!(device_wheels(&root), None);
        let libs = t.path().join("_rocm_sdk_libraries/.devel_links");
        fs_err::create_dir_all(&libs).unwrap();
        for f in ["gfx942.json", "gfx90a.json", "notes.txt", "gfxzz.json"] {
            fs_err::write(libs.join(f), "{}").unwrap();
        }
        let isas: Vec<String> = device_wheels(&root).unwrap().into_iter().collect();
        assert_eq!(isas, ["gfx90a", "gfx942"]);
    }

    #[test]
    fn a_trees_device_libraries_name_its_targets() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("lib/x86_64-linux-gnu/amdgcn/bitcode");
        fs_err::create_dir_all(&dir).unwrap();
        for f in [
            "oclc_isa_version_90a.bc",
            "oclc_isa_version_1030.bc",
            "ocml.bc",
            "oclc_isa_version_zz.bc",
        ] {
            fs_err::write(dir.join(f), "").unwrap();
        }
        let libs = device_libs(root.path()).unwrap();
        assert_eq!(
            libs.processors.iter().collect::<Vec<_>>(),
            ["gfx1030", "gfx90a"]
        );
        let pins = [
            RocmTarget::parse("gfx90a:xnack+").unwrap(),
            RocmTarget::parse("gfx1100").unwrap(),
        ];
        assert_eq!(libs.missing(&pins), [&pins[1]]);
        assert!(device_libs(&root.path().join("none")).is_none());
    }
}
