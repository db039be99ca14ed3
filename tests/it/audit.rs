//! `gpuenv audit` on objects built here by the real compilers: CUDA 13's nvcc (NVIDIA's
//! wheels) for several archs, shared and static cudart, `-rdc`, the `a`/`f` variants; and
//! Debian's hipcc for gfx90a + gfx940. "no kernel image for sm_90" is caught before a job
//! runs. No GPU is needed: a test that wants one puts an `nvidia-smi` on PATH that names it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::real::real_cuda13;
use crate::common::*;
use serde_json::Value;

const KERNEL: &str = r#"__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
extern "C" void launch(float* x) { twice<<<1, 32>>>(x); }
"#;

const HIP_KERNEL: &str = r#"#include <hip/hip_runtime.h>
__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
extern "C" void launch(float* x) { hipLaunchKernelGGL(twice, dim3(1), dim3(32), 0, 0, x); }
"#;

/// The -gencode flags of the main object: SASS for 8.0 and 9.0, PTX for 9.0.
const GENCODE_80_90: &[&str] = &[
    "-gencode",
    "arch=compute_80,code=sm_80",
    "-gencode",
    "arch=compute_90,code=[sm_90,compute_90]",
];

/// Objects built once for the whole group by the real nvcc 13 (each build takes seconds).
struct Built {
    root: PathBuf,
    dir: PathBuf,
}

fn nvcc_objects() -> Option<&'static Built> {
    static BUILT: OnceLock<Option<Built>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = real_cuda13()?;
            // Under cargo's scratch dir for tests: rebuilt at each run, never left in /tmp.
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("audit-objects");
            let _ = fs_err::remove_dir_all(&dir);
            write(&dir.join("k.cu"), KERNEL);
            let nvcc = |args: &[&str]| {
                let out = Command::new(root.join("bin/nvcc"))
                    .args(args)
                    .current_dir(&dir)
                    .output()
                    .unwrap();
                succeeded(&out);
            };
            let shared = ["-shared", "-Xcompiler", "-fPIC", "k.cu"];
            nvcc(
                &[
                    &shared[..],
                    GENCODE_80_90,
                    &["-cudart", "shared", "-o", "k.so"],
                ]
                .concat(),
            );
            nvcc(&[&shared[..], GENCODE_80_90, &["-o", "static.so"]].concat());
            nvcc(
                &[
                    &["-c", "-rdc=true", "k.cu"],
                    GENCODE_80_90,
                    &["-o", "rdc.o"],
                ]
                .concat(),
            );
            // A raw fatbinary and a static library, as users ship them.
            nvcc(&[&["-fatbin", "k.cu"], GENCODE_80_90, &["-o", "k.fatbin"]].concat());
            nvcc(&[&["-lib", "k.cu"], GENCODE_80_90, &["-o", "libk.a"]].concat());
            // Separable: relocatable cubins for 8.0 and 9.0, a device link for 8.0 only.
            nvcc(
                &[
                    &["-c", "-rdc=true", "-Xcompiler", "-fPIC", "k.cu"],
                    GENCODE_80_90,
                    &["-o", "rdc-pic.o"],
                ]
                .concat(),
            );
            nvcc(&[
                "-shared",
                "-gencode",
                "arch=compute_80,code=sm_80",
                "rdc-pic.o",
                "-o",
                "rdc80.so",
            ]);
            nvcc(
                &[
                    &shared[..],
                    &[
                        "-gencode",
                        "arch=compute_90a,code=sm_90a",
                        "-gencode",
                        "arch=compute_100f,code=[sm_100f,compute_100f]",
                        "-gencode",
                        "arch=compute_75,code=compute_75",
                        "-cudart",
                        "shared",
                        "-o",
                        "variants.so",
                    ],
                ]
                .concat(),
            );
            // PTX only: every GPU JIT-compiles it, if its driver knows the PTX's ISA.
            nvcc(
                &[
                    &shared[..],
                    &[
                        "-gencode",
                        "arch=compute_90,code=compute_90",
                        "-cudart",
                        "shared",
                        "-o",
                        "ptx.so",
                    ],
                ]
                .concat(),
            );
            // A program, linked as g++ links by default here: position-independent (PIE).
            write(
                &dir.join("main.cu"),
                "__global__ void k(float *x) { x[0] = 1; }\nint main() { return 0; }\n",
            );
            nvcc(&[
                "-gencode",
                "arch=compute_80,code=sm_80",
                "-Xcompiler",
                "-fPIE",
                "-Xlinker",
                "-pie",
                "main.cu",
                "-o",
                "pie",
            ]);
            Some(Built { root, dir })
        })
        .as_ref()
}

/// A sandbox with `proj/` holding `gpuenv.toml` (if given) and `bin/` as all of PATH.
fn project(toml: Option<&str>) -> Sandbox {
    let sb = Sandbox::new();
    fs_err::create_dir_all(sb.path("proj")).unwrap();
    fs_err::create_dir_all(sb.path("bin")).unwrap();
    if let Some(t) = toml {
        write(&sb.path("proj/gpuenv.toml"), t);
    }
    sb
}

/// `gpuenv audit ARGS…` in `proj/`, with only `bin/` on PATH: no GPU tool unless a test
/// puts one there.
fn audit(sb: &Sandbox, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = sb.gpuenv();
    cmd.current_dir(sb.path("proj"))
        .env("PATH", sb.path("bin"))
        .arg("audit")
        .args(args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn object(b: &Built, name: &str) -> String {
    b.dir.join(name).display().to_string()
}

#[test]
fn an_object_built_for_the_pinned_archs_passes_and_names_what_it_holds() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(Some(
        "[toolchain]\ncuda = \"13.0\"\ncuda-arch = [\"8.0\", \"8.6\", \"9.0+PTX\"]\n",
    ));
    sb.ok(&["link", "cuda-13.0", b.root.to_str().unwrap()]);
    let out = audit(&sb, &[&object(b, "k.so")], &[]);
    let stdout = succeeded(&out);
    assert!(stdout.contains("(shared object)"), "{stdout}");
    assert!(
        stdout.contains("CUDA code: SASS sm_80, sm_90; PTX compute_90 (ISA 9.0)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("libcudart.so.13 (the CUDA 13 runtime)"),
        "{stdout}"
    );
    // 8.6 runs 8.0's SASS (same major, lower minor).
    assert!(
        stdout.contains("ok    kernel-image: sm_86 (pinned in gpuenv.toml:3): runs SASS sm_80"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the active cuda-13.0 provides it"),
        "{stdout}"
    );
    assert!(stdout.contains("0 error(s), 0 warning(s)"), "{stdout}");
}

#[test]
fn a_pinned_arch_it_misses_is_no_kernel_image_at_the_pins_line_exit_1() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(Some(
        "# cluster GPUs\n[toolchain]\ncuda-arch = [\n  \"8.0\",\n  \"7.5\",\n]\n",
    ));
    let out = audit(&sb, &[&object(b, "k.so")], &[]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("error kernel-image: no kernel image for sm_75 (pinned in gpuenv.toml:5): it has SASS sm_80, sm_90 and PTX compute_90"),
        "{stdout}"
    );
    assert!(
        stdout.contains("`-gencode arch=compute_75,code=sm_75`"),
        "{stdout}"
    );
    // 7.5 is pinned already: the hint says why the build missed it, not to pin it again.
    assert!(
        stdout.contains("7.5 is pinned in gpuenv.toml:5, but this was built without it")
            && stdout.contains("`[build] archs = \"add\"`"),
        "{stdout}"
    );
    assert!(!stdout.contains("gpuenv pin --arch 7.5"), "{stdout}");
    // No GPU is named here (PATH has no nvidia-smi): the pins alone are compared, and said so.
    assert!(
        stdout.contains("skip  gpus: no GPU found here (nvidia-smi: not on PATH"),
        "{stdout}"
    );
}

#[test]
fn torch_cuda_arch_list_is_compared_too() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(None);
    let out = audit(
        &sb,
        &[&object(b, "k.so")],
        &[("TORCH_CUDA_ARCH_LIST", "8.0;8.9;10.0")],
    );
    let (stdout, _) = text(&out);
    // A warning alone leaves the exit status 0.
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // 8.9 has 8.0's SASS; 10.0 has no SASS but can JIT compute_90.
    assert!(
        stdout.contains("ok    kernel-image: sm_89 (in TORCH_CUDA_ARCH_LIST): runs SASS sm_80"),
        "{stdout}"
    );
    assert!(
        stdout.contains("warn  kernel-image: no SASS for sm_100 (in TORCH_CUDA_ARCH_LIST): the driver compiles compute_90 PTX"),
        "{stdout}"
    );
    let ok = audit(
        &sb,
        &[&object(b, "k.so")],
        &[("TORCH_CUDA_ARCH_LIST", "Ampere")],
    );
    let stdout = succeeded(&ok);
    assert!(
        stdout.contains("sm_80 (in TORCH_CUDA_ARCH_LIST)"),
        "{stdout}"
    );
}

#[test]
fn a_gpu_here_without_sass_or_ptx_for_it_is_an_error_naming_the_gpu() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(Some("[toolchain]\ncuda-arch = [\"9.0\"]\n"));
    // A node with a T4 (7.5) and an H100 (9.0), as nvidia-smi lists them.
    write_exe(
        &sb.path("bin/nvidia-smi"),
        "#!/bin/sh\nprintf '7.5\\n9.0\\n9.0\\n'\n",
    );
    let out = audit(&sb, &[&object(b, "k.so")], &[]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout
            .contains("error kernel-image: no kernel image for sm_75 (a GPU here, by nvidia-smi)"),
        "{stdout}"
    );
    // The pin repeats the GPU's arch: one finding, naming the GPU.
    assert_eq!(stdout.matches("sm_90 (").count(), 1, "{stdout}");
    assert!(
        stdout.contains("sm_90 (a GPU here, by nvidia-smi): runs SASS sm_90"),
        "{stdout}"
    );
    assert!(!stdout.contains("no GPU found"), "{stdout}");
}

#[test]
fn json_has_the_images_the_needs_what_was_compared_and_the_findings() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(Some("[toolchain]\ncuda-arch = [\"8.0\", \"7.0\"]\n"));
    let out = audit(&sb, &[&object(b, "k.so"), "--json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "shared");
    let images: Vec<(String, String)> = v["cuda"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap().into(),
                i["arch"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected = [("sass", "sm_80"), ("sass", "sm_90"), ("ptx", "compute_90")];
    assert_eq!(
        images,
        expected.map(|(k, a)| (k.to_string(), a.to_string()))
    );
    assert_eq!(v["cuda"][2]["ptx_isa"], "9.0");
    let needed = v["needed"].as_array().unwrap();
    assert_eq!(needed[0]["soname"], "libcudart.so.13");
    assert_eq!(needed[0]["runtime"]["is"], "cudart");
    assert_eq!(needed[0]["runtime"]["major"], 13);
    assert_eq!(v["static_cudart"], false);
    assert_eq!(v["compared"][1]["arch"], "sm_70");
    assert_eq!(v["compared"][1]["source"]["from"], "pin");
    assert_eq!(v["compared"][1]["source"]["line"], 2);
    let errors: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{v:#}");
    assert_eq!(errors[0]["id"], "kernel-image");
    assert!(errors[0]["hint"].as_str().unwrap().contains("compute_70"));
    assert_eq!(v["summary"]["error"], 1);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn nvcc_13s_arch_specific_and_family_variants() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(Some(
        "[toolchain]\ncuda-arch = [\"9.0\", \"10.3\", \"12.0\", \"8.0\"]\n",
    ));
    let out = audit(&sb, &[&object(b, "variants.so")], &[]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("SASS sm_90a, sm_100f; PTX compute_75 (ISA 9.0), compute_100f (ISA 9.0)"),
        "{stdout}"
    );
    // sm_90a runs on 9.0 only; sm_100f on the family (10.3 too); compute_100f PTX does not
    // reach 12.0, compute_75 does.
    assert!(
        stdout.contains("sm_90 (pinned in gpuenv.toml:2): runs SASS sm_90a"),
        "{stdout}"
    );
    assert!(
        stdout.contains("sm_103 (pinned in gpuenv.toml:2): runs SASS sm_100f"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "no SASS for sm_120 (pinned in gpuenv.toml:2): the driver compiles compute_75 PTX"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "no SASS for sm_80 (pinned in gpuenv.toml:2): the driver compiles compute_75 PTX"
        ),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}");
}

#[test]
fn nvccs_default_static_cudart_and_an_rdc_object() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(Some("[toolchain]\ncuda-arch = [\"9.0\"]\n"));
    let stdout = succeeded(&audit(&sb, &[&object(b, "static.so")], &[]));
    assert!(
        stdout.contains("needs:     no CUDA runtime library (linked in statically)"),
        "{stdout}"
    );
    assert!(!stdout.contains("libcudart"), "{stdout}");
    let stdout = succeeded(&audit(&sb, &[&object(b, "rdc.o")], &[]));
    assert!(stdout.contains("(relocatable object)"), "{stdout}");
    assert!(
        stdout.contains("SASS sm_80, sm_90; PTX compute_90"),
        "{stdout}"
    );
}

/// A separable (`-rdc`) build runs only what its device link put into `.nv_fatbin`: the
/// relocatable cubins its `.so` keeps in `__nv_relfatbin` (sm_90 here) are never loaded.
#[test]
fn an_rdc_program_is_audited_from_its_loadable_image_only() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(Some("[toolchain]\ncuda-arch = [\"9.0\"]\n"));
    write_exe(&sb.path("bin/nvidia-smi"), "#!/bin/sh\nprintf '9.0\\n'\n");
    let out = audit(&sb, &[&object(b, "rdc80.so")], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("SASS sm_80"), "{stdout}");
    assert!(!stdout.contains("SASS sm_80, sm_90"), "{stdout}");
    assert!(
        stdout.contains("error kernel-image: no kernel image for sm_90"),
        "{stdout}"
    );
    // The way out names `archs = "add"`: a build passing its own -gencode ignores the lists.
    assert!(
        stdout.contains("set `[build] archs = \"add\"` in gpuenv.toml, and gpuenv adds it to a build that passes its own arch flags; a build that passes none takes it from TORCH_CUDA_ARCH_LIST"),
        "{stdout}"
    );
    // The object it was linked from still lists its relocatable cubins.
    let stdout = succeeded(&audit(&sb, &[&object(b, "rdc-pic.o")], &[]));
    assert!(stdout.contains("SASS sm_80, sm_90"), "{stdout}");
}

#[test]
fn a_runtime_of_another_release_than_the_active_toolchain_is_a_warning() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(Some("[toolchain]\ncuda = \"12.4\"\n"));
    let cuda = sb.path("cuda-12.4");
    nvcc_stub(&cuda, "12.4.131");
    sb.ok(&["link", "cuda-12.4", cuda.to_str().unwrap()]);
    let stdout = succeeded(&audit(&sb, &[&object(b, "k.so")], &[]));
    assert!(
        stdout.contains("warn  runtime: needs libcudart.so.13 (the CUDA 13 runtime), but the toolchain active here is cuda-12.4 (release 12)"),
        "{stdout}"
    );
    assert!(stdout.contains("`gpuenv pin cuda-13`"), "{stdout}");
}

/// A shared object built by Debian's hipcc for gfx90a and gfx940 (gfx942 is past LLVM 15).
fn hip_object(sb: &Sandbox) -> Option<PathBuf> {
    if !have_tool("hipcc") || !Path::new("/usr/share/hip/version").is_file() {
        return None;
    }
    write(&sb.path("k.hip"), HIP_KERNEL);
    let out = Command::new("hipcc")
        .args([
            "--offload-arch=gfx90a",
            "--offload-arch=gfx940",
            "-fPIC",
            "-shared",
            "k.hip",
            "-o",
            "h.so",
        ])
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .current_dir(sb.path(""))
        .output()
        .unwrap();
    succeeded(&out);
    Some(sb.path("h.so"))
}

#[test]
fn a_hip_object_for_gfx90a_and_gfx940_against_rocm_arch_pins() {
    let sb = project(Some("[toolchain]\nrocm-arch = [\"gfx90a\", \"gfx942\"]\n"));
    let Some(h) = hip_object(&sb) else { return };
    let h = h.to_str().unwrap();
    let out = audit(&sb, &[h], &[]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("HIP code:  gfx90a, gfx940"), "{stdout}");
    assert!(
        stdout.contains("libamdhip64.so.5 (the HIP runtime of ROCm 5)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ok    code-object: gfx90a (pinned in gpuenv.toml:2): has gfx90a"),
        "{stdout}"
    );
    assert!(
        stdout.contains("error code-object: no code object for gfx942 (pinned in gpuenv.toml:2): it has gfx90a, gfx940"),
        "{stdout}"
    );
    assert!(stdout.contains("`--offload-arch=gfx942`"), "{stdout}");

    let v: Value = serde_json::from_slice(
        &audit(&sb, &[h, "--json"], &[("PYTORCH_ROCM_ARCH", "gfx940")]).stdout,
    )
    .unwrap();
    assert_eq!(v["hip"], serde_json::json!(["gfx90a", "gfx940"]));
    assert_eq!(
        v["needed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["soname"] == "libamdhip64.so.5")
            .unwrap()["runtime"]["major"],
        5
    );
    assert_eq!(v["compared"][2]["source"]["name"], "PYTORCH_ROCM_ARCH");
}

#[test]
fn an_object_with_no_gpu_code_says_so() {
    if !have_tool("cc") {
        return;
    }
    let sb = project(None);
    write(&sb.path("plain.c"), "int f(void) { return 1; }\n");
    succeeded(
        &Command::new("cc")
            .args(["-shared", "-fPIC", "plain.c", "-o", "plain.so"])
            .current_dir(sb.path(""))
            .output()
            .unwrap(),
    );
    let stdout = succeeded(&audit(&sb, &[sb.path("plain.so").to_str().unwrap()], &[]));
    assert!(
        stdout.contains("warn  device-code: no GPU code in it"),
        "{stdout}"
    );
}

#[test]
fn a_pin_that_does_not_resolve_leaves_the_arch_check_standing() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(Some(
        "[toolchain]\ncuda = \"12.8\"\ncuda-arch = [\"9.0\"]\n",
    ));
    let out = audit(&sb, &[&object(b, "k.so")], &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("sm_90 (pinned in gpuenv.toml:3): runs SASS sm_90"),
        "{stdout}"
    );
    assert!(
        stderr.contains("the runtime it needs is not compared with a toolchain")
            && stderr.contains("12.8"),
        "{stderr}"
    );
}

/// A machine root whose kernel module reports `driver`.
fn driver_root(sb: &Sandbox, driver: &str) -> PathBuf {
    let root = sb.path("machine");
    write(
        &root.join("proc/driver/nvidia/version"),
        &format!("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {driver}  Release Build  (dvs-builder@U22-I3-AE18-23-3)  Wed Jul  2 06:37:33 UTC 2025\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"),
    );
    root
}

#[test]
fn ptx_newer_than_the_driver_can_compile_is_no_kernel_and_a_new_enough_driver_passes() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(None);
    write_exe(&sb.path("bin/nvidia-smi"), "#!/bin/sh\nprintf '9.0\\n'\n");
    // The real nvcc 13.0 writes PTX ISA 9.0; driver 575 is CUDA 12.9's (ISA 8.8).
    let old = driver_root(&sb, "575.57.08");
    let old = old.to_str().unwrap();
    let out = audit(&sb, &[&object(b, "ptx.so")], &[("GPUENV_DOCTOR_ROOT", old)]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("error kernel-image: no kernel image for sm_90 (a GPU here, by nvidia-smi) that this driver can load: no SASS, and its compute_90 PTX (ISA 9.0) needs driver 580.65.06 or newer (CUDA 13.0); the driver here is 575.57.08: launches fail with error 222"),
        "{stdout}"
    );
    assert!(
        stdout.contains("`-gencode arch=compute_90,code=sm_90`"),
        "{stdout}"
    );
    // SASS for the GPU needs no JIT: the same driver runs k.so (minor version compatibility).
    let out = audit(&sb, &[&object(b, "k.so")], &[("GPUENV_DOCTOR_ROOT", old)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).0);

    for new_enough in ["580.65.06", "580.159.04"] {
        let root = driver_root(&sb, new_enough);
        let out = audit(
            &sb,
            &[&object(b, "ptx.so")],
            &[("GPUENV_DOCTOR_ROOT", root.to_str().unwrap())],
        );
        let (stdout, _) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        assert!(
            stdout.contains("warn  kernel-image: no SASS for sm_90 (a GPU here, by nvidia-smi): the driver compiles compute_90 PTX"),
            "{stdout}"
        );
    }
}

/// What users have besides ELF objects: a raw `nvcc -fatbin` and an `nvcc -lib` archive are
/// read for what they hold.
#[test]
fn a_raw_fatbinary_and_a_static_library_are_read() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(Some("[toolchain]\ncuda-arch = [\"9.0\", \"7.5\"]\n"));
    for (file, kind) in [("k.fatbin", "CUDA fatbinary"), ("libk.a", "static library")] {
        let out = audit(&sb, &[&object(b, file)], &[]);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{file}: {stdout}{stderr}");
        assert!(stdout.contains(&format!("({kind})")), "{stdout}");
        assert!(
            stdout.contains("SASS sm_80, sm_90; PTX compute_90"),
            "{stdout}"
        );
        assert!(stdout.contains("no kernel image for sm_75"), "{stdout}");
    }
}

/// hipcc's `--genco` writes a raw offload bundle of code objects; `-fgpu-rdc -c` a `.o`
/// whose targets' bitcode sits in sections named by target: neither is "no GPU code".
#[test]
fn a_hip_genco_bundle_and_an_fgpu_rdc_object_name_their_targets() {
    let sb = project(Some("[toolchain]\nrocm-arch = [\"gfx90a\"]\n"));
    if hip_object(&sb).is_none() {
        return;
    }
    let hipcc = |args: &[&str]| {
        let out = Command::new("hipcc")
            .args(args)
            .env_clear()
            .env("HOME", sb.home())
            .env("PATH", "/usr/bin:/bin")
            .current_dir(sb.path(""))
            .output()
            .unwrap();
        succeeded(&out);
    };
    hipcc(&[
        "--genco",
        "--offload-arch=gfx90a",
        "--offload-arch=gfx940",
        "k.hip",
        "-o",
        "k.co",
    ]);
    hipcc(&[
        "-fgpu-rdc",
        "-c",
        "--offload-arch=gfx90a",
        "k.hip",
        "-o",
        "rdc.o",
    ]);
    let co = sb.path("k.co");
    let stdout = succeeded(&audit(&sb, &[co.to_str().unwrap()], &[]));
    assert!(stdout.contains("(HIP code object bundle)"), "{stdout}");
    assert!(stdout.contains("HIP code:  gfx90a, gfx940"), "{stdout}");
    let rdc = sb.path("rdc.o");
    let stdout = succeeded(&audit(&sb, &[rdc.to_str().unwrap()], &[]));
    assert!(stdout.contains("HIP code:  gfx90a"), "{stdout}");
    assert!(!stdout.contains("no GPU code"), "{stdout}");
}

/// A position-independent executable (ELF type DYN, as distributions link programs) is an
/// executable, not a "shared object".
#[test]
fn a_pie_program_is_an_executable_and_a_so_a_shared_object() {
    let Some(b) = nvcc_objects() else { return };
    let sb = project(None);
    for (file, kind) in [("pie", "executable"), ("k.so", "shared")] {
        let out = audit(&sb, &[&object(b, file), "--json"], &[]);
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{file}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(v["kind"], kind, "{file}: {v}");
    }
    let (stdout, stderr) = text(&audit(&sb, &[&object(b, "pie")], &[]));
    let all = format!("{stdout}{stderr}");
    assert!(!all.contains("shared object"), "{all}");
    assert!(all.contains("executable"), "{all}");
}
