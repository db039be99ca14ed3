//! The arch options on an nvcc or hipcc command line, and what they ask for.

use std::ffi::OsString;

use super::cuda::CudaArch;
use super::rocm::RocmTarget;

/// One arch an nvcc command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvccArch {
    Target(CudaArch),
    /// `-arch=native`: the GPUs of the machine that compiles.
    Native,
    /// `-arch=all`: every arch this nvcc knows.
    All,
    /// `-arch=all-major`: every major arch (`sm_80`, `sm_90`, …).
    AllMajor,
    /// A value that is none of these; nvcc will say what it thinks of it.
    Unknown(String),
}

/// One arch a hipcc command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HipArch {
    Target(RocmTarget),
    Native,
    Unknown(String),
}

const NVCC_ARCH_OPTIONS: &[&str] = &[
    "-arch",
    "--gpu-architecture",
    "-gencode",
    "--generate-code",
    "-code",
    "--gpu-code",
];

const HIPCC_ARCH_OPTIONS: &[&str] = &["--offload-arch", "--amdgpu-target", "--cuda-gpu-arch"];

/// The arch options on a command line with their values: `opt value`, `opt=value`, and
/// (single-dash options) `optvalue` glued. `None` when no argument is one of them; a
/// dangling option has no value.
pub fn option_values(
    args: &[OsString],
    options: &[&'static str],
) -> Option<Vec<(&'static str, String)>> {
    let mut found = false;
    let mut values = Vec::new();
    let mut args = args.iter().map(|a| a.to_str());
    while let Some(arg) = args.next() {
        let Some(a) = arg else { continue };
        for opt in options {
            if a == *opt {
                found = true;
                if let Some(Some(v)) = args.next() {
                    values.push((*opt, v.to_string()));
                }
                break;
            }
            let Some(rest) = a.strip_prefix(opt) else {
                continue;
            };
            if rest.starts_with('=') || (!opt.starts_with("--") && !rest.is_empty()) {
                found = true;
                values.push((*opt, rest.strip_prefix('=').unwrap_or(rest).to_string()));
                break;
            }
        }
    }
    found.then_some(values)
}

/// The archs an nvcc command line asks for (`-arch`, `-gencode`, `-code` and their long
/// forms); `None` when it has no arch option, so nvcc would use its default.
pub fn nvcc_archs(args: &[OsString]) -> Option<Vec<NvccArch>> {
    let values = option_values(args, NVCC_ARCH_OPTIONS)?;
    let mut out = Vec::new();
    for (opt, value) in values {
        let value = value.trim_matches('"');
        let words: Vec<&str> = if matches!(opt, "-gencode" | "--generate-code") {
            // `arch=compute_90,code=[sm_90,compute_90]`: the codes are what is built.
            match value.split_once("code=") {
                Some((_, codes)) => codes.trim_matches(['[', ']', '"']).split(',').collect(),
                None => vec![value.strip_prefix("arch=").unwrap_or(value)],
            }
        } else {
            value.split(',').collect()
        };
        // `-arch=sm_90` alone embeds PTX as well as machine code.
        let both = matches!(opt, "-arch" | "--gpu-architecture");
        for word in words.into_iter().map(str::trim).filter(|w| !w.is_empty()) {
            out.push(match word {
                "native" => NvccArch::Native,
                "all" => NvccArch::All,
                "all-major" => NvccArch::AllMajor,
                w => match CudaArch::parse_any(w) {
                    Ok(a) if both && w.starts_with("sm_") => NvccArch::Target(CudaArch {
                        code: super::Code::SassAndPtx,
                        ..a
                    }),
                    Ok(a) => NvccArch::Target(a),
                    Err(_) => NvccArch::Unknown(w.to_string()),
                },
            });
        }
    }
    Some(out)
}

/// The targets a hipcc command line asks for (`--offload-arch` and the older spellings);
/// `None` when it has none.
pub fn hipcc_archs(args: &[OsString]) -> Option<Vec<HipArch>> {
    let values = option_values(args, HIPCC_ARCH_OPTIONS)?;
    Some(
        values
            .iter()
            .flat_map(|(_, v)| v.split(','))
            .map(|w| match w {
                "native" => HipArch::Native,
                w => RocmTarget::parse(w)
                    .map(HipArch::Target)
                    .unwrap_or_else(|_| HipArch::Unknown(w.to_string())),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::arch::{Code, Suffix};

    fn args(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    fn target(major: u8, minor: u8, suffix: Suffix, code: Code) -> NvccArch {
        NvccArch::Target(CudaArch {
            major,
            minor,
            suffix,
            code,
        })
    }

    #[test]
    fn every_way_nvcc_is_told_an_arch() {
        use Code::*;
        use Suffix::None as N;
        for (line, want) in [
            ("-arch=sm_90 -c k.cu", vec![target(9, 0, N, SassAndPtx)]),
            ("-arch sm_90a -c k.cu", vec![target(9, 0, Suffix::A, SassAndPtx)]),
            ("-archsm_86", vec![target(8, 6, N, SassAndPtx)]),
            ("--gpu-architecture=compute_90", vec![target(9, 0, N, Ptx)]),
            ("--gpu-architecture compute_100f", vec![target(10, 0, Suffix::F, Ptx)]),
            (
                "-gencode arch=compute_90,code=sm_90",
                vec![target(9, 0, N, Sass)],
            ),
            (
                "-gencode=arch=compute_90,code=[sm_90,compute_90]",
                vec![target(9, 0, N, Sass), target(9, 0, N, Ptx)],
            ),
            (
                "--generate-code arch=compute_80,code=sm_80 -gencode=arch=compute_120a,code=sm_120a",
                vec![target(8, 0, N, Sass), target(12, 0, Suffix::A, Sass)],
            ),
            (
                "-arch=compute_80 -code=sm_80,compute_80",
                vec![target(8, 0, N, Ptx), target(8, 0, N, Sass), target(8, 0, N, Ptx)],
            ),
            ("-arch=native", vec![NvccArch::Native]),
            ("-arch=all", vec![NvccArch::All]),
            ("-arch all-major", vec![NvccArch::AllMajor]),
            ("-arch=sm_86x", vec![NvccArch::Unknown("sm_86x".into())]),
        ] {
            assert_eq!(nvcc_archs(&args(line)), Some(want), "{line}");
        }
        assert_eq!(nvcc_archs(&args("-c k.cu -o k.o --archive")), None);
        assert_eq!(nvcc_archs(&args("-c k.cu")), None);
        // A dangling option still is one: nvcc will refuse it, gpuenv adds nothing to it.
        assert_eq!(nvcc_archs(&args("-c k.cu -arch")), Some(vec![]));
    }

    #[test]
    fn every_way_hipcc_is_told_a_target() {
        let t = |s| HipArch::Target(RocmTarget::parse(s).unwrap());
        assert_eq!(
            hipcc_archs(&args(
                "--offload-arch=gfx90a:xnack+ --offload-arch=gfx942 -c k.hip"
            )),
            Some(vec![t("gfx90a:xnack+"), t("gfx942")])
        );
        assert_eq!(
            hipcc_archs(&args("--amdgpu-target=gfx906,gfx908")),
            Some(vec![t("gfx906"), t("gfx908")])
        );
        assert_eq!(
            hipcc_archs(&args("--offload-arch=native")),
            Some(vec![HipArch::Native])
        );
        assert_eq!(hipcc_archs(&args("-c k.hip")), None);
    }
}
