//! What gpuenv reads from outside and what it does with it: names in an upstream store's
//! settings never name a path unchecked; a module file's tree is read, never run; a program
//! gpuenv asks something never hangs it; a registered conda environment does not take over
//! python or pip; a toolchain file swapped behind the prompt's back is seen. Every input is
//! built here and goes through the real binary.

use crate::common::hostile;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::pty::*;
use crate::common::shells::{dialect, SHELLS};
use crate::common::*;
use fs_err as fs;
use hostile::stderr;

/// Every path under `dir` (links not followed).
fn all_paths(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// A site's store with CUDA 12.4 linked, whose settings then name it `name`.
fn upstream_naming(sb: &Sandbox, name: &str) -> PathBuf {
    let site = sb.path("site");
    let root = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    let out = sb
        .gpuenv()
        .env("GPUENV_HOME", &site)
        .args(["link", "cuda-12.4", root.to_str().unwrap()])
        .output()
        .unwrap();
    succeeded(&out);
    let settings = site.join("settings.toml");
    let text = fs::read_to_string(&settings).unwrap();
    assert!(text.contains("[toolchains.\"cuda-12.4\"]"), "{text}");
    let text = text.replace(
        "[toolchains.\"cuda-12.4\"]",
        &format!("[toolchains.{name:?}]"),
    );
    fs::write(&settings, text).unwrap();
    site
}

#[test]
fn a_name_in_an_upstreams_settings_never_names_a_path_outside_its_directory() {
    for name in ["../../../escaped", "cuda-12.4-..", "rocm-6.2"] {
        let sb = Sandbox::new();
        let site = upstream_naming(&sb, name);
        let mods = sb.path("modules");
        let export = sb
            .gpuenv()
            .env("GPUENV_UPSTREAMS", &site)
            .args(["module", "export", "--format", "lmod", "--dir"])
            .arg(&mods)
            .output()
            .unwrap();
        let err = stderr(&export);
        assert!(export.status.success(), "{name}: {err}");
        assert!(
            err.contains(&format!("the upstream {} cannot be used", site.display())),
            "{name}: {err}"
        );
        assert!(err.contains("cannot be used"), "{name}: {err}");
        for args in [&["list"][..], &["env", "--shell", "json"]] {
            let out = sb
                .gpuenv()
                .env("GPUENV_UPSTREAMS", &site)
                .args(args)
                .output()
                .unwrap();
            assert!(
                stderr(&out).contains("cannot be used"),
                "{name} {args:?}: {}",
                stderr(&out)
            );
        }
        let own_views = sb.gpuenv_home().join("views");
        let escaped: Vec<PathBuf> = all_paths(sb.dir.path())
            .into_iter()
            .filter(|p| {
                let s = p.to_string_lossy();
                s.contains("escaped") || s.ends_with(".lua") || p.starts_with(&own_views)
            })
            .collect();
        assert!(escaped.is_empty(), "{name}: {escaped:?}");
    }
}

#[test]
fn a_bad_name_in_the_own_settings_is_an_error_naming_the_file() {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let settings = sb.gpuenv_home().join("settings.toml");
    let text = fs::read_to_string(&settings)
        .unwrap()
        .replace("\"cuda-12.4\"", "\"../x\"");
    fs::write(&settings, text).unwrap();
    let out = sb.gpuenv().args(["list"]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&settings.display().to_string()), "{err}");
    assert!(
        err.contains("toolchain name `../x` cannot name a file"),
        "{err}"
    );
}

#[test]
fn discover_modules_takes_versions_from_files_and_runs_nothing_in_the_tree() {
    let sb = Sandbox::new();
    let ran = sb.path("RAN");
    // Trees with no version file: only their programs or headers could say the version.
    let cuda = sb.path("sw/cuda-12.4");
    write_exe(
        &cuda.join("bin/nvcc"),
        &format!("#!/bin/sh\ntouch '{}'\n", ran.display()),
    );
    write(
        &cuda.join("include/cuda.h"),
        "#ifndef __cuda_cuda_h__\n#define CUDA_VERSION 12040\n",
    );
    write(&cuda.join("include/cuda_runtime.h"), "");
    write(&cuda.join("lib64/libcudart.so"), "");
    let rocm = sb.path("sw/rocm-6.1");
    for tool in ["hipcc", "hipconfig"] {
        write_exe(
            &rocm.join("bin").join(tool),
            &format!("#!/bin/sh\ntouch '{}'\necho 6.1.40091\n", ran.display()),
        );
    }
    write(
        &rocm.join("include/hip/hip_version.h"),
        "#define HIP_VERSION_MAJOR 6\n#define HIP_VERSION_MINOR 1\n",
    );
    write(&rocm.join("lib/libamdhip64.so"), "");
    let mods = sb.path("site-modules");
    write(
        &mods.join("cuda/12.4.lua"),
        &format!("setenv(\"CUDA_HOME\", \"{}\")\n", cuda.display()),
    );
    write(
        &mods.join("rocm/6.1"),
        &format!("#%Module1.0\nsetenv ROCM_PATH {}\n", rocm.display()),
    );
    for register in [false, true] {
        let mut cmd = sb.gpuenv();
        cmd.env("MODULEPATH", &mods).args(["discover", "--modules"]);
        if register {
            cmd.arg("--register");
        }
        let out = cmd.output().unwrap();
        succeeded(&out);
        assert!(!ran.exists(), "a program of a module's tree was run");
    }
    let rows: Vec<serde_json::Value> = serde_json::from_str(&sb.ok(&["list", "--json"])).unwrap();
    let names: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                r["version_from"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        names.iter().map(|n| n.0).collect::<Vec<_>>(),
        ["cuda-12.4-module", "rocm-6.1-module"],
        "{rows:?}"
    );
    assert!(!ran.exists(), "a program of a module's tree was run");
}

/// `dir/<name>`: a program that never answers.
fn hanging(dir: &Path, name: &str) {
    write_exe(&dir.join(name), "#!/bin/sh\nexec sleep 60\n");
}

#[test]
fn a_hanging_g_plus_plus_does_not_hang_show_env_or_nvcc() {
    let (sb, proj) = hostile::pinned_project();
    let stubs = sb.path("stubs");
    hanging(&stubs, "g++");
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        sb.gpuenv_home().join("shims").display(),
        stubs.display()
    );
    write(&proj.join("k.cu"), "__global__ void k() {}\n");
    for args in [
        &["show"][..],
        &["env", "--shell", "json"],
        &["hook-env", "--shell", "bash"],
    ] {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("PATH", &path)
            .env("GPUENV_PROBE_TIMEOUT", "0.5")
            .args(args)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("g++ --version` did not answer within 0.5 s"),
            "{args:?}: {err}"
        );
    }
    let nvcc = assert_cmd::Command::new(sb.gpuenv_home().join("shims/nvcc"))
        .current_dir(&proj)
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", &path)
        .env("GPUENV_PROBE_TIMEOUT", "0.5")
        .args(["-c", "k.cu"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = stderr(&nvcc);
    assert!(nvcc.status.success(), "{err}");
    assert!(
        err.contains("g++ --version` did not answer within 0.5 s"),
        "{err}"
    );
    let log = fs::read_to_string(sb.path("opt/cuda-12.4/nvcc.log")).unwrap();
    assert!(log.contains("-c k.cu"), "nvcc ran: {log}");
}

#[test]
fn pin_arch_native_with_a_wedged_nvidia_smi_returns_and_names_it() {
    let (sb, proj) = hostile::pinned_project();
    let stubs = sb.path("stubs");
    hanging(&stubs, "nvidia-smi");
    hanging(&stubs, "rocminfo");
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("PATH", format!("{}:/usr/bin:/bin", stubs.display()))
        .env("GPUENV_PROBE_TIMEOUT", "0.5")
        .args(["pin", "cuda-12.4", "--arch", "native"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nvidia-smi"), "{err}");
    assert!(err.contains("did not answer within 0.5 s"), "{err}");
    assert!(err.contains("rocminfo"), "{err}");
}

#[test]
fn ctrl_c_while_the_hook_waits_gives_the_prompt_back_in_every_shell() {
    for shell in SHELLS {
        if !have_tool("tmux") || !have_tool(shell) {
            continue;
        }
        let (sb, _) = hostile::pinned_project();
        fs::create_dir_all(sb.path("work")).unwrap();
        fs::rename(sb.path("proj"), sb.path("work/proj")).unwrap();
        // The first `g++ --version` never answers; later ones do.
        let stubs = sb.path("stubs");
        let started = sb.path("g++-started");
        write_exe(
            &stubs.join("g++"),
            &format!(
                "#!/bin/sh\nif [ -e '{0}' ]; then echo 'g++ (GCC) 12.2.0'; exit 0; fi\ntouch '{0}'\nexec sleep 600\n",
                started.display()
            ),
        );
        let bin = gpuenv_bin();
        let mut pane = match shell {
            "bash" => bash(
                &sb,
                &bash_rc_with(
                    &bin,
                    &format!(
                        "export PATH='{}':$PATH GPUENV_PROBE_TIMEOUT=600",
                        stubs.display()
                    ),
                ),
            ),
            "zsh" => zsh(
                &sb,
                &zsh_rc_with(
                    &bin,
                    &format!(
                        "export PATH='{}':$PATH GPUENV_PROBE_TIMEOUT=600",
                        stubs.display()
                    ),
                ),
            ),
            _ => fish(
                &sb,
                &format!(
                    "set -gx PATH '{}' $PATH\nset -gx GPUENV_PROBE_TIMEOUT 600\n{}",
                    stubs.display(),
                    fish_rc_with(&bin)
                ),
            ),
        };
        assert_eq!(pane.run("true").active, "none", "{shell}");
        pane.type_line("cd proj");
        pane.wait_for("g++ to be asked", |_| started.exists().then_some(()));
        pane.tmux(&["send-keys", "-t", "t", "C-c"]);
        let out = pane.run("echo back");
        assert_eq!(out.output, "back", "{shell}: {out:?}");
        // The shell still works and the hook still runs (and hangs again only if asked).
        let out = pane.run("pwd");
        assert!(out.output.ends_with("/work/proj"), "{shell}: {out:?}");
    }
}

#[test]
fn a_registered_conda_env_gets_shims_for_its_toolkit_only() {
    let sb = Sandbox::new();
    let env = conda_cuda(&sb.path("miniconda3/envs/torch"), "11.8.89");
    for program in ["python3", "pip", "curl", "conda", "clang"] {
        write_exe(&env.join("bin").join(program), "#!/bin/sh\n");
    }
    write(
        &sb.home().join(".conda/environments.txt"),
        &format!("{}\n", env.display()),
    );
    sb.ok(&["discover", "--register"]);
    let mut shims: Vec<String> = fs::read_dir(sb.gpuenv_home().join("shims"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    shims.sort();
    assert_eq!(shims, ["nvcc", "ptxas"]);
    // Where the toolchain is active, its view's bin/ goes first on PATH: the toolkit only.
    let mut in_view: Vec<String> = fs::read_dir(sb.gpuenv_home().join("views/cuda-11.8-conda/bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    in_view.sort();
    assert_eq!(in_view, ["nvcc", "ptxas"]);
    // Nor does a shim left by an older gpuenv run the environment's python for a pin.
    let proj = sb.project("proj", "[toolchain]\ncuda = \"11.8\"\n");
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["which", "python3"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("envs/torch"));
}

/// A shell script that pins 12.4, lets the fast path arm, replaces the toolchain file by
/// one of the same size and modification time (a new file moved in, then the same file
/// rewritten in place with its time set back), and records what is active after each.
fn swap_script(shell: &str) -> String {
    let (hook, prompt, _) = dialect(shell);
    let (arm_check, set_ref) = match shell {
        "fish" => (
            "functions __gpuenv_fresh | string match -q '*PWD*'; or echo unarmed >> $OUT/log",
            "",
        ),
        "zsh" => (
            "functions _gpuenv_fresh | grep -q PWD || echo unarmed >> $OUT/log",
            "",
        ),
        _ => (
            "declare -f _gpuenv_fresh | grep -q PWD || echo unarmed >> $OUT/log",
            "",
        ),
    };
    let record = match shell {
        "fish" => "echo $GPUENV_ACTIVE >> $OUT/log",
        _ => "echo \"$GPUENV_ACTIVE\" >> \"$OUT/log\"",
    };
    format!(
        "{hook}\ncd $P\n{prompt}\n{record}\n{set_ref}\
         sleep 1.2\n{prompt}\n{arm_check}\n\
         printf '[toolchain]\\ncuda = \"10.2\"\\n' > new.toml\n\
         touch -r gpuenv.toml new.toml\nmv new.toml gpuenv.toml\n\
         {prompt}\n{record}\n\
         sleep 1.2\n{prompt}\n{arm_check}\n\
         cp -p gpuenv.toml ref.toml\n\
         printf '[toolchain]\\ncuda = \"12.4\"\\n' > gpuenv.toml\n\
         touch -r ref.toml gpuenv.toml\n\
         {prompt}\n{record}\n"
    )
}

#[test]
fn a_toolchain_file_replaced_by_one_of_the_same_size_and_time_is_seen() {
    for shell in SHELLS {
        if !have_tool(shell) {
            continue;
        }
        let (sb, _) = hostile::pinned_project();
        let cuda102 = cuda_10_2(&sb.path("opt/cuda-10.2"));
        sb.ok(&["link", "cuda-10.2", cuda102.to_str().unwrap()]);
        let gh = sb.gpuenv_home();
        hostile::shell(
            &sb,
            shell,
            &swap_script(shell),
            &[("GPUENV_HOME", gh.as_os_str() as &OsStr)],
        );
        let log = fs::read_to_string(sb.path("out/log")).unwrap();
        assert_eq!(log, "cuda-12.4\ncuda-10.2\ncuda-12.4\n", "{shell}");
    }
}
