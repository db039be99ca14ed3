//! An attacker's (and a careless user's) checklist against the environment, the shell hook,
//! the toolchain file and trust: every case runs the built binary, in real bash, zsh and
//! fish where the case is about the shell.

#[path = "common/archives.rs"]
mod archives;
mod common;
#[path = "common/install_fixtures.rs"]
mod fixtures;
#[path = "common/server.rs"]
mod server;

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::shells::{self, dialect, env_vars, SHELLS};
use common::*;
use fs_err as fs;

/// CUDA 12.4 linked, and `proj/` pinned to it.
fn pinned_project() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let root = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    sb.ok(&["link", "cuda-12.4", root.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"12.4\"\n");
    (sb, proj)
}

/// Runs `script` in `shell` with the hook's binary in `$GPUENV_BIN`, the project in `$P`,
/// `$OUT` for results, and `env` on top; fails the test if the shell fails.
fn shell(sb: &Sandbox, shell: &str, script: &str, env: &[(&str, &OsStr)]) -> Output {
    let bin = assert_cmd::cargo::cargo_bin("gpuenv");
    let (home, proj, out) = (sb.home(), sb.path("proj"), sb.path("out"));
    fs::create_dir_all(&out).unwrap();
    let mut all: Vec<(&str, &OsStr)> = vec![
        ("HOME", home.as_os_str()),
        ("PATH", "/usr/bin:/bin".as_ref()),
        ("LANG", "C.UTF-8".as_ref()),
        ("GPUENV_BIN", bin.as_os_str()),
        ("P", proj.as_os_str()),
        ("OUT", out.as_os_str()),
    ];
    for (k, v) in env {
        all.retain(|(key, _)| key != k);
        all.push((k, v));
    }
    let output = shells::run(shell, script, &home, &all);
    assert!(
        output.status.success(),
        "{shell}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn bytes(s: &[u8]) -> OsString {
    OsString::from_vec(s.to_vec())
}

fn contains(haystack: &OsStr, needle: &[u8]) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|w| w == needle)
}

#[test]
fn a_file_swapped_between_reads_never_applies_untrusted_env() {
    let (sb, proj) = pinned_project();
    let file = proj.join("gpuenv.toml");
    let trusted = "[toolchain]\ncuda = \"12.4\"\n[env]\nGOOD = \"1\"\n";
    let evil = "[toolchain]\ncuda = \"12.4\"\n[env]\nEVIL = \"1\"\n";
    write(&file, trusted);
    sb.gpuenv()
        .current_dir(&proj)
        .arg("trust")
        .assert()
        .success();

    // A writer swaps the two contents as fast as the kernel can: one atomic exchange of
    // two names per flip (renameat2 RENAME_EXCHANGE), so any two reads may differ.
    let swap = proj.join(".swap");
    write(&swap, evil);
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let (a, b) = (c(&file), c(&swap));
    let stop = AtomicBool::new(false);
    let (mut good, mut skipped, mut evil) = (0, 0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: two valid NUL-terminated paths.
                let rc = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        a.as_ptr(),
                        libc::AT_FDCWD,
                        b.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
            }
        });
        for _ in 0..150 {
            let out = sb
                .gpuenv()
                .current_dir(&proj)
                .args(["env", "--shell", "json"])
                .output()
                .unwrap();
            let vars = String::from_utf8_lossy(&out.stdout);
            evil += usize::from(vars.contains("EVIL"));
            good += usize::from(vars.contains("\"GOOD\""));
            skipped += usize::from(stderr(&out).contains("not applied until you trust"));
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(
        evil, 0,
        "an untrusted [env] was applied {evil} times in 150"
    );
    assert!(
        good > 0 && skipped > 0,
        "the race saw both files: {good} trusted, {skipped} untrusted"
    );
}

#[test]
fn an_osc52_key_in_an_untrusted_file_reaches_the_terminal_escaped() {
    let (sb, proj) = pinned_project();
    // TOML escapes: the key itself holds ESC … BEL, an OSC 52 "set the clipboard" sequence.
    let osc52 = r"\u001b]52;c;Y3VybCBldmlsLnNoIHwgc2gK\u0007";
    write(
        &proj.join("gpuenv.toml"),
        &format!("[toolchain]\ncuda = \"12.4\"\n[env]\n\"{osc52}\" = \"x\"\n"),
    );
    let clean = |text: &str, who: &str| {
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{who}: {text:?}"
        );
        assert!(
            text.contains("\\x1b]52;c;"),
            "{who} shows the key escaped: {text:?}"
        );
    };
    for sh in SHELLS {
        if !have_tool(sh) {
            continue;
        }
        let (source, prompt, hook) = dialect(sh);
        let out = shell(
            &sb,
            sh,
            &format!("{source}\n{prompt}\ncd \"$P\"\n{hook}\ntrue\n"),
            &[],
        );
        clean(&stderr(&out), sh);
    }
    let out = sb.gpuenv().current_dir(&proj).arg("show").output().unwrap();
    clean(&stderr(&out), "gpuenv show");
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
            assert!(
                contains(p, latin1) && contains(p, b":/usr/bin:"),
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

/// Makes something at a path.
type MakeFile = dyn Fn(&Path);

#[test]
fn a_gpuenv_toml_that_is_not_a_file_is_an_error_naming_it() {
    let (sb, proj) = pinned_project();
    let fifo = |p: &Path| {
        assert!(std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap()
            .success());
    };
    let cases: [(&str, &MakeFile); 4] = [
        ("a directory", &|p| fs::create_dir(p).unwrap()),
        ("a FIFO", &fifo),
        ("a link to /dev/zero", &|p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
        ("a symlink loop", &|p| {
            std::os::unix::fs::symlink(p, p).unwrap();
        }),
    ];
    for (what, make) in cases {
        let sub = proj.join(what.replace(' ', "-"));
        fs::create_dir_all(&sub).unwrap();
        make(&sub.join("gpuenv.toml"));
        let out = sb
            .gpuenv()
            .current_dir(&sub)
            .arg("show")
            .timeout(Duration::from_secs(20))
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains(&sub.join("gpuenv.toml").display().to_string()),
            "{what}: {err}"
        );
    }
}

#[test]
fn the_hook_and_show_agree_on_a_directory_named_gpuenv_toml() {
    let (sb, proj) = pinned_project();
    fs::create_dir_all(proj.join("sub/gpuenv.toml")).unwrap();
    let out = shell(
        &sb,
        "bash",
        "eval \"$(\"$GPUENV_BIN\" hook bash)\"\ncd \"$P\"; _gpuenv_hook\ncd sub; _gpuenv_hook\n\
         echo \"[$CUDA_HOME]\" > \"$OUT/cuda\"\n",
        &[],
    );
    let err = stderr(&out);
    assert!(
        err.contains("gpuenv.toml is a directory, not a regular file"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(sb.path("out/cuda")).unwrap().trim(),
        "[]"
    );
    let show = sb
        .gpuenv()
        .current_dir(proj.join("sub"))
        .arg("show")
        .output()
        .unwrap();
    assert!(stderr(&show).contains("is a directory, not a regular file"));
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
fn trusted_env_cannot_set_what_steers_gpuenv_or_the_shell() {
    let (sb, proj) = pinned_project();
    let file = proj.join("gpuenv.toml");
    for var in [
        "GPUENV_TOOLCHAIN",
        "PROMPT_COMMAND",
        "BASH_ENV",
        "PS1",
        "precmd_functions",
        "fish_prompt",
        "LD_PRELOAD",
        "PATH",
    ] {
        write(
            &file,
            &format!("[toolchain]\ncuda = \"12.4\"\n\n[env]\n{var} = \"x\"\n"),
        );
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .arg("trust")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{var}: {err}");
        assert!(
            err.contains(&format!("{}:5:", file.display())),
            "{var}: {err}"
        );
        assert!(err.contains(&format!("cannot set {var}")), "{var}: {err}");
    }
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\n[env]\nX = \"a\\u0000b\"\n",
    );
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .arg("trust")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}:4:", file.display())) && err.contains("NUL"),
        "{err}"
    );
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
fn moving_from_a_trusted_project_into_an_invalid_one_takes_everything_back() {
    let (sb, proj) = pinned_project();
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n[env]\nNCCL_DEBUG = \"INFO\"\n",
    );
    sb.gpuenv()
        .current_dir(&proj)
        .arg("trust")
        .assert()
        .success();
    write(
        &proj.join("broken/gpuenv.toml"),
        "[toolchain]\ncuda = 12.4.1\n",
    );
    for sh in SHELLS {
        if !have_tool(sh) {
            continue;
        }
        let (source, prompt, hook) = dialect(sh);
        let script = format!(
            "{source}\n{prompt}\nenv -0 > \"$OUT/start\"\ncd \"$P\"\n{hook}\nenv -0 > \"$OUT/in\"\n\
             cd broken\n{hook}\n{prompt}\nenv -0 > \"$OUT/broken\"\ntrue\n"
        );
        let out = shell(&sb, sh, &script, &[]);
        let inside = env_vars(&sb.path("out/in"));
        assert_eq!(inside["NCCL_DEBUG"], "INFO", "{sh}");
        let broken = env_vars(&sb.path("out/broken"));
        for var in ["NCCL_DEBUG", "CUDA_HOME", "GPUENV_ACTIVE"] {
            assert_eq!(broken.get(var), None, "{sh}: {var}");
        }
        assert_eq!(
            broken["PATH"],
            env_vars(&sb.path("out/start"))["PATH"],
            "{sh}"
        );
        let err = stderr(&out);
        assert_eq!(err.matches("gpuenv: ").count(), 1, "{sh}: said once: {err}");
        assert!(err.contains("broken/gpuenv.toml:2:"), "{sh}: {err}");
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
fn toml_errors_say_what_the_file_should_contain_and_name_a_path_once() {
    let (sb, proj) = pinned_project();
    let file = proj.join("gpuenv.toml");
    write(&file, "toolchain = \"x\"\n");
    let out = sb.gpuenv().current_dir(&proj).arg("show").output().unwrap();
    let err = stderr(&out);
    assert!(!err.contains("RawToolchain"), "{err}");
    assert!(err.contains(&format!("{}:1:", file.display())), "{err}");
    assert!(
        err.contains("[toolchain] table") && err.contains("\nhint: "),
        "{err}"
    );

    // A state file that cannot be read: its path once, then why.
    let settings = sb.gpuenv_home().join("settings.toml");
    fs::remove_file(&settings).unwrap();
    fs::create_dir(&settings).unwrap();
    let out = sb.gpuenv().arg("list").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.matches(&settings.display().to_string()).count(),
        1,
        "{err}"
    );
    assert!(err.contains("Is a directory"), "{err}");
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
            code.contains("export __GPUENV_STATE='{\"v\":2,"),
            "{state}: {code}"
        );
    }
}
