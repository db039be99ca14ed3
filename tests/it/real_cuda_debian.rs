//! Debian bookworm's real CUDA 11.8 (`nvidia-cuda-toolkit`, extracted by
//! scripts/real-toolchains.sh into a cache outside the checkout, so its `usr/` sits under a
//! discover root): discovered, compiled with through the proxy, and given a host compiler
//! nvcc 11.8 accepts on a machine whose default g++ is 12 (FM-10).

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::common::real::{debian_cuda_root, runs_with_the_toolkits_runtime};
use crate::common::*;
use fs_err as fs;

const KERNEL: &str = r#"#include <cstdio>
__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
int main() {
    float* d = nullptr;
    cudaError_t e = cudaMalloc(&d, 4 * sizeof(float));
    printf("%s\n", cudaGetErrorName(e));
    return 0;
}
"#;

struct Real {
    sb: Sandbox,
    root: PathBuf,
    proj: PathBuf,
}

/// Discovered and registered, with `proj/` pinned to it and to sm_80.
fn setup() -> Option<Real> {
    if !have_tool("g++-11") {
        return None;
    }
    let root = debian_cuda_root()?;
    let sb = Sandbox::new();
    let out = sb
        .gpuenv()
        .env("GPUENV_DISCOVER_ROOTS", &root)
        .args(["discover", "--register"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("cuda-11.8-debian"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let proj = sb.path("proj");
    write(&proj.join("k.cu"), KERNEL);
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"11.8\"\ncuda-arch = [\"8.0\"]\n",
    );
    Some(Real { sb, root, proj })
}

impl Real {
    fn shims(&self) -> PathBuf {
        self.sb.gpuenv_home().join("shims")
    }

    /// `program` in the project, shims first on PATH, the machine's g++ (12) the default.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .env_clear()
            .env("HOME", self.sb.home())
            .env("PATH", format!("{}:/usr/bin:/bin", self.shims().display()))
            .current_dir(&self.proj)
            .output()
            .unwrap()
    }
}

#[test]
fn discovered_under_a_discover_root_with_its_own_programs_only() {
    let Some(r) = setup() else { return };
    let names: Vec<String> = fs::read_dir(r.shims())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for own in ["nvcc", "ptxas", "cuobjdump", "fatbinary", "nvlink"] {
        assert!(
            names.iter().any(|n| n == own),
            "no shim for {own}: {names:?}"
        );
    }
    // Debian's toolkit dir holds gcc/g++ wrappers; they are not the toolchain's programs.
    for other in ["g++", "gcc", "cicc", "nvcc.profile"] {
        assert!(
            !names.iter().any(|n| n == other),
            "a shim for {other}: {names:?}"
        );
    }
    let env = succeeded(
        &r.sb
            .gpuenv()
            .current_dir(&r.proj)
            .env("PATH", "/usr/bin:/bin")
            .args(["env", "--shell", "json"])
            .output()
            .unwrap(),
    );
    // The multiarch dir (not a system dir here: it is under the discover root), reached
    // through the view's lib64.
    let lib64 = r.sb.gpuenv_home().join("views/cuda-11.8-debian/lib64");
    assert!(
        env.contains(&format!("\"LD_LIBRARY_PATH\": \"{}\"", lib64.display())),
        "{env}"
    );
    assert_eq!(
        fs::canonicalize(&lib64).unwrap(),
        fs::canonicalize(r.root.join("usr/lib/x86_64-linux-gnu")).unwrap()
    );
    assert!(env.contains("\"CUDAARCHS\": \"80-real\""), "{env}");
    assert!(
        env.contains("\"CUDAHOSTCXX\": \"/usr/bin/g++-11\""),
        "{env}"
    );
}

#[test]
fn a_plain_nvcc_compile_gets_the_pinned_arch_and_a_host_compiler_nvcc_11_8_accepts() {
    let Some(r) = setup() else { return };
    // The rule is real: nvcc 11.8 with the machine's default g++ 12 stops.
    let out = r.run(
        "nvcc",
        &["-ccbin", "/usr/bin/g++-12", "-c", "k.cu", "-o", "own.o"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "g++ 12 accepted by nvcc 11.8?");
    assert!(err.contains("unsupported GNU version"), "{err}");

    // No arch and no host compiler on the command line: gpuenv passes both.
    let dry = r.run("nvcc", &["--dryrun", "-c", "k.cu", "-o", "k.o"]);
    let dry = String::from_utf8_lossy(&dry.stderr).into_owned();
    assert!(dry.contains("g++-11"), "{dry}");
    assert!(dry.contains("sm_80"), "{dry}");
    succeeded(&r.run("nvcc", &["-c", "k.cu", "-o", "k.o"]));
    let elf = succeeded(&r.run("cuobjdump", &["--list-elf", "k.o"]));
    assert!(elf.contains("sm_80"), "{elf}");

    let show =
        r.sb.gpuenv()
            .current_dir(&r.proj)
            .env("PATH", "/usr/bin:/bin")
            .args(["show"])
            .output()
            .unwrap();
    let show = succeeded(&show);
    assert!(
        show.contains("host compiler: /usr/bin/g++-11 (g++ is gcc 12"),
        "{show}"
    );
    assert!(show.contains("accepts (gcc <= 11)"), "{show}");
}

#[test]
fn a_kernel_links_and_runs_with_the_toolkits_libraries() {
    let Some(r) = setup() else { return };
    succeeded(&r.run("nvcc", &["k.cu", "-o", "k", "-lcudart"]));
    runs_with_the_toolkits_runtime(&r.sb, &r.proj);
}

#[test]
fn a_pinned_host_compiler_that_is_missing_names_the_package() {
    let Some(r) = setup() else { return };
    write(
        &r.proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"11.8\"\nhost-compiler = \"g++-9\"\n",
    );
    r.sb.ok(&["trust", r.proj.join("gpuenv.toml").to_str().unwrap()]);
    let out = r.run("nvcc", &["-c", "k.cu", "-o", "k.o"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("gpuenv.toml:3:17"), "{err}");
    assert!(err.contains("apt-get install g++-9"), "{err}");
}
