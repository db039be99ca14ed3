//! A machine built from fixture files for `gpuenv doctor`: a fake file-system root
//! (GPUENV_DOCTOR_ROOT) for /proc, /dev and /.dockerenv, stub tools on a PATH that holds
//! nothing of the real system, linked toolchains, a project and a venv with torch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;
use fs_err as fs;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
pub struct Finding {
    pub id: String,
    pub name: String,
    pub status: String,
    pub summary: String,
    pub details: Vec<String>,
    pub hint: Option<String>,
}

pub struct Report {
    pub code: i32,
    pub findings: Vec<Finding>,
    /// Counts per status: `{"error": n, "warn": n, "ok": n, "skip": n}`.
    pub summary: Value,
}

impl Report {
    pub fn get(&self, id: &str) -> &Finding {
        self.findings
            .iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("no finding {id}"))
    }
}

/// A script that prints `text`; stubs run with PATH holding only fixture dirs.
pub fn printing(text: &str) -> String {
    format!("#!/bin/sh\n/bin/cat <<'EOF'\n{}\nEOF\n", text.trim_end())
}

/// A healthy machine: cuda-11.8, cuda-12.4 and rocm-6.2.4 linked; a project pinned to
/// cuda 12.4 with an arch list; a venv with torch 2.4.1+cu124, torchvision and the NCCL
/// wheel; driver 575.57.08; gcc 12; a container with 16 GiB of /dev/shm.
pub struct World {
    pub sb: Sandbox,
    pub root: PathBuf,
    pub stubs: PathBuf,
    pub proj: PathBuf,
    pub venv: PathBuf,
    pub site: PathBuf,
    pub vars: BTreeMap<String, String>,
}

impl World {
    pub fn new() -> World {
        let sb = Sandbox::new();
        for (name, version) in [("cuda-11.8", "11.8.89"), ("cuda-12.4", "12.4.131")] {
            let root = cuda_runfile(&sb.path(&format!("opt/{name}")), version);
            sb.ok(&["link", name, root.to_str().unwrap()]);
            // The doctor's PATH has no /bin: nvcc prints its banner without `cat` from PATH.
            write_exe(
                &root.join("bin/nvcc"),
                &printing(&nvcc_version_text(version)),
            );
            // A toolkit of the default profile: the headers torch's CUDA headers include.
            for header in gpuenv_core::facts::torch_headers::NEEDED {
                write(&root.join("include").join(header), "");
            }
        }
        let rocm_root = rocm(&sb.path("opt/rocm-6.2.4"), "6.2.4");
        sb.ok(&["link", "rocm-6.2.4", rocm_root.to_str().unwrap()]);

        let proj = sb.path("proj");
        write(
            &proj.join("gpuenv.toml"),
            "[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\", \"8.6\"]\n",
        );
        let venv = sb.path("venv");
        write_exe(&venv.join("bin/python3"), "#!/bin/sh\n");
        write_exe(
            &venv.join("bin/pip"),
            &format!("#!{}/bin/python3\n# pip's entry point\n", venv.display()),
        );
        let site = torch_package(
            &venv.join("lib/python3.11/site-packages"),
            "2.4.1+cu124",
            Some("12.4"),
            None,
        );
        write(
            &site.join("torchvision/version.py"),
            "__version__ = '0.19.1+cu124'\ngit_version = '48b1edffdc6f34b766e2b4bbf23b78bd4df94cf1'\n",
        );
        write(&site.join("nvidia/nccl/lib/libnccl.so.2"), "");
        write(&site.join("nvidia/nccl/include/nccl.h"), "");

        let root = sb.path("machine");
        write(
            &root.join("proc/driver/nvidia/version"),
            &captured("proc-driver-nvidia-version-open.txt"),
        );
        write(&root.join("dev/nvidia0"), "");
        write(&root.join(".dockerenv"), "");
        write(
            &root.join("proc/mounts"),
            "overlay / overlay rw,relatime 0 0\nshm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=16777216k 0 0\n",
        );
        let stubs = sb.path("stubs");
        write_exe(
            &stubs.join("gcc"),
            &printing("gcc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc."),
        );
        write_exe(
            &stubs.join("g++"),
            &printing("g++ (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc."),
        );

        let mut w = World {
            vars: BTreeMap::new(),
            sb,
            root,
            stubs,
            proj,
            venv,
            site,
        };
        w.set("VIRTUAL_ENV", &w.venv.display().to_string());
        w.set(
            "PATH",
            &format!("{}/bin:{}", w.venv.display(), w.stubs.display()),
        );
        w
    }

    pub fn set(&mut self, k: &str, v: &str) -> &mut Self {
        self.vars.insert(k.to_string(), v.to_string());
        self
    }

    pub fn prepend_path(&mut self, dir: &Path) -> &mut Self {
        let path = format!("{}:{}", dir.display(), self.vars["PATH"]);
        self.set("PATH", &path)
    }

    pub fn view(&self, name: &str) -> PathBuf {
        self.sb.gpuenv_home().join("views").join(name)
    }

    pub fn gpuenv(&self) -> assert_cmd::Command {
        let mut cmd = self.sb.gpuenv();
        cmd.current_dir(&self.proj)
            .env("GPUENV_DOCTOR_ROOT", &self.root)
            .envs(&self.vars);
        cmd
    }

    /// What `eval "$(gpuenv env)"` does to this shell.
    pub fn activate(&mut self) -> &mut Self {
        let out = self
            .gpuenv()
            .args(["env", "--shell", "json"])
            .output()
            .unwrap();
        succeeded(&out);
        let env: BTreeMap<String, Value> = serde_json::from_slice(&out.stdout).unwrap();
        for (k, v) in env {
            match v {
                Value::String(s) => self.vars.insert(k, s),
                _ => self.vars.remove(&k),
            };
        }
        self
    }

    pub fn pin(&self, toml: &str) {
        write(&self.proj.join("gpuenv.toml"), toml);
    }

    /// `gpuenv trust` of the project's file: what it names may run.
    pub fn trust(&self) {
        succeeded(&self.gpuenv().arg("trust").output().unwrap());
    }

    /// No toolchain file: nothing is active here.
    pub fn unpin(&self) {
        fs::remove_file(self.proj.join("gpuenv.toml")).unwrap();
    }

    /// One check's finding.
    pub fn check(&self, id: &str) -> Finding {
        let r = self.doctor();
        r.findings
            .into_iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("no finding {id}"))
    }

    pub fn doctor(&self) -> Report {
        let out = self.gpuenv().args(["doctor", "--json"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let json: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}); stderr: {stderr}"));
        Report {
            code: out.status.code().unwrap(),
            findings: serde_json::from_value(json["findings"].clone()).unwrap(),
            summary: json["summary"].clone(),
        }
    }
}

pub fn healthy() -> World {
    let mut w = World::new();
    w.activate();
    w
}

/// A project pinned to ROCm with an arch list; `rocminfo` reports two gfx90a GPUs.
pub fn rocm_world(arch: &str) -> World {
    let w = World::new();
    w.pin(&format!(
        "[toolchain]\nrocm = \"6.2\"\nrocm-arch = [\"{arch}\"]\n"
    ));
    let info = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/doctor/rocminfo-mi250x.txt"),
    )
    .unwrap();
    write_exe(&w.stubs.join("rocminfo"), &printing(&info));
    w
}
