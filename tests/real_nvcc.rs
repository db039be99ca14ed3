//! The guard and the proxy against a real nvcc: CUDA 13 from NVIDIA's wheels on PyPI,
//! fetched by scripts/real-toolchains.sh into a cache outside the checkout.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::real::{real_cuda13, runs_with_the_toolkits_runtime};
use common::*;
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
    work: PathBuf,
    nvcc: PathBuf,
}

fn setup() -> Option<Real> {
    let root = real_cuda13()?;
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    let work = sb.path("work");
    write(&work.join("k.cu"), KERNEL);
    write(&work.join("gpuenv.toml"), "[toolchain]\ncuda = \"13.0\"\n");
    let nvcc = sb.gpuenv_home().join("views/cuda-13.0/bin/nvcc");
    Some(Real { sb, work, nvcc })
}

impl Real {
    fn run(&self, program: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env_clear()
            .env("HOME", self.sb.home())
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .current_dir(&self.work);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }
}

#[test]
fn the_view_nvcc_compiles_ptx_cubin_and_links_with_cudart() {
    let Some(r) = setup() else { return };
    let shims = r.sb.gpuenv_home().join("shims");
    assert!(shims.join("ptxas").exists());
    assert!(
        !shims.join("crt").exists(),
        "bin/crt is a directory, not a tool"
    );
    let version = succeeded(&r.run(&r.nvcc, &["--version"], &[]));
    assert!(
        version.contains("Cuda compilation tools, release 13.0"),
        "{version}"
    );

    succeeded(&r.run(&r.nvcc, &["-c", "k.cu", "-o", "k.o"], &[]));
    assert!(fs::metadata(r.work.join("k.o")).unwrap().len() > 0);
    succeeded(&r.run(&r.nvcc, &["-ptx", "k.cu", "-o", "k.ptx"], &[]));
    assert!(fs::read_to_string(r.work.join("k.ptx"))
        .unwrap()
        .contains(".entry"));
    succeeded(&r.run(
        &r.nvcc,
        &["-cubin", "-arch=sm_90", "k.cu", "-o", "k.cubin"],
        &[],
    ));
    assert!(fs::read(r.work.join("k.cubin"))
        .unwrap()
        .starts_with(b"\x7fELF"));
    succeeded(&r.run(&r.nvcc, &["k.cu", "-o", "k", "-lcudart"], &[]));

    runs_with_the_toolkits_runtime(&r.sb, &r.work);
}

#[test]
fn the_guard_stops_a_real_compile_and_lets_a_matching_one_through() {
    let Some(r) = setup() else { return };
    let site = r.sb.path("venv/lib/python3.11/site-packages");
    let inc = site.join("torch/include");
    let i1 = format!("-I{}", inc.display());
    let i2 = format!("-I{}", inc.join("torch/csrc/api/include").display());
    let args = [
        i1.as_str(),
        i2.as_str(),
        "-DTORCH_EXTENSION_NAME=ext",
        "-c",
        "k.cu",
        "-o",
        "ext.o",
    ];

    torch_package(&site, "2.5.1+cu121", Some("12.1"), None);
    let out = r.run(&r.nvcc, &args, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nvcc is cuda 13.0.88 but torch 2.5.1+cu121 was built for cuda 12.1"),
        "{err}"
    );
    assert!(!r.work.join("ext.o").exists(), "refused before compiling");

    torch_package(&site, "2.9.0+cu130", Some("13.0"), None);
    succeeded(&r.run(&r.nvcc, &args, &[]));
    assert!(fs::metadata(r.work.join("ext.o")).unwrap().len() > 0);

    // The same through the shims dir on PATH.
    fs::remove_file(r.work.join("ext.o")).unwrap();
    let path = format!(
        "{}:/usr/bin:/bin",
        r.sb.gpuenv_home().join("shims").display()
    );
    succeeded(&r.run(Path::new("nvcc"), &args, &[("PATH", &path)]));
    assert!(r.work.join("ext.o").exists());
}

#[test]
fn without_g_plus_plus_the_proxy_names_the_missing_host_compiler_before_nvcc_runs() {
    let Some(r) = setup() else { return };
    // A PATH with the assembler and linker but no g++ (nor gcc, c++).
    let bin = r.sb.path("bin-without-gxx");
    fs::create_dir_all(&bin).unwrap();
    for tool in ["as", "ld"] {
        std::os::unix::fs::symlink(Path::new("/usr/bin").join(tool), bin.join(tool)).unwrap();
    }
    let path = bin.to_str().unwrap();
    let out = r.run(&r.nvcc, &["-c", "k.cu", "-o", "k.o"], &[("PATH", path)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no g++ on PATH"), "{stderr}");
    assert!(stderr.contains("sudo apt-get install g++"), "{stderr}");
    assert!(stderr.contains("sudo dnf install gcc-c++"), "{stderr}");
    assert!(stderr.contains("host-compiler = \"g++-N\""), "{stderr}");
    // Said before nvcc ran: not nvcc's own riddle, and nothing compiled.
    assert!(!stderr.contains("nvcc fatal"), "{stderr}");
    assert!(!r.work.join("k.o").exists());

    // A compiler the user names is theirs: nvcc runs with it.
    let gxx = Path::new("/usr/bin/g++");
    if !gxx.is_file() {
        assert!(!in_ci(), "g++ is required under CI=true");
        return;
    }
    succeeded(&r.run(
        &r.nvcc,
        &["-ccbin", "/usr/bin/g++", "-c", "k.cu", "-o", "k.o"],
        &[("PATH", path)],
    ));
    assert!(fs::metadata(r.work.join("k.o")).unwrap().len() > 0);
}
