//! The proxy as a process around the tool: the host compiler it asks about (once per
//! compiler file), the standard streams and the environment the tool gets, its exit status
//! and signals, and loops back into the proxy.

use crate::common::proxy_world as world;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use crate::common::*;
use fs_err as fs;
use world::{stderr, World};

/// A g++ in `dir` that says it is gcc `version` and logs each run to `g++.runs`, written
/// as a package upgrade writes it: a new file renamed over the old one.
fn fake_gxx(dir: &Path, version: &str) {
    let script = format!(
        "#!/bin/sh\necho run >> '{}'\necho 'g++ (GCC) {version}'\n",
        dir.join("g++.runs").display()
    );
    write_exe(&dir.join("g++.new"), &script);
    fs::rename(dir.join("g++.new"), dir.join("g++")).unwrap();
}

#[test]
fn g_plus_plus_is_asked_its_version_once_and_again_after_an_upgrade() {
    let w = World::new("11.8");
    let bin = w.sb.path("gcc-bin");
    write_exe(
        &bin.join("g++-11"),
        "#!/bin/sh\necho 'g++-11 (GCC) 11.4.0'\n",
    );
    fake_gxx(&bin, "11.4.0");
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let compile = || {
        let args = ["-c".to_string(), "x.cu".to_string()];
        succeeded(&w.run(&w.view_nvcc("cuda-11.8"), &args, &[("PATH", &path)]));
        w.log("cuda-11.8")
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_string()
    };
    let runs = || {
        fs::read_to_string(bin.join("g++.runs"))
            .unwrap()
            .lines()
            .count()
    };
    // A compiler changed in the last 2 s is asked each time (file times tick coarsely).
    let settle = || std::thread::sleep(std::time::Duration::from_millis(2100));
    settle();

    // gcc 11 is what CUDA 11.8 accepts: nvcc's default stays.
    assert_eq!(compile(), "-c x.cu");
    assert_eq!(compile(), "-c x.cu");
    assert_eq!(runs(), 1, "the second compile does not start g++ again");

    // g++ becomes gcc 12, too new for 11.8: the next compile sees it and passes g++-11.
    fake_gxx(&bin, "12.2.0");
    settle();
    let ccbin = format!("-ccbin {} -c x.cu", bin.join("g++-11").display());
    assert_eq!(compile(), ccbin);
    assert_eq!(runs(), 2);
    assert_eq!(compile(), ccbin);
    assert_eq!(runs(), 2);
}

#[test]
fn show_doctor_and_the_proxy_share_one_answer_from_g_plus_plus_until_it_is_upgraded() {
    let w = World::new("11.8");
    let bin = w.sb.path("gcc-bin");
    write_exe(
        &bin.join("g++-11"),
        "#!/bin/sh\necho 'g++-11 (GCC) 11.4.0'\n",
    );
    fake_gxx(&bin, "11.4.0");
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let gpuenv = assert_cmd::cargo::cargo_bin("gpuenv");
    let show = || {
        let out = w.run(&gpuenv, &["show".into()], &[("PATH", &path)]);
        succeeded(&out)
            .lines()
            .find_map(|l| l.strip_prefix("host compiler: ").map(str::to_string))
            .expect("show names the host compiler")
    };
    let runs = || {
        fs::read_to_string(bin.join("g++.runs"))
            .unwrap()
            .lines()
            .count()
    };
    // A compiler changed in the last 2 s is asked each time (file times tick coarsely).
    std::thread::sleep(std::time::Duration::from_millis(2100));

    assert!(show().contains("g++ is gcc 11.4.0"), "{}", show());
    show();
    assert_eq!(runs(), 1, "the second show does not start g++ again");
    // The proxy and the doctor's choice read the same answer.
    let args = ["-c".to_string(), "x.cu".to_string()];
    succeeded(&w.run(&w.view_nvcc("cuda-11.8"), &args, &[("PATH", &path)]));
    w.run(&gpuenv, &["doctor".into()], &[("PATH", &path)]);
    assert_eq!(runs(), 1, "the proxy and doctor reuse it");

    // An upgrade to gcc 12 (a new file at the same path) is asked again at once.
    fake_gxx(&bin, "12.2.0");
    let choice = show();
    assert_eq!(runs(), 2);
    assert!(
        choice.starts_with(&format!(
            "{} (g++ is gcc 12.2.0",
            bin.join("g++-11").display()
        )),
        "{choice}"
    );
}

#[test]
fn a_tool_started_with_stdin_and_stdout_closed_gets_dev_null_there_as_before() {
    use std::os::unix::process::CommandExt;
    let w = World::new("11.8");
    // The real nvcc says what its fds 0-2 are (a closed one: "closed").
    let log = w.sb.path("fds.log");
    write_exe(
        &w.sb.path("opt/cuda-12.4/bin/nvcc"),
        &format!(
            "#!/bin/sh\nfor fd in 0 1 2; do eval \"fd$fd=\\$(readlink /proc/$$/fd/$fd || echo closed)\"; done\nprintf '%s\\n' \"$fd0\" \"$fd1\" \"$fd2\" > '{0}'\n",
            log.display()
        ),
    );
    let mut cmd = w.command(&w.view_nvcc("cuda-12.4"), &["--version".into()], &[]);
    // SAFETY: close(2) only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(0);
            libc::close(1);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    succeeded(&out);
    let fds = fs::read_to_string(&log).unwrap();
    let fds: Vec<&str> = fds.lines().collect();
    assert_eq!(fds[..2], ["/dev/null", "/dev/null"], "{fds:?}");
    assert!(
        fds[2].starts_with("pipe:"),
        "stderr is the caller's: {fds:?}"
    );
}

#[test]
fn exit_status_and_signals_are_the_tools_own() {
    let w = World::new("12.1");
    let nvcc = w.view_nvcc("cuda-12.1");
    let out = w.run(&nvcc, &["--exit".into(), "3".into()], &[]);
    assert_eq!(out.status.code(), Some(3));
    let out = w.run(&nvcc, &["--kill-self".into()], &[]);
    assert_eq!(
        out.status.signal(),
        Some(15),
        "exec'd, so the signal reaches the caller: {out:?}"
    );
}

#[test]
fn the_proxy_sets_the_toolchains_environment() {
    let w = World::new("12.1");
    // A program of the toolkit (only those get shims) that shows its environment.
    let script = w.sb.path("opt/cuda-12.1/bin/cuobjdump");
    write_exe(
        &script,
        "#!/bin/sh\necho \"$CUDA_HOME|$GPUENV_ACTIVE|$PATH\"\n",
    );
    w.sb.ok(&["reshim"]);
    let out = w.run(
        Path::new("cuobjdump"),
        &[],
        &[(
            "PATH",
            &format!("{}:/usr/local/cuda-11.3/bin", w.shims_path()),
        )],
    );
    succeeded(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    let view = w.sb.gpuenv_home().join("views/cuda-12.1");
    assert!(
        text.starts_with(&format!(
            "{}|cuda-12.1|{}/bin:{}",
            view.display(),
            view.display(),
            w.sb.gpuenv_home().join("shims").display()
        )),
        "{text}"
    );
    assert!(!text.contains("cuda-11.3"), "{text}");
}

#[test]
fn loops_are_stopped() {
    let w = World::new("12.1");
    // A "toolchain" whose nvcc runs the shims again.
    let root = w.sb.path("opt/loop");
    write(&root.join("version.txt"), "CUDA Version 10.2.89\n");
    write_exe(
        &root.join("bin/nvcc"),
        &format!(
            "#!/bin/sh\nexec '{}' \"$@\"\n",
            w.sb.gpuenv_home().join("shims/nvcc").display()
        ),
    );
    w.sb.ok(&["link", "cuda-10.2-loop", root.to_str().unwrap()]);
    let out = w.run(
        Path::new("nvcc"),
        &["-c".into(), "x.cu".into()],
        &[
            ("PATH", &w.shims_path()),
            ("GPUENV_TOOLCHAIN", "cuda-10.2-loop"),
            // CUDA 10.2 accepts gcc <= 8: the user's own choice, so gpuenv does not stop it.
            ("NVCC_CCBIN", "g++"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("leads back to a gpuenv proxy"),
        "{}",
        stderr(&out)
    );

    // A linked toolchain whose nvcc became the proxy itself after `link` (which refuses
    // such a root).
    let root = w.sb.path("opt/self");
    write(&root.join("version.txt"), "CUDA Version 10.1.243\n");
    nvcc_stub(&root, "10.1.243");
    w.sb.ok(&["link", "cuda-10.1", root.to_str().unwrap()]);
    fs::remove_file(root.join("bin/nvcc")).unwrap();
    std::os::unix::fs::symlink(
        w.sb.gpuenv_home().join("bin/gpuenv-shim"),
        root.join("bin/nvcc"),
    )
    .unwrap();
    let out = w.run(
        Path::new("nvcc"),
        &["--version".into()],
        &[("PATH", &w.shims_path()), ("GPUENV_TOOLCHAIN", "cuda-10.1")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is the gpuenv proxy itself"),
        "{}",
        stderr(&out)
    );
}
