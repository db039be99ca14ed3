//! An extension built under build isolation (uv's, pip's): the torch the build sees is one
//! the frontend installed for the build alone. The guard's refusal offers what reaches that
//! torch — isolation off, or the release pinned by its version — never `cuda = "torch"`,
//! which reads the user's environment; and `gpuenv pin torch` where no torch is visible
//! says that nothing resolves the pin.

use std::path::PathBuf;

use crate::common::proxy_world::{stderr, World};
use crate::common::*;

/// A torch 2.9.0+cu130 in a uv build environment, as `uv build` / `uv sync` of a project
/// whose build requires torch leaves it; nvcc's arguments as its cpp_extension passes them.
fn isolated_build(w: &World) -> (PathBuf, Vec<String>) {
    let site =
        w.sb.path("home/.cache/uv/builds-v0/.tmpK3xQ9z/lib/python3.12/site-packages");
    torch_package(&site, "2.9.0+cu130", Some("13.0"), None);
    let inc = site.join("torch/include");
    let args = vec![
        format!("-I{}", inc.display()),
        format!("-I{}", inc.join("torch/csrc/api/include").display()),
        "-DTORCH_EXTENSION_NAME=ext".into(),
        "-c".into(),
        "x.cu".into(),
        "-o".into(),
        "x.o".into(),
    ];
    (site, args)
}

fn hints(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.strip_prefix("hint: "))
        .collect()
}

#[test]
fn a_refusal_under_build_isolation_offers_what_reaches_the_isolated_torch() {
    let w = World::new("12.4");
    let (site, args) = isolated_build(&w);
    let shim = w.sb.gpuenv_home().join("shims/nvcc");

    let out = w.run(&shim, &args, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("= \"torch\"` under [toolchain]"), "{err}");
    assert!(!err.contains("pip install torch=="), "{err}");
    let said = hints(&err);
    assert_eq!(
        said[0],
        format!(
            "this torch is the one uv installed in an isolated build environment ({}): `cuda = \"torch\"` and a `pip install` into your environment cannot reach it; build with isolation off, against your environment's torch: `pip install --no-build-isolation <path>` (uv: `uv pip install --no-build-isolation <path>`, or `no-build-isolation-package = [\"<package>\"]` under [tool.uv] for `uv sync`)",
            site.display()
        )
    );
    assert_eq!(
        said[1],
        "or pin the cuda release that torch was built for, by its version: `gpuenv install cuda-13.0`, then `gpuenv pin cuda-13.0`"
    );

    // With a 13.0 registered, the pin alone; followed, the build runs.
    let root = cuda_runfile(&w.sb.path("opt/cuda-13.0"), "13.0.88");
    w.sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    let out = w.run(&shim, &args, &[]);
    let err = stderr(&out);
    assert_eq!(
        hints(&err)[1],
        "or pin the cuda release that torch was built for, by its version: `gpuenv pin cuda-13.0`",
        "{err}"
    );
    let pinned =
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .args(["pin", "cuda-13.0"])
            .output()
            .unwrap();
    succeeded(&pinned);
    succeeded(&w.run(&shim, &args, &[]));
    assert_eq!(w.log("cuda-13.0").unwrap().trim(), args.join(" "));
}

#[test]
fn pin_torch_where_no_torch_is_visible_says_nothing_resolves_it() {
    let sb = Sandbox::new();
    let proj = sb.path("proj");
    fs_err::create_dir_all(&proj).unwrap();
    // No venv, no conda, and a PATH whose python (if any) has no torch.
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .env("PATH", sb.path("empty-bin"))
        .args(["pin", "torch"])
        .output()
        .unwrap();
    let t = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("warning: pinned cuda = \"torch\" in")
            && t.contains("but no torch is visible here, so nothing resolves it"),
        "{t}"
    );
    assert!(t.contains("`gpuenv pin cuda-<version>`"), "{t}");

    // With the environment that has torch active: what it picks, or what to install.
    let site = sb.path("venv/lib/python3.11/site-packages");
    torch_package(&site, "2.9.0+cu130", Some("13.0"), None);
    let pin_torch_in_venv = || {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("VIRTUAL_ENV", sb.path("venv"))
            .args(["pin", "torch"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let t = pin_torch_in_venv();
    assert!(
        t.contains(
            "torch 2.9.0+cu130 was built for cuda-13.0, and no registered toolchain matches it yet"
        ) && t.contains(
            "hint: `gpuenv install torch`, with the Python environment of that torch active"
        ),
        "{t}"
    );
    let root = cuda_runfile(&sb.path("opt/cuda-13.0"), "13.0.88");
    sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    let t = pin_torch_in_venv();
    assert!(
        t.contains("the toolkit torch 2.9.0+cu130 was built for (now cuda-13.0)"),
        "{t}"
    );
}
