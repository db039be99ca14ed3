//! What the proxy groups start from: toolkits linked from stub trees whose nvcc logs its
//! arguments, a venv with torch, a project pinned to one toolkit, and the proxy run the way
//! a build runs it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{cuda_runfile, rocm, system_path, torch_package, write, Sandbox};
use fs_err as fs;

pub struct World {
    pub sb: Sandbox,
    pub site: PathBuf,
    pub proj: PathBuf,
}

impl World {
    /// cuda-11.8, cuda-12.1, cuda-12.4 and rocm-6.2.4 linked; a venv with torch 2.4.1+cu121;
    /// a project pinned to `pin`.
    pub fn new(pin: &str) -> World {
        let sb = Sandbox::new();
        for (name, version) in [
            ("cuda-11.8", "11.8.89"),
            ("cuda-12.1", "12.1.105"),
            ("cuda-12.4", "12.4.131"),
        ] {
            let root = cuda_runfile(&sb.path(&format!("opt/{name}")), version);
            sb.ok(&["link", name, root.to_str().unwrap()]);
        }
        let rocm_root = rocm(&sb.path("opt/rocm-6.2.4"), "6.2.4");
        sb.ok(&["link", "rocm-6.2.4", rocm_root.to_str().unwrap()]);
        let site = torch_package(
            &sb.path("venv/lib/python3.11/site-packages"),
            "2.4.1+cu121",
            Some("12.1"),
            None,
        );
        let proj = sb.path("proj");
        write(
            &proj.join("gpuenv.toml"),
            &format!("[toolchain]\ncuda = \"{pin}\"\n"),
        );
        World { sb, site, proj }
    }

    pub fn view_nvcc(&self, name: &str) -> PathBuf {
        self.sb.gpuenv_home().join(format!("views/{name}/bin/nvcc"))
    }

    /// The arguments the stub nvcc of `opt/<name>` was run with, a line per run.
    pub fn log(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.sb.path(&format!("opt/{name}/nvcc.log"))).ok()
    }

    /// The arguments torch's cpp_extension passes to nvcc.
    pub fn ext_args(&self) -> Vec<String> {
        let inc = self.site.join("torch/include");
        vec![
            format!("-I{}", inc.display()),
            format!("-I{}", inc.join("torch/csrc/api/include").display()),
            "-DTORCH_EXTENSION_NAME=ext".into(),
            "-c".into(),
            "x.cu".into(),
            "-o".into(),
            "x.o".into(),
        ]
    }

    /// `program` in the project with a clean environment and `vars`.
    pub fn command(&self, program: &Path, args: &[String], vars: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env_clear()
            .env("HOME", self.sb.home())
            .env("PATH", system_path())
            .env("NO_COLOR", "1")
            .env("GPUENV_DOCTOR_ROOT", self.sb.sysroot())
            .current_dir(&self.proj);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs `program` in the project with a clean environment and `vars`.
    pub fn run(&self, program: &Path, args: &[String], vars: &[(&str, &str)]) -> Output {
        self.command(program, args, vars).output().unwrap()
    }

    pub fn shims_path(&self) -> String {
        format!(
            "{}:{}",
            self.sb.gpuenv_home().join("shims").display(),
            system_path()
        )
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
