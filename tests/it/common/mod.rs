//! Shared test support: a hermetic sandbox per test, and builders of realistic toolchain
//! trees whose `nvcc --version` prints the real format of its release.
#![allow(dead_code)]

pub mod accounts;
pub mod archives;
pub mod hostile;
pub mod install_fixtures;
pub mod modules;
pub mod proxy_world;
pub mod pty;
pub mod real;
pub mod server;
pub mod shells;
pub mod slurm;
pub mod therock;
pub mod wheel;

use fs_err as fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub const CAPTURED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/captured");

/// A temp dir with its own HOME and GPUENV_HOME; commands see nothing of the developer's.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("gpuenv-test")
            .tempdir()
            .unwrap();
        let s = Sandbox { dir };
        fs::create_dir_all(s.home()).unwrap();
        fs::create_dir_all(s.root()).unwrap();
        fs::create_dir_all(s.sysroot()).unwrap();
        s
    }

    /// The machine's file-system root as gpuenv's probes see it (`GPUENV_DOCTOR_ROOT`): empty,
    /// so no test sees the host's driver (`/proc/driver/nvidia`) unless it writes one here.
    pub fn sysroot(&self) -> PathBuf {
        self.path("sysroot")
    }

    /// Gives the sandbox's machine an NVIDIA driver of this version (`/proc/driver/nvidia/version`
    /// under [`Sandbox::sysroot`]).
    pub fn fake_driver(&self, version: &str) {
        write(
            &self.sysroot().join("proc/driver/nvidia/version"),
            &format!("NVRM version: NVIDIA UNIX x86_64 Kernel Module  {version}  Release Build  (dvs-builder@U16-I3-B03-4-3)  Mon Jan  1 00:00:00 UTC 2026\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
        );
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    pub fn home(&self) -> PathBuf {
        self.path("home")
    }
    pub fn gpuenv_home(&self) -> PathBuf {
        self.path("home/.local/share/gpuenv")
    }
    /// Where gpuenv installs the toolchain `name`.
    pub fn toolchain(&self, name: &str) -> PathBuf {
        self.gpuenv_home().join("toolchains").join(name)
    }
    /// A fake file-system root for `discover` (`GPUENV_DISCOVER_ROOTS`).
    pub fn root(&self) -> PathBuf {
        self.path("fsroot")
    }

    /// The real gpuenv binary with a clean environment.
    pub fn gpuenv(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.gpuenv_std())
    }

    /// The same command as [`Sandbox::gpuenv`], as std's, for a run that is not waited for
    /// (`spawn`, then a kill or a concurrent run).
    pub fn gpuenv_std(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpuenv"));
        cmd.env_clear()
            .env("HOME", self.home())
            .env("PATH", system_path())
            .env("LANG", "C.UTF-8")
            .env("GPUENV_DISCOVER_ROOTS", self.root())
            .env("GPUENV_DOCTOR_ROOT", self.sysroot())
            .env("NO_COLOR", "1")
            .current_dir(self.dir.path());
        cmd
    }

    /// Runs gpuenv and returns stdout; panics with stderr if it fails.
    #[track_caller]
    pub fn ok(&self, args: &[&str]) -> String {
        succeeded(&self.gpuenv().args(args).output().unwrap())
    }

    /// `gpuenv env --shell json` in `dir`, which must succeed: the environment it sets.
    #[track_caller]
    pub fn env_json(&self, dir: &Path) -> serde_json::Value {
        let out = self
            .gpuenv()
            .current_dir(dir)
            .args(["env", "--shell", "json"])
            .output()
            .unwrap();
        succeeded(&out);
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// A fake CUDA runfile tree of `version` made at `<sandbox>/<dir>` and linked as `name`
    /// (`gpuenv link`): the toolkit most tests start from; its root.
    #[track_caller]
    pub fn linked_runfile(&self, dir: &str, name: &str, version: &str) -> PathBuf {
        let root = cuda_runfile(&self.path(dir), version);
        self.ok(&["link", name, root.to_str().unwrap()]);
        root
    }

    /// A project at `<sandbox>/<dir>` whose `gpuenv.toml` is `toml`; its directory.
    pub fn project(&self, dir: &str, toml: &str) -> PathBuf {
        let proj = self.path(dir);
        write(&proj.join("gpuenv.toml"), toml);
        proj
    }

    pub fn settings(&self) -> Option<String> {
        fs::read_to_string(self.gpuenv_home().join("settings.toml")).ok()
    }
}

/// The programs that report the host's GPUs and driver: a test sees them only when it puts
/// a fake of its own on PATH.
pub const GPU_TOOLS: [&str; 6] = [
    "nvidia-smi",
    "rocminfo",
    "rocm-smi",
    "amd-smi",
    "rocm_agent_enumerator",
    "nvidia-debugdump",
];

/// The system PATH a sandbox runs with: `/usr/local/bin:/usr/bin:/bin`, where a directory
/// holding one of [`GPU_TOOLS`] (on a GPU machine, `/usr/bin` has `nvidia-smi`) is replaced
/// by a directory of links to everything else in it, made once per test process.
pub fn system_path() -> String {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let farms = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("gpu-free-path-{}", std::process::id()));
        without_gpu_tools(&["/usr/local/bin", "/usr/bin", "/bin"], &farms)
    })
    .clone()
}

/// `dirs` as a PATH, each directory holding one of [`GPU_TOOLS`] replaced by a directory
/// under `farms` of links to everything else in it.
pub fn without_gpu_tools(dirs: &[&str], farms: &Path) -> String {
    let mut out = Vec::new();
    for dir in dirs {
        let has_gpu_tool = GPU_TOOLS.iter().any(|t| Path::new(dir).join(t).exists());
        if !has_gpu_tool {
            out.push(dir.to_string());
            continue;
        }
        let farm = farms.join(dir.trim_start_matches('/').replace('/', "-"));
        fs::create_dir_all(&farm).unwrap();
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let name = entry.file_name();
            if GPU_TOOLS.iter().any(|t| name == std::ffi::OsStr::new(t)) {
                continue;
            }
            let _ = std::os::unix::fs::symlink(entry.path(), farm.join(&name));
        }
        out.push(farm.to_str().unwrap().to_string());
    }
    out.join(":")
}

/// Asserts that a finished command succeeded, showing what it printed if not; its stdout.
#[track_caller]
pub fn succeeded(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "the command failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The text of a captured real output in tests/captured.
pub fn captured(name: &str) -> String {
    fs::read_to_string(Path::new(CAPTURED).join(name)).unwrap()
}

pub fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

pub fn write_exe(path: &Path, text: &str) {
    write(path, text);
    fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The `nvcc --version` text of a release: captured where we have it, else the 11+ format.
pub fn nvcc_version_text(version: &str) -> String {
    let mm: Vec<&str> = version.split('.').collect();
    let short = format!("{}.{}", mm[0], mm[1]);
    let captured = Path::new(CAPTURED).join(format!("nvcc-version-{short}.txt"));
    match fs::read_to_string(captured) {
        Ok(text) => text,
        Err(_) => format!(
            "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\nBuilt on Thu_Mar_28_02:18:24_PDT_2024\nCuda compilation tools, release {short}, V{version}\nBuild cuda_{short}.r{short}/compiler.34097967_0\n"
        ),
    }
}

/// A stub `nvcc`: prints the real `--version` text; `--exit N` exits N, `--kill-self` dies
/// of SIGTERM; otherwise records its arguments in `<root>/nvcc.log` and exits 0.
pub fn nvcc_stub(root: &Path, version: &str) {
    let log = root.join("nvcc.log");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then\ncat <<'EOF'\n{}EOF\nexit 0\nfi\ncase \"$1\" in --exit) exit \"$2\";; --kill-self) kill -TERM $$;; esac\necho \"$@\" >> '{}'\n",
        nvcc_version_text(version),
        log.display()
    );
    write_exe(&root.join("bin/nvcc"), &script);
    write_exe(&root.join("bin/ptxas"), "#!/bin/sh\necho ptxas \"$@\"\n");
}

/// CUDA 10.2: version.txt, lib64, include.
pub fn cuda_10_2(root: &Path) -> PathBuf {
    nvcc_stub(root, "10.2.89");
    fs::copy(
        Path::new(CAPTURED).join("cuda-version.txt-10.2"),
        root.join("version.txt"),
    )
    .unwrap();
    write(&root.join("include/cuda_runtime.h"), "");
    write(&root.join("lib64/libcudart.so.10.2"), "");
    root.to_path_buf()
}

/// The runfile layout of 11.x/12.x: `targets/x86_64-linux/{include,lib}` with `include`
/// and `lib64` symlinks, version.json.
pub fn cuda_runfile(root: &Path, version: &str) -> PathBuf {
    nvcc_stub(root, version);
    let target = root.join("targets/x86_64-linux");
    write(&target.join("include/cuda_runtime.h"), "");
    write(&target.join("lib/libcudart.so"), "");
    std::os::unix::fs::symlink("targets/x86_64-linux/include", root.join("include")).unwrap();
    std::os::unix::fs::symlink("targets/x86_64-linux/lib", root.join("lib64")).unwrap();
    let json = if version.starts_with("11.8") {
        fs::read_to_string(Path::new(CAPTURED).join("cuda-version.json-11.8")).unwrap()
    } else {
        format!(
            "{{\"cuda\": {{\"name\": \"CUDA SDK\", \"version\": \"{version}\"}},\n \"cuda_nvcc\": {{\"name\": \"CUDA NVCC\", \"version\": \"{version}\"}}}}\n"
        )
    };
    write(&root.join("version.json"), &json);
    root.to_path_buf()
}

/// A conda environment with a toolkit: bin/nvcc, lib/ (no version file; nvcc says it).
pub fn conda_cuda(root: &Path, version: &str) -> PathBuf {
    nvcc_stub(root, version);
    fs::create_dir_all(root.join("conda-meta")).unwrap();
    write_exe(&root.join("bin/python"), "#!/bin/sh\n");
    write(&root.join("lib/libcudart.so"), "");
    write(&root.join("include/cuda_runtime.h"), "");
    root.to_path_buf()
}

/// ROCm: `.info/version`, bin/hipcc, lib/, include/hip, and RCCL.
pub fn rocm(root: &Path, info_version: &str) -> PathBuf {
    write(&root.join(".info/version"), &format!("{info_version}\n"));
    let text = fs::read_to_string(Path::new(CAPTURED).join("hipcc-version-6.2.txt")).unwrap();
    write_exe(
        &root.join("bin/hipcc"),
        &format!("#!/bin/sh\ncat <<'EOF'\n{text}EOF\n"),
    );
    write(&root.join("include/hip/hip_runtime.h"), "");
    write(&root.join("include/rccl/rccl.h"), "");
    write(&root.join("lib/libamdhip64.so"), "");
    root.to_path_buf()
}

/// Is this a CI run? `CI` set to anything but empty, `0`, `false`, `no` or `off` (CI
/// services set `true` or `1`; .ci/run sets `true`).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| {
        let v = v.to_string_lossy().trim().to_ascii_lowercase();
        !matches!(v.as_str(), "" | "0" | "false" | "no" | "off")
    })
}

/// The test cannot run here, for `why`: under CI that fails it (CI has everything the
/// tests need); elsewhere the test is skipped and says so. The caller then returns.
pub fn cannot_run(why: impl std::fmt::Display) {
    if in_ci() {
        panic!("{why}; under CI this test must run (.ci/run installs what it needs)");
    }
    eprintln!("SKIPPED: {why}");
}

/// Whether a tool the test needs is on PATH (see `cannot_run` for when it is not).
pub fn have_tool(tool: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
    if !found {
        cannot_run(format!(
            "{tool} is not installed; install it to run this test"
        ));
    }
    found
}

/// The built proxy binary (a binary of this package, so cargo builds it for the tests; gpuenv
/// copies it from beside itself).
pub fn proxy_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("gpuenv-shim")
}

/// A torch package as wheels lay it out: `<site>/torch/version.py` (in the format of the
/// wheel that `cuda` implies) and `torch/include/…`. Returns the site-packages dir.
pub fn torch_package(site: &Path, version: &str, cuda: Option<&str>, hip: Option<&str>) -> PathBuf {
    let torch = site.join("torch");
    let quoted = |v: Option<&str>| v.map_or("None".to_string(), |v| format!("'{v}'"));
    write(
        &torch.join("__init__.py"),
        "raise ImportError('gpuenv must never import torch')\n",
    );
    write(
        &torch.join("version.py"),
        &format!(
            "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']\n__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = {}\ngit_version = 'a1cb3cc05d46d198467bebbb6e8fba50a325d4e7'\nhip: Optional[str] = {}\nxpu: Optional[str] = None\n",
            quoted(cuda),
            quoted(hip)
        ),
    );
    fs::create_dir_all(torch.join("include/torch/csrc/api/include/torch")).unwrap();
    write(&torch.join("include/torch/extension.h"), "");
    site.to_path_buf()
}

/// A trusted project pinned to a linked CUDA 13.2 with `[torch] index = "auto"`: what the
/// PyTorch-index tests start from.
pub fn trusted_torch_auto_13_2(sb: &Sandbox) -> PathBuf {
    sb.linked_runfile("opt/cuda-13.2", "cuda-13.2", "13.2.78");
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"13.2\"\n\n[torch]\nindex = \"auto\"\n",
    );
    succeeded(
        &sb.gpuenv()
            .current_dir(&proj)
            .arg("trust")
            .output()
            .unwrap(),
    );
    proj
}
