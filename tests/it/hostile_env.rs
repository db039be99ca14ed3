//! An attacker's (and a careless user's) checklist against the environment gpuenv starts in
//! and the shell it changes: non-UTF-8 PATH entries, a reader that closes stdout, a
//! `GPUENV_HOME` with a colon, lists unset or duplicated by the user, a toolkit uninstalled
//! under an active shell, hook state from another gpuenv. Every case runs the built binary,
//! in real bash, zsh and fish where the case is about the shell. (The toolchain file and
//! trust are tests/it/hostile_toolchain_file.rs.)

use crate::common::hostile;
use crate::common::install_fixtures as fixtures;

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::shells::{dialect, env_vars, SHELLS};
use crate::common::*;
use fs_err as fs;
use hostile::{pinned_project, shell, stderr};

fn bytes(s: &[u8]) -> OsString {
    OsString::from_vec(s.to_vec())
}

fn contains(haystack: &OsStr, needle: &[u8]) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|w| w == needle)
}

/// `PATH=$'/usr/bin:/tmp/caf\xe9/bin:/bin'`: a Latin-1 directory name.
#[test]
fn a_latin1_dir_on_path_survives_projects_cd_the_proxy_and_run() {
    let (sb, _) = pinned_project();
    let latin1 = b"/tmp/caf\xe9/bin";
    let path = bytes(b"/usr/bin:/tmp/caf\xe9/bin:/bin");
    let lib = bytes(b"/opt/caf\xe9/lib");
    // A tool of the toolchain that reports the PATH it was started with, through its shim.
    let root = sb.path("opt/cuda-12.4");
    write_exe(
        &root.join("bin/showpath"),
        "#!/bin/sh\nprintf '%s' \"$PATH\" > \"$OUT/proxy-path\"\n",
    );
    sb.ok(&["reshim"]);
    for sh in SHELLS {
        if !have_tool(sh) {
            continue;
        }
        let (source, prompt, hook) = dialect(sh);
        let script = format!(
            "{source}\n{prompt}\nenv -0 > \"$OUT/start\"\ncd \"$P\"\n{hook}\nenv -0 > \"$OUT/in\"\n\
             showpath\n\"$GPUENV_BIN\" run -- sh -c 'printf %s \"$PATH\"' > \"$OUT/run-path\"\n\
             cd /\n{hook}\nenv -0 > \"$OUT/out\"\ntrue\n"
        );
        shell(
            &sb,
            sh,
            &script,
            &[("PATH", &path), ("LD_LIBRARY_PATH", &lib)],
        );
        let (start, inside, out) = (
            env_vars(&sb.path("out/start")),
            env_vars(&sb.path("out/in")),
            env_vars(&sb.path("out/out")),
        );
        for p in [&inside["PATH"], &start["PATH"]] {
            // Whole entries: outside the project the shims are off PATH (no CUDA outside
            // gpuenv here), so /usr/bin may come first.
            assert!(
                contains(p, latin1) && p.as_bytes().split(|b| *b == b':').any(|e| e == b"/usr/bin"),
                "{sh}: {p:?}"
            );
        }
        assert!(contains(&inside["PATH"], b"views/cuda-12.4/bin"), "{sh}");
        assert!(
            contains(&inside["LD_LIBRARY_PATH"], b"/opt/caf\xe9/lib"),
            "{sh}"
        );
        assert_eq!(
            out["PATH"], start["PATH"],
            "{sh}: after cd / PATH is as it was"
        );
        assert_eq!(out["LD_LIBRARY_PATH"], lib, "{sh}");
        for seen in ["proxy-path", "run-path"] {
            let got = bytes(&fs::read(sb.path("out").join(seen)).unwrap());
            assert!(
                contains(&got, latin1) && contains(&got, b"/bin"),
                "{sh} {seen}: {got:?}"
            );
        }
    }
}

/// stdout is a pipe whose reader is already gone, as with `| head -0` or `| true`.
fn with_closed_stdout(sb: &Sandbox, dir: &Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    std::process::Command::new(assert_cmd::cargo::cargo_bin("gpuenv"))
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_reader_that_closes_early_ends_every_command_quietly() {
    let (sb, proj) = pinned_project();
    for args in [
        &["env"][..],
        &["completions", "bash"],
        &["list"],
        &["show"],
        &["hook", "bash"],
        &["hook-env", "--shell", "bash"],
        &["which", "nvcc"],
    ] {
        let out = with_closed_stdout(&sb, &proj, args);
        let err = stderr(&out);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        let by_sigpipe = out.status.signal() == Some(libc::SIGPIPE);
        assert!(
            by_sigpipe || out.status.success(),
            "{args:?}: {:?}",
            out.status
        );
    }
}

#[test]
fn a_gpuenv_home_with_a_colon_is_refused() {
    let sb = Sandbox::new();
    let out = sb
        .gpuenv()
        .env("GPUENV_HOME", sb.path("a:b"))
        .arg("list")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("contains `:`") && err.contains("hint:"),
        "{err}"
    );
    assert!(!sb.path("a:b").exists(), "nothing was created");
}

#[test]
fn unsetting_a_list_inside_a_project_leaves_it_unset_outside() {
    let (sb, _) = pinned_project();
    for sh in SHELLS {
        if !have_tool(sh) {
            continue;
        }
        let (source, prompt, hook) = dialect(sh);
        let unset = if sh == "fish" {
            "set -e LD_LIBRARY_PATH; set -e CPATH"
        } else {
            "unset LD_LIBRARY_PATH CPATH"
        };
        let script = format!(
            "{source}\n{prompt}\ncd \"$P\"\n{hook}\nenv -0 > \"$OUT/in\"\n{unset}\n{prompt}\n\
             cd \"$HOME\"\n{hook}\nenv -0 > \"$OUT/out\"\ntrue\n"
        );
        shell(&sb, sh, &script, &[]);
        assert!(env_vars(&sb.path("out/in")).contains_key("CPATH"), "{sh}");
        let out = env_vars(&sb.path("out/out"));
        assert_eq!(out.get("LD_LIBRARY_PATH"), None, "{sh}");
        assert_eq!(out.get("CPATH"), None, "{sh}");
    }
}

#[test]
fn uninstalling_the_active_toolkit_reverts_the_shell_at_the_next_prompt() {
    let sb = Sandbox::new();
    let mirror = sb.path("mirror");
    fixtures::write_tree(&mirror, &fixtures::redist_tree(&["12.4.1"]));
    let out = sb
        .gpuenv()
        .env("GPUENV_CUDA_MIRROR", &mirror)
        .args(["install", "cuda-12.4.1", "--profile", "minimal"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    for sh in SHELLS {
        if !have_tool(sh) {
            continue;
        }
        let (source, prompt, hook) = dialect(sh);
        let reinstall = "\"$GPUENV_BIN\" install cuda-12.4.1 --profile minimal 2>/dev/null";
        let script = format!(
            "{source}\n{prompt}\nenv -0 > \"$OUT/start\"\ncd \"$P\"\n{hook}\nenv -0 > \"$OUT/in\"\n\
             \"$GPUENV_BIN\" uninstall cuda-12.4.1\n{prompt}\n{prompt}\nenv -0 > \"$OUT/after\"\n\
             {reinstall}\ntrue\n"
        );
        let out = shell(
            &sb,
            sh,
            &script,
            &[("GPUENV_CUDA_MIRROR", mirror.as_os_str())],
        );
        assert!(
            env_vars(&sb.path("out/in")).contains_key("CUDA_HOME"),
            "{sh}"
        );
        let after = env_vars(&sb.path("out/after"));
        assert_eq!(after.get("CUDA_HOME"), None, "{sh}");
        assert!(
            !contains(&after["PATH"], b"views/cuda-12.4.1"),
            "{sh}: {:?}",
            after["PATH"]
        );
        let err = stderr(&out);
        assert_eq!(
            err.matches("changes to this shell are undone").count(),
            1,
            "{sh}: said once: {err}"
        );
    }
}

#[test]
fn a_path_with_the_users_own_duplicates_keeps_them_in_a_project() {
    let (sb, proj) = pinned_project();
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("PATH", "/usr/bin:/bin:/usr/bin")
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    let vars: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let path = vars["PATH"].as_str().unwrap();
    assert!(path.ends_with(":/usr/bin:/bin:/usr/bin"), "{path}");
}

#[test]
fn a_hook_state_from_an_older_or_unknown_gpuenv_is_read_or_reset() {
    let (sb, _) = pinned_project();
    let view = sb.gpuenv_home().join("views/cuda-12.4");
    // The first layout had no version: what it applied is still taken back.
    let v0 = format!(
        r#"{{"fp":{{"cwd":"/x","vars":[],"file":null,"settings":null}},"vars":{{"CUDA_HOME":{{"before":null,"after":"{}"}}}}}}"#,
        view.display()
    );
    let unknown = r#"{"v":999,"anything":["else"]}"#;
    for (state, reverted) in [(v0.as_str(), true), (unknown, false), ("{not json", false)] {
        let out = sb
            .gpuenv()
            .current_dir(sb.home())
            .env("CUDA_HOME", &view)
            .env("__GPUENV_STATE", state)
            .args(["hook-env", "--shell", "bash"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{state}: {}", stderr(&out));
        let code = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            code.contains("unset CUDA_HOME"),
            reverted,
            "{state}: {code}"
        );
        assert!(
            code.contains("export __GPUENV_STATE='{\"v\":4,"),
            "{state}: {code}"
        );
    }
}
