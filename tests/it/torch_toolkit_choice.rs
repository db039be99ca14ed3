//! REAL: `cuda = "torch"` picks the toolkit made for that torch. With the real torch 2.15
//! venv (a CUDA 13.2 build), a plain `cuda-13.2.2` of the minimal profile (no cusparse.h)
//! and the `cuda-13.2.2-torch` that `gpuenv install torch` makes of the venv's own wheels
//! are both registered: the pin that `gpuenv pin torch` writes resolves to the latter,
//! whose nvcc preprocesses `ATen/cuda/CUDAContext.h`; the doctor flags the plain one, active
//! by `GPUENV_TOOLCHAIN`, as lacking the headers torch includes.

use std::path::Path;

use crate::common;
use crate::common::real::{index_reachable, real_gpuenv, torch_venv};
use crate::common::*;

fn in_venv(sb: &Sandbox, venv: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    real_gpuenv(sb)
        .current_dir(dir)
        .env("VIRTUAL_ENV", venv)
        .env("PATH", format!("{}/bin:/usr/bin:/bin", venv.display()))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_torch_pin_picks_the_toolkit_made_for_that_torch_and_doctor_flags_one_without_its_headers() {
    if !have_tool("g++") {
        return;
    }
    let Some(venv) = torch_venv() else {
        return;
    };
    if !index_reachable() {
        return;
    }
    let sb = Sandbox::new();
    let home = sb.home();
    let install = [
        "install",
        "cuda-13.2.2",
        "--source",
        "pypi",
        "--profile",
        "minimal",
    ];
    succeeded(&in_venv(&sb, &venv, &home, &install));
    succeeded(&in_venv(&sb, &venv, &home, &["install", "torch"]));

    let ext = sb.path("ext");
    fs_err::create_dir_all(&ext).unwrap();
    succeeded(&in_venv(&sb, &venv, &ext, &["pin", "torch"]));
    let file = fs_err::read_to_string(ext.join("gpuenv.toml")).unwrap();
    assert!(file.contains("cuda = \"torch\""), "{file}");

    // The pin resolves to the venv's toolkit, not the plain one of the same release.
    let show = succeeded(&in_venv(&sb, &venv, &ext, &["show"]));
    assert!(show.contains("cuda-13.2.2-torch"), "{show}");

    // Its nvcc, through the proxy and the guard, finds every header CUDAContext.h includes.
    write(
        &ext.join("x.cu"),
        "#include <ATen/cuda/CUDAContext.h>\nint main() { return 0; }\n",
    );
    let python = fs_err::read_dir(venv.join("lib"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .expect("the venv has lib/python3.*")
        .path();
    let site = python.join("site-packages/torch/include");
    let api = site.join("torch/csrc/api/include");
    let run = [
        "run",
        "--",
        "nvcc",
        "-E",
        "-std=c++17",
        "-I",
        site.to_str().unwrap(),
        "-I",
        api.to_str().unwrap(),
        "x.cu",
        "-o",
        "/dev/null",
    ];
    succeeded(&in_venv(&sb, &venv, &ext, &run));

    // The plain toolkit, chosen by the variable, is flagged by the doctor.
    let out = real_gpuenv(&sb)
        .current_dir(&ext)
        .env("VIRTUAL_ENV", &venv)
        .env("GPUENV_TOOLCHAIN", "cuda-13.2.2")
        .args(["doctor"])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("cuda-13.2.2 has no") && said.contains("cusparse.h"),
        "{said}"
    );
    assert!(said.contains("gpuenv install torch"), "{said}");
    // And the torch toolkit is not.
    let out = in_venv(&sb, &venv, &ext, &["doctor"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!said.contains("cusparse.h"), "{said}");
}

/// REAL: the case. The real torch 2.15 (CUDA 13.2) and a project pinned to the
/// real CUDA 13.0: `gpuenv check` names the `cuda-13.2.2-torch` that `gpuenv install torch`
/// made, not an install of 13.2; following the hint (`gpuenv pin`) makes the check pass.
#[test]
fn check_names_the_toolkit_made_for_the_real_torch_and_its_hint_can_be_followed() {
    let Some(venv) = torch_venv() else {
        return;
    };
    let Some(cuda13) = common::real::real_cuda13() else {
        return;
    };
    if !index_reachable() {
        return;
    }
    let sb = Sandbox::new();
    let home = sb.home();
    succeeded(&in_venv(
        &sb,
        &venv,
        &home,
        &["link", "cuda-13.0", cuda13.to_str().unwrap()],
    ));
    succeeded(&in_venv(&sb, &venv, &home, &["install", "torch"]));

    let proj = sb.project("proj", "[toolchain]\ncuda = \"13.0\"\n");
    let out = in_venv(&sb, &venv, &proj, &["check"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("hint: use cuda-13.2.2-torch, the registered toolkit torch was built for: `gpuenv use cuda-13.2.2-torch` in this shell, `gpuenv pin cuda-13.2.2-torch` for this project"),
        "{err}"
    );
    assert!(!err.contains("gpuenv install cuda-13.2"), "{err}");

    succeeded(&in_venv(&sb, &venv, &proj, &["pin", "cuda-13.2.2-torch"]));
    let out = in_venv(&sb, &venv, &proj, &["check"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("matches cuda-13.2.2-torch"), "{err}");
}
