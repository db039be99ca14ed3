//! `torch.utils.cpp_extension.load()` builds into `TORCH_EXTENSIONS_DIR`: gpuenv gives each
//! toolchain its own, so a JIT extension built by one nvcc is never loaded, or rebuilt over,
//! under another; a directory the user chose is left alone. `PYTORCH_NVCC` is never set, so
//! torch runs `$CUDA_HOME/bin/nvcc` (the proxy) behind its own ccache; the user's stays.
//! The project's settings reach `load()`'s compiles there (`GPUENV_PROJECT_DIR`).

use std::path::Path;

use crate::common;
use crate::common::*;

fn env_of(sb: &Sandbox, cwd: &Path, vars: &[(&str, &str)], args: &[&str]) -> String {
    let mut cmd = sb.gpuenv();
    cmd.current_dir(cwd).args(args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    succeeded(&out);
    String::from_utf8(out.stdout).unwrap()
}

fn value_in(env: &str, key: &str) -> Option<String> {
    env.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
}

#[test]
fn each_toolchain_builds_jit_extensions_in_its_own_directory() {
    let sb = Sandbox::new();
    for (name, version) in [("cuda-12.4", "12.4.131"), ("cuda-11.8", "11.8.89")] {
        let root = cuda_runfile(&sb.path(&format!("opt/{name}")), version);
        sb.ok(&["link", name, root.to_str().unwrap()]);
    }
    let proj = sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n");
    let ours = |name: &str| {
        sb.gpuenv_home()
            .join("torch-extensions")
            .join(name)
            .display()
            .to_string()
    };

    // What the shell gets in the project.
    let env = env_of(&sb, &proj, &[], &["env", "--shell", "dotenv"]);
    assert_eq!(
        value_in(&env, "TORCH_EXTENSIONS_DIR"),
        Some(format!("\"{}\"", ours("cuda-12.4")))
    );

    // One command with the other toolkit, from that shell: its own directory.
    let te = ours("cuda-12.4");
    let run = ["run", "cuda-11.8", "--", "env"];
    let env = env_of(&sb, &proj, &[("TORCH_EXTENSIONS_DIR", &te)], &run);
    assert_eq!(
        value_in(&env, "TORCH_EXTENSIONS_DIR"),
        Some(ours("cuda-11.8"))
    );

    // A directory the user set stays theirs.
    let env = env_of(&sb, &proj, &[("TORCH_EXTENSIONS_DIR", "/data/ext")], &run);
    assert_eq!(
        value_in(&env, "TORCH_EXTENSIONS_DIR").as_deref(),
        Some("/data/ext")
    );
}

#[test]
fn pytorch_nvcc_is_the_users_a_value_gpuenv_once_set_is_dropped() {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let proj = sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n");
    let dotenv = ["env", "--shell", "dotenv"];

    // Unset, so torch runs `$CUDA_HOME/bin/nvcc` (the proxy), behind ccache when it finds one.
    let env = env_of(&sb, &proj, &[], &dotenv);
    assert_eq!(value_in(&env, "PYTORCH_NVCC"), None, "{env}");
    let home = value_in(&env, "CUDA_HOME").unwrap();
    assert!(home.contains("views/cuda-12.4"), "{home}");

    // The user's own choice is kept, in the shell and in `gpuenv run`.
    let run = ["run", "--", "env"];
    let env = env_of(&sb, &proj, &[("PYTORCH_NVCC", "ccache nvcc")], &run);
    assert_eq!(
        value_in(&env, "PYTORCH_NVCC").as_deref(),
        Some("ccache nvcc")
    );

    // What an older gpuenv set (a view's nvcc) is dropped, and torch's own choice is back.
    let old = sb.gpuenv_home().join("views/cuda-12.4/bin/nvcc");
    let env = env_of(&sb, &proj, &[("PYTORCH_NVCC", old.to_str().unwrap())], &run);
    assert_eq!(value_in(&env, "PYTORCH_NVCC"), None, "{env}");
}

/// A kernel and its launcher, without torch's headers: nvcc's part of the build.
const JIT_KERNEL: &str = r#"__global__ void twice_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
void twice_launch(float* x, int n) { twice_kernel<<<(n + 255) / 256, 256>>>(x, n); }
"#;

const JIT_LOAD: &str = r#"import torch.utils.cpp_extension as ext
m = ext.load(name="twice_jit", sources=["twice.cpp", "twice_kernel.cu"])
print(m.__file__)
"#;

/// REAL: torch's `load()` (torch from the index, CUDA 13.0 from NVIDIA's wheels, real ccache)
/// under `gpuenv run`, in a project whose trusted file says `[build] cache = "ccache"`.
/// load() compiles in gpuenv's torch-extensions directory, outside the project; the project's
/// cache still applies there, through the proxy (torch's own ccache wrapper is turned off,
/// so only gpuenv can have put ccache in front of nvcc).
#[test]
fn a_jit_extension_compiles_through_the_projects_build_cache() {
    if !have_tool("g++") || !have_tool("ccache") || !have_tool("ninja") {
        return;
    }
    let Some(cuda) = common::real::real_cuda13() else {
        return;
    };
    let Some(venv) = common::real::torch_venv() else {
        return;
    };
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", cuda.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(&proj.join("twice_kernel.cu"), JIT_KERNEL);
    write(
        &proj.join("twice.cpp"),
        &common::real::plain_module("twice_jit"),
    );
    write(&proj.join("jit.py"), JIT_LOAD);
    // torch 2.15 is a CUDA 13.2 build: the same major is close enough for this kernel.
    let file = proj.join("gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"13.0\"\ncuda-arch = [\"9.0\"]\n\n[build]\ncache = \"ccache\"\n\n[torch]\ncheck = \"major\"\n",
    );
    sb.ok(&["trust", file.to_str().unwrap()]);

    let env = env_of(&sb, &proj, &[], &["env", "--shell", "dotenv"]);
    assert_eq!(
        value_in(&env, "GPUENV_PROJECT_DIR"),
        Some(format!("\"{}\"", proj.display()))
    );

    let ccache = sb.path("ccache");
    let out = common::real::gpuenv_in_venv(&sb, &venv, &proj)
        .env("CCACHE_DIR", &ccache)
        .env("TORCH_NO_COMPILER_WRAPPER", "1")
        .args(["run", "--", "python", "jit.py"])
        .output()
        .unwrap();
    let built = succeeded(&out);
    let ours = sb
        .gpuenv_home()
        .join("torch-extensions/cuda-13.0/twice_jit");
    assert!(
        built.trim().starts_with(ours.to_str().unwrap()),
        "{built}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        common::real::ccache_hits_and_misses(&ccache),
        (0, 1),
        "the nvcc compile of twice_kernel.cu went through ccache"
    );
}
