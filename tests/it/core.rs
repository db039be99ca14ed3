//! The real binary end to end: linking, pinning, resolving and the environment it gives.

use fs_err as fs;

use crate::common::*;
use serde_json::Value;

/// Three toolchains linked and a project pinned to one of them.
struct Project {
    sb: Sandbox,
    cuda118: std::path::PathBuf,
    cuda124: std::path::PathBuf,
    rocm: std::path::PathBuf,
}

fn project() -> Project {
    let sb = Sandbox::new();
    let cuda118 = cuda_runfile(&sb.path("opt/cuda-11.8"), "11.8.89");
    let cuda124 = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    let rocm = rocm(&sb.path("opt/rocm-6.2.4"), "6.2.4-120");
    sb.ok(&["link", "cuda-11.8", cuda118.to_str().unwrap()]);
    sb.ok(&["link", "cuda-12.4", cuda124.to_str().unwrap()]);
    sb.ok(&["link", "rocm-6.2.4", rocm.to_str().unwrap()]);
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\", \"8.6\", \"9.0+PTX\"]\n",
    );
    fs::create_dir_all(sb.path("proj/src/deep")).unwrap();
    Project {
        sb,
        cuda118,
        cuda124,
        rocm,
    }
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn a_pinned_project_gets_its_toolkit_and_loses_stale_entries() {
    let p = project();
    let sb = &p.sb;
    let view = sb.gpuenv_home().join("views/cuda-12.4");
    let stale_path = format!(
        "/home/u/bin:/usr/local/cuda-11.3/bin:{}/bin:/usr/bin:/bin",
        p.cuda118.display()
    );
    let stale_libs = format!(
        "{}/lib64:/opt/intel/lib:/usr/local/cuda-11.3/lib64",
        p.cuda118.display()
    );
    let out = sb
        .gpuenv()
        .current_dir(sb.path("proj/src/deep"))
        .env("PATH", &stale_path)
        .env("LD_LIBRARY_PATH", &stale_libs)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    succeeded(&out);
    let env = json(&String::from_utf8_lossy(&out.stdout));
    let v = view.display().to_string();
    assert_eq!(env["CUDA_HOME"], v);
    assert_eq!(env["CUDA_PATH"], v);
    assert_eq!(env["CUDAToolkit_ROOT"], v);
    assert_eq!(env["CUDACXX"], format!("{v}/bin/nvcc"));
    assert_eq!(env["PATH"], format!("{v}/bin:/home/u/bin:/usr/bin:/bin"));
    // lib64 (a link into targets/ in the runfile layout) is reached through the view.
    let lib = format!("{v}/lib64");
    assert_eq!(env["LD_LIBRARY_PATH"], format!("{lib}:/opt/intel/lib"));
    assert_eq!(env["LIBRARY_PATH"], lib);
    assert_eq!(env["CPATH"], format!("{v}/include"));
    assert_eq!(env["TORCH_CUDA_ARCH_LIST"], "8.0;8.6;9.0+PTX");
    // CMake reads CUDAARCHS (not CMAKE_CUDA_ARCHITECTURES) from the environment.
    assert_eq!(env["CUDAARCHS"], "80-real;86-real;90");
    assert!(env.get("CMAKE_CUDA_ARCHITECTURES").is_none(), "{env}");
    assert_eq!(env["GPUENV_ACTIVE"], "cuda-12.4");
    assert!(env.get("ROCM_PATH").is_none(), "ROCm is not pinned: {env}");
    assert!(fs::metadata(format!("{lib}/libcudart.so")).is_ok());
}

#[test]
fn run_gives_the_command_the_pinned_toolkit() {
    let p = project();
    let sb = &p.sb;
    let out = sb
        .gpuenv()
        .current_dir(sb.path("proj/src"))
        .env(
            "PATH",
            format!(
                "/usr/local/cuda-11.3/bin:{}/bin:/usr/bin:/bin",
                p.cuda118.display()
            ),
        )
        .env("LD_LIBRARY_PATH", format!("{}/lib", p.rocm.display()))
        .args([
            "run",
            "--",
            "sh",
            "-c",
            "echo $CUDA_HOME; command -v nvcc; echo $LD_LIBRARY_PATH; nvcc --version | tail -2",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let v = sb
        .gpuenv_home()
        .join("views/cuda-12.4")
        .display()
        .to_string();
    assert_eq!(lines[0], v);
    assert_eq!(lines[1], format!("{v}/bin/nvcc"));
    // CUDA does not remove ROCm's entries: only the same kind's.
    assert_eq!(lines[2], format!("{v}/lib64:{}/lib", p.rocm.display()));
    assert_eq!(lines[3], "Cuda compilation tools, release 12.4, V12.4.131");
    let _ = &p.cuda124;
}

#[test]
fn gpuenv_toolchain_beats_the_file_and_run_beats_both() {
    let p = project();
    let sb = &p.sb;
    let home_of = |extra: &[&str], var: Option<&str>| {
        let mut cmd = sb.gpuenv();
        cmd.current_dir(sb.path("proj/src"));
        if let Some(v) = var {
            cmd.env("GPUENV_TOOLCHAIN", v);
        }
        let mut args = vec!["run"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", "echo $GPUENV_ACTIVE"]);
        let out = cmd.args(&args).output().unwrap();
        succeeded(&out);
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    assert_eq!(home_of(&[], None), "cuda-12.4");
    assert_eq!(home_of(&[], Some("cuda-11.8")), "cuda-11.8");
    assert_eq!(home_of(&[], Some("rocm-6")), "cuda-12.4,rocm-6.2.4");
    assert_eq!(home_of(&["cuda-12"], Some("cuda-11.8")), "cuda-12.4");
    assert_eq!(home_of(&["cuda-11"], None), "cuda-11.8");

    let show = json(
        &sb.gpuenv()
            .current_dir(sb.path("proj/src"))
            .env("GPUENV_TOOLCHAIN", "rocm-6.2")
            .args(["show", "--json"])
            .output()
            .map(|o| String::from_utf8(o.stdout).unwrap())
            .unwrap(),
    );
    let tcs = show["toolchains"].as_array().unwrap();
    assert_eq!(tcs[0]["name"], "cuda-12.4");
    assert!(
        tcs[0]["reason"]
            .as_str()
            .unwrap()
            .contains("proj/gpuenv.toml:2:8"),
        "{show}"
    );
    assert_eq!(tcs[1]["name"], "rocm-6.2.4");
    assert!(
        tcs[1]["reason"]
            .as_str()
            .unwrap()
            .contains("GPUENV_TOOLCHAIN"),
        "{show}"
    );
}

#[test]
fn the_exit_status_of_run_is_the_commands() {
    let p = project();
    p.sb.gpuenv()
        .current_dir(p.sb.path("proj"))
        .args(["run", "--", "sh", "-c", "exit 7"])
        .assert()
        .code(7);
}

#[test]
fn rocm_environment_and_rccl() {
    let p = project();
    let sb = &p.sb;
    let env = json(&sb.ok(&["env", "rocm-6.2", "--shell", "json"]));
    let v = sb
        .gpuenv_home()
        .join("views/rocm-6.2.4")
        .display()
        .to_string();
    for k in ["ROCM_PATH", "ROCM_HOME", "HIP_PATH", "RCCL_HOME"] {
        assert_eq!(env[k], v, "{k}");
    }
    assert_eq!(env["HIP_PLATFORM"], "amd");
    assert_eq!(env["CPATH"], format!("{v}/include"));
    assert_eq!(env["LD_LIBRARY_PATH"], format!("{v}/lib"));
    assert_eq!(env["CMAKE_PREFIX_PATH"], v);
    assert!(fs::metadata(format!("{v}/include/hip/hip_runtime.h")).is_ok());
    assert!(env["PATH"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{v}/bin:")));
}

#[test]
fn nccl_inside_the_tree_is_exported() {
    let sb = Sandbox::new();
    let root = cuda_runfile(&sb.path("cuda-12.4"), "12.4.131");
    write(&root.join("targets/x86_64-linux/include/nccl.h"), "");
    write(&root.join("targets/x86_64-linux/lib/libnccl.so.2"), "");
    sb.ok(&["link", "cuda-12.4", root.to_str().unwrap()]);
    let env = json(&sb.ok(&["env", "cuda-12", "--shell", "json"]));
    let v = sb.gpuenv_home().join("views/cuda-12.4");
    assert_eq!(env["NCCL_ROOT"], v.display().to_string());
    assert_eq!(
        env["NCCL_INCLUDE_DIR"],
        v.join("include").display().to_string()
    );
    assert_eq!(env["NCCL_LIB_DIR"], v.join("lib64").display().to_string());
    assert!(v.join("include/nccl.h").exists());
}

#[test]
fn list_default_unlink_and_views() {
    let p = project();
    let sb = &p.sb;
    sb.ok(&["default", "cuda-11"]);
    let rows = json(&sb.ok(&["list", "--json"]));
    let row = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(row("cuda-11.8")["default"], true);
    assert_eq!(row("cuda-11.8")["active"], true);
    assert_eq!(row("cuda-11.8")["version"], "11.8.89");
    assert_eq!(row("cuda-11.8")["source"], "linked");
    assert_eq!(row("cuda-12.4")["active"], false);
    assert_eq!(row("rocm-6.2.4")["kind"], "rocm");

    // In the project, the pin wins over the default.
    let out = sb
        .gpuenv()
        .current_dir(sb.path("proj"))
        .args(["list", "--json"])
        .output()
        .unwrap();
    let rows = json(&String::from_utf8_lossy(&out.stdout));
    let active: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["active"] == true)
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(active, ["cuda-12.4"]);

    // Views mirror the root; bin entries are linked one by one.
    let view = sb.gpuenv_home().join("views/cuda-11.8");
    assert!(fs::symlink_metadata(view.join("bin")).unwrap().is_dir());
    assert_eq!(
        fs::read_link(view.join("bin/ptxas")).unwrap(),
        p.cuda118.join("bin/ptxas")
    );
    // nvcc is the proxy, so `$CUDA_HOME/bin/nvcc` goes through the guard.
    assert_eq!(
        fs::read_link(view.join("bin/nvcc")).unwrap(),
        sb.gpuenv_home().join("bin/gpuenv-shim")
    );
    assert_eq!(
        fs::read_link(view.join("version.json")).unwrap(),
        p.cuda118.join("version.json")
    );

    sb.ok(&["unlink", "cuda-11.8"]);
    assert!(!view.exists());
    assert!(
        p.cuda118.join("bin/nvcc").exists(),
        "unlink leaves the toolkit alone"
    );
    assert_eq!(
        sb.ok(&["default"]).trim(),
        "",
        "a default matching nothing is cleared"
    );
    sb.ok(&["default", "cuda-12"]);
    assert_eq!(sb.ok(&["default"]).trim(), "cuda-12");
    sb.ok(&["default", "none"]);
    assert_eq!(sb.ok(&["default"]).trim(), "");
}

#[test]
fn which_names_the_real_tool() {
    let p = project();
    let sb = &p.sb;
    let out = sb
        .gpuenv()
        .current_dir(sb.path("proj"))
        .args(["which", "nvcc"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        p.cuda124.join("bin/nvcc").display().to_string()
    );
    let out = sb
        .gpuenv()
        .current_dir(sb.path("proj"))
        .args(["which", "hipcc"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hipcc is not in the active toolchain(s): cuda-12.4 (pinned to 12.4 in"),
        "{err}"
    );
    let out = sb
        .gpuenv()
        .args(["which", "nvcc"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no toolchain is active"), "{err}");
    assert!(err.contains("hint: `gpuenv pin <spec>`"), "{err}");
}

#[test]
fn pin_creates_and_edits_the_file_keeping_comments() {
    let p = project();
    let sb = &p.sb;
    let dir = sb.path("other");
    fs::create_dir_all(&dir).unwrap();
    sb.gpuenv()
        .current_dir(&dir)
        .args(["pin", "cuda-11.8", "--arch", "8.0,9.0+PTX"])
        .assert()
        .success();
    assert_eq!(
        fs::read_to_string(dir.join("gpuenv.toml")).unwrap(),
        "[toolchain]\ncuda = \"11.8\"\ncuda-arch = [\"8.0\", \"9.0+PTX\"]\n"
    );
    write(
        &dir.join("gpuenv.toml"),
        "# keep me\n[toolchain]\ncuda = \"11.8\" # why\n",
    );
    sb.gpuenv()
        .current_dir(&dir)
        .args(["pin", "cuda-12.4", "rocm-6.2"])
        .assert()
        .success();
    assert_eq!(
        fs::read_to_string(dir.join("gpuenv.toml")).unwrap(),
        "# keep me\n[toolchain]\ncuda = \"12.4\" # why\nrocm = \"6.2\"\n"
    );
    // Pinning what is not installed is allowed (the file is shared) but warned about.
    let out = sb
        .gpuenv()
        .current_dir(&dir)
        .args(["pin", "cuda-12.1"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("hint: gpuenv install cuda-12.1"));
}

#[test]
fn untrusted_env_is_skipped_until_trusted() {
    let p = project();
    let sb = &p.sb;
    let file = sb.path("proj/gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\n\n[env]\nNCCL_DEBUG = \"INFO\"\n",
    );
    let run = || {
        sb.gpuenv()
            .current_dir(sb.path("proj"))
            .args(["env", "--shell", "json"])
            .output()
            .unwrap()
    };
    let out = run();
    assert!(json(&String::from_utf8_lossy(&out.stdout))
        .get("NCCL_DEBUG")
        .is_none());
    assert!(String::from_utf8_lossy(&out.stderr).contains("gpuenv trust"));
    sb.gpuenv()
        .current_dir(sb.path("proj"))
        .arg("trust")
        .assert()
        .success();
    assert_eq!(
        json(&String::from_utf8_lossy(&run().stdout))["NCCL_DEBUG"],
        "INFO"
    );
    // An edited file needs trusting again.
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\n\n[env]\nNCCL_DEBUG = \"WARN\"\n",
    );
    assert!(json(&String::from_utf8_lossy(&run().stdout))
        .get("NCCL_DEBUG")
        .is_none());
}
