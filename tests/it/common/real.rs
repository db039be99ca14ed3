//! The real-toolchain test groups: the cache of downloads outside the checkout, whether the
//! package index can be reached, and a real CUDA 13 tree from NVIDIA's wheels.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Variables a real install passes through from the developer's environment (index,
/// proxies, CA roots).
pub const REAL_VARS: &[&str] = &[
    "GPUENV_PYPI_URL",
    "PIP_INDEX_URL",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// `GPUENV_TEST_CACHE`, else `~/.cache/gpuenv-tests`: downloads kept outside the checkout.
pub fn test_cache() -> PathBuf {
    match std::env::var_os("GPUENV_TEST_CACHE") {
        Some(c) => PathBuf::from(c),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
            .join(".cache/gpuenv-tests"),
    }
}

/// Can we reach the index at all? Fails under CI; elsewhere skips.
pub fn index_reachable() -> bool {
    let index = std::env::var("GPUENV_PYPI_URL")
        .or_else(|_| std::env::var("PIP_INDEX_URL"))
        .unwrap_or_else(|_| "https://pypi.org/simple/".into());
    let host = index
        .split("://")
        .nth(1)
        .and_then(|r| r.split(['/', ':']).next())
        .unwrap_or("pypi.org")
        .to_string();
    let port = if index.starts_with("http://") {
        80
    } else {
        443
    };
    use std::net::ToSocketAddrs;
    let ok = (host.as_str(), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|addr| {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(10)).is_ok()
        });
    if !ok {
        super::cannot_run(format!(
            "the package index {index} is not reachable; this test needs it"
        ));
    }
    ok
}

/// gpuenv in the sandbox, with the real download cache and the index variables.
pub fn real_gpuenv(sb: &super::Sandbox) -> assert_cmd::Command {
    let mut cmd = sb.gpuenv();
    cmd.env("GPUENV_DOWNLOAD_CACHE", test_cache().join("downloads"));
    for v in REAL_VARS {
        if let Some(val) = std::env::var_os(v) {
            cmd.env(v, val);
        }
    }
    cmd
}

/// Whether this machine has an NVIDIA kernel driver: what lets a CUDA program reach a GPU.
pub fn nvidia_driver() -> bool {
    ["/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/dxg"]
        .iter()
        .any(|p| Path::new(p).exists())
}

/// Whether the CUDA driver library (`libcuda.so.1`, which the runtime loads) is installed;
/// true when `ldconfig` cannot say.
fn libcuda_installed() -> bool {
    Command::new("ldconfig")
        .arg("-p")
        .output()
        .map_or(true, |o| {
            String::from_utf8_lossy(&o.stdout).contains("libcuda.so.1")
        })
}

/// What the CUDA runtime may answer a `cudaMalloc` on this machine: without the driver
/// library only `cudaErrorInsufficientDriver`; with the library but no kernel driver also
/// `cudaErrorNoDevice`; with a driver also `cudaSuccess`. So a test holds with a GPU or
/// without one, and still proves the toolkit's runtime was loaded and asked.
pub fn cuda_malloc_answers() -> &'static [&'static str] {
    if nvidia_driver() {
        &[
            "cudaSuccess",
            "cudaErrorNoDevice",
            "cudaErrorInsufficientDriver",
        ]
    } else if libcuda_installed() {
        &["cudaErrorNoDevice", "cudaErrorInsufficientDriver"]
    } else {
        &["cudaErrorInsufficientDriver"]
    }
}

/// Runs `./k` (a CUDA program built in `dir` that prints `cudaGetErrorName` of a
/// `cudaMalloc`) through `gpuenv run`, so LD_LIBRARY_PATH has the toolkit's cudart, and
/// checks that the runtime loaded and answered as it can on this machine.
pub fn runs_with_the_toolkits_runtime(sb: &super::Sandbox, dir: &Path) {
    let out = sb
        .gpuenv()
        .current_dir(dir)
        .args(["run", "--", "./k"])
        .output()
        .unwrap();
    let text = super::succeeded(&out);
    let answers = cuda_malloc_answers();
    assert!(
        answers.contains(&text.trim()),
        "{text:?}, expected one of {answers:?}"
    );
}

/// The toolkit scripts/real-toolchains.sh fetches (once, into the test cache) for `which`:
/// the path it prints last. None when it cannot: `cannot_run` with `what` and its reason.
fn fetched(which: &str, what: &str) -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/real-toolchains.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(which)
        .output()
        .unwrap();
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        super::cannot_run(format!("{what}: {why}"));
        return None;
    }
    let path = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_string();
    Some(PathBuf::from(path))
}

/// The real CUDA 13 root, or None (skipped outside CI) when it cannot be fetched.
pub fn real_cuda13() -> Option<PathBuf> {
    fetched("cuda13", "no real CUDA 13 toolkit could be fetched")
}

/// Debian's CUDA 11.8 toolkit (`<root>/usr/lib/nvidia-cuda-toolkit`), or None (skipped
/// outside CI).
pub fn debian_cuda_toolkit() -> Option<PathBuf> {
    fetched("cuda11.8", "Debian's CUDA 11.8 could not be fetched")
}

/// The discover root holding Debian's CUDA 11.8, extracted (its `usr/`), or None (skipped
/// outside CI).
pub fn debian_cuda_root() -> Option<PathBuf> {
    Some(debian_cuda_toolkit()?.ancestors().nth(3)?.to_path_buf())
}

/// The `setup.py` of a torch CUDA extension `twice` made of `twice.cu` (its kernel, which nvcc
/// compiles) and `binding.cpp` (its Python module, which the host compiler compiles, here
/// without optimisation or debug information: Python's `-O3 -g` double the time torch's
/// headers take).
pub const TWICE_SETUP_PY: &str = r#"from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="twice",
    ext_modules=[
        CUDAExtension(
            "twice", ["binding.cpp", "twice.cu"], extra_compile_args={"cxx": ["-O0", "-g0"]}
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
"#;

/// A torch CUDA extension in `<sandbox>/ext`: `twice.cu` holding `kernel`, `binding.cpp`
/// holding `binding`, its setup.py, and a gpuenv.toml that pins the toolkit of the venv's
/// torch, for arch 9.0. Torch's headers belong in the binding: through nvcc they cost a
/// 2-core CI run 100 s (nvcc parses them twice), through the host compiler 20 s at `-O0`.
pub fn twice_extension(sb: &super::Sandbox, kernel: &str, binding: &str) -> PathBuf {
    let ext = sb.path("ext");
    super::write(&ext.join("twice.cu"), kernel);
    super::write(&ext.join("binding.cpp"), binding);
    super::write(&ext.join("setup.py"), TWICE_SETUP_PY);
    super::write(
        &ext.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"torch\"\ncuda-arch = [\"9.0\"]\n",
    );
    ext
}

/// A Python module `name` with a function `twice` (it returns its argument), in C with
/// Python's headers alone: the binding of a test extension whose point is its build, not
/// torch's API (torch's headers cost the host compiler 20-40 s; one test keeps them,
/// tests/it/torch_real.rs).
pub fn plain_module(name: &str) -> String {
    format!(
        "#include <Python.h>\n\
         static PyObject* twice(PyObject* self, PyObject* x) {{ Py_INCREF(x); return x; }}\n\
         static PyMethodDef methods[] = {{{{\"twice\", twice, METH_O, NULL}}, {{NULL, NULL, 0, NULL}}}};\n\
         static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, \"{name}\", NULL, -1, methods}};\n\
         PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&def); }}\n"
    )
}

/// `gpuenv install torch` (the real gpuenv) for the torch in `venv`.
pub fn install_torch(sb: &super::Sandbox, venv: &Path) -> std::process::Output {
    real_gpuenv(sb)
        .env("VIRTUAL_ENV", venv)
        .args(["install", "torch"])
        .output()
        .unwrap()
}

/// gpuenv in `dir` with `venv` active (its `bin` first on PATH), as torch's build runs it.
/// A PYTORCH_NVCC from the caller's environment would turn torch's wrapper off.
pub fn gpuenv_in_venv(sb: &super::Sandbox, venv: &Path, dir: &Path) -> assert_cmd::Command {
    let mut cmd = sb.gpuenv();
    cmd.env_remove("PYTORCH_NVCC")
        .current_dir(dir)
        .env("VIRTUAL_ENV", venv)
        .env("PATH", format!("{}/bin:/usr/bin:/bin", venv.display()));
    cmd
}

/// The torch release of the real torch tests: a CUDA 13.2 build on PyPI.
pub const TORCH: &str = "2.15.0";

/// A venv with the real torch from the index (3 GB of NVIDIA wheels), made once in the test
/// cache (`<cache>/torch-<version>`) and reused; None (skipped outside CI) when python3 with
/// venv, or the index, is missing.
pub fn torch_venv() -> Option<PathBuf> {
    let cache = test_cache();
    let venv = cache.join(format!("torch-{TORCH}"));
    if venv.join(".complete").is_file() {
        return Some(venv);
    }
    let fail = |why: String| -> Option<PathBuf> {
        super::cannot_run(format!("no venv with torch {TORCH}: {why}"));
        None
    };
    if !index_reachable() {
        return None;
    }
    fs_err::create_dir_all(&cache).unwrap();
    let lock = fs_err::File::create(cache.join(format!(".torch-{TORCH}.lock"))).unwrap();
    lock.file().lock().unwrap();
    if venv.join(".complete").is_file() {
        return Some(venv);
    }
    let tmp = cache.join(format!(".torch-{TORCH}.tmp"));
    let _ = fs_err::remove_dir_all(&tmp);
    let run = |cmd: &mut Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    };
    let started = std::time::Instant::now();
    if let Err(why) = run(Command::new("python3").arg("-m").arg("venv").arg(&tmp)) {
        return fail(format!(
            "`python3 -m venv` failed (apt-get install python3-venv): {why}"
        ));
    }
    let mut pip = Command::new(tmp.join("bin/python"));
    pip.args(["-m", "pip", "install", "-q", "--no-input"])
        .arg(format!("torch=={TORCH}"));
    for v in REAL_VARS {
        if let Some(val) = std::env::var_os(v) {
            pip.env(v, val);
        }
    }
    if let Err(why) = run(&mut pip) {
        return fail(format!("pip install torch=={TORCH} failed: {why}"));
    }
    fs_err::write(tmp.join(".complete"), "").unwrap();
    fs_err::rename(&tmp, &venv).unwrap();
    eprintln!(
        "made a venv with torch {TORCH} in {:.0}s at {}",
        started.elapsed().as_secs_f64(),
        venv.display()
    );
    Some(venv)
}

/// (hits, misses) from `ccache --print-stats` for the cache in `dir`.
pub fn ccache_hits_and_misses(dir: &Path) -> (u64, u64) {
    let out = Command::new("ccache")
        .arg("--print-stats")
        .env("CCACHE_DIR", dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('\t')?.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        get("direct_cache_hit") + get("preprocessed_cache_hit"),
        get("cache_miss"),
    )
}

/// One of ccache's counters for the cache in `dir`, by its `--print-stats` name.
pub fn ccache_stat(dir: &Path, key: &str) -> u64 {
    let out = Command::new("ccache")
        .arg("--print-stats")
        .env("CCACHE_DIR", dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('\t')?.trim().parse().ok())
        .unwrap_or(0)
}

/// A kernel that includes the CUDA runtime's header, for cache tests.
pub const SCALE_KERNEL: &str = r#"#include <cuda_runtime.h>
__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }
"#;

/// Another nvcc of the same release at `at`: `root`'s tree hard-linked, `bin/nvcc` itself a
/// new file (so a compiler cache keyed on the compiler sees another compiler).
pub fn another_nvcc(root: &Path, at: &Path) {
    let cp = Command::new("cp")
        .arg("-al")
        .arg(root)
        .arg(at)
        .status()
        .unwrap();
    assert!(cp.success());
    fs_err::remove_file(at.join("bin/nvcc")).unwrap();
    fs_err::copy(root.join("bin/nvcc"), at.join("bin/nvcc")).unwrap();
}
