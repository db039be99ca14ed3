//! The ROCm of AMD's wheels (TheRock) inside a Python environment: a venv laid out as pip
//! and `rocm-sdk init` leave it, discovered and guarded; `gpuenv install torch` for a ROCm
//! torch linking the venv's wheels and downloading only what they lack. The wheels are the
//! local stand-in's (tests/it/common/therock.rs), with Debian's real ROCm inside.

use crate::common::therock;

use std::path::Path;

use crate::common::*;
use therock::{fetched, project, setup, KERNEL};

/// A venv as pip and `rocm-sdk init` leave it after `pip install "rocm[libraries,devel,
/// device-gfx90a]"` (before `init` when `init` is false); its site-packages.
fn therock_venv(sb: &Sandbox, init: bool) -> std::path::PathBuf {
    let site = sb.path("venv/lib/python3.12/site-packages");
    fs_err::create_dir_all(&site).unwrap();
    therock::pip_install(
        &site,
        &[
            "rocm-sdk-core",
            "rocm-sdk-libraries",
            "rocm-sdk-device-gfx90a",
            "rocm-sdk-devel",
        ],
    );
    if init {
        therock::rocm_sdk_init(&site);
    }
    site
}

#[test]
fn discover_registers_the_rocm_of_a_therock_venv_and_the_guard_holds_torch_to_it() {
    if !therock::payload_installed() {
        cannot_run("Debian's ROCm and clang-15/lld-15 are not installed; .ci/run installs them");
        return;
    }
    let sb = Sandbox::new();
    let venv = sb.path("venv");
    // Before `rocm-sdk init`: the core package is the tree.
    let site = therock_venv(&sb, false);
    let out = sb
        .gpuenv()
        .env("VIRTUAL_ENV", &venv)
        .args(["discover", "--json"])
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = rows.to_string();
    assert!(text.contains("_rocm_sdk_core"), "{text}");
    assert!(text.contains("rocm-7.14.0-venv"), "{text}");
    // After it: the devel tree `rocm-sdk path --root` prints.
    therock::rocm_sdk_init(&site);
    let out = sb
        .gpuenv()
        .env("VIRTUAL_ENV", &venv)
        .args(["discover", "--register"])
        .output()
        .unwrap();
    let said = succeeded(&out);
    assert!(said.contains("rocm-7.14.0-venv"), "{said}");
    let settings = sb.settings().unwrap();
    assert!(settings.contains("_rocm_sdk_devel"), "{settings}");
    assert!(
        settings.contains("rocm_sdk_core-7.14.0.dist-info"),
        "{settings}"
    );

    // Its hipcc compiles from the venv's tree; torch built for another ROCm is refused
    // before anything is compiled, a matching one passes.
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\nrocm = \"7.14.0-venv\"\nrocm-arch = [\"gfx90a\"]\n",
    );
    write(&proj.join("k.hip"), KERNEL);
    let hipcc = |site_of_torch: &Path, out: &str| {
        let inc = format!("-I{}", site_of_torch.join("torch/include").display());
        sb.gpuenv()
            .current_dir(&proj)
            .args([
                "run",
                "--",
                "hipcc",
                &inc,
                "--offload-arch=gfx90a",
                "-c",
                "k.hip",
                "-o",
                out,
            ])
            .output()
            .unwrap()
    };
    let old = sb.path("old/site-packages");
    torch_package(&old, "2.13.0+rocm7.13", None, Some("7.13.25101-abc"));
    let out = hipcc(&old, "ext.o");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("refusing to build a PyTorch extension"),
        "{err}"
    );
    assert!(err.contains("7.13") && err.contains("7.14"), "{err}");
    assert!(!proj.join("ext.o").exists(), "refused before compiling");
    torch_package(&site, "2.14.0+rocm7.14", None, Some("7.14.26014-def"));
    let out = hipcc(&site, "ext.o");
    succeeded(&out);
    let object = fs_err::read(proj.join("ext.o")).unwrap();
    assert!(object.windows(6).any(|w| w == b"gfx90a"));
}

#[test]
fn install_torch_for_a_rocm_torch_links_its_rocm_wheels_and_downloads_only_devel() {
    let Some((sb, server, index)) = setup() else {
        return;
    };
    // What `pip install torch` from AMD's index leaves: torch and rocm[libraries] with the
    // device wheel of this GPU; no devel wheel.
    let site = sb.path("venv/lib/python3.12/site-packages");
    fs_err::create_dir_all(&site).unwrap();
    therock::pip_install(
        &site,
        &[
            "rocm-sdk-core",
            "rocm-sdk-libraries",
            "rocm-sdk-device-gfx90a",
        ],
    );
    torch_package(&site, "2.14.0+rocm7.14", None, Some("7.14.26014-def"));
    let proj = project(&sb, &["gfx90a"]);
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("VIRTUAL_ENV", sb.path("venv"))
        .env("GPUENV_ROCM_INDEX_URL", &index)
        .args(["install", "torch"])
        .output()
        .unwrap();
    succeeded(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("installed rocm-7.14.0-torch"), "{err}");
    assert_eq!(fetched(&server), [therock::wheel_name("rocm-sdk-devel")]);
    let root = sb.toolchain("rocm-7.14.0-torch");
    // The venv's files are linked, not copied.
    let hipcc = fs_err::read_link(root.join("bin/hipcc")).unwrap();
    assert!(hipcc.starts_with(&site), "{}", hipcc.display());
    assert!(root.join("lib/cmake/hip/hip-config.cmake").is_file());
    assert!(root
        .join("lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat")
        .exists());
    // Its hipcc compiles an extension of that torch, through the guard.
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\nrocm = \"7.14.0-torch\"\nrocm-arch = [\"gfx90a\"]\n",
    );
    let inc = format!("-I{}", site.join("torch/include").display());
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("VIRTUAL_ENV", sb.path("venv"))
        .args([
            "run",
            "--",
            "hipcc",
            &inc,
            "--offload-arch=gfx90a",
            "-c",
            "k.hip",
            "-o",
            "ext.o",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    assert!(proj.join("ext.o").is_file());
    // A second GPU for it: only that device wheel is fetched, into the same tree.
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("VIRTUAL_ENV", sb.path("venv"))
        .env("GPUENV_ROCM_INDEX_URL", &index)
        .args(["install", "torch", "--component", "device-gfx1030"])
        .output()
        .unwrap();
    succeeded(&out);
    let got = fetched(&server);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got.contains(&therock::wheel_name("rocm-sdk-device-gfx1030")));
    assert!(root
        .join("lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat")
        .is_file());
    assert!(root
        .join("lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat")
        .exists());
    assert!(fs_err::read_link(root.join("bin/hipcc"))
        .unwrap()
        .starts_with(&site));
}
