//! The proxy as a process around the tool: the host compiler it asks about (once per
//! compiler file), and the standard streams the tool gets.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use fs_err as fs;

struct World {
    sb: Sandbox,
    proj: PathBuf,
}

impl World {
    /// cuda-11.8 and cuda-12.4 linked (stub nvcc that log their arguments); a project.
    fn new() -> World {
        let sb = Sandbox::new();
        for (name, version) in [("cuda-11.8", "11.8.89"), ("cuda-12.4", "12.4.131")] {
            let root = cuda_runfile(&sb.path(&format!("opt/{name}")), version);
            sb.ok(&["link", name, root.to_str().unwrap()]);
        }
        let proj = sb.path("proj");
        write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"11.8\"\n");
        World { sb, proj }
    }

    fn view_nvcc(&self, name: &str) -> PathBuf {
        self.sb.gpuenv_home().join(format!("views/{name}/bin/nvcc"))
    }

    fn log(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.sb.path(&format!("opt/{name}/nvcc.log"))).ok()
    }

    /// `program` in the project with a clean environment and `vars`.
    fn command(&self, program: &Path, args: &[String], vars: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env_clear()
            .env("HOME", self.sb.home())
            .env("PATH", "/usr/bin:/bin")
            .env("NO_COLOR", "1")
            .current_dir(&self.proj);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd
    }

    fn run(&self, program: &Path, args: &[String], vars: &[(&str, &str)]) -> std::process::Output {
        self.command(program, args, vars).output().unwrap()
    }
}

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
    let w = World::new();
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
    let w = World::new();
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
    let w = World::new();
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
