//! The guard and the proxy against a real nvcc: CUDA 13 from NVIDIA's wheels on PyPI,
//! fetched by scripts/real-toolchains.sh into a cache outside the checkout.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use crate::common::real::{real_cuda13, runs_with_the_toolkits_runtime};
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
            .env("PATH", system_path())
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

#[test]
fn one_name_per_release_nvccs_build_number_is_not_a_name_and_an_old_one_still_resolves() {
    let Some(r) = setup() else { return };
    let root = real_cuda13().unwrap();
    // The wheels' tree has no version.json: nvcc says V13.0.88, a build number.
    let out =
        r.sb.gpuenv()
            .args(["link", "cuda-13.0.88", root.to_str().unwrap()])
            .output()
            .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("(cuda 13.0.88 from bin/nvcc --version is a build number; the release it is part of is 13.0)"),
        "{stderr}"
    );
    assert!(stderr.contains("name it cuda-13.0 "), "{stderr}");

    // A copy whose version.json names its release (as NVIDIA's installers write it) is that
    // release, whatever its nvcc's build number.
    let released = r.sb.path("cuda-13.0.2");
    common::real::another_nvcc(&root, &released);
    write(
        &released.join("version.json"),
        r#"{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}, "cuda_nvcc": {"name": "CUDA NVCC", "version": "13.0.88"}}"#,
    );
    r.sb.ok(&["link", "cuda-13.0.2", released.to_str().unwrap()]);

    // A registry an older gpuenv wrote, with the linked tree named after nvcc's build.
    let settings = r.sb.gpuenv_home().join("settings.toml");
    let text = fs::read_to_string(&settings).unwrap();
    assert!(text.contains("[toolchains.\"cuda-13.0\"]"), "{text}");
    fs::write(
        &settings,
        text.replace(
            "[toolchains.\"cuda-13.0\"]",
            "[toolchains.\"cuda-13.0.88\"]",
        ),
    )
    .unwrap();

    // `cuda = "13.0"` is the release 13.0.2, not the larger build number.
    let which =
        r.sb.gpuenv()
            .current_dir(&r.work)
            .args(["which", "nvcc"])
            .output()
            .unwrap();
    let which = succeeded(&which);
    assert_eq!(which.trim(), released.join("bin/nvcc").to_str().unwrap());
    // The old name still resolves, and `list` says how to rename it.
    let out =
        r.sb.gpuenv()
            .current_dir(&r.work)
            .args(["run", "cuda-13.0.88", "--", "nvcc", "--version"])
            .output()
            .unwrap();
    assert!(succeeded(&out).contains("release 13.0, V13.0.88"));
    let out = r.sb.gpuenv().arg("list").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    succeeded(&out);
    assert!(
        stderr.contains("cuda-13.0.88 is named after cuda 13.0.88 (bin/nvcc --version), not the release it is part of: gpuenv names it cuda-13.0 now (the old name still resolves)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "`gpuenv unlink cuda-13.0.88 && gpuenv link cuda-13.0 {}` renames it",
            root.display()
        )),
        "{stderr}"
    );
}

/// `dst` made of `src`'s compiler alone: its `bin/` entries, `include/` and `lib/` as links,
/// and no version.json (a tree copied by hand, a conda package's, a cluster's old install).
fn nvcc_only(src: &Path, dst: &Path) {
    fs::create_dir_all(dst.join("bin")).unwrap();
    for e in fs::read_dir(src.join("bin")).unwrap() {
        let e = e.unwrap();
        std::os::unix::fs::symlink(e.path(), dst.join("bin").join(e.file_name())).unwrap();
    }
    for dir in ["include", "lib"] {
        std::os::unix::fs::symlink(src.join(dir), dst.join(dir)).unwrap();
    }
    assert!(!dst.join("version.json").exists());
}

/// A tree known only by its nvcc is named after the one release that ships nvcc's build
/// (the data's `[[nvcc-build]]` rows, from the package index's `cuda-toolkit`): 13.2.86 is
/// in 13.2.2 alone; 13.0.88 is in 13.0.1, 13.0.2 and 13.0.3, so that tree keeps 13.0. An
/// older gpuenv's name for it still resolves, and `list` says how to rename it.
#[test]
fn a_tree_with_only_its_nvcc_is_named_after_the_one_release_that_ships_its_build() {
    let Some(cu13) = real_cuda13() else { return };
    if !common::real::index_reachable() {
        return;
    }
    // The real nvcc 13.2.86, from an install of 13.2.2 in another home.
    let store = Sandbox::new();
    let out = common::real::real_gpuenv(&store)
        .args([
            "install",
            "cuda-13.2.2",
            "--source",
            "pypi",
            "--profile",
            "minimal",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    let installed = store.gpuenv_home().join("toolchains/cuda-13.2.2");
    assert!(installed.join("version.json").is_file());

    let sb = Sandbox::new();
    let roots = sb.path("site");
    nvcc_only(&installed, &roots.join("usr/local/cuda-13.2"));
    nvcc_only(&cu13, &roots.join("usr/local/cuda-13.0"));
    let out = sb
        .gpuenv()
        .env("GPUENV_DISCOVER_ROOTS", &roots)
        .args(["discover", "--register"])
        .output()
        .unwrap();
    succeeded(&out);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&sb.ok(&["list", "--json"])).unwrap();
    let named: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["version"].as_str().unwrap()))
        .collect();
    assert_eq!(
        named,
        [("cuda-13.0", "13.0.88"), ("cuda-13.2.2", "13.2.86")],
        "{rows:?}"
    );
    let listed = sb.ok(&["list"]);
    assert!(listed.contains("cuda-13.2.2"), "{listed}");

    // `link` takes the release's name and refuses the build number's.
    let linked = sb.path("copy-13.2");
    nvcc_only(&installed, &linked);
    sb.ok(&["link", "cuda-13.2.2-copy", linked.to_str().unwrap()]);
    let out = sb
        .gpuenv()
        .args(["link", "cuda-13.2.86", linked.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("(cuda 13.2.86 from bin/nvcc --version is a build number; the release it is part of is 13.2.2)"),
        "{stderr}"
    );
    assert!(stderr.contains("name it cuda-13.2.2 "), "{stderr}");

    // A registry an older gpuenv wrote named the discovered tree by major.minor.
    let settings = sb.gpuenv_home().join("settings.toml");
    let text = fs::read_to_string(&settings).unwrap();
    assert!(text.contains("[toolchains.\"cuda-13.2.2\"]"), "{text}");
    fs::write(
        &settings,
        text.replace("[toolchains.\"cuda-13.2.2\"]", "[toolchains.\"cuda-13.2\"]"),
    )
    .unwrap();
    let out = sb
        .gpuenv()
        .args(["run", "cuda-13.2", "--", "nvcc", "--version"])
        .output()
        .unwrap();
    assert!(succeeded(&out).contains("release 13.2, V13.2.86"));
    let out = sb.gpuenv().arg("list").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    succeeded(&out);
    assert!(
        stderr.contains("cuda-13.2 is named after 13.2 alone (cuda 13.2.86 from bin/nvcc --version), not the release it is part of: gpuenv names it cuda-13.2.2 now (the old name still resolves)"),
        "{stderr}"
    );
    // The tree of the shared build is not asked to change its name.
    assert!(!stderr.contains("cuda-13.0 is named"), "{stderr}");
}
