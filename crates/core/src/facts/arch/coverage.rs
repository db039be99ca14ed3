//! Which pinned archs a compile's own arch flags leave out, and whether a command line is a
//! compile that generates device code at all (where adding a target is right). A build that
//! passes its own `-gencode` (a setup.py, CMake's `CUDA_ARCHITECTURES`) makes PyTorch and
//! CMake ignore the exported lists, so only the compile's own command line shows what it
//! builds.

use std::ffi::OsString;

use super::cuda::{Code, CudaArch, Suffix};
use super::flags::{hipcc_archs, option_values, HipArch};
use super::rocm::RocmTarget;

/// What one compile embeds for one target: machine code, PTX, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Embeds {
    sass: bool,
    ptx: bool,
}

/// A target as a GPU needs it (compute capability and suffix), whatever code is embedded.
type Target = (u8, u8, super::Suffix);

/// The targets an nvcc command line builds, with what it embeds for each; `None` when it
/// has no arch option (nvcc's default, which the exported variables do not reach either),
/// or names one whose targets cannot be listed (`native`, `all`, `all-major`).
fn nvcc_builds(args: &[OsString]) -> Option<Vec<(Target, Embeds)>> {
    let gencode = option_values(args, &["-gencode", "--generate-code"]);
    let code = option_values(args, &["-code", "--gpu-code"]);
    let arch = option_values(args, &["-arch", "--gpu-architecture"]);
    if gencode.is_none() && code.is_none() && arch.is_none() {
        return None;
    }
    let mut words: Vec<(String, bool)> = Vec::new();
    for (_, value) in gencode.iter().flatten() {
        // `arch=compute_90,code=[sm_90,compute_90]`, `code="sm_90,compute_90"`: the codes
        // are what is built; a value with no `code=` builds its `arch=`.
        let value = value.trim_matches(['"', '\'']);
        let codes = match value.split_once("code=") {
            Some((_, codes)) => codes,
            None => value.strip_prefix("arch=").unwrap_or(value),
        };
        let codes = codes.trim_matches(['[', ']', '"', '\'']);
        words.extend(codes.split(',').map(|w| (w.to_string(), false)));
    }
    // With `-code`, `-arch` only names the virtual arch the codes are made from.
    let codes_given = code.as_ref().is_some_and(|c| !c.is_empty());
    for (_, value) in code.iter().flatten() {
        words.extend(value.split(',').map(|w| (w.to_string(), false)));
    }
    if !codes_given {
        for (_, value) in arch.iter().flatten() {
            // `-arch=sm_90` alone embeds sm_90 and compute_90.
            words.extend(value.split(',').map(|w| (w.to_string(), true)));
        }
    }
    let mut built: Vec<(Target, Embeds)> = Vec::new();
    for (word, both) in words {
        let word = word.trim().trim_matches(['"', '\'', '[', ']']);
        if matches!(word, "native" | "all" | "all-major") {
            return None;
        }
        let Ok(a) = CudaArch::parse_any(word) else {
            continue;
        };
        let embeds = match a.code {
            Code::Ptx => Embeds {
                sass: false,
                ptx: true,
            },
            Code::Sass if both && word.starts_with("sm_") => Embeds {
                sass: true,
                ptx: true,
            },
            Code::Sass => Embeds {
                sass: true,
                ptx: false,
            },
            Code::SassAndPtx => Embeds {
                sass: true,
                ptx: true,
            },
        };
        match built.iter_mut().find(|(t, _)| *t == a.target()) {
            Some((_, e)) => {
                e.sass |= embeds.sass;
                e.ptx |= embeds.ptx;
            }
            None => built.push((a.target(), embeds)),
        }
    }
    Some(built)
}

/// The parts of the `pins` an nvcc command line's own arch flags do not build, each as an
/// arch whose `code` is what is missing (`Sass`, `Ptx` or both), with the pin's index;
/// `None` when the command line has no arch flags or names targets that cannot be listed.
pub fn nvcc_missing(args: &[OsString], pins: &[CudaArch]) -> Option<Vec<(usize, CudaArch)>> {
    let built = nvcc_builds(args)?;
    let mut missing = Vec::new();
    for (i, pin) in pins.iter().enumerate() {
        // SASS by the family rule the audit applies (`sm_100` runs on 10.3); a suffixed pin
        // (`9.0a`, `10.0f`) asks for that target's own code, as PTX always does.
        let has = Embeds {
            sass: built.iter().any(|(t @ (major, minor, suffix), e)| {
                e.sass
                    && if pin.suffix == Suffix::None {
                        pin.runs_sass_of(u32::from(*major), u32::from(*minor), *suffix)
                    } else {
                        *t == pin.target()
                    }
            }),
            ptx: built.iter().any(|(t, e)| e.ptx && *t == pin.target()),
        };
        let want_sass = matches!(pin.code, Code::Sass | Code::SassAndPtx);
        let want_ptx = pin.has_ptx();
        let code = match (want_sass && !has.sass, want_ptx && !has.ptx) {
            (true, true) => Code::SassAndPtx,
            (true, false) => Code::Sass,
            (false, true) => Code::Ptx,
            (false, false) => continue,
        };
        missing.push((i, CudaArch { code, ..*pin }));
    }
    Some(missing)
}

/// The `pins` a hipcc command line's own `--offload-arch` flags do not build, with each
/// pin's index; `None` when it has none, or asks for `native` or a target not understood.
pub fn hipcc_missing(args: &[OsString], pins: &[RocmTarget]) -> Option<Vec<(usize, RocmTarget)>> {
    let built = hipcc_archs(args)?;
    let mut targets = Vec::new();
    for b in built {
        match b {
            HipArch::Target(t) => targets.push(t),
            HipArch::Native | HipArch::Unknown(_) => return None,
        }
    }
    Some(
        pins.iter()
            .enumerate()
            .filter(|(_, p)| !targets.contains(p))
            .map(|(i, p)| (i, p.clone()))
            .collect(),
    )
}

/// How an arch missing from a compile is named in messages: `sm_90`, `compute_90`, or both.
pub fn missing_name(arch: &CudaArch) -> String {
    let n = format!("{}{}", arch.sm(), arch.suffix.letter());
    match arch.code {
        Code::Sass => format!("sm_{n}"),
        Code::Ptx => format!("compute_{n}"),
        Code::SassAndPtx => format!("sm_{n}, compute_{n}"),
    }
}

/// nvcc's steps that make no device code from CUDA sources, make one target only (`-ptx`,
/// `-cubin`), or link device code already made: a target added there is wrong or refused.
const NVCC_NOT_DEVICE_COMPILE: &[&str] = &[
    "-E",
    "--preprocess",
    "-M",
    "--generate-dependencies",
    "-MM",
    "--generate-nonsystem-dependencies",
    "-ptx",
    "--ptx",
    "-cubin",
    "--cubin",
    "-optix-ir",
    "--optix-ir",
    "-dlink",
    "--device-link",
    "-cuda",
    "--cuda",
];

const HIPCC_NOT_DEVICE_COMPILE: &[&str] = &[
    "-E",
    "-M",
    "-MM",
    "-S",
    "-fsyntax-only",
    "--cuda-host-only",
    "--offload-host-only",
];

/// Whether an nvcc (`cuda`) or hipcc command line compiles GPU sources into device code:
/// a `.cu` (`.hip`) source or `-x cu` (`-x hip`), in a compile (`-c`, `-dc`, `-fatbin`), a
/// compile-and-link or `-lib`. Preprocessing, dependency scans, single-target `-ptx` and
/// `-cubin`, the device link (`-dlink`) and plain links are not: there a warning is noise and
/// an added target wrong.
pub fn compiles_device_code(cuda: bool, args: &[OsString]) -> bool {
    let words: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    let not_compile = if cuda {
        NVCC_NOT_DEVICE_COMPILE
    } else {
        HIPCC_NOT_DEVICE_COMPILE
    };
    if words.iter().any(|w| not_compile.contains(w)) {
        return false;
    }
    let (extensions, language): (&[&str], &str) = if cuda {
        (&[".cu"], "cu")
    } else {
        (&[".hip", ".cu"], "hip")
    };
    let language_given =
        option_values(args, &["-x", "--x"]).is_some_and(|v| v.iter().any(|(_, l)| l == language));
    let source = words
        .iter()
        .any(|w| !w.starts_with('-') && extensions.iter().any(|e| w.ends_with(e)));
    source || language_given
}

/// nvcc's steps that compile or stop before linking: not a device link.
const NVCC_NOT_LINK: &[&str] = &[
    "-c",
    "--compile",
    "-dc",
    "--device-c",
    "-dw",
    "--device-w",
    "-lib",
    "--lib",
    "-fatbin",
    "--fatbin",
];

/// Whether an nvcc command line device-links (`-dlink`, or a link of objects only, where
/// nvcc device-links `-rdc` objects itself): a separable build's loadable image is made
/// there, from the targets this command line names, so a target the compiles got must be
/// named here too. Adding one the objects lack is only nvlink's warning.
pub fn device_links(args: &[OsString]) -> bool {
    let words: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    let has = |set: &[&str]| words.iter().any(|w| set.contains(w));
    if words
        .iter()
        .any(|w| *w == "-dlink" || *w == "--device-link")
    {
        return !NVCC_NOT_DEVICE_COMPILE
            .iter()
            .filter(|w| !matches!(**w, "-dlink" | "--device-link"))
            .any(|w| words.contains(w));
    }
    if has(NVCC_NOT_DEVICE_COMPILE) || has(NVCC_NOT_LINK) || compiles_device_code(true, args) {
        return false;
    }
    words
        .iter()
        .any(|w| !w.starts_with('-') && (w.ends_with(".o") || w.ends_with(".a")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    fn pins(v: &[&str]) -> Vec<CudaArch> {
        v.iter().map(|s| CudaArch::parse(s).unwrap()).collect()
    }

    /// The missing parts, named as the proxy's message names them.
    fn missing(line: &str, pinned: &[&str]) -> Option<Vec<String>> {
        nvcc_missing(&args(line), &pins(pinned))
            .map(|m| m.iter().map(|(_, a)| missing_name(a)).collect())
    }

    #[test]
    fn a_compiles_own_gencode_flags_that_miss_a_pin_in_every_spelling() {
        let pinned = ["8.0", "9.0"];
        for line in [
            // What a setup.py passed: torch then drops TORCH_CUDA_ARCH_LIST.
            "-gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 -gencode=arch=compute_89,code=sm_89 -c k.cu",
            "--generate-code arch=compute_80,code=sm_80 -c k.cu",
            // CMake's spelling for CUDA_ARCHITECTURES 80.
            "--generate-code=arch=compute_80,code=[compute_80,sm_80] -c k.cu",
            "-gencode arch=compute_80,code=\"sm_80,compute_80\" -c k.cu",
            "-arch=sm_80 -c k.cu",
            "-arch sm_80 -c k.cu",
            "--gpu-architecture=sm_80 -c k.cu",
            "-arch=compute_80 -code=sm_80,compute_80 -c k.cu",
            "--gpu-architecture compute_90 --gpu-code sm_80 -c k.cu",
        ] {
            assert_eq!(missing(line, &pinned), Some(vec!["sm_90".to_string()]), "{line}");
        }
    }

    #[test]
    fn ptx_is_its_own_part_of_a_pin() {
        // `9.0+PTX`: machine code and PTX; a compile with only one misses the other.
        assert_eq!(
            missing("-gencode arch=compute_90,code=sm_90 -c k.cu", &["9.0+PTX"]),
            Some(vec!["compute_90".into()])
        );
        assert_eq!(
            missing(
                "-gencode arch=compute_90,code=compute_90 -c k.cu",
                &["9.0+PTX"]
            ),
            Some(vec!["sm_90".into()])
        );
        assert_eq!(
            missing("-gencode arch=compute_80,code=sm_80 -c k.cu", &["9.0+PTX"]),
            Some(vec!["sm_90, compute_90".into()])
        );
        // `-arch=sm_90` alone embeds both; with `-code` only the codes are built.
        assert_eq!(missing("-arch=sm_90 -c k.cu", &["9.0+PTX"]), Some(vec![]));
        assert_eq!(
            missing("-arch=sm_90 -code=sm_90 -c k.cu", &["9.0+PTX"]),
            Some(vec!["compute_90".into()])
        );
        // Suffixes are other targets.
        assert_eq!(
            missing("-gencode arch=compute_90,code=sm_90 -c k.cu", &["9.0a"]),
            Some(vec!["sm_90a".into()])
        );
    }

    #[test]
    fn nothing_to_say_when_the_flags_cover_the_pins_or_cannot_be_listed() {
        let pinned = ["8.0", "9.0"];
        assert_eq!(
            missing(
                "-gencode arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=[sm_90,compute_90] -c k.cu",
                &pinned
            ),
            Some(vec![])
        );
        // No arch flag: the exported variables and the proxy's own additions reach it.
        assert_eq!(missing("-c k.cu -o k.o", &pinned), None);
        for which in ["native", "all", "all-major"] {
            assert_eq!(missing(&format!("-arch={which} -c k.cu"), &pinned), None);
        }
    }

    #[test]
    fn hipcc_offload_archs_that_miss_a_pin() {
        let pinned: Vec<RocmTarget> = ["gfx90a", "gfx942"]
            .iter()
            .map(|s| RocmTarget::parse(s).unwrap())
            .collect();
        let missing = |line: &str| {
            hipcc_missing(&args(line), &pinned)
                .map(|m| m.iter().map(|(_, t)| t.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            missing("--offload-arch=gfx90a -c k.hip"),
            Some(vec!["gfx942".to_string()])
        );
        assert_eq!(
            missing("--offload-arch=gfx942 --offload-arch=gfx90a -c k.hip"),
            Some(vec![])
        );
        assert_eq!(missing("-c k.hip"), None);
        assert_eq!(missing("--offload-arch=native -c k.hip"), None);
    }

    #[test]
    fn only_compiles_of_gpu_sources_make_device_code() {
        for yes in [
            "-c k.cu -o k.o",
            "-dc k.cu",
            "-fatbin k.cu",
            "k.cu -o k -lcudart",
            "-lib k.cu -o libk.a",
            "-x cu -c k.cpp",
            "-MD -MF k.o.d -c /src/k.cu -o k.o",
        ] {
            assert!(compiles_device_code(true, &args(yes)), "{yes}");
        }
        for no in [
            "-E k.cu",
            "-M k.cu",
            "-ptx k.cu",
            "-cubin -arch=sm_90 k.cu",
            "-dlink a.o b.o -o dlink.o",
            "a.o b.o -o prog",
            "-c k.cpp -o k.o",
            "-c k.cuh",
        ] {
            assert!(!compiles_device_code(true, &args(no)), "{no}");
        }
        assert!(compiles_device_code(false, &args("-c k.hip")));
        assert!(compiles_device_code(false, &args("-x hip -c k.cpp")));
        assert!(!compiles_device_code(false, &args("-E k.hip")));
        assert!(!compiles_device_code(false, &args("k.o -o k")));
    }

    #[test]
    fn sass_of_an_earlier_minor_of_the_same_major_covers_a_pin_as_audit_says() {
        assert_eq!(
            missing("-gencode arch=compute_100,code=sm_100 -c k.cu", &["10.3"]),
            Some(vec![])
        );
        assert_eq!(
            missing("-gencode arch=compute_100f,code=sm_100f -c k.cu", &["10.3"]),
            Some(vec![])
        );
        assert_eq!(
            missing("-gencode arch=compute_100a,code=sm_100a -c k.cu", &["10.3"]),
            Some(vec!["sm_103".to_string()])
        );
        assert_eq!(
            missing("-gencode arch=compute_103,code=sm_103 -c k.cu", &["10.0"]),
            Some(vec!["sm_100".to_string()])
        );
        // `+PTX` wants PTX of its own arch.
        assert_eq!(
            missing(
                "-gencode arch=compute_100,code=sm_100 -c k.cu",
                &["10.3+PTX"]
            ),
            Some(vec!["compute_103".to_string()])
        );
    }

    #[test]
    fn device_links_are_dlink_steps_and_links_of_objects() {
        for yes in [
            "-dlink a.o b.o -o dlink.o",
            "--device-link -Xcompiler=-fPIC a.o -o cmake_device_link.o",
            "-shared r.o -o r.so",
            "a.o libk.a -o prog",
        ] {
            assert!(device_links(&args(yes)), "{yes}");
        }
        for no in [
            "-c k.cu -o k.o",
            "-dc k.cu",
            "k.cu -o k",
            "-lib a.o -o libk.a",
            "-E -dlink a.o",
            "--version",
            "-c k.cpp -o k.o",
        ] {
            assert!(!device_links(&args(no)), "{no}");
        }
    }
}
