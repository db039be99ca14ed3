//! `gpuenv install torch` against a local index: a venv whose torch is a CUDA 13.0 build
//! with its NVIDIA wheels (cudart, cccl, the cuda-toolkit metapackage) gets a toolkit that
//! downloads only nvcc, crt and nvvm and links the rest into the venv; once the venv is
//! deleted, `gpuenv list` says the toolkit is broken and how to fix it. (A real torch from
//! PyPI is in tests/torch_real.rs.)

#[path = "common/archives.rs"]
mod archives;
mod common;
#[path = "common/install_fixtures.rs"]
mod fixtures;
#[path = "common/server.rs"]
mod server;

use common::*;
use fixtures::*;
use server::Server;

/// A venv as pip leaves it after `pip install torch` for CUDA 13.0.
fn venv(sb: &Sandbox) -> std::path::PathBuf {
    let venv = sb.path("venv");
    let site = venv.join("lib/python3.11/site-packages");
    torch_package(&site, "2.9.0+cu130", Some("13.0"), None);
    let cu13 = site.join("nvidia/cu13");
    write(&cu13.join("include/cuda_runtime.h"), "// from the venv\n");
    write(&cu13.join("include/cublas_v2.h"), "// from the venv\n");
    write(
        &cu13.join("include/cccl/cuda/std/version"),
        "// from the venv\n",
    );
    write(&cu13.join("lib/libcudart.so.13"), "ELF");
    write(&cu13.join("lib/libcublas.so.13"), "ELF");
    for dist in [
        "cuda_toolkit-13.0.2",
        "nvidia_cuda_runtime-13.0.96",
        "nvidia_cuda_cccl-13.0.85",
        "nvidia_cublas-13.1.0.3",
    ] {
        write(&site.join(format!("{dist}.dist-info/METADATA")), "");
    }
    venv
}

#[test]
fn install_torch_downloads_only_what_the_venv_lacks_and_links_the_rest() {
    let server = Server::start();
    serve(&server, "", &pypi_tree());
    let sb = Sandbox::new();
    let venv = venv(&sb);
    let index = server.url("simple/");
    let vars = [
        ("GPUENV_PYPI_URL", index.as_str()),
        ("VIRTUAL_ENV", venv.to_str().unwrap()),
    ];
    let out = gpuenv(&sb, &vars, &["install", "torch"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("installed cuda-13.0.2-torch"),
        "{}",
        text(&out)
    );
    // Only the wheels torch does not have were fetched.
    let fetched: Vec<String> = server
        .log()
        .iter()
        .map(|h| h.path.clone())
        .filter(|p| p.ends_with(".whl"))
        .collect();
    for wanted in ["nvidia_cuda_nvcc", "nvidia_cuda_crt", "nvidia_nvvm"] {
        assert!(fetched.iter().any(|p| p.contains(wanted)), "{fetched:?}");
    }
    for has in ["nvidia_cuda_runtime", "nvidia_cuda_cccl"] {
        assert!(!fetched.iter().any(|p| p.contains(has)), "{fetched:?}");
    }

    let root = sb.gpuenv_home().join("toolchains/cuda-13.0.2-torch");
    let site = venv.join("lib/python3.11/site-packages");
    assert_eq!(
        fs_err::read_link(root.join("include/cuda_runtime.h")).unwrap(),
        site.join("nvidia/cu13/include/cuda_runtime.h")
    );
    assert!(
        root.join("include/crt/host_config.h").is_file(),
        "crt was downloaded"
    );
    assert!(!root.join("include/crt").is_symlink());
    assert_eq!(
        fs_err::read_link(root.join("lib64/libcudart.so")).unwrap(),
        std::path::Path::new("libcudart.so.13")
    );
    // Nothing was written into the venv.
    assert!(!site.join("nvidia/cu13/lib/libcudart.so").exists());

    // With the venv active, a `cuda = "torch"` pin picks it.
    let proj = sb.path("proj");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"torch\"\n");
    let mut cmd = sb.gpuenv();
    cmd.current_dir(&proj)
        .env("VIRTUAL_ENV", &venv)
        .args(["run", "--", "nvcc", "--version"]);
    let out = cmd.output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("V13.0.88"),
        "{}",
        text(&out)
    );

    // The venv goes away: list says which toolkit is broken and how to fix it.
    fs_err::remove_dir_all(&venv).unwrap();
    let out = gpuenv(&sb, &[], &["list"]);
    let t = text(&out);
    assert!(t.contains("cuda-13.0.2-torch is broken"), "{t}");
    assert!(t.contains("which is gone"), "{t}");
    assert!(
        t.contains("hint: `gpuenv uninstall cuda-13.0.2-torch`"),
        "{t}"
    );
}
