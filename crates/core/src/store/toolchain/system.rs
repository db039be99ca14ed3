//! System toolchains: a CUDA Toolkit or ROCm whose files are spread over a distribution
//! prefix (`/usr`) by Debian's or Ubuntu's packages. Such a toolchain owns only its own
//! programs (read from dpkg's file lists, else from the known lists below), and the
//! prefix's directories are the system's default search paths, which gpuenv never pushes in
//! front of anything.

use crate::outside;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Kind;

/// What a system toolchain is made of besides its root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct System {
    /// The distribution prefix its files are spread over: `/usr` (under a discover root,
    /// `<root>/usr`).
    pub prefix: PathBuf,
    /// Its own programs, by absolute path. Shims are made for these and nothing else.
    pub tools: Vec<PathBuf>,
    /// Where the list of programs came from, for `list` and `doctor`.
    pub tools_from: String,
}

impl System {
    /// The program of this toolchain called `name`, if it has one.
    pub fn tool(&self, name: &str) -> Option<&Path> {
        self.tools
            .iter()
            .map(PathBuf::as_path)
            .find(|p| p.file_name().is_some_and(|n| n == name))
    }
}

/// The Debian/Ubuntu packages whose programs belong to a toolchain of `kind`, and the
/// programs of a toolkit of that kind: the only ones any toolchain gets shims for (a conda
/// environment's `bin/` also holds python, pip and curl, and a shim would put each of them
/// behind a pin), and the ones gpuenv assumes when dpkg's file lists are not there. The
/// compilers' LLVM (`clang-15`, `lld`) is deliberately absent: it is the distribution's
/// LLVM, shared with everything else, and a shim would tie every `clang` to a pin.
pub struct Packages {
    pub kind: Kind,
    pub packages: &'static [&'static str],
    /// Programs by name.
    pub known_tools: &'static [&'static str],
    /// Families of programs by the start of their name (`cuda-gdb`, `hipify-perl`).
    pub tool_prefixes: &'static [&'static str],
}

pub const PACKAGES: [Packages; 2] = [
    Packages {
        kind: Kind::Cuda,
        packages: &["nvidia-cuda-toolkit"],
        known_tools: &[
            "nvcc",
            "ptxas",
            "cuobjdump",
            "nvdisasm",
            "fatbinary",
            "nvlink",
            "cu++filt",
            "cudafe++",
            "bin2c",
            "nvprune",
            "compute-sanitizer",
            "computeprof",
            "ncu",
            "ncu-ui",
            "nsys",
            "nsys-ui",
            "nvprof",
            "nvvp",
            "__nvcc_device_query",
        ],
        tool_prefixes: &["cuda-", "nsight"],
    },
    Packages {
        kind: Kind::Rocm,
        packages: &["hipcc", "rocminfo", "rocm-smi"],
        known_tools: &[
            "roc-obj",
            "amdclang",
            "amdclang++",
            "amdclang-cl",
            "amdclang-cpp",
            "amdflang",
            "amdlld",
            "amd-smi",
        ],
        tool_prefixes: &["hip", "roc"],
    },
];

impl Packages {
    /// `name` is a program of this kind's toolkits.
    pub fn is_tool(&self, name: &str) -> bool {
        self.known_tools.contains(&name) || self.tool_prefixes.iter().any(|p| name.starts_with(p))
    }
}

/// `name` is a program of a `kind` toolkit: what a toolchain gets a shim for.
pub fn is_toolkit_program(kind: Kind, name: &str) -> bool {
    packages(kind).is_tool(name)
}

fn packages(kind: Kind) -> &'static Packages {
    PACKAGES
        .iter()
        .find(|p| p.kind == kind)
        .expect("every kind has a package row")
}

/// Debian's multiarch directory name for this machine: `x86_64-linux-gnu`.
pub fn multiarch() -> String {
    format!("{}-linux-gnu", std::env::consts::ARCH)
}

/// The directories compilers, the loader and the shell search anyway. gpuenv never prepends
/// them (that would put `/usr/include` ahead of libstdc++'s `#include_next <math.h>`, or
/// `/usr/bin` ahead of a virtualenv's python) and never removes them.
pub fn is_default_dir(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    // Compared as bytes: the proxy asks this for each directory it prepends.
    let dir = dir.components().collect::<PathBuf>();
    let b = dir.as_os_str().as_bytes();
    const PLAIN: &[&[u8]] = &[
        b"/usr",
        b"/usr/bin",
        b"/bin",
        b"/usr/sbin",
        b"/sbin",
        b"/usr/local/bin",
        b"/usr/include",
        b"/usr/local/include",
        b"/usr/lib",
        b"/lib",
        b"/usr/lib64",
        b"/lib64",
        b"/usr/local/lib",
    ];
    let multiarch =
        |rest: &[u8]| rest.strip_prefix(std::env::consts::ARCH.as_bytes()) == Some(b"-linux-gnu");
    PLAIN.contains(&b)
        || [&b"/usr/lib/"[..], b"/lib/", b"/usr/include/"]
            .iter()
            .any(|p| b.strip_prefix(*p).is_some_and(multiarch))
}

/// `prefix` is a Debian/Ubuntu ROCm: `bin/hipcc` with HIP's headers or version file beside it
/// and `libamdhip64` in the multiarch dir (AMD's own trees keep it in `lib/`).
pub fn is_rocm_prefix(prefix: &Path) -> bool {
    prefix.join("bin/hipcc").is_file()
        && (prefix.join("share/hip/version").is_file()
            || prefix.join("include/hip/hip_version.h").is_file())
        && prefix.join("lib").join(multiarch()).is_dir()
        && !prefix.join(".info/version").is_file()
        && !prefix.join("lib/libamdhip64.so").exists()
}

/// The root of Debian/Ubuntu's `nvidia-cuda-toolkit` under `prefix`, if it is there.
pub fn cuda_root(prefix: &Path) -> Option<PathBuf> {
    let root = prefix.join("lib/nvidia-cuda-toolkit");
    root.join("bin/nvcc").is_file().then_some(root)
}

/// The prefix of a Debian CUDA root (`<prefix>/lib/nvidia-cuda-toolkit`), when its headers are
/// in the prefix's include dir.
pub fn cuda_prefix_of(root: &Path) -> Option<PathBuf> {
    if root.file_name()? != "nvidia-cuda-toolkit" || root.parent()?.file_name()? != "lib" {
        return None;
    }
    let prefix = root.parent()?.parent()?;
    prefix
        .join("include/cuda_runtime.h")
        .is_file()
        .then(|| prefix.to_path_buf())
}

/// The toolchain's own programs under `prefix`: the `bin/` files that dpkg's lists
/// (`<prefix>/../var/lib/dpkg/info/<pkg>.list`, so a discover root has its own) give the
/// kind's packages, else the known names found in `<prefix>/bin`.
pub fn describe(kind: Kind, prefix: &Path) -> System {
    let row = packages(kind);
    let dpkg = prefix
        .parent()
        .unwrap_or(Path::new("/"))
        .join("var/lib/dpkg/info");
    let mut read_from = Vec::new();
    let mut tools = Vec::new();
    for pkg in row.packages {
        let Some(text) = read_list(&dpkg, pkg) else {
            continue;
        };
        read_from.push(*pkg);
        tools.extend(programs_in_list(&text, prefix));
    }
    let tools_from = if read_from.is_empty() {
        tools = fs_err::read_dir(prefix.join("bin"))
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_name().to_str().is_some_and(|n| row.is_tool(n)))
                    .map(|e| e.path())
                    .filter(|p| p.is_file())
                    .collect()
            })
            .unwrap_or_default();
        format!("gpuenv's list of {kind} programs")
    } else {
        format!("dpkg's file lists of {}", read_from.join(", "))
    };
    tools.sort();
    tools.dedup();
    System {
        prefix: prefix.to_path_buf(),
        tools,
        tools_from,
    }
}

/// `<pkg>.list` or, for multi-arch packages, `<pkg>:<arch>.list`.
fn read_list(dpkg: &Path, pkg: &str) -> Option<String> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    [format!("{pkg}.list"), format!("{pkg}:{arch}.list")]
        .iter()
        .find_map(|name| outside::read_text(&dpkg.join(name), outside::Kind::FileList).ok())
}

/// The programs a dpkg file list puts directly in `/usr/bin`, as paths under `prefix`
/// (a list names `/usr/bin/hipcc` whatever root it was installed under). Private dirs such
/// as `/usr/lib/nvidia-cuda-toolkit/bin` (which holds `gcc` and `g++` wrappers) are not the
/// toolchain's programs for anyone else.
pub fn programs_in_list(text: &str, prefix: &Path) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("/usr/bin/"))
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .map(|name| prefix.join("bin").join(name))
        .filter(|p| p.is_file())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_dirs_are_the_ones_compilers_and_the_loader_search_anyway() {
        for d in [
            "/usr/bin",
            "/usr/bin/",
            "/usr/include",
            "/usr/lib/x86_64-linux-gnu",
            "/lib/x86_64-linux-gnu/",
            "/usr//include/./x86_64-linux-gnu",
            "/usr",
        ] {
            if d.contains("x86_64") && std::env::consts::ARCH != "x86_64" {
                continue;
            }
            assert!(is_default_dir(Path::new(d)), "{d}");
        }
        for d in [
            "/usr/lib/nvidia-cuda-toolkit",
            "/opt/rocm/lib",
            "/tmp/root/usr/include",
            "/usr/local/cuda/include",
            "/usr/lib/x86_64-linux-gnux",
            "/usr/lib/x86_64-linux-gnu/x",
            "/usr/local/lib64",
        ] {
            assert!(!is_default_dir(Path::new(d)), "{d}");
        }
    }

    #[test]
    fn toolkit_programs_are_the_kinds_own_and_nothing_else() {
        for t in ["nvcc", "ptxas", "cuda-gdb", "nsight-sys", "ncu"] {
            assert!(is_toolkit_program(Kind::Cuda, t), "{t}");
        }
        for t in ["hipcc", "hipify-perl", "rocminfo", "rocprof", "amdclang++"] {
            assert!(is_toolkit_program(Kind::Rocm, t), "{t}");
        }
        for t in ["python3", "pip", "curl", "clang", "gcc", "conda", "cudnn"] {
            assert!(!is_toolkit_program(Kind::Cuda, t), "{t}");
            assert!(!is_toolkit_program(Kind::Rocm, t), "{t}");
        }
    }

    #[test]
    fn a_dpkg_list_gives_only_the_programs_in_usr_bin() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("usr");
        for t in ["hipcc", "hipconfig", "roc-obj-ls"] {
            let p = prefix.join("bin").join(t);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(&p, "").unwrap();
        }
        let list = "/.\n/usr\n/usr/bin\n/usr/bin/hipcc\n/usr/bin/hipconfig\n/usr/bin/roc-obj-ls\n/usr/bin/gone\n/usr/lib/nvidia-cuda-toolkit/bin/g++\n/usr/share/doc/hipcc/copyright\n";
        let got: Vec<String> = programs_in_list(list, &prefix)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(got, ["hipcc", "hipconfig", "roc-obj-ls"]);
    }
}
