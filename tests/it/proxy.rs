//! The proxy's plan and the torch guard, through the real binaries: nvcc called the way
//! torch.utils.cpp_extension calls it, through the shims dir, `+spec` and `$CUDA_HOME/bin/nvcc` (what torch's extension builds run); which
//! toolchain answers, and what is said when none does.

use crate::common::proxy_world as world;

use std::path::{Path, PathBuf};

use crate::common::*;
use fs_err as fs;
use world::{stderr, World};

#[test]
fn a_mismatched_extension_build_is_refused_before_compiling() {
    let w = World::new("11.8");
    let out = w.run(&w.view_nvcc("cuda-11.8"), &w.ext_args(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("refusing to build a PyTorch extension: nvcc is cuda 11.8.89 but torch 2.4.1+cu121 was built for cuda 12.1"), "{err}");
    assert!(
        err.contains(&format!(
            "toolchain: cuda-11.8 at {} (invoked as {}; pinned to 11.8 in {}:2:8)",
            w.sb.path("opt/cuda-11.8").display(),
            w.view_nvcc("cuda-11.8").display(),
            w.proj.join("gpuenv.toml").display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "torch:     {} (version.py: cuda = '12.1')",
            w.site.join("torch").display()
        )),
        "{err}"
    );
    // cuda-12.1 is registered: the way out is to use it, not to install it again.
    assert!(
        err.contains("hint: use cuda-12.1, the registered toolkit torch was built for: `gpuenv use cuda-12.1` in this shell, `gpuenv pin cuda-12.1` for this project (or `cuda = \"torch\"` under [toolchain] in gpuenv.toml, which follows torch)"),
        "{err}"
    );
    assert!(!err.contains("gpuenv install"), "{err}");
    assert!(
        err.contains("hint: or install the torch built for CUDA 11.8: `pip install torch==2.4.1+cu118 --index-url https://download.pytorch.org/whl/cu118`"),
        "{err}"
    );
    assert_eq!(w.log("cuda-11.8"), None, "nvcc must not have run");
}

#[test]
fn the_refusals_hint_can_be_followed_pin_the_registered_toolkit_and_the_build_runs() {
    let w = World::new("11.8");
    let shim = w.sb.gpuenv_home().join("shims/nvcc");
    let out = w.run(&shim, &w.ext_args(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("`gpuenv pin cuda-12.1` for this project"));

    let pinned =
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .args(["pin", "cuda-12.1"])
            .output()
            .unwrap();
    succeeded(&pinned);
    succeeded(&w.run(&shim, &w.ext_args(), &[]));
    assert_eq!(w.log("cuda-12.1").unwrap().trim(), w.ext_args().join(" "));
    // `gpuenv use` does the same for one shell, through GPUENV_TOOLCHAIN.
    write(
        &w.proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"11.8\"\n",
    );
    succeeded(&w.run(&shim, &w.ext_args(), &[("GPUENV_TOOLCHAIN", "cuda-12.1")]));
}

#[test]
fn the_refusal_suggests_an_install_only_when_nothing_registered_matches_and_a_source_has_it() {
    let w = World::new("11.8");
    let nvcc = w.view_nvcc("cuda-11.8");
    let hints = |vars: &[(&str, &str)]| -> Vec<String> {
        let out = w.run(&nvcc, &w.ext_args(), vars);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        stderr(&out)
            .lines()
            .filter_map(|l| l.strip_prefix("hint: "))
            .map(str::to_string)
            .collect()
    };

    // Nothing registered is of 12.8, and NVIDIA's redist has it.
    torch_package(&w.site, "2.8.0+cu128", Some("12.8"), None);
    assert_eq!(
        hints(&[])[0],
        "use the toolkit torch was built for: `gpuenv install cuda-12.8`, and pin it with `cuda = \"torch\"` under [toolchain] in gpuenv.toml"
    );
    // Under the major policy any registered 12.x matches: the highest is named.
    assert_eq!(
        hints(&[("GPUENV_TORCH_CHECK", "major")])[0],
        "use cuda-12.4, a registered toolkit of cuda 12 (the policy is major): `gpuenv use cuda-12.4` in this shell, `gpuenv pin cuda-12.4` for this project"
    );

    // No source of `gpuenv install` has CUDA 10.2: no install is suggested without a manifest.
    torch_package(&w.site, "1.12.1+cu102", Some("10.2"), None);
    let first = &hints(&[])[0];
    assert!(
        first.starts_with("no registered toolkit is of cuda 10.2, the one torch was built for; no source of `gpuenv install` has CUDA 10.2 (nvidia from 11.0, pypi from 13.0)"),
        "{first}"
    );
    assert!(first.contains("`gpuenv link cuda-10.2 <path>`"), "{first}");
    assert!(!first.contains("`gpuenv install cuda-10.2`"), "{first}");
}

#[test]
fn check_names_the_toolkit_gpuenv_install_torch_made_instead_of_an_install() {
    let w = World::new("12.4");
    torch_package(&w.site, "2.15.0+cu132", Some("13.2"), None);
    let made = cuda_runfile(&w.sb.path("opt/cuda-13.2.2-torch"), "13.2.2");
    w.sb.ok(&["link", "cuda-13.2.2-torch", made.to_str().unwrap()]);
    let out =
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .env("VIRTUAL_ENV", w.sb.path("venv"))
            .args(["check"])
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("hint: use cuda-13.2.2-torch, the registered toolkit torch was built for: `gpuenv use cuda-13.2.2-torch` in this shell, `gpuenv pin cuda-13.2.2-torch` for this project"),
        "{err}"
    );
    assert!(!err.contains("gpuenv install"), "{err}");
}

#[test]
fn a_matching_build_runs_the_toolkits_nvcc_stub_with_the_same_arguments() {
    let w = World::new("12.1");
    let out = w.run(&w.view_nvcc("cuda-12.1"), &w.ext_args(), &[]);
    succeeded(&out);
    assert_eq!(w.log("cuda-12.1").unwrap().trim(), w.ext_args().join(" "));
}

#[test]
fn policy_major_lets_12_4_build_for_torch_12_1_and_off_lets_anything() {
    let w = World::new("12.4");
    let nvcc = w.view_nvcc("cuda-12.4");
    assert_eq!(w.run(&nvcc, &w.ext_args(), &[]).status.code(), Some(1));
    let out = w.run(&nvcc, &w.ext_args(), &[("GPUENV_TORCH_CHECK", "major")]);
    succeeded(&out);
    write(
        &w.proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n[torch]\ncheck = \"major\"\n",
    );
    // A relaxation applies only once the user trusted the file.
    assert_eq!(w.run(&nvcc, &w.ext_args(), &[]).status.code(), Some(1));
    w.sb.ok(&["trust", w.proj.join("gpuenv.toml").to_str().unwrap()]);
    assert!(w.run(&nvcc, &w.ext_args(), &[]).status.success());
    // The variable beats the file.
    assert_eq!(
        w.run(&nvcc, &w.ext_args(), &[("GPUENV_TORCH_CHECK", "minor")])
            .status
            .code(),
        Some(1)
    );
    let w = World::new("11.8");
    let out = w.run(
        &w.view_nvcc("cuda-11.8"),
        &w.ext_args(),
        &[("GPUENV_TORCH_CHECK", "off")],
    );
    succeeded(&out);
}

#[test]
fn a_cpu_only_torch_is_refused() {
    let w = World::new("12.1");
    torch_package(&w.site, "2.4.1+cpu", None, None);
    let out = w.run(&w.view_nvcc("cuda-12.1"), &w.ext_args(), &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("torch 2.4.1+cpu has no cuda build (cuda = None)"),
        "{err}"
    );
    assert!(
        err.contains(
            "pip install torch==2.4.1+cu121 --index-url https://download.pytorch.org/whl/cu121"
        ),
        "{err}"
    );
}

#[test]
fn non_extension_calls_are_not_checked() {
    let w = World::new("11.8");
    let args: Vec<String> = ["-c", "plain.cu"].iter().map(|s| s.to_string()).collect();
    // A g++ that CUDA 11.8 accepts comes first on PATH, so gpuenv adds no `-ccbin`.
    let gxx = w.sb.path("gcc11/g++");
    write_exe(&gxx, "#!/bin/sh\necho 'g++ (GCC) 11.4.0'\n");
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        gxx.parent().unwrap().display()
    );
    let out = w.run(&w.view_nvcc("cuda-11.8"), &args, &[("PATH", &path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Passed on unchanged: exactly the arguments given.
    let log = w.log("cuda-11.8").unwrap();
    assert_eq!(log, "-c plain.cu\n");
}

#[test]
fn through_the_shims_dir_and_plus_spec() {
    let w = World::new("11.8");
    let path = w.shims_path();
    let nvcc = w.sb.gpuenv_home().join("shims/nvcc");
    assert!(nvcc.exists(), "link creates the shims");
    let out = w.run(Path::new("nvcc"), &w.ext_args(), &[("PATH", &path)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pinned to 11.8 in"),
        "{}",
        stderr(&out)
    );

    let mut args = vec!["+cuda-12.1".to_string()];
    args.extend(w.ext_args());
    let out = w.run(Path::new("nvcc"), &args, &[("PATH", &path)]);
    succeeded(&out);
    assert_eq!(
        w.log("cuda-12.1").unwrap().trim(),
        w.ext_args().join(" "),
        "+spec is removed"
    );

    // GPUENV_TOOLCHAIN beats the file here too.
    let out = w.run(
        Path::new("nvcc"),
        &w.ext_args(),
        &[("PATH", &path), ("GPUENV_TOOLCHAIN", "cuda-12.1")],
    );
    succeeded(&out);
}

#[test]
fn torchs_nvcc_is_the_proxy_and_torch_is_found_from_the_python() {
    let w = World::new("11.8");
    let env: serde_json::Value = serde_json::from_str(
        &w.sb
            .gpuenv()
            .current_dir(&w.proj)
            .args(["env", "--shell", "json"])
            .output()
            .map(|o| String::from_utf8(o.stdout).unwrap())
            .unwrap(),
    )
    .unwrap();
    // torch runs `$CUDA_HOME/bin/nvcc` (behind ccache when it finds one); PYTORCH_NVCC,
    // which would replace that, is left to the user.
    assert!(env.get("PYTORCH_NVCC").is_none(), "{env}");
    let pytorch_nvcc = PathBuf::from(env["CUDA_HOME"].as_str().unwrap()).join("bin/nvcc");
    assert_eq!(pytorch_nvcc, w.view_nvcc("cuda-11.8"));
    // No include dir: torch comes from the active Python, found without importing it
    // (its __init__.py raises).
    let args: Vec<String> = ["-DTORCH_EXTENSION_NAME=jit_ext", "-c", "k.cu"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let venv = w.sb.path("venv");
    let out = w.run(
        &pytorch_nvcc,
        &args,
        &[("VIRTUAL_ENV", venv.to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    if have_tool("python3") {
        let out = w.run(
            &pytorch_nvcc,
            &args,
            &[("PYTHONPATH", w.site.to_str().unwrap())],
        );
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains(&w.site.join("torch").display().to_string()));
    }
    // No torch anywhere: the build goes on, with a warning that it could not be checked.
    let out = w.run(&pytorch_nvcc, &args, &[]);
    succeeded(&out);
    assert!(stderr(&out).contains("cannot check it"), "{}", stderr(&out));
}

#[test]
fn no_toolchain_or_no_such_tool_says_what_was_active_and_how_to_fix() {
    let w = World::new("12.1");
    let out = w.run(Path::new("hipcc"), &[], &[("PATH", &w.shims_path())]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no toolchain is active for hipcc here"),
        "{err}"
    );
    assert!(err.contains("pins no toolchain of this kind"), "{err}");
    assert!(err.contains("hint: `gpuenv pin <spec>`"), "{err}");

    let out = w.run(
        Path::new("ptxas"),
        &[],
        &[("PATH", &w.shims_path()), ("GPUENV_TOOLCHAIN", "rocm-6.2")],
    );
    // rocm comes from the variable, cuda from the file: ptxas is found in cuda-12.1.
    succeeded(&out);
    fs::remove_file(w.proj.join("gpuenv.toml")).unwrap();
    let out = w.run(
        Path::new("ptxas"),
        &[],
        &[("PATH", &w.shims_path()), ("GPUENV_TOOLCHAIN", "rocm-6.2")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .contains("ptxas is not in the active toolchain rocm-6.2.4 (set by GPUENV_TOOLCHAIN"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn rocm_hipcc_is_compared_with_torch_version_hip() {
    let w = World::new("12.1");
    torch_package(
        &w.site,
        "2.3.0.dev20240308+rocm6.0",
        None,
        Some("6.0.32830-d62f6a171"),
    );
    write(&w.proj.join("gpuenv.toml"), "[toolchain]\nrocm = \"6.2\"\n");
    let hipcc = w.sb.gpuenv_home().join("views/rocm-6.2.4/bin/hipcc");
    let out = w.run(&hipcc, &w.ext_args(), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "hipcc is rocm 6.2.4 but torch 2.3.0.dev20240308+rocm6.0 was built for rocm 6.0"
        ),
        "{}",
        stderr(&out)
    );
    // AMD's wheels start at 7.14: ROCm 6.0 comes from a manifest, so a plain
    // `gpuenv install rocm-6.0` would fail and is not offered.
    assert!(
        stderr(&out).contains("hint: no registered toolkit is of rocm 6.0, the one torch was built for; AMD's ROCm wheels start at 7.14, so ROCm 6.0 comes from a gpuenv manifest: `gpuenv install rocm-6.0 --manifest <path|url>`; or register a toolkit already on disk with `gpuenv link rocm-6.0 <path>`"),
        "{}",
        stderr(&out)
    );
    let pinned =
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .args(["show"])
            .env("GPUENV_TOOLCHAIN", "rocm-6.0")
            .output()
            .unwrap();
    assert_eq!(pinned.status.code(), Some(2));
    assert!(
        stderr(&pinned).contains("hint: AMD's ROCm wheels start at 7.14, so ROCm 6.0 comes from a gpuenv manifest: `gpuenv install rocm-6.0 --manifest <path|url>`"),
        "{}",
        stderr(&pinned)
    );
}

#[test]
fn check_compares_without_building() {
    let w = World::new("11.8");
    let venv = w.sb.path("venv");
    let check = |dir: &Path, extra: &[&str]| {
        let mut args = vec!["check", "--json"];
        args.extend_from_slice(extra);
        let out =
            w.sb.gpuenv()
                .current_dir(dir)
                .env("VIRTUAL_ENV", &venv)
                .args(&args)
                .output()
                .unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        (out.status.code(), json)
    };
    let (code, json) = check(&w.proj, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(json["status"], "mismatch");
    assert_eq!(json["toolchain"]["name"], "cuda-11.8");
    assert_eq!(json["torch"]["cuda"], "12.1");
    assert_eq!(json["torch"]["version"], "2.4.1+cu121");
    assert!(json["message"]
        .as_str()
        .unwrap()
        .contains("torch 2.4.1+cu121 was built for cuda 12.1"));
    assert!(json["hints"][0]
        .as_str()
        .unwrap()
        .contains("`gpuenv pin cuda-12.1` for this project"));

    write(
        &w.proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.1\"\n",
    );
    let (code, json) = check(&w.proj, &[]);
    assert_eq!((code, json["status"].as_str()), (Some(0), Some("match")));

    // Nothing active: cannot tell.
    let (code, json) = check(w.sb.dir.path(), &[]);
    assert_eq!((code, json["status"].as_str()), (Some(2), Some("unknown")));

    // --python asks that interpreter.
    if have_tool("python3") {
        let out =
            w.sb.gpuenv()
                .current_dir(&w.proj)
                .env("PYTHONPATH", &w.site)
                .args(["check", "--python", "/usr/bin/python3"])
                .output()
                .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("matches cuda-12.1"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn cuda_torch_pin_picks_the_highest_patch_of_torchs_version() {
    let w = World::new("torch");
    let older = cuda_runfile(&w.sb.path("opt/cuda-12.1.0"), "12.1.0");
    w.sb.ok(&["link", "cuda-12.1.0", older.to_str().unwrap()]);
    let venv = w.sb.path("venv");
    let out =
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .env("VIRTUAL_ENV", &venv)
            .args(["show"])
            .output()
            .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("cuda: cuda-12.1 (pinned to torch in"),
        "{text}{}",
        stderr(&out)
    );
    assert!(text.contains("is built for cuda 12.1"), "{text}");
    // The guard is then satisfied by construction.
    let out = w.run(
        &w.sb.gpuenv_home().join("shims/nvcc"),
        &w.ext_args(),
        &[("VIRTUAL_ENV", venv.to_str().unwrap())],
    );
    succeeded(&out);

    torch_package(&w.site, "2.8.0+cu128", Some("12.8"), None);
    let out =
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .env("VIRTUAL_ENV", &venv)
            .args(["show"])
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("cuda-12.8 is not installed: the pin cuda = \"torch\""),
        "{err}"
    );
    assert!(
        err.contains("hint: install it with `gpuenv install cuda-12.8`"),
        "{err}"
    );
}

#[test]
fn shims_follow_the_registry() {
    let w = World::new("12.1");
    let shims = w.sb.gpuenv_home().join("shims");
    for tool in ["nvcc", "ptxas", "hipcc"] {
        assert!(shims.join(tool).exists(), "{tool}");
    }
    w.sb.ok(&["unlink", "rocm-6.2.4"]);
    assert!(
        !shims.join("hipcc").exists(),
        "a tool no toolchain has any more loses its shim"
    );
    assert!(shims.join("nvcc").exists());
    // A stray file in the shims dir is cleaned up by reshim.
    write(&shims.join("stale-tool"), "");
    w.sb.ok(&["reshim"]);
    assert!(!shims.join("stale-tool").exists());
    assert_eq!(
        fs::read_link(shims.join("nvcc")).unwrap(),
        w.sb.gpuenv_home().join("bin/gpuenv-shim")
    );
}
