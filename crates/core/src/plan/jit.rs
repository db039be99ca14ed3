//! JIT compilers at run time. Triton compiles its kernels with the `ptxas` its wheel bundles
//! (`triton/backends/nvidia/bin/ptxas`, and from Triton 3.9 `ptxas-blackwell` for sm_90 and
//! newer); on a GPU newer than that ptxas knows, it fails until `TRITON_PTXAS_PATH` names a
//! newer one. Where a pinned arch is one the bundled ptxas cannot build and the active
//! toolkit's can, gpuenv points Triton at the toolkit's (unless the user set the variable).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ask;
use crate::facts::arch::CudaArch;
use crate::facts::{lookup, tree, vars, Facts};
use crate::fsutil;
use crate::store::toolchain::detect::parse_nvcc_version;
use crate::store::toolchain::Version;

/// Triton's bundled tools and the variable that overrides each, and whether it serves an
/// arch (Triton 3.9: `ptxas` below sm_90, `ptxas-blackwell` from it; without the second,
/// `ptxas` serves all).
pub const TRITON_PTXAS: [(&str, &str); 2] = [
    ("ptxas", vars::TRITON_PTXAS_PATH),
    ("ptxas-blackwell", vars::TRITON_PTXAS_BLACKWELL_PATH),
];

/// Triton's `backends/nvidia/bin` in one of these site-packages, if Triton is installed.
pub fn triton_bin(sites: &[PathBuf]) -> Option<PathBuf> {
    sites
        .iter()
        .map(|s| s.join("triton/backends/nvidia/bin"))
        .find(|b| b.join("ptxas").is_file())
}

/// The CUDA release a `ptxas` is from (`ptxas --version`, within the probe deadline),
/// remembered under `cache_dir` keyed on the file (device, inode, size, change time).
pub fn ptxas_release(ptxas: &Path, cache_dir: &Path) -> Option<Version> {
    let cache = tree::cache_file(cache_dir, ptxas);
    if let Some(text) = cache
        .as_ref()
        .and_then(|c| crate::outside::read(c, crate::outside::Kind::CacheEntry).ok())
    {
        if let Ok(v) = String::from_utf8_lossy(&text).trim().parse() {
            return Some(v);
        }
    }
    let answer = ask::output(Command::new(ptxas).arg("--version")).ok()?;
    if !answer.status.success() {
        return None;
    }
    let version = parse_nvcc_version(&answer.text())?;
    if let Some(c) = cache {
        // Not remembered only costs the next prompt another ptxas call.
        let _ = fs_err::create_dir_all(cache_dir)
            .and_then(|()| fsutil::write_atomic(&c, version.to_string().as_bytes()));
    }
    Some(version)
}

/// Whether a ptxas of `release` builds machine code for `arch`, by the release data.
fn builds(facts: &Facts, release: &Version, arch: &CudaArch) -> Option<bool> {
    lookup::archs(facts, release.release())
        .known()
        .filter(|row| row.exact)
        .map(|row| {
            row.value
                .contains(&(u32::from(arch.major) * 10 + u32::from(arch.minor)))
        })
}

/// Each Triton override to set: (variable, the toolkit's ptxas) where a pinned arch that
/// tool serves is one Triton's bundled copy cannot build and `toolkit` (its release) can.
pub fn triton_ptxas(
    facts: &Facts,
    bin: &Path,
    pins: &[CudaArch],
    toolkit: &Version,
    toolkit_ptxas: &Path,
    cache_dir: &Path,
) -> Vec<(&'static str, PathBuf)> {
    let blackwell = bin.join("ptxas-blackwell").is_file();
    let mut out = Vec::new();
    for (tool, var) in TRITON_PTXAS {
        let path = bin.join(tool);
        if !path.is_file() {
            continue;
        }
        let serves = |a: &&CudaArch| match (tool, blackwell) {
            ("ptxas", true) => a.major < 9,
            ("ptxas", false) => true,
            _ => a.major >= 9,
        };
        let mine: Vec<&CudaArch> = pins.iter().filter(serves).collect();
        if mine.is_empty() {
            continue;
        }
        let Some(bundled) = ptxas_release(&path, cache_dir) else {
            continue;
        };
        let needed = mine.iter().any(|a| {
            builds(facts, &bundled, a) == Some(false) && builds(facts, toolkit, a) == Some(true)
        });
        if needed {
            out.push((var, toolkit_ptxas.to_path_buf()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn fake_ptxas(path: &Path, release: &str) {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(
            path,
            format!("#!/bin/sh\necho 'ptxas: NVIDIA (R) Ptx optimizing assembler'\necho 'Cuda compilation tools, release {release}, V{release}.1'\n"),
        )
        .unwrap();
        fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn the_toolkits_ptxas_only_where_the_bundled_one_cannot_build_a_pinned_arch() {
        let t = tempfile::tempdir().unwrap();
        let bin = t.path().join("triton/backends/nvidia/bin");
        fake_ptxas(&bin.join("ptxas"), "12.8");
        let cache = t.path().join("cache");
        let mine = t.path().join("view/bin/ptxas");
        let v13: Version = "13.0.2".parse().unwrap();
        let arch = |s: &str| CudaArch::parse(s).unwrap();
        // 12.8's ptxas builds sm_90 and sm_120, not sm_110 (Thor), which 13.0's does.
        assert!(
            triton_ptxas(Facts::embedded(), &bin, &[arch("9.0")], &v13, &mine, &cache).is_empty()
        );
        assert_eq!(
            triton_ptxas(
                Facts::embedded(),
                &bin,
                &[arch("9.0"), arch("11.0")],
                &v13,
                &mine,
                &cache
            ),
            [(vars::TRITON_PTXAS_PATH, mine.clone())]
        );
        // Remembered: the file is not run again while it is the same file.
        assert_eq!(
            ptxas_release(&bin.join("ptxas"), &cache),
            Some("12.8.1".parse().unwrap())
        );
        // Triton 3.9: the second tool serves sm_90 and newer.
        fake_ptxas(&bin.join("ptxas-blackwell"), "12.8");
        assert_eq!(
            triton_ptxas(
                Facts::embedded(),
                &bin,
                &[arch("11.0")],
                &v13,
                &mine,
                &cache
            ),
            [(vars::TRITON_PTXAS_BLACKWELL_PATH, mine.clone())]
        );
    }
}
