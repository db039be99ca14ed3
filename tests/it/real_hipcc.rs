//! Debian's real ROCm (`apt-get install --no-install-recommends hipcc libamdhip64-dev
//! rocm-device-libs`: hipcc 5.2.3, a Perl wrapper around clang-15) under `/usr`, as a user
//! who already has it meets gpuenv: discovered, shimmed for its own programs only, compiling
//! HIP code for gfx90a without a GPU, and guarded against a mismatched ROCm torch.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use fs_err as fs;

const KERNEL: &str = r#"#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdio>
__global__ void twice(float* x) { x[threadIdx.x] = 2.0f * std::sqrt(x[threadIdx.x]); }
int main() {
    int n = 0;
    hipError_t e = hipGetDeviceCount(&n);
    printf("%s\n", hipGetErrorName(e));
    return 0;
}
"#;

/// A sandbox where `gpuenv discover --register` has registered the machine's own ROCm, and
/// `proj/` holds the kernel. None (skipped outside CI) when Debian's hipcc is not installed.
fn registered() -> Option<(Sandbox, PathBuf)> {
    if !have_tool("hipcc") {
        return None;
    }
    if !Path::new("/usr/share/hip/version").is_file() {
        cannot_run("the hipcc on PATH is not Debian's (no /usr/share/hip/version)");
        return None;
    }
    let sb = Sandbox::new();
    let out = sb
        .gpuenv()
        .env("GPUENV_DISCOVER_ROOTS", "/")
        .args(["discover", "--register"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("rocm-5.2-debian"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let proj = sb.path("proj");
    write(&proj.join("k.hip"), KERNEL);
    Some((sb, proj))
}

fn shims(sb: &Sandbox) -> PathBuf {
    sb.gpuenv_home().join("shims")
}

/// Runs `program` in `dir` with the shims first on PATH, as a hooked shell has them.
fn run_in(sb: &Sandbox, dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", format!("{}:/usr/bin:/bin", shims(sb).display()))
        .current_dir(dir)
        .output()
        .unwrap()
}

fn targets(object: &Path, arch: &str) -> bool {
    let bytes = fs::read(object).unwrap();
    bytes.windows(arch.len()).any(|w| w == arch.as_bytes())
}

#[test]
fn discover_registers_debians_rocm_with_shims_for_its_own_programs_only() {
    let Some((sb, _)) = registered() else { return };
    let settings = sb.settings().unwrap();
    assert!(
        settings.contains("[toolchains.\"rocm-5.2-debian\"]"),
        "{settings}"
    );
    assert!(settings.contains("share/hip/version"), "{settings}");
    let names: Vec<String> = fs::read_dir(shims(&sb))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for own in ["hipcc", "hipconfig", "rocminfo", "rocm_agent_enumerator"] {
        assert!(
            names.iter().any(|n| n == own),
            "no shim for {own}: {names:?}"
        );
    }
    for other in ["ls", "python3", "sh", "perl", "clang++-15", "hipvars.pm"] {
        assert!(
            !names.iter().any(|n| n == other),
            "a shim for {other}: {names:?}"
        );
    }
    assert!(names.len() < 30, "{names:?}");
}

#[test]
fn a_hooked_bash_outside_a_project_still_runs_ls_and_rocminfo() {
    let Some((sb, _)) = registered() else { return };
    write(&sb.path("elsewhere/file-here"), "");
    let script = format!(
        "eval \"$(\"$GPUENV_BIN\" hook bash)\"\ncd '{}'; _gpuenv_hook\nexport PATH=\"{}:$PATH\"\nls\nsh -c 'echo sh works'\nrocm_agent_enumerator -h >/dev/null 2>&1; echo \"enumerator: $?\"\nhipconfig --version\n",
        sb.path("elsewhere").display(),
        shims(&sb).display()
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("GPUENV_BIN", assert_cmd::cargo::cargo_bin("gpuenv"))
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(stdout.contains("file-here"), "{stdout}");
    assert!(stdout.contains("sh works"), "{stdout}");
    // Debian's own programs, as they were before gpuenv: nothing pins ROCm here.
    assert!(stdout.contains("5.2."), "{stdout}");
}

#[test]
fn python3_inside_a_pinned_project_is_not_shadowed() {
    let Some((sb, proj)) = registered() else {
        return;
    };
    write(&proj.join("gpuenv.toml"), "[toolchain]\nrocm = \"5.2\"\n");
    let venv = sb.path("venv/bin");
    write_exe(&venv.join("python3"), "#!/bin/sh\necho venv python\n");
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("PATH", format!("{}:/usr/bin:/bin", venv.display()))
        .args(["run", "--", "sh", "-c", "command -v python3; command -v hipcc; echo \"$ROCM_PATH $HIP_PATH\"; echo \"[$CPATH] [$LD_LIBRARY_PATH]\""])
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], venv.join("python3").display().to_string());
    let view_bin = sb.gpuenv_home().join("views/rocm-5.2-debian/bin");
    assert_eq!(lines[1], view_bin.join("hipcc").display().to_string());
    // What Debian's hipcc expects, and no system dir pushed in front of anything.
    assert_eq!(lines[2], "/usr /usr");
    assert_eq!(lines[3], "[] []");
    let in_view: Vec<_> = fs::read_dir(&view_bin).unwrap().collect();
    assert_eq!(in_view.len(), 1, "the view's bin/ holds hipcc only");
}

#[test]
fn a_hip_kernel_compiles_and_links_for_gfx90a_through_the_shim_and_rocm_path() {
    let Some((sb, proj)) = registered() else {
        return;
    };
    write(&proj.join("gpuenv.toml"), "[toolchain]\nrocm = \"5.2\"\n");
    let hipcc = shims(&sb).join("hipcc");
    let hipcc = hipcc.to_str().unwrap();
    succeeded(&run_in(
        &sb,
        &proj,
        hipcc,
        &["--offload-arch=gfx90a", "-c", "k.hip", "-o", "shim.o"],
    ));
    assert!(targets(&proj.join("shim.o"), "gfx90a"));

    // `$ROCM_PATH/bin/hipcc`, as build systems call it, in the environment gpuenv gives.
    let script = "\"$ROCM_PATH/bin/hipcc\" --offload-arch=gfx90a k.hip -o k && ./k";
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["run", "--", "sh", "-c", script])
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    // The HIP runtime loaded and answered: no device without AMD's kernel driver (`/dev/kfd`).
    let answers: &[&str] = if Path::new("/dev/kfd").exists() {
        &["hipSuccess", "hipErrorNoDevice"]
    } else {
        &["hipErrorNoDevice"]
    };
    assert!(
        answers.contains(&stdout.trim()),
        "{stdout:?}, expected one of {answers:?}"
    );
    assert!(targets(&proj.join("k"), "gfx90a"));
}

#[test]
fn plain_hipcc_in_a_project_pinned_to_gfx90a_builds_gfx90a_code() {
    let Some((sb, proj)) = registered() else {
        return;
    };
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\nrocm = \"5.2\"\nrocm-arch = [\"gfx90a\"]\n",
    );
    let hipcc = shims(&sb).join("hipcc");
    succeeded(&run_in(
        &sb,
        &proj,
        hipcc.to_str().unwrap(),
        &["-c", "k.hip", "-o", "plain.o"],
    ));
    assert!(targets(&proj.join("plain.o"), "gfx90a"));
    assert!(
        !targets(&proj.join("plain.o"), "gfx803"),
        "hipcc's own default"
    );
    let env = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    let env = succeeded(&env);
    assert!(env.contains("\"HCC_AMDGPU_TARGET\": \"gfx90a\""), "{env}");
}

/// A ROCm build of torch as its wheels lay it out (`hip` and `rocm` lines in version.py).
fn rocm_torch(site: &Path, version: &str, hip: &str) -> PathBuf {
    let rocm = version.split("+rocm").nth(1).unwrap();
    torch_package(site, version, None, Some(hip));
    let py = site.join("torch/version.py");
    let text = fs::read_to_string(&py).unwrap();
    write(&py, &format!("{text}rocm: Optional[str] = '{rocm}'\n"));
    site.join("torch/include")
}

#[test]
fn the_guard_refuses_a_rocm_6_2_torch_and_passes_a_5_2_one() {
    let Some((sb, proj)) = registered() else {
        return;
    };
    write(&proj.join("gpuenv.toml"), "[toolchain]\nrocm = \"5.2\"\n");
    let hipcc = shims(&sb).join("hipcc");
    let hipcc = hipcc.to_str().unwrap();

    let new = rocm_torch(
        &sb.path("new/site-packages"),
        "2.5.1+rocm6.2",
        "6.2.41133-dd7f95766",
    );
    let inc = format!("-I{}", new.display());
    let out = run_in(
        &sb,
        &proj,
        hipcc,
        &[&inc, "--offload-arch=gfx90a", "-c", "k.hip", "-o", "ext.o"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("refusing to build a PyTorch extension"),
        "{err}"
    );
    assert!(
        err.contains("rocm 5.2") && err.contains("rocm 6.2"),
        "{err}"
    );
    assert!(!proj.join("ext.o").exists(), "refused before compiling");

    let old = rocm_torch(
        &sb.path("old/site-packages"),
        "1.13.1+rocm5.2",
        "5.2.21153-0",
    );
    let inc = format!("-I{}", old.display());
    succeeded(&run_in(
        &sb,
        &proj,
        hipcc,
        &[&inc, "--offload-arch=gfx90a", "-c", "k.hip", "-o", "ext.o"],
    ));
    assert!(targets(&proj.join("ext.o"), "gfx90a"));
}

#[test]
fn doctor_finds_debians_hip_headers_where_the_compilers_look_anyway() {
    let Some((sb, proj)) = registered() else {
        return;
    };
    write(&proj.join("gpuenv.toml"), "[toolchain]\nrocm = \"5.2\"\n");
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fm07 = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "FM-07")
        .unwrap();
    assert_eq!(fm07["status"], "ok", "{fm07}");
}

/// A build's own `--offload-arch` that leaves out a pinned target: Debian's hipcc compiles as
/// told and gpuenv says what is missing; with `archs = "add"` (trusted) the object holds it.
#[test]
fn own_offload_archs_that_leave_out_a_pinned_target_are_told_and_with_add_built() {
    let Some((sb, proj)) = registered() else {
        return;
    };
    let file = proj.join("gpuenv.toml");
    let pins = "[toolchain]\nrocm = \"5.2\"\nrocm-arch = [\"gfx90a\", \"gfx940\"]\n";
    write(&file, pins);
    let hipcc = shims(&sb).join("hipcc");
    let own = ["--offload-arch=gfx90a", "-c", "k.hip", "-o", "own.o"];
    let out = run_in(&sb, &proj, hipcc.to_str().unwrap(), &own);
    succeeded(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("leave out gfx940, pinned at")
            && err.contains(&format!("{}:3:", file.display())),
        "{err}"
    );
    assert!(targets(&proj.join("own.o"), "gfx90a"));
    assert!(!targets(&proj.join("own.o"), "gfx940"));

    write(&file, &format!("{pins}[build]\narchs = \"add\"\n"));
    sb.ok(&["trust", file.to_str().unwrap()]);
    let out = run_in(&sb, &proj, hipcc.to_str().unwrap(), &own);
    succeeded(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gpuenv adds --offload-arch=gfx940"), "{err}");
    assert!(targets(&proj.join("own.o"), "gfx940"));
}

/// Debian's ROCm 5.2 has device libraries up to gfx1036 and gfx940: `gpuenv pin --arch
/// gfx1100` is refused (every compile would fail with "cannot find ROCm device library"),
/// gfx90a is pinned, and the doctor names a gfx1100 written into the file by hand.
#[test]
fn rocm_arch_pins_are_checked_against_the_toolkits_device_libraries() {
    let Some((sb, proj)) = registered() else {
        return;
    };
    write(&proj.join("gpuenv.toml"), "[toolchain]\nrocm = \"5.2\"\n");
    let pin = |arch: &str| {
        sb.gpuenv()
            .current_dir(&proj)
            .args(["pin", "--arch", arch])
            .output()
            .unwrap()
    };
    let out = pin("gfx1100");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("rocm-5.2-debian (ROCm 5.2")
            && err.contains("has no device library for gfx1100"),
        "{err}"
    );
    assert!(err.contains("gfx90a"), "the targets it has: {err}");
    assert!(!fs::read_to_string(proj.join("gpuenv.toml"))
        .unwrap()
        .contains("gfx1100"));

    succeeded(&pin("gfx90a"));
    assert!(fs::read_to_string(proj.join("gpuenv.toml"))
        .unwrap()
        .contains("rocm-arch = [\"gfx90a\"]"));
    let doctor = |sb: &Sandbox| {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .arg("doctor")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = doctor(&sb);
    assert!(!said.contains("no device library"), "{said}");

    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\nrocm = \"5.2\"\nrocm-arch = [\"gfx90a\", \"gfx1100\"]\n",
    );
    let said = doctor(&sb);
    let line = said
        .lines()
        .find(|l| l.contains("no device library"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        line.starts_with("error FM-07") && line.contains("names gfx1100, which rocm-5.2-debian"),
        "{said}"
    );
}

#[test]
fn which_names_the_system_program_the_proxy_runs_where_nothing_is_active() {
    let Some((sb, _)) = registered() else { return };
    fs::create_dir_all(sb.path("elsewhere")).unwrap();
    let which = sb
        .gpuenv()
        .current_dir(sb.path("elsewhere"))
        .args(["which", "rocminfo"])
        .output()
        .unwrap();
    assert_eq!(succeeded(&which).trim(), "/usr/bin/rocminfo");
    let json = sb
        .gpuenv()
        .current_dir(sb.path("elsewhere"))
        .args(["which", "rocminfo", "--json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&succeeded(&json)).unwrap();
    assert_eq!(json["toolchain"], "rocm-5.2-debian", "{json}");
    // Another of its programs, without a toolchain file or default anywhere.
    let which = sb
        .gpuenv()
        .current_dir(sb.path("elsewhere"))
        .args(["which", "rocm_agent_enumerator"])
        .output()
        .unwrap();
    assert_eq!(succeeded(&which).trim(), "/usr/bin/rocm_agent_enumerator");
}
