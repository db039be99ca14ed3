//! The environment gpuenv gives a shell, for programs (not only compilers): driver and
//! forward-compatibility directories survive switching; in a venv with NVIDIA's CUDA wheels
//! (the real torch from the index) no toolkit directory shadows a wheel's library, shown by
//! the file a real process's loader mapped (`/proc/self/maps`); with nothing pinned, torch's
//! own `CUDA_HOME` guess in a hooked shell lands on the system CUDA, not in gpuenv's home,
//! and where there is no CUDA outside gpuenv, on what it would find without gpuenv.

use crate::common::hostile;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::real::{real_cuda13, torch_venv};
use crate::common::*;
use hostile::{pinned_project, shell};

/// What the loader's boot-time environment would have held, as NGC containers set it.
const DRIVER_DIRS: &str =
    "/usr/local/cuda/compat/lib.real:/usr/local/cuda-13.4/compat:/usr/local/nvidia/lib64:/.singularity.d/libs";

#[test]
fn driver_and_forward_compat_dirs_survive_run_env_and_the_hook() {
    let (sb, proj) = pinned_project();
    // Another toolkit's entry goes; the driver's four stay, in their order, after the view.
    let lp = format!("/usr/local/cuda-12.1/lib64:{DRIVER_DIRS}");
    let view_lib = sb.gpuenv_home().join("views/cuda-12.4/lib64");
    let want = format!("{}:{DRIVER_DIRS}", view_lib.display());

    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("LD_LIBRARY_PATH", &lp)
        .args(["run", "--", "printenv", "LD_LIBRARY_PATH"])
        .output()
        .unwrap();
    assert_eq!(succeeded(&out).trim(), want);

    let env = sb
        .gpuenv()
        .current_dir(&proj)
        .env("LD_LIBRARY_PATH", &lp)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    let env: serde_json::Value = serde_json::from_str(&succeeded(&env)).unwrap();
    assert_eq!(env["LD_LIBRARY_PATH"], want.as_str());

    let o = shell(
        &sb,
        "bash",
        "eval \"$(\"$GPUENV_BIN\" hook bash)\"\ncd \"$P\"; _gpuenv_hook\necho \"$LD_LIBRARY_PATH\" > \"$OUT/in\"\ncd /; _gpuenv_hook\necho \"$LD_LIBRARY_PATH\" > \"$OUT/out\"\n",
        &[("LD_LIBRARY_PATH", lp.as_ref())],
    );
    let read = |n: &str| fs_err::read_to_string(sb.path("out").join(n)).unwrap();
    assert_eq!(read("in").trim(), want, "{}", hostile::stderr(&o));
    // Leaving restores the value exactly, the other toolkit's entry included.
    assert_eq!(read("out").trim(), lp);
}

/// Prints the `libcudart` the loader mapped into this very process.
const WHICH_CUDART: &str = r#"#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
int main() {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    FILE* maps = fopen("/proc/self/maps", "r");
    char line[4096];
    while (fgets(line, sizeof line, maps)) {
        const char* path = strchr(line, '/');
        if (path && strstr(path, "libcudart.so")) { fputs(path, stdout); break; }
    }
    return 0;
}
"#;

struct Wheels {
    sb: Sandbox,
    venv: PathBuf,
    work: PathBuf,
    /// The wheel's directory of libraries (`site-packages/nvidia/cu13/lib`).
    wheel_lib: PathBuf,
}

/// The real CUDA 13 linked and pinned in `work/`, the real torch venv, and two programs
/// built by the real nvcc: `runpath` finds libcudart through a RUNPATH naming the wheel's
/// directory (as JAX's plugins and pip-installed extensions do); `plain` has none.
fn wheels() -> Option<Wheels> {
    let root = real_cuda13()?;
    let venv = torch_venv()?;
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    let work = sb.project("work", "[toolchain]\ncuda = \"13.0\"\n");
    write(&work.join("which.cu"), WHICH_CUDART);
    let wheel_lib = venv.join("lib/python3.11/site-packages/nvidia/cu13/lib");
    assert!(wheel_lib.join("libcudart.so.13").is_file());
    let nvcc = root.join("bin/nvcc");
    let build = |out: &str, extra: &[&str]| {
        let o = Command::new(&nvcc)
            .args(["which.cu", "-cudart", "shared", "-o", out])
            .args(extra)
            .current_dir(&work)
            .output()
            .unwrap();
        succeeded(&o);
    };
    let rpath = format!("-rpath={}", wheel_lib.display());
    build(
        "runpath",
        &["-Xlinker", "--enable-new-dtags", "-Xlinker", &rpath],
    );
    build("plain", &[]);
    Some(Wheels {
        sb,
        venv,
        work,
        wheel_lib,
    })
}

impl Wheels {
    /// `gpuenv run [flags] -- ./program` in `work/`, in the venv or outside it; what the
    /// program printed: the libcudart it mapped.
    fn mapped(&self, program: &str, in_venv: bool, flags: &[&str]) -> PathBuf {
        let mut cmd = self.sb.gpuenv();
        cmd.current_dir(&self.work);
        if in_venv {
            cmd.env("VIRTUAL_ENV", &self.venv)
                .env("PATH", format!("{}/bin:/usr/bin:/bin", self.venv.display()));
        }
        let out = cmd
            .arg("run")
            .args(flags)
            .args(["--", &format!("./{program}")])
            .output()
            .unwrap();
        PathBuf::from(succeeded(&out).trim())
    }
}

#[test]
fn in_a_venv_with_nvidias_wheels_the_loader_takes_the_wheels_libcudart_not_the_toolkits() {
    let Some(w) = wheels() else { return };
    let view_lib = w.sb.gpuenv_home().join("views/cuda-13.0/lib64");
    let wheel = w.wheel_lib.join("libcudart.so.13");
    let same = |a: &Path, b: &Path| a.canonicalize().unwrap() == b.canonicalize().unwrap();

    // In the venv: the toolkit's lib is not on LD_LIBRARY_PATH, still on LIBRARY_PATH.
    let env =
        w.sb.gpuenv()
            .current_dir(&w.work)
            .env("VIRTUAL_ENV", &w.venv)
            .args(["env", "--shell", "json"])
            .output()
            .unwrap();
    let env: serde_json::Value = serde_json::from_str(&succeeded(&env)).unwrap();
    assert!(
        env["LD_LIBRARY_PATH"].is_null(),
        "{}",
        env["LD_LIBRARY_PATH"]
    );
    assert_eq!(env["LIBRARY_PATH"], view_lib.to_str().unwrap());

    let took = w.mapped("runpath", true, &[]);
    assert!(same(&took, &wheel), "the loader took {}", took.display());

    // Asked for, one command gets the toolkit's libraries first: the loader then takes
    // the toolkit's copy over the RUNPATH (what shadows JAX's wheels).
    // (The view's lib is links: the loader maps the file they lead to.)
    let toolkits = view_lib.join("libcudart.so.13");
    let took = w.mapped("runpath", true, &["--toolkit-libs"]);
    assert!(same(&took, &toolkits), "the loader took {}", took.display());

    // Outside a venv, a program linked against the toolkit finds its libcudart.
    let took = w.mapped("plain", false, &[]);
    assert!(same(&took, &toolkits), "the loader took {}", took.display());
}

#[test]
fn the_doctor_names_the_toolkit_dir_that_shadows_the_wheels_with_both_paths() {
    let Some(w) = wheels() else { return };
    let view_lib = w.sb.gpuenv_home().join("views/cuda-13.0/lib64");
    let f = doctor_fm14_under(&w, &["run", "--toolkit-libs", "--"]);
    assert_eq!(f["status"], "warn", "{f}");
    let problems: Vec<String> = std::iter::once(f["summary"].as_str().unwrap().to_string())
        .chain(
            f["details"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_str().unwrap().to_string()),
        )
        .collect();
    let cudart = format!(
        "libcudart.so.13: {} on LD_LIBRARY_PATH shadows the wheel's {}",
        view_lib.join("libcudart.so.13").display(),
        w.wheel_lib.join("libcudart.so.13").display()
    );
    assert!(
        problems.iter().any(|p| p.starts_with(&cudart)),
        "{problems:?}"
    );
    let hint = f["hint"].as_str().unwrap();
    assert!(hint.contains("cuda-13.0's"), "{hint}");

    // gpuenv's own environment there shadows nothing.
    let f = doctor_fm14_under(&w, &["run", "--"]);
    assert_eq!(f["status"], "ok", "{f}");
}

/// The doctor's FM-14 finding, from `gpuenv doctor --json` run inside `gpuenv <run>` in the
/// venv's project.
fn doctor_fm14_under(w: &Wheels, run: &[&str]) -> serde_json::Value {
    let out =
        w.sb.gpuenv()
            .current_dir(&w.work)
            .env("VIRTUAL_ENV", &w.venv)
            .args(run)
            .arg(assert_cmd::cargo::cargo_bin("gpuenv"))
            .args(["doctor", "--json"])
            .output()
            .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "FM-14")
        .unwrap()
        .clone()
}

#[test]
fn with_the_hook_and_nothing_pinned_torchs_cuda_home_is_the_system_cuda_on_path() {
    let Some(root) = real_cuda13() else { return };
    let Some(venv) = torch_venv() else { return };
    let sb = Sandbox::new();
    // A toolchain registered (so the shims hold an nvcc), nothing pinned, no default.
    sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    assert!(sb.gpuenv_home().join("shims/nvcc").exists());
    fs_err::create_dir_all(sb.path("proj")).unwrap();
    let path = format!(
        "{}/bin:{}/bin:/usr/bin:/bin",
        venv.display(),
        root.display()
    );
    let script = "eval \"$(\"$GPUENV_BIN\" hook bash)\"\ncd \"$P\"; _gpuenv_hook\n\
        python -c 'from torch.utils.cpp_extension import CUDA_HOME; print(CUDA_HOME)' > \"$OUT/cuda_home\"\n\
        command -v nvcc > \"$OUT/nvcc\"\n";
    let env: [(&str, &OsStr); 2] = [("PATH", path.as_ref()), ("VIRTUAL_ENV", venv.as_os_str())];
    let o = shell(&sb, "bash", script, &env);
    let read = |n: &str| fs_err::read_to_string(sb.path("out").join(n)).unwrap();
    // The shims are first on PATH, as the hook keeps them...
    assert_eq!(
        read("nvcc").trim(),
        sb.gpuenv_home().join("shims/nvcc").to_str().unwrap()
    );
    // ...and torch's guess is still the CUDA it would find without gpuenv.
    assert_eq!(
        read("cuda_home").trim(),
        root.to_str().unwrap(),
        "{}",
        hostile::stderr(&o)
    );

    // In a pinned project the view wins, as before.
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"13.0\"\n",
    );
    shell(&sb, "bash", script, &env);
    assert_eq!(
        read("cuda_home").trim(),
        sb.gpuenv_home().join("views/cuda-13.0").to_str().unwrap()
    );
}

#[test]
fn with_the_hook_and_no_cuda_outside_gpuenv_torch_and_which_nvcc_find_what_they_would_without_it() {
    let Some(root) = real_cuda13() else { return };
    let Some(venv) = torch_venv() else { return };
    let sb = Sandbox::new();
    // A toolchain registered (so the shims hold an nvcc), nothing pinned, no default, and
    // no nvcc on PATH outside gpuenv.
    sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    fs_err::create_dir_all(sb.path("proj")).unwrap();
    let path = format!("{}/bin:/usr/bin:/bin", venv.display());
    let probe = "python -c 'from torch.utils.cpp_extension import CUDA_HOME; print(CUDA_HOME)' 2>/dev/null > \"$OUT/cuda_home$1\"\n\
        { command -v nvcc || echo none; } > \"$OUT/nvcc$1\"\n";
    // The same shell and probe, once without the hook (what torch finds on this machine
    // without gpuenv: /usr/local/cuda where it exists, else nothing), then hooked outside
    // any project, in a pinned project, and outside it again.
    let script = format!(
        "probe() {{\n{probe}}}\nprobe _plain\n\
         eval \"$(\"$GPUENV_BIN\" hook bash)\"\n\
         cd \"$HOME\"; _gpuenv_hook; probe _hooked\n\
         cd \"$P\"; _gpuenv_hook; probe _pinned\n\
         cd \"$HOME\"; _gpuenv_hook; probe _left\n"
    );
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"13.0\"\n",
    );
    let env: [(&str, &OsStr); 2] = [("PATH", path.as_ref()), ("VIRTUAL_ENV", venv.as_os_str())];
    let o = shell(&sb, "bash", &script, &env);
    let read = |n: &str| fs_err::read_to_string(sb.path("out").join(n)).unwrap();
    let home = sb.gpuenv_home();
    for at in ["_hooked", "_left"] {
        assert_eq!(
            read(&format!("cuda_home{at}")),
            read("cuda_home_plain"),
            "{at}: {}",
            hostile::stderr(&o)
        );
        assert_eq!(read(&format!("nvcc{at}")), read("nvcc_plain"), "{at}");
        assert!(!read(&format!("cuda_home{at}")).contains(home.to_str().unwrap()));
    }
    // In the pinned project the shims are back first on PATH and torch takes the view.
    assert_eq!(
        read("nvcc_pinned").trim(),
        home.join("shims/nvcc").to_str().unwrap()
    );
    assert_eq!(
        read("cuda_home_pinned").trim(),
        home.join("views/cuda-13.0").to_str().unwrap()
    );
}

#[test]
fn each_toolchain_has_its_own_jit_caches_and_a_users_own_stays() {
    let (sb, proj) = pinned_project();
    let env = sb.env_json(&proj);
    let jit = sb.gpuenv_home().join("jit");
    for (var, lib) in [
        ("TRITON_CACHE_DIR", "triton"),
        ("CUPY_CACHE_DIR", "cupy"),
        ("FLASHINFER_WORKSPACE_BASE", "flashinfer"),
    ] {
        assert_eq!(
            env[var],
            jit.join(lib).join("cuda-12.4").to_str().unwrap(),
            "{var}"
        );
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env(var, "/mine")
            .args(["run", "--", "printenv", var])
            .output()
            .unwrap();
        assert_eq!(succeeded(&out).trim(), "/mine", "{var}");
    }
    // Another toolkit, another cache: what one built is never loaded with the other.
    sb.linked_runfile("opt/cuda-11.8", "cuda-11.8", "11.8.89");
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args([
            "run",
            "cuda-11.8",
            "--",
            "printenv",
            "FLASHINFER_WORKSPACE_BASE",
        ])
        .output()
        .unwrap();
    assert_eq!(
        succeeded(&out).trim(),
        jit.join("flashinfer/cuda-11.8").to_str().unwrap()
    );
}

/// A venv whose Triton bundles a `ptxas` of `release` (a stand-in that answers
/// `--version` as ptxas does), as Triton 3.6 ships CUDA 12.8's.
fn venv_with_triton(sb: &Sandbox, release: &str) -> PathBuf {
    let venv = sb.path("venv");
    write_exe(&venv.join("bin/python3"), "#!/bin/sh\n");
    write_exe(
        &venv.join("lib/python3.11/site-packages/triton/backends/nvidia/bin/ptxas"),
        &format!("#!/bin/sh\necho 'ptxas: NVIDIA (R) Ptx optimizing assembler'\necho 'Cuda compilation tools, release {release}, V{release}.86'\n"),
    );
    venv
}

#[test]
fn triton_gets_the_toolkits_ptxas_only_for_a_pinned_arch_its_own_cannot_build() {
    let sb = Sandbox::new();
    let root = cuda_runfile(&sb.path("opt/cuda-13.0"), "13.0.2");
    write_exe(&root.join("bin/ptxas"), "#!/bin/sh\n");
    sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    let proj = sb.path("proj");
    let venv = venv_with_triton(&sb, "12.8");
    let env = |pins: &str| {
        write(
            &proj.join("gpuenv.toml"),
            &format!("[toolchain]\ncuda = \"13.0\"\ncuda-arch = [{pins}]\n"),
        );
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("VIRTUAL_ENV", &venv)
            .args(["env", "--shell", "json"])
            .output()
            .unwrap();
        serde_json::from_str::<serde_json::Value>(&succeeded(&out)).unwrap()
    };
    // CUDA 12.8's ptxas builds sm_90: nothing to change.
    assert!(env("\"9.0\"")["TRITON_PTXAS_PATH"].is_null());
    // sm_110 (Thor) is CUDA 13's: Triton gets the toolkit's ptxas, through the view.
    let view_ptxas = sb.gpuenv_home().join("views/cuda-13.0/bin/ptxas");
    assert_eq!(
        env("\"9.0\", \"11.0\"")["TRITON_PTXAS_PATH"],
        view_ptxas.to_str().unwrap()
    );
    // Its release was read once and remembered, keyed on the file.
    let remembered: Vec<_> = fs_err::read_dir(sb.gpuenv_home().join("cache/ptxas"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(remembered.len(), 1);
    assert_eq!(
        fs_err::read_to_string(remembered[0].path()).unwrap().trim(),
        "12.8.86"
    );
}

#[test]
fn the_real_tritons_two_ptxas_build_every_arch_cuda_13_0_does_so_nothing_is_set() {
    let Some(root) = real_cuda13() else { return };
    let Some(venv) = torch_venv() else { return };
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"13.0\"\ncuda-arch = [\"8.0\", \"9.0\", \"11.0\", \"12.0\"]\n",
    );
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("VIRTUAL_ENV", &venv)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    let env: serde_json::Value = serde_json::from_str(&succeeded(&out)).unwrap();
    assert!(env["TRITON_PTXAS_PATH"].is_null(), "{env}");
    assert!(env["TRITON_PTXAS_BLACKWELL_PATH"].is_null(), "{env}");
    // Both of Triton 3.9's were asked (CUDA 12.9 and 13.4), within the probe deadline.
    let mut seen: Vec<String> = fs_err::read_dir(sb.gpuenv_home().join("cache/ptxas"))
        .unwrap()
        .flatten()
        .map(|e| fs_err::read_to_string(e.path()).unwrap().trim().to_string())
        .collect();
    seen.sort();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen[0].starts_with("12.9") && seen[1].starts_with("13.4"),
        "{seen:?}"
    );
}
