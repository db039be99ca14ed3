//! Toolchain layouts this machine cannot install, as fixtures generated here: the places
//! `gpuenv discover` looks (`/usr/local/cuda*`, `/opt/rocm*`, conda environments), AMD's
//! `/opt/rocm-6.x.y`, ROCm 7's `/opt/rocm/core-<ver>`, conda-forge's `targets/x86_64-linux`
//! CUDA, Ubuntu's ROCm 5.7 and 6.x packages under `/usr`; and a shared prefix that must not
//! be shimmed.

use std::path::{Path, PathBuf};

use crate::common::*;
use fs_err as fs;

fn discovered(sb: &Sandbox) -> String {
    sb.ok(&["discover", "--register"])
}

fn shim_names(sb: &Sandbox) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(sb.gpuenv_home().join("shims"))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn project(sb: &Sandbox, toml: &str) -> PathBuf {
    sb.project("proj", toml)
}

#[test]
fn amds_opt_rocm_6_x_y_is_discovered_and_exported_through_its_view() {
    let sb = Sandbox::new();
    rocm(&sb.root().join("opt/rocm-6.2.4"), "6.2.4-120");
    assert!(discovered(&sb).contains("rocm-6.2.4"));
    let proj = project(
        &sb,
        "[toolchain]\nrocm = \"6.2\"\nrocm-arch = [\"gfx90a\", \"gfx942\"]\n",
    );
    let env = sb.env_json(&proj);
    let view = sb
        .gpuenv_home()
        .join("views/rocm-6.2.4")
        .display()
        .to_string();
    for k in ["ROCM_PATH", "HIP_PATH", "ROCM_HOME"] {
        assert_eq!(env[k], view, "{k}");
    }
    assert_eq!(env["LD_LIBRARY_PATH"], format!("{view}/lib"));
    assert_eq!(env["CPATH"], format!("{view}/include"));
    assert_eq!(env["PYTORCH_ROCM_ARCH"], "gfx90a;gfx942");
    assert_eq!(env["GPU_TARGETS"], "gfx90a;gfx942");
    assert_eq!(env["HCC_AMDGPU_TARGET"], "gfx90a,gfx942");
}

#[test]
fn rocm_7_core_sdk_under_opt_rocm_core_is_discovered() {
    let sb = Sandbox::new();
    let core = sb.root().join("opt/rocm/core-7.13.0");
    rocm(&core, "7.13.0");
    let out = discovered(&sb);
    assert!(out.contains("rocm-7.13.0"), "{out}");
    assert!(
        !out.contains("skipped"),
        "/opt/rocm holding only core-7.13.0 is not a failure: {out}"
    );
    let settings = sb.settings().unwrap();
    assert!(
        settings.contains(&format!("root = \"{}\"", core.display())),
        "{settings}"
    );
}

#[test]
fn conda_forge_cuda_with_targets_layout_exports_its_target_headers_and_libraries() {
    let sb = Sandbox::new();
    let env_root = sb.path("miniconda3/envs/cu124");
    nvcc_stub(&env_root, "12.4.131");
    fs::create_dir_all(env_root.join("conda-meta")).unwrap();
    write_exe(&env_root.join("bin/python3"), "#!/bin/sh\n");
    write(&env_root.join("include/Python.h"), "");
    let target = env_root.join("targets/x86_64-linux");
    write(&target.join("include/cuda_runtime.h"), "");
    write(&target.join("lib/libcudart.so.12"), "");
    let out = sb
        .gpuenv()
        .env("CONDA_PREFIX", &env_root)
        .args(["discover", "--register"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("cuda-12.4.1-conda"), "{stdout}");
    let proj = project(&sb, "[toolchain]\ncuda = \"cuda-12.4.1-conda\"\n");
    let env = sb.env_json(&proj);
    let view = sb.gpuenv_home().join("views/cuda-12.4.1-conda");
    let target = view.join("targets/x86_64-linux");
    assert_eq!(env["CPATH"], target.join("include").display().to_string());
    assert_eq!(
        env["LD_LIBRARY_PATH"],
        target.join("lib").display().to_string()
    );
}

/// Ubuntu's ROCm packages under `<root>/usr`, with dpkg's file lists under `<root>/var`.
/// Debian's multiarch directory name on this machine (`x86_64-linux-gnu`, `aarch64-linux-gnu`).
fn multiarch() -> String {
    format!("{}-linux-gnu", std::env::consts::ARCH)
}

fn ubuntu_rocm(root: &Path, major: u64, minor: u64, with_share_version: bool) {
    let usr = root.join("usr");
    for tool in ["hipcc", "hipconfig", "rocminfo", "rocm_agent_enumerator"] {
        write_exe(&usr.join("bin").join(tool), "#!/bin/sh\nexit 0\n");
    }
    // Programs of everything else in /usr/bin.
    for other in ["ls", "python3", "sh", "clang++-17", "perl"] {
        write_exe(&usr.join("bin").join(other), "#!/bin/sh\n");
    }
    write(
        &usr.join("include/hip/hip_version.h"),
        &format!("#define HIP_VERSION_MAJOR {major}\n#define HIP_VERSION_MINOR {minor}\n#define HIP_VERSION_PATCH 31921\n"),
    );
    if with_share_version {
        write(
            &usr.join("share/hip/version"),
            &format!(
                "HIP_VERSION_MAJOR={major}\nHIP_VERSION_MINOR={minor}\nHIP_VERSION_PATCH=31921\n"
            ),
        );
    }
    write(
        &usr.join(format!("lib/{}/libamdhip64.so.6", multiarch())),
        "",
    );
    let dpkg = root.join("var/lib/dpkg/info");
    write(
        &dpkg.join("hipcc.list"),
        "/.\n/usr\n/usr/bin\n/usr/bin/hipcc\n/usr/bin/hipconfig\n/usr/share/doc/hipcc/copyright\n",
    );
    write(
        &dpkg.join("rocminfo.list"),
        "/.\n/usr/bin/rocm_agent_enumerator\n/usr/bin/rocminfo\n",
    );
}

#[test]
fn ubuntus_rocm_packages_are_system_toolchains_with_their_own_programs_only() {
    for (major, minor, share) in [(5, 7, true), (6, 1, false)] {
        let sb = Sandbox::new();
        ubuntu_rocm(&sb.root(), major, minor, share);
        let name = format!("rocm-{major}.{minor}-debian");
        let out = discovered(&sb);
        assert!(out.contains(&name), "{out}");
        assert_eq!(
            shim_names(&sb),
            ["hipcc", "hipconfig", "rocm_agent_enumerator", "rocminfo"]
        );
        let proj = project(&sb, &format!("[toolchain]\nrocm = \"{major}.{minor}\"\n"));
        let env = sb.env_json(&proj);
        let usr = sb.root().join("usr").display().to_string();
        // What Debian's and Ubuntu's hipcc expect: the prefix itself.
        for k in ["ROCM_PATH", "HIP_PATH", "ROCM_HOME"] {
            assert_eq!(env[k], usr, "{k}");
        }
        assert_eq!(
            env["LD_LIBRARY_PATH"],
            format!("{usr}/lib/{}", multiarch()),
            "the multiarch dir"
        );
        let bin = sb.gpuenv_home().join(format!("views/{name}/bin"));
        let path = env["PATH"].as_str().unwrap();
        assert!(path.starts_with(&bin.display().to_string()), "{path}");
        assert!(!path.contains(&format!("{usr}/bin")), "{path}");
        let in_bin: Vec<_> = fs::read_dir(&bin).unwrap().collect();
        assert_eq!(in_bin.len(), 1, "only the proxied hipcc");
    }
}

#[test]
fn linking_a_shared_prefix_is_refused_with_the_reason() {
    let sb = Sandbox::new();
    let prefix = sb.path("usr-local");
    nvcc_stub(&prefix, "12.4.131");
    write(&prefix.join("include/cuda_runtime.h"), "");
    write(&prefix.join("lib64/libcudart.so"), "");
    for i in 0..400 {
        write_exe(&prefix.join(format!("bin/tool{i}")), "#!/bin/sh\n");
    }
    let out = sb
        .gpuenv()
        .args(["link", "cuda-12.4", prefix.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("402 programs in bin/"), "{err}");
    assert!(err.contains("hint: link the toolkit's own root"), "{err}");
    assert!(shim_names(&sb).is_empty());
    assert!(sb.settings().is_none_or(|s| !s.contains("cuda-12.4")));
}

#[test]
fn reshim_gives_no_shims_to_a_toolchain_that_grew_into_a_shared_prefix() {
    let sb = Sandbox::new();
    let root = sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    assert!(shim_names(&sb).contains(&"nvcc".to_string()));
    for i in 0..400 {
        write_exe(&root.join(format!("bin/tool{i}")), "#!/bin/sh\n");
    }
    let out = sb.gpuenv().args(["reshim"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("no shims for cuda-12.4"), "{err}");
    assert!(shim_names(&sb).is_empty(), "{:?}", shim_names(&sb));
}

#[test]
fn discover_finds_the_standard_places_and_conda() {
    let sb = Sandbox::new();
    let root = sb.root();
    cuda_10_2(&root.join("usr/local/cuda-10.2"));
    std::os::unix::fs::symlink("cuda-10.2", root.join("usr/local/cuda")).unwrap();
    fs::create_dir_all(root.join("usr/local/cuda-11.3/lib64")).unwrap();
    rocm(&root.join("opt/rocm-6.2.0"), "6.2.0");
    let conda = conda_cuda(&sb.path("miniconda3/envs/torch"), "11.8.89");
    fs::create_dir_all(sb.path("miniconda3/envs/plain/conda-meta")).unwrap();
    write(
        &sb.home().join(".conda/environments.txt"),
        &format!(
            "{}\n{}\n",
            sb.path("miniconda3/envs/plain").display(),
            conda.display()
        ),
    );
    let out = sb.ok(&["discover"]);
    // Named after the release: version.txt's 10.2.89 is nvcc's build number.
    assert!(
        out.contains("10.2.89") && out.contains("would be cuda-10.2)"),
        "{out}"
    );
    assert!(
        out.contains("usr/local/cuda-11.3: ")
            && out.contains("found neither bin/nvcc nor bin/hipcc"),
        "{out}"
    );
    assert!(
        !out.contains("envs/plain"),
        "conda envs without a toolkit are not listed: {out}"
    );
    assert_eq!(
        out.matches("would be cuda-10.2)").count(),
        1,
        "/usr/local/cuda is the same tree: {out}"
    );
    assert!(
        sb.settings().is_none(),
        "discover without --register writes nothing"
    );

    sb.ok(&["discover", "--register"]);
    let rows: serde_json::Value = serde_json::from_str(&sb.ok(&["list", "--json"])).unwrap();
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cuda-10.2", "cuda-11.8-conda", "rocm-6.2.0"]);
    assert!(rows
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["source"] == "discovered"));
    // Registering again changes nothing.
    let before = sb.settings();
    sb.ok(&["discover", "--register"]);
    assert_eq!(sb.settings(), before);

    // A conda toolkit keeps its environment's own bin on PATH (it holds python).
    let out = sb
        .gpuenv()
        .env("PATH", format!("{}/bin:/usr/bin", conda.display()))
        .args(["env", "cuda-11.8", "--shell", "json"])
        .output()
        .unwrap();
    let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let v = sb
        .gpuenv_home()
        .join("views/cuda-11.8-conda")
        .display()
        .to_string();
    assert_eq!(
        env["PATH"],
        format!("{v}/bin:{}/bin:/usr/bin", conda.display())
    );
    assert_eq!(env["LD_LIBRARY_PATH"], format!("{v}/lib"));
}

/// `discover --json`: one object per tree found, on stdout, with what happens to it.
#[test]
fn discover_json_lists_each_tree_found_and_its_status() {
    let sb = Sandbox::new();
    let root = sb.root();
    cuda_10_2(&root.join("usr/local/cuda-10.2"));
    fs::create_dir_all(root.join("usr/local/cuda-11.3/lib64")).unwrap();
    rocm(&root.join("opt/rocm-6.2.0"), "6.2.0");
    let rows = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = sb.ok(args);
        serde_json::from_str::<serde_json::Value>(&out)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let found = rows(&["discover", "--json"]);
    let by_root = |rows: &[serde_json::Value], tail: &str| -> serde_json::Value {
        rows.iter()
            .find(|r| r["root"].as_str().unwrap().ends_with(tail))
            .unwrap_or_else(|| panic!("no {tail} in {rows:?}"))
            .clone()
    };
    let cuda = by_root(&found, "usr/local/cuda-10.2");
    assert_eq!(cuda["kind"], "cuda");
    assert_eq!(cuda["version"], "10.2.89");
    // version.txt's 10.2.89 is a build number, not a release: the name is the release.
    assert_eq!(cuda["name"], "cuda-10.2");
    assert_eq!(cuda["status"], "new");
    assert_eq!(by_root(&found, "opt/rocm-6.2.0")["status"], "new");
    let skipped = by_root(&found, "usr/local/cuda-11.3");
    assert_eq!(skipped["status"], "skipped");
    assert!(skipped["why"]
        .as_str()
        .unwrap()
        .contains("found neither bin/nvcc nor bin/hipcc"));
    sb.ok(&["discover", "--register"]);
    let again = rows(&["discover", "--json"]);
    let cuda = by_root(&again, "usr/local/cuda-10.2");
    assert_eq!(cuda["status"], "registered");
    assert_eq!(cuda["registered_as"], "cuda-10.2");
}
