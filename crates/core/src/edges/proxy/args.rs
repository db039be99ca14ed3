//! What the proxy adds to a compiler's command line, as a pure function of the arguments:
//! the host compiler (`-ccbin`) and the project's arch pins (`-gencode` for nvcc,
//! `--offload-arch=` for hipcc), each only when the command line has none of its own.

use std::ffi::OsString;
use std::path::Path;

use crate::facts::arch::{hipcc_archs, nvcc_archs, CudaArch, RocmTarget};
use crate::store::toolchain::Kind;

/// What the project and the machine ask for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Additions<'a> {
    /// The host compiler nvcc gets, unless the command line or NVCC_* variables name one.
    pub ccbin: Option<&'a Path>,
    /// `cuda-arch` pins (`8.6`, `9.0+PTX`, `9.0a`).
    pub cuda_arch: &'a [CudaArch],
    /// `rocm-arch` pins (`gfx90a`).
    pub rocm_arch: &'a [RocmTarget],
}

/// Arguments that only ask the driver something; nothing is added to them.
const QUERIES: &[&str] = &[
    "--version",
    "-V",
    "--help",
    "-h",
    "--list-gpu-arch",
    "-arch-ls",
    "--list-gpu-code",
    "-code-ls",
];

const CCBIN_OPTIONS: &[&str] = &["-ccbin", "--compiler-bindir"];

/// True when some argument is `opt`, `opt=…` or (for single-dash options) `opt…` glued.
fn has_option(args: &[OsString], options: &[&str]) -> bool {
    args.iter().filter_map(|a| a.to_str()).any(|a| {
        options.iter().any(|opt| {
            a == *opt
                || a.strip_prefix(opt)
                    .is_some_and(|rest| rest.starts_with('='))
                || (!opt.starts_with("--") && a.starts_with(opt) && a.len() > opt.len())
        })
    })
}

/// True when the call only asks the driver something (or has no arguments at all).
pub fn is_query(args: &[OsString]) -> bool {
    args.is_empty()
        || args
            .iter()
            .any(|a| a.to_str().is_some_and(|a| QUERIES.contains(&a)))
}

/// The command line with the additions in front of the user's own arguments.
pub fn add(kind: Kind, args: &[OsString], add: &Additions) -> Vec<OsString> {
    if is_query(args) {
        return args.to_vec();
    }
    let mut front: Vec<OsString> = Vec::new();
    match kind {
        Kind::Cuda => {
            if let Some(cc) = add.ccbin.filter(|_| !has_option(args, CCBIN_OPTIONS)) {
                front.push("-ccbin".into());
                front.push(cc.into());
            }
            if nvcc_archs(args).is_none() {
                for code in add.cuda_arch.iter().flat_map(CudaArch::gencode) {
                    front.push("-gencode".into());
                    front.push(code.into());
                }
            }
        }
        Kind::Rocm => {
            if hipcc_archs(args).is_none() {
                for arch in add.rocm_arch {
                    front.push(format!("--offload-arch={arch}").into());
                }
            }
        }
    }
    front.extend(args.iter().cloned());
    front
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    fn shown(v: &[OsString]) -> String {
        let words: Vec<String> = v.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        words.join(" ")
    }

    fn cuda(v: &[&str]) -> Vec<CudaArch> {
        v.iter().map(|s| CudaArch::parse(s).unwrap()).collect()
    }

    fn rocm(v: &[&str]) -> Vec<RocmTarget> {
        v.iter().map(|s| RocmTarget::parse(s).unwrap()).collect()
    }

    #[test]
    fn a_plain_nvcc_compile_gets_the_pinned_archs_and_the_host_compiler() {
        let archs = cuda(&["8.0", "9.0+PTX"]);
        let add = Additions {
            ccbin: Some(Path::new("/usr/bin/g++-11")),
            cuda_arch: &archs,
            ..Default::default()
        };
        assert_eq!(
            shown(&super::add(Kind::Cuda, &args("-c k.cu -o k.o"), &add)),
            "-ccbin /usr/bin/g++-11 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -c k.cu -o k.o"
        );
    }

    #[test]
    fn the_command_lines_own_choices_win() {
        let archs = cuda(&["8.0"]);
        let add = Additions {
            ccbin: Some(Path::new("/usr/bin/g++-11")),
            cuda_arch: &archs,
            ..Default::default()
        };
        for own in [
            "-ccbin clang++ -arch=sm_86 -c k.cu",
            "--compiler-bindir=/opt/gcc -arch sm_86 -c k.cu",
            "-ccbin g++ -gencode=arch=compute_86,code=sm_86 -c k.cu",
            "-ccbin g++ --generate-code arch=compute_86,code=sm_86 -c k.cu",
            "-ccbin=g++ -arch=native -c k.cu",
        ] {
            assert_eq!(shown(&super::add(Kind::Cuda, &args(own), &add)), own);
        }
        assert_eq!(
            shown(&super::add(Kind::Cuda, &args("--version"), &add)),
            "--version"
        );
    }

    #[test]
    fn a_plain_hipcc_compile_gets_one_offload_arch_per_pin() {
        let archs = rocm(&["gfx90a", "gfx940"]);
        let add = Additions {
            rocm_arch: &archs,
            ..Default::default()
        };
        assert_eq!(
            shown(&super::add(Kind::Rocm, &args("-c k.hip"), &add)),
            "--offload-arch=gfx90a --offload-arch=gfx940 -c k.hip"
        );
        let own = "--offload-arch=gfx1100 -c k.hip";
        assert_eq!(shown(&super::add(Kind::Rocm, &args(own), &add)), own);
        // A host compiler is nvcc's business only.
        let cc = Additions {
            ccbin: Some(Path::new("/usr/bin/g++-11")),
            ..Default::default()
        };
        assert_eq!(
            shown(&super::add(Kind::Rocm, &args("-c k.hip"), &cc)),
            "-c k.hip"
        );
    }
}
