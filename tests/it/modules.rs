//! Module files with the real module systems (Lmod, Tcl Environment Modules): what gpuenv
//! exports loads to exactly `gpuenv env`'s variables and unloads to exactly what was there;
//! a site's module files are read (never run) by `discover --modules`; and a toolkit a
//! site module loaded gives way to gpuenv's.

use crate::common::modules;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::common::*;
use fs_err as fs;
use modules::System;

const START_PATH: &str = "/opt/my tools/bin:/usr/bin:/bin";

/// Every per-user variable of an exported module file and where under the loading user's
/// HOME it points (plus `/<toolchain>`).
const PER_USER: [(&str, &str); 4] = [
    ("TORCH_EXTENSIONS_DIR", ".cache/gpuenv/torch-extensions"),
    ("TRITON_CACHE_DIR", ".cache/gpuenv/jit/triton"),
    ("CUPY_CACHE_DIR", ".cache/gpuenv/jit/cupy"),
    ("FLASHINFER_WORKSPACE_BASE", ".cache/gpuenv/jit/flashinfer"),
];

fn gpuenv_dir() -> PathBuf {
    proxy_bin().parent().unwrap().to_path_buf()
}

/// `env -0` output as a map.
fn dump(path: &Path) -> BTreeMap<String, String> {
    fs::read_to_string(path)
        .unwrap()
        .split('\0')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn without_bookkeeping(env: BTreeMap<String, String>) -> BTreeMap<String, String> {
    env.into_iter()
        .filter(|(k, _)| {
            !modules::is_bookkeeping(k) && k != "_" && k != "SHLVL" && k != "PWD" && k != "OLDPWD"
        })
        .collect()
}

/// A sandbox with cuda-12.4 and cuda-11.8 linked.
fn two_toolkits() -> Sandbox {
    let sb = Sandbox::new();
    for (name, version) in [("cuda-12.4", "12.4.131"), ("cuda-11.8", "11.8.89")] {
        let root = cuda_runfile(&sb.path(&format!("opt/{name}")), version);
        sb.ok(&["link", name, root.to_str().unwrap()]);
    }
    sb
}

fn shell_vars(sb: &Sandbox, path: &str) -> Vec<(&'static str, std::ffi::OsString)> {
    vec![
        ("HOME", sb.home().into_os_string()),
        ("PATH", format!("{}:{path}", gpuenv_dir().display()).into()),
        ("LANG", "C.UTF-8".into()),
        ("OUT", sb.path("out").into_os_string()),
        ("MODULEPATH", sb.path("modules").into_os_string()),
    ]
}

fn run(sb: &Sandbox, init: &str, script: &str, path: &str, cwd: &Path) -> std::process::Output {
    fs::create_dir_all(sb.path("out")).unwrap();
    let vars = shell_vars(sb, path);
    let vars: Vec<(&str, &OsStr)> = vars.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    modules::bash(init, script, &vars, cwd)
}

fn exported_module_loads_like_gpuenv_env_and_unloads_byte_exact(system: System) {
    let Some(init) = modules::init_line(system) else {
        return;
    };
    let sb = two_toolkits();
    let format = match system {
        System::Lmod => "lmod",
        System::Tcl => "tcl",
    };
    let modules_dir = sb.path("modules");
    sb.ok(&[
        "module",
        "export",
        "--format",
        format,
        "--dir",
        modules_dir.to_str().unwrap(),
    ]);

    run(
        &sb,
        &init,
        r#"
gpuenv env --shell json cuda-12.4 > "$OUT/expected.json"
env -0 > "$OUT/before"
module load cuda/12.4
nvcc --version > "$OUT/nvcc"
env -0 > "$OUT/loaded"
module unload cuda/12.4
env -0 > "$OUT/after"
"#,
        START_PATH,
        &sb.home(),
    );
    let expected: BTreeMap<String, Option<String>> =
        serde_json::from_str(&fs::read_to_string(sb.path("out/expected.json")).unwrap()).unwrap();
    let loaded = dump(&sb.path("out/loaded"));
    assert!(expected.contains_key("CUDA_HOME") && expected.contains_key("PATH"));
    for (k, v) in &expected {
        // Per-user state: in the loading user's own home, never in the exporting store. And
        // what depends on the machine the module is loaded on (a driver seen or not there),
        // which a module file shared by every node cannot say: nor its cores and memory,
        // which size a build's jobs.
        if PER_USER.iter().any(|(var, _)| var == k)
            || matches!(
                k.as_str(),
                "CONDA_OVERRIDE_CUDA" | "MAX_JOBS" | "CMAKE_BUILD_PARALLEL_LEVEL"
            )
        {
            continue;
        }
        assert_eq!(loaded.get(k), v.as_ref(), "{format}: {k} after module load");
    }
    for (var, dir) in PER_USER {
        assert!(expected.contains_key(var), "gpuenv env sets {var}");
        assert_eq!(
            loaded[var],
            sb.home()
                .join(format!("{dir}/cuda-12.4"))
                .display()
                .to_string(),
            "{format}: {var} is computed from HOME at load time"
        );
    }
    let exported = fs::read_to_string(modules_dir.join(match system {
        System::Lmod => "cuda/12.4.lua",
        System::Tcl => "cuda/12.4",
    }))
    .unwrap();
    assert!(
        !exported.contains(&format!("{}/jit", sb.gpuenv_home().display())),
        "{format}: nothing per-user points into the exporting home:\n{exported}"
    );
    let view = sb.gpuenv_home().join("views/cuda-12.4");
    assert_eq!(loaded["CUDA_HOME"], view.display().to_string());
    assert!(
        fs::read_to_string(sb.path("out/nvcc"))
            .unwrap()
            .contains("release 12.4, V12.4.131"),
        "nvcc through the view's proxy"
    );
    assert_eq!(
        without_bookkeeping(dump(&sb.path("out/before"))),
        without_bookkeeping(dump(&sb.path("out/after"))),
        "{format}: module unload restores the environment"
    );
}

#[test]
fn lmod_loads_an_exported_toolchain_like_gpuenv_env_and_unloads_it_exactly() {
    exported_module_loads_like_gpuenv_env_and_unloads_byte_exact(System::Lmod);
}

#[test]
fn tcl_modules_load_an_exported_toolchain_like_gpuenv_env_and_unload_it_exactly() {
    exported_module_loads_like_gpuenv_env_and_unloads_byte_exact(System::Tcl);
}

#[test]
fn lmod_swaps_one_exported_cuda_for_another_through_the_family() {
    let Some(init) = modules::init_line(System::Lmod) else {
        return;
    };
    let sb = two_toolkits();
    let dir = sb.path("modules");
    sb.ok(&[
        "module",
        "export",
        "--format",
        "lmod",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    run(
        &sb,
        &init,
        "module load cuda/12.4\nmodule load cuda/11.8 2>/dev/null\nprintf %s \"$PATH\" > \"$OUT/path\"\n",
        START_PATH,
        &sb.home(),
    );
    let path = fs::read_to_string(sb.path("out/path")).unwrap();
    let views = sb.gpuenv_home().join("views");
    assert!(
        path.contains(&format!("{}/cuda-11.8/bin", views.display())),
        "{path}"
    );
    assert!(!path.contains("cuda-12.4"), "{path}");
}

#[test]
fn admin_reexports_without_touching_unchanged_or_foreign_files() {
    let sb = two_toolkits();
    let dir = sb.path("modules");
    let foreign = dir.join("cuda/11.8.lua");
    write(
        &foreign,
        "-- the site's own cuda 11.8 module\nsetenv(\"CUDA_HOME\", \"/sw/cuda\")\n",
    );
    let export = || {
        sb.gpuenv()
            .args([
                "module",
                "export",
                "--format",
                "lmod",
                "--dir",
                dir.to_str().unwrap(),
            ])
            .output()
            .unwrap()
    };
    let first = export();
    assert_eq!(first.status.code(), Some(1), "a foreign file is reported");
    let err = String::from_utf8_lossy(&first.stderr);
    assert!(
        err.contains("11.8.lua exists and was not written by gpuenv"),
        "{err}"
    );
    assert!(fs::read_to_string(&foreign)
        .unwrap()
        .starts_with("-- the site's own"));
    let ours = dir.join("cuda/12.4.lua");
    let mtime = fs::metadata(&ours).unwrap().modified().unwrap();

    let second = export();
    assert!(!String::from_utf8_lossy(&second.stderr).contains("wrote"));
    assert_eq!(fs::metadata(&ours).unwrap().modified().unwrap(), mtime);

    // A toolchain that is gone takes its module file with it, and only its own.
    sb.ok(&["unlink", "cuda-12.4"]);
    export();
    assert!(!ours.exists());
    assert!(foreign.exists());
}

#[test]
fn discover_reads_site_module_files_without_running_them() {
    let sb = Sandbox::new();
    let cuda = cuda_runfile(&sb.path("sw/cuda/11.8"), "11.8.89");
    let rocm_root = rocm(&sb.path("sw/rocm-6.2.4"), "6.2.4-120");
    let mods = sb.path("site-modules");
    let pwned = sb.path("PWNED");
    write(
        &mods.join("cuda/11.8.lua"),
        &format!(
            "help([[CUDA 11.8]])\nlocal base = \"{}\"\nsetenv(\"CUDA_HOME\", pathJoin(base, \"11.8\"))\nprepend_path(\"PATH\", pathJoin(base, \"11.8\", \"bin\"))\n",
            sb.path("sw/cuda").display()
        ),
    );
    write(
        &mods.join("rocm/6.2.4"),
        &format!(
            "#%Module1.0\nset root {}\nsetenv ROCM_PATH $root\nsetenv HIP_PATH $root\n",
            rocm_root.display()
        ),
    );
    write(
        &mods.join("evil/1.lua"),
        &format!(
            "setenv(\"CUDA_HOME\", io.popen(\"touch {}\"):read())\n",
            pwned.display()
        ),
    );
    write(
        &mods.join("evil/2"),
        &format!(
            "#%Module1.0\n\nsetenv CUDA_PATH [exec touch {}]\n",
            pwned.display()
        ),
    );
    fs::write(mods.join("evil/3.lua"), b"\xff\xfe\x00binary").unwrap();

    let out = sb
        .gpuenv()
        .env("MODULEPATH", &mods)
        .args(["discover", "--modules", "--register"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("evil/1.lua:1: CUDA_HOME is computed"), "{err}");
    assert!(err.contains("evil/2:3: CUDA_PATH is computed"), "{err}");
    assert!(err.contains("evil/3.lua: not UTF-8"), "{err}");
    assert!(!pwned.exists(), "a module file was run");
    let list = sb.ok(&["list", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&list).unwrap();
    let names: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["root"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("cuda-11.8-module", cuda.to_str().unwrap()),
            ("rocm-6.2.4-module", rocm_root.to_str().unwrap())
        ]
    );
}

/// The site's own module for a toolkit gpuenv does not know (Tcl, which Lmod reads too),
/// and a project pinned to cuda-12.4.
fn site_module(sb: &Sandbox) -> PathBuf {
    let site = cuda_runfile(&sb.path("sw/cuda-11.7"), "11.7.99");
    write(
        &sb.path("modules/cuda/11.7"),
        &format!(
            "#%Module1.0\nset root {}\nsetenv CUDA_HOME $root\nsetenv CUDA_VERSION 11.7\nprepend-path PATH $root/bin\nprepend-path LD_LIBRARY_PATH $root/lib64\n",
            site.display()
        ),
    );
    sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n")
}

fn the_later_of_module_and_gpuenv_env_wins_cleanly(system: System) {
    let Some(init) = modules::init_line(system) else {
        return;
    };
    let sb = two_toolkits();
    let proj = site_module(&sb);
    let show = |name: &str| {
        format!(
            "printf '%s\\n%s\\n%s\\n%s\\n' \"$PATH\" \"${{LD_LIBRARY_PATH-}}\" \"${{CUDA_HOME-unset}}\" \"${{CUDA_VERSION-unset}}\" > \"$OUT/{name}\""
        )
    };
    run(
        &sb,
        &init,
        &format!(
            r#"
module load cuda/11.7
gpuenv doctor --json > "$OUT/doctor.json" || true
eval "$(gpuenv env)"
{}
nvcc --version > "$OUT/nvcc"
module unload cuda/11.7 2>/dev/null || true
{}
module load cuda/11.7
{}
eval "$(gpuenv env)"
{}
"#,
            show("gpuenv"),
            show("unload"),
            show("module"),
            show("again")
        ),
        START_PATH,
        &proj,
    );
    let read = |n: &str| fs::read_to_string(sb.path("out").join(n)).unwrap();
    let view = sb.gpuenv_home().join("views/cuda-12.4");
    let gpuenv = read("gpuenv");
    assert!(
        !gpuenv.contains("cuda-11.7"),
        "{system:?}: nothing of 11.7 is left:\n{gpuenv}"
    );
    assert!(
        !gpuenv.contains("11.7\n"),
        "{system:?}: the module's CUDA_VERSION went with it:\n{gpuenv}"
    );
    assert!(
        gpuenv.contains(&format!("{}/bin", view.display())),
        "{gpuenv}"
    );
    assert!(gpuenv.contains("/opt/my tools/bin"), "{gpuenv}");
    assert!(read("nvcc").contains("release 12.4"));
    assert_eq!(
        read("unload"),
        gpuenv,
        "{system:?}: the module was already unloaded, so nothing changes"
    );
    let module = read("module");
    assert!(
        module.starts_with(&sb.path("sw/cuda-11.7/bin").display().to_string()),
        "{module}"
    );
    assert!(
        module.contains(&format!("{}\n11.7\n", sb.path("sw/cuda-11.7").display())),
        "{module}"
    );
    assert_eq!(
        read("again"),
        gpuenv,
        "{system:?}: gpuenv env after module load wins again"
    );

    let doctor: serde_json::Value = serde_json::from_str(&read("doctor.json")).unwrap();
    let fm02 = doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "FM-02")
        .unwrap();
    assert_eq!(fm02["status"], "error", "{fm02}");
    let text = fm02.to_string();
    assert!(text.contains("loaded module cuda/11.7"), "{text}");
    assert!(text.contains("module unload cuda/11.7"), "{text}");
}

#[test]
fn lmod_and_gpuenv_env_the_later_one_wins_cleanly() {
    the_later_of_module_and_gpuenv_env_wins_cleanly(System::Lmod);
}

#[test]
fn tcl_modules_and_gpuenv_env_the_later_one_wins_cleanly() {
    the_later_of_module_and_gpuenv_env_wins_cleanly(System::Tcl);
}

/// A module loaded where there is no HOME (a SLURM step with `--export=NONE`) leaves every
/// per-user variable unset (each tool's own default) rather than pointing it anywhere
/// shared; the rest of the module still applies.
fn without_home_the_jit_dir_is_left_unset(system: System) {
    let Some(init) = modules::init_line(system) else {
        return;
    };
    let sb = two_toolkits();
    let format = match system {
        System::Lmod => "lmod",
        System::Tcl => "tcl",
    };
    let modules_dir = sb.path("modules");
    sb.ok(&[
        "module",
        "export",
        "--format",
        format,
        "--dir",
        modules_dir.to_str().unwrap(),
    ]);
    run(
        &sb,
        &init,
        r#"
unset HOME
module load cuda/12.4
echo "${TORCH_EXTENSIONS_DIR-unset} ${TRITON_CACHE_DIR-unset} ${CUPY_CACHE_DIR-unset} ${FLASHINFER_WORKSPACE_BASE-unset} $CUDA_HOME" > "$OUT/loaded"
"#,
        START_PATH,
        &sb.home(),
    );
    let loaded = fs::read_to_string(sb.path("out/loaded")).unwrap();
    let view = sb.gpuenv_home().join("views/cuda-12.4");
    assert_eq!(
        loaded.trim(),
        format!("unset unset unset unset {}", view.display()),
        "{format}"
    );
}

#[test]
fn lmod_without_home_leaves_the_jit_dir_unset() {
    without_home_the_jit_dir_is_left_unset(System::Lmod);
}

#[test]
fn tcl_without_home_leaves_the_jit_dir_unset() {
    without_home_the_jit_dir_is_left_unset(System::Tcl);
}
