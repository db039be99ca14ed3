//! The prompt after a `cd` is answered by the proxy binary beside gpuenv (`gpuenv-shim
//! hook-env`), which starts faster; whatever it would not answer exactly as gpuenv does (a
//! note or error to say, a lock, a pin to install, an outdated proxy, `GPUENV_LOG=verbose`)
//! it hands over to gpuenv, which says it once. Each case runs a real bash with the hook,
//! traced with `strace -f` to see which programs ran.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::shells::started;
use crate::common::*;

/// A sandbox with CUDA 12.4 linked and a project pinning it under `proj/`.
fn project() -> Sandbox {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n");
    sb
}

/// Runs `script` in a bash with the hook loaded, in the sandbox's directory, each `cd`
/// followed by the prompt, under `strace -f` (the programs started go to `trace`).
/// Returns bash's output.
fn bash(sb: &Sandbox, script: &str, trace: &Path, env: &[(&str, &str)]) -> Output {
    Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=execve", "-o"])
        .arg(trace)
        .args(["bash", "--norc", "--noprofile", "-c"])
        .arg(format!(
            "eval \"$(\"$GPUENV_BIN\" hook bash)\"\n_gpuenv_hook\n{script}"
        ))
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", system_path())
        .env("GPUENV_BIN", pty::gpuenv_bin())
        .env("GPUENV_DOCTOR_ROOT", sb.sysroot())
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .current_dir(sb.path(""))
        .output()
        .unwrap()
}

fn named(programs: &[String], name: &str) -> usize {
    programs
        .iter()
        .filter(|p| Path::new(p).file_name().is_some_and(|n| n == name))
        .count()
}

const ROUND: &str = "for i in 1 2; do cd proj; _gpuenv_hook; echo \"in ${CUDA_HOME:-none}\"; cd ..; _gpuenv_hook; echo \"out ${CUDA_HOME:-none}\"; done\n";

#[test]
fn a_prompt_after_a_cd_is_answered_by_the_proxy_binary_alone() {
    if !have_tool("bash") || !have_tool("strace") {
        return;
    }
    let sb = project();
    // What gpuenv remembers is only what has not changed in the last two seconds.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let trace = sb.path("trace");
    let out = bash(&sb, ROUND, &trace, &[]);
    let stdout = succeeded(&out);
    let view = sb.gpuenv_home().join("views/cuda-12.4");
    assert_eq!(
        stdout,
        format!("in {v}\nout none\nin {v}\nout none\n", v = view.display()),
        "{out:?}"
    );
    assert!(out.stderr.is_empty(), "nothing to say: {out:?}");
    let programs = started(&trace);
    assert!(named(&programs, "gpuenv-shim") >= 2, "{programs:?}");
    assert_eq!(
        named(&programs, "gpuenv"),
        1,
        "gpuenv ran for `gpuenv hook bash` only: {programs:?}"
    );
    // The proxy it runs is the one beside gpuenv, as `gpuenv hook bash` names it.
    let beside = Path::new(&pty::gpuenv_bin()).with_file_name("gpuenv-shim");
    assert!(
        programs.iter().any(|p| Path::new(p) == beside),
        "{programs:?}"
    );
}

#[test]
fn what_the_prompt_has_to_say_is_said_once_by_gpuenv() {
    if !have_tool("bash") || !have_tool("strace") {
        return;
    }
    // (a toolchain file that does not parse, a lock that differs, an [env] not trusted yet)
    type Make<'a> = &'a dyn Fn(&Sandbox);
    let cases: [(&str, Make, &str); 3] = [
        (
            "a broken toolchain file",
            &|sb| write(&sb.path("proj/gpuenv.toml"), "[toolchain\n"),
            "gpuenv.toml:1",
        ),
        (
            "a lock that differs",
            &|sb| {
                sb.linked_runfile("opt/cuda-12.6", "cuda-12.6", "12.6.85");
                write(
                    &sb.path("proj/gpuenv.toml"),
                    "[toolchain]\ncuda = \"12.6\"\n",
                );
                let locked = sb
                    .gpuenv_std()
                    .arg("lock")
                    .current_dir(sb.path("proj"))
                    .output()
                    .unwrap();
                succeeded(&locked);
                write(
                    &sb.path("proj/gpuenv.toml"),
                    "[toolchain]\ncuda = \"12.4\"\n",
                );
            },
            "the lock has cuda-12.6",
        ),
        (
            "an [env] not trusted yet",
            &|sb| {
                write(
                    &sb.path("proj/gpuenv.toml"),
                    "[toolchain]\ncuda = \"12.4\"\n[env]\nFOO = \"bar\"\n",
                )
            },
            "gpuenv trust",
        ),
    ];
    for (case, make, said) in cases {
        let sb = project();
        make(&sb);
        let trace = sb.path("trace");
        let out = bash(&sb, "cd proj; _gpuenv_hook\n", &trace, &[]);
        assert!(out.status.success(), "{case}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.matches(said).count(),
            1,
            "{case}: said once, by gpuenv: {stderr}"
        );
        assert!(
            stderr.lines().all(|l| l.starts_with("gpuenv: ")),
            "{case}: only the hook's notes: {stderr}"
        );
        // The prompt before the `cd` (nothing to say) and the one after it.
        let programs = started(&trace);
        assert_eq!(named(&programs, "gpuenv-shim"), 2, "{case}: {programs:?}");
        assert_eq!(
            named(&programs, "gpuenv"),
            2,
            "{case}: `hook bash`, then the prompt in proj handed over: {programs:?}"
        );
    }
}

#[test]
fn gpuenv_takes_the_prompt_when_the_installed_proxy_is_not_this_one_and_replaces_it() {
    if !have_tool("bash") || !have_tool("strace") {
        return;
    }
    let sb = project();
    // An older gpuenv's proxy in the home (another file, another size), put there after
    // `gpuenv hook bash`, which would have replaced it.
    let installed = sb.gpuenv_home().join("bin/gpuenv-shim");
    let older = format!(
        "rm {p}; printf '#!/bin/sh\\nexit 1\\n' > {p}; chmod +x {p}\n",
        p = installed.display()
    );
    let trace = sb.path("trace");
    let out = bash(
        &sb,
        &format!("{older}cd proj; _gpuenv_hook; echo \"in $CUDA_HOME\"\n"),
        &trace,
        &[],
    );
    assert!(succeeded(&out).contains("views/cuda-12.4"), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("replaced the proxy"),
        "{out:?}"
    );
    assert_eq!(
        fs_err::read(&installed).unwrap(),
        fs_err::read(proxy_bin()).unwrap(),
        "gpuenv put this proxy in place"
    );
    assert_eq!(named(&started(&trace), "gpuenv"), 2);

    // From then on the proxy answers alone.
    let out = bash(&sb, "cd proj; _gpuenv_hook\n", &trace, &[]);
    assert!(out.stderr.is_empty(), "{out:?}");
    assert_eq!(named(&started(&trace), "gpuenv"), 1);
}

#[test]
fn verbose_prompts_are_gpuenvs_and_an_unknown_level_gets_its_warning() {
    if !have_tool("bash") || !have_tool("strace") {
        return;
    }
    let sb = project();
    let trace = sb.path("trace");
    for (level, said) in [
        ("verbose", "verbose: toolchain file:"),
        ("loud", "GPUENV_LOG=loud is not a level gpuenv knows"),
    ] {
        let out = bash(
            &sb,
            "cd proj; _gpuenv_hook\n",
            &trace,
            &[("GPUENV_LOG", level)],
        );
        assert!(out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(said), "{level}: {stderr}");
        // `hook bash`, then both prompts (before and after the `cd`) handed over.
        assert_eq!(named(&started(&trace), "gpuenv"), 3, "{level}");
    }
    // `quiet` is a level the proxy keeps: nothing to say, nothing handed over.
    let out = bash(
        &sb,
        "cd proj; _gpuenv_hook\n",
        &trace,
        &[("GPUENV_LOG", "quiet")],
    );
    assert!(out.stderr.is_empty(), "{out:?}");
    assert_eq!(named(&started(&trace), "gpuenv"), 1);
}

#[test]
fn a_proxy_without_gpuenv_beside_it_says_how_to_mend_that() {
    let sb = project();
    // The proxy alone in a directory, run as the hook runs it, where it must hand over.
    let lone = sb.path("lone/gpuenv-shim");
    fs_err::create_dir_all(lone.parent().unwrap()).unwrap();
    // A link, not a copy: a file just written may still be open for writing in a process
    // another test forks meanwhile, and then cannot be run ("Text file busy").
    fs_err::hard_link(proxy_bin(), &lone).unwrap();
    write(&sb.path("proj/gpuenv.toml"), "[toolchain\n");
    let out = Command::new(&lone)
        .args(["hook-env", "--shell", "bash"])
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", system_path())
        .env("NO_COLOR", "1")
        .current_dir(sb.path("proj"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "needs gpuenv at {}",
            sb.path("lone/gpuenv").display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("install gpuenv again"), "{stderr}");
}
