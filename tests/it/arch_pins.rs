//! Arch pins reach the builds: the variables PyTorch, CMake and hipcc read, the arguments a
//! plain nvcc/hipcc call gets through the proxy, what a build that passes its own arch flags
//! is told (or, with `[build] archs = "add"`, given), and `gpuenv pin --arch native` reading
//! this machine's GPUs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use crate::common::*;
use fs_err as fs;

/// A project pinned to a stub CUDA 12.4 (which logs its arguments) and a stub ROCm 6.2.
fn pinned(toml_extra: &str) -> (Sandbox, PathBuf, PathBuf, PathBuf) {
    let sb = Sandbox::new();
    let cuda = sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let rocm_root = rocm(&sb.path("opt/rocm-6.2.4"), "6.2.4");
    // A hipcc that logs its arguments after printing its version.
    let log = rocm_root.join("hipcc.log");
    write_exe(
        &rocm_root.join("bin/hipcc"),
        &format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 'HIP version: 6.2.41133-dd7f95766'; exit 0; }}\necho \"$@\" >> '{}'\n",
            log.display()
        ),
    );
    sb.ok(&["link", "rocm-6.2.4", rocm_root.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        &format!("[toolchain]\ncuda = \"12.4\"\nrocm = \"6.2\"\ncuda-arch = [\"8.0\", \"9.0+PTX\"]\nrocm-arch = [\"gfx90a\", \"gfx942\"]\n{toml_extra}"),
    );
    (sb, proj, cuda, rocm_root)
}

fn run_shim(sb: &Sandbox, dir: &Path, tool: &str, args: &[&str]) -> std::process::Output {
    run_as_a_build(sb, &sb.gpuenv_home().join("shims").join(tool), dir, args)
}

/// `program` run in `dir` as a build runs it: only HOME and a system PATH.
fn run_as_a_build(sb: &Sandbox, program: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(program)
        .args(args)
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .current_dir(dir)
        .output()
        .unwrap()
}

/// `gpuenv pin --arch native` in a new project `proj`, with only `tools` on PATH besides `extra_path`.
fn pin_arch_native(sb: &Sandbox, tools: &Path, extra_path: &str) -> std::process::Output {
    let proj = sb.path("proj");
    fs::create_dir_all(&proj).unwrap();
    sb.gpuenv()
        .current_dir(&proj)
        .env("PATH", format!("{}{extra_path}", tools.display()))
        .args(["pin", "--arch", "native"])
        .output()
        .unwrap()
}

/// A kernel for a real nvcc to compile.
const KERNEL: &str = "__global__ void k(float* x) { x[0] = 1.0f; }\n";

/// A project `proj` with `k_cu` as its `k.cu`, and the real CUDA 13 linked as cuda-13.0; None
/// (skipped outside CI) without it.
fn real_cuda13_project(k_cu: &str) -> Option<(Sandbox, PathBuf, PathBuf)> {
    let root = common::real::real_cuda13()?;
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(&proj.join("k.cu"), k_cu);
    Some((sb, proj, root))
}

/// Pins of CUDA 13.0 with archs 8.0 and 9.0 (line 3).
const PINS_80_90: &str = "[toolchain]\ncuda = \"13.0\"\ncuda-arch = [\"8.0\", \"9.0\"]\n";

/// `file` = the pins with `[build] archs = "add"`, trusted.
fn add_missing_archs(sb: &Sandbox, file: &Path) {
    write(file, &format!("{PINS_80_90}[build]\narchs = \"add\"\n"));
    sb.ok(&["trust", file.to_str().unwrap()]);
}

/// The last command line a stub compiler logged, without the `--threads N` the proxy puts
/// in front of a compile of several archs (its count follows the machine's cores and
/// memory: tests/it/build_jobs.rs checks it).
fn last_line(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    let line = text.lines().last().unwrap();
    match line
        .strip_prefix("--threads ")
        .and_then(|r| r.split_once(' '))
    {
        Some((n, rest)) if n.parse::<u32>().is_ok() => rest.to_string(),
        _ => line.to_string(),
    }
}

#[test]
fn arch_pins_export_what_pytorch_cmake_and_hipcc_read() {
    let (sb, proj, _, _) = pinned("");
    let env = sb.env_json(&proj);
    assert_eq!(env["TORCH_CUDA_ARCH_LIST"], "8.0;9.0+PTX");
    assert_eq!(env["CUDAARCHS"], "80-real;90");
    assert_eq!(env["PYTORCH_ROCM_ARCH"], "gfx90a;gfx942");
    assert_eq!(env["GPU_TARGETS"], "gfx90a;gfx942");
    assert_eq!(env["HCC_AMDGPU_TARGET"], "gfx90a,gfx942");
}

#[test]
fn suffixed_archs_and_target_ids_reach_every_build_system_once_each() {
    let (sb, proj, cuda, rocm_root) = pinned("");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\nrocm = \"6.2\"\ncuda-arch = [\"8.6\", \"9.0a\", \"10.0f\", \"12.0a+PTX\", \"8.6\"]\nrocm-arch = [\"gfx90a:xnack+\", \"gfx942:sramecc+:xnack-\", \"gfx90a:xnack+\", \"gfx1100\"]\n",
    );
    let env = sb.env_json(&proj);
    assert_eq!(env["TORCH_CUDA_ARCH_LIST"], "8.6;9.0a;10.0f;12.0a+PTX");
    assert_eq!(env["CUDAARCHS"], "86-real;90a-real;100f-real;120a");
    assert_eq!(
        env["PYTORCH_ROCM_ARCH"],
        "gfx90a:xnack+;gfx942:sramecc+:xnack-;gfx1100"
    );
    assert_eq!(
        env["HCC_AMDGPU_TARGET"],
        "gfx90a:xnack+,gfx942:sramecc+:xnack-,gfx1100"
    );

    let out = run_shim(&sb, &proj, "nvcc", &["-c", "k.cu"]);
    succeeded(&out);
    let args = last_line(&cuda.join("nvcc.log"));
    assert!(
        args.ends_with("-gencode arch=compute_86,code=sm_86 -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_100f,code=sm_100f -gencode arch=compute_120a,code=sm_120a -gencode arch=compute_120a,code=compute_120a -c k.cu"),
        "{args}"
    );
    let out = run_shim(&sb, &proj, "hipcc", &["-c", "k.hip"]);
    succeeded(&out);
    assert_eq!(
        last_line(&rocm_root.join("hipcc.log")),
        "--offload-arch=gfx90a:xnack+ --offload-arch=gfx942:sramecc+:xnack- --offload-arch=gfx1100 -c k.hip"
    );
}

#[test]
fn a_plain_nvcc_call_through_the_proxy_targets_the_pinned_archs() {
    let (sb, proj, cuda, _) = pinned("");
    let out = run_shim(&sb, &proj, "nvcc", &["-c", "k.cu", "-o", "k.o"]);
    succeeded(&out);
    let args = last_line(&cuda.join("nvcc.log"));
    assert!(
        args.contains("-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -c k.cu -o k.o"),
        "{args}"
    );
    // The view's nvcc, as CMake and torch call it, applies the project's pins too.
    let view_nvcc = sb.gpuenv_home().join("views/cuda-12.4/bin/nvcc");
    let out = run_as_a_build(&sb, &view_nvcc, &proj, &["-arch=sm_86", "-c", "k.cu"]);
    succeeded(&out);
    let args = last_line(&cuda.join("nvcc.log"));
    assert!(
        !args.contains("-gencode"),
        "the call's own arch wins: {args}"
    );
}

#[test]
fn a_plain_hipcc_call_through_the_proxy_gets_one_offload_arch_per_pin() {
    let (sb, proj, _, rocm_root) = pinned("");
    let out = run_shim(&sb, &proj, "hipcc", &["-c", "k.hip"]);
    succeeded(&out);
    assert_eq!(
        last_line(&rocm_root.join("hipcc.log")),
        "--offload-arch=gfx90a --offload-arch=gfx942 -c k.hip"
    );
}

#[test]
fn pin_arch_native_pins_this_machines_gpus() {
    let sb = Sandbox::new();
    let tools = sb.path("tools");
    write_exe(
        &tools.join("nvidia-smi"),
        "#!/bin/sh\n[ \"$1\" = --query-gpu=compute_cap ] && printf '8.6\\n8.6\\n'\n",
    );
    write_exe(
        &tools.join("rocm_agent_enumerator"),
        "#!/bin/sh\nprintf 'gfx000\\ngfx90a\\n'\n",
    );
    succeeded(&pin_arch_native(&sb, &tools, ":/bin"));
    let text = fs::read_to_string(sb.path("proj/gpuenv.toml")).unwrap();
    assert!(text.contains("cuda-arch = [\"8.6\"]"), "{text}");
    assert!(text.contains("rocm-arch = [\"gfx90a\"]"), "{text}");
}

#[test]
fn pin_arch_native_says_clearly_when_the_machine_has_no_gpu() {
    let sb = Sandbox::new();
    let tools = sb.path("tools");
    write_exe(
        &tools.join("nvidia-smi"),
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n",
    );
    let out = pin_arch_native(&sb, &tools, "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("--arch native: this machine shows no GPU"),
        "{err}"
    );
    assert!(
        err.contains("could not communicate with the NVIDIA driver"),
        "{err}"
    );
    assert!(err.contains("rocminfo: not on PATH"), "{err}");
    assert!(err.contains("hint: name the targets instead"), "{err}");
    assert!(!sb.path("proj/gpuenv.toml").exists());
}

/// The suffix rules gpuenv enforces are the ones a real nvcc (CUDA 13.0, from NVIDIA's
/// wheels) enforces: `9.0a` and `10.0f` build through the proxy, `8.6a` and `9.0f` exist
/// for neither.
#[test]
fn suffixed_pins_build_with_a_real_nvcc_and_what_it_refuses_gpuenv_refuses() {
    let Some((sb, proj, root)) = real_cuda13_project(KERNEL) else {
        return;
    };
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"13.0\"\ncuda-arch = [\"9.0a\", \"10.0f\"]\n",
    );
    let out = run_shim(&sb, &proj, "nvcc", &["-c", "k.cu", "-o", "k.o"]);
    succeeded(&out);
    assert!(proj.join("k.o").is_file());
    // What ptxas was asked to build, as nvcc's dry run shows it.
    let out = run_shim(&sb, &proj, "nvcc", &["--dryrun", "-c", "k.cu", "-o", "k.o"]);
    let steps = String::from_utf8_lossy(&out.stderr);
    for arch in ["ptxas -arch=sm_90a ", "ptxas -arch=sm_100f "] {
        assert!(steps.contains(arch), "{arch}: {steps}");
    }

    for bad in ["sm_86a", "sm_90f"] {
        let out = Command::new(root.join("bin/nvcc"))
            .args([&format!("-arch={bad}"), "-c", "k.cu", "-o", "bad.o"])
            .current_dir(&proj)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("Unsupported gpu architecture '{bad}'")),
            "{err}"
        );
    }
    for (pin, why) in [
        ("8.6a", "arch-specific (`a`) targets start at 9.0"),
        ("9.0f", "family-specific (`f`) targets start at 10.0"),
    ] {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .args(["pin", "--arch", pin])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(why), "{pin}: {err}");
    }
}

/// Each marker of "said once per build" made as if the last such compile were an hour ago.
fn a_build_later(sb: &Sandbox) {
    let dir = sb.gpuenv_home().join("cache/arch-notices");
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for e in fs::read_dir(&dir).unwrap().flatten() {
        fs::File::options()
            .write(true)
            .open(e.path())
            .unwrap()
            .file()
            .set_modified(hour_ago)
            .unwrap();
    }
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What a setup.py that passes its own -gencode flags runs: torch then drops
/// TORCH_CUDA_ARCH_LIST.
const OWN_GENCODE: &[&str] = &[
    "-gencode",
    "arch=compute_75,code=sm_75",
    "-gencode=arch=compute_80,code=sm_80",
    "-c",
    "k.cu",
    "-o",
    "k.o",
];

/// The compile of [`OWN_GENCODE`] through the proxy in `proj`, which must succeed; what
/// gpuenv said on stderr.
#[track_caller]
fn compile_with_own_gencode(sb: &Sandbox, proj: &Path) -> String {
    let out = run_shim(sb, proj, "nvcc", OWN_GENCODE);
    succeeded(&out);
    stderr_of(&out)
}

#[test]
fn own_arch_flags_that_leave_out_a_pin_are_said_once_per_build_and_left_alone() {
    let (sb, proj, cuda, _) = pinned("");
    let err = compile_with_own_gencode(&sb, &proj);
    assert!(
        err.contains("this build's own arch flags leave out sm_90, compute_90, pinned at"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}:4:", proj.join("gpuenv.toml").display())),
        "the pin's file and line: {err}"
    );
    assert!(err.contains("[build] archs = \"add\""), "{err}");
    // Warned, not changed: the compile runs as the build wrote it.
    assert_eq!(last_line(&cuda.join("nvcc.log")), OWN_GENCODE.join(" "));

    // The next compile of the same build says nothing.
    let err = compile_with_own_gencode(&sb, &proj);
    assert!(!err.contains("leave out"), "{err}");

    // A build after a long pause is told again; steps that make no device code never are.
    a_build_later(&sb);
    for quiet in [
        &["-E", "-gencode", "arch=compute_75,code=sm_75", "k.cu"][..],
        &[
            "-dlink",
            "-gencode",
            "arch=compute_75,code=sm_75",
            "k.o",
            "-o",
            "d.o",
        ],
        &["-gencode", "arch=compute_75,code=sm_75", "k.o", "-o", "k"],
        &["-c", "k.cu", "-o", "k.o"],
    ] {
        let out = run_shim(&sb, &proj, "nvcc", quiet);
        succeeded(&out);
        assert!(
            !stderr_of(&out).contains("leave out"),
            "{quiet:?}: {}",
            stderr_of(&out)
        );
    }
    let err = compile_with_own_gencode(&sb, &proj);
    assert!(err.contains("leave out sm_90"), "{err}");

    // `off` keeps quiet, untrusted: it only keeps quiet.
    a_build_later(&sb);
    let toml = fs::read_to_string(proj.join("gpuenv.toml")).unwrap();
    write(
        &proj.join("gpuenv.toml"),
        &format!("{toml}[build]\narchs = \"off\"\n"),
    );
    let err = compile_with_own_gencode(&sb, &proj);
    assert!(err.is_empty(), "{err}");
}

#[test]
fn archs_add_in_a_trusted_file_appends_the_missing_targets_to_the_compile() {
    let (sb, proj, cuda, rocm_root) = pinned("[build]\narchs = \"add\"\n");
    let file = proj.join("gpuenv.toml");
    // Untrusted, `add` is held back: said, and the compile left as written.
    let err = compile_with_own_gencode(&sb, &proj);
    assert!(
        err.contains("sets [build] archs, which is not applied until you trust"),
        "{err}"
    );
    assert!(err.contains("leave out sm_90, compute_90"), "{err}");
    assert_eq!(last_line(&cuda.join("nvcc.log")), OWN_GENCODE.join(" "));

    sb.ok(&["trust", file.to_str().unwrap()]);
    let err = compile_with_own_gencode(&sb, &proj);
    assert!(
        err.contains("gpuenv adds -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 to its compiles"),
        "{err}"
    );
    assert_eq!(
        last_line(&cuda.join("nvcc.log")),
        format!(
            "{} -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90",
            OWN_GENCODE.join(" ")
        )
    );
    // Every compile of the build gets them; the message was said once.
    let err = compile_with_own_gencode(&sb, &proj);
    assert!(err.is_empty(), "{err}");
    assert!(last_line(&cuda.join("nvcc.log")).ends_with("code=compute_90"));
    // The device link makes a separable build's loadable image: it gets them too, quietly.
    let dlink = [
        "-dlink",
        "-gencode",
        "arch=compute_80,code=sm_80",
        "k.o",
        "-o",
        "d.o",
    ];
    let out = run_shim(&sb, &proj, "nvcc", &dlink);
    succeeded(&out);
    assert!(stderr_of(&out).is_empty(), "{}", stderr_of(&out));
    assert_eq!(
        last_line(&cuda.join("nvcc.log")),
        format!(
            "{} -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90",
            dlink.join(" ")
        )
    );

    // hipcc: the missing --offload-arch.
    let out = run_shim(
        &sb,
        &proj,
        "hipcc",
        &["--offload-arch=gfx90a", "-c", "k.hip"],
    );
    succeeded(&out);
    assert_eq!(
        last_line(&rocm_root.join("hipcc.log")),
        "--offload-arch=gfx90a -c k.hip --offload-arch=gfx942"
    );
}

/// The SASS targets `gpuenv audit` finds in an object's fatbinary.
fn sass_in(sb: &Sandbox, dir: &Path, object: &str) -> Vec<String> {
    let out = sb
        .gpuenv()
        .current_dir(dir)
        .args(["audit", object, "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr_of(&out)));
    v["cuda"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "sass")
        .map(|i| i["arch"].as_str().unwrap().to_string())
        .collect()
}

/// The issue's case with a real nvcc (CUDA 13.0): pinned 8.0 and 9.0, a build's own flags
/// for sm_75/80/89 made no sm_90, silently. Now it is said; with `archs = "add"` the object
/// holds sm_90.
#[test]
fn a_real_nvcc_compile_that_leaves_out_a_pin_is_told_and_with_add_gets_it() {
    let Some((sb, proj, _)) = real_cuda13_project(KERNEL) else {
        return;
    };
    let file = proj.join("gpuenv.toml");
    write(&file, PINS_80_90);
    let own = [
        "-gencode",
        "arch=compute_75,code=sm_75",
        "-gencode",
        "arch=compute_80,code=sm_80",
        "-gencode=arch=compute_89,code=sm_89",
        "-c",
        "k.cu",
        "-o",
        "k.o",
    ];
    let nvcc = sb.gpuenv_home().join("views/cuda-13.0/bin/nvcc");
    let compile = || {
        let out = run_as_a_build(&sb, &nvcc, &proj, &own);
        succeeded(&out);
        stderr_of(&out)
    };
    let err = compile();
    assert!(
        err.contains("leave out sm_90, pinned at")
            && err.contains(&format!("{}:3:", file.display())),
        "{err}"
    );
    assert_eq!(sass_in(&sb, &proj, "k.o"), ["sm_75", "sm_80", "sm_89"]);

    add_missing_archs(&sb, &file);
    let err = compile();
    assert!(
        err.contains("gpuenv adds -gencode arch=compute_90,code=sm_90"),
        "{err}"
    );
    assert_eq!(
        sass_in(&sb, &proj, "k.o"),
        ["sm_75", "sm_80", "sm_89", "sm_90"]
    );
}

/// A CMake target that sets its own `CUDA_ARCHITECTURES` overrides `CUDAARCHS`; CMake (3.25
/// here, with Ninja) then passes `--generate-code=arch=compute_80,code=[compute_80,sm_80]` to
/// the view's nvcc (a real CUDA 13.0). The pin it leaves out is told while building; with
/// `archs = "add"` the object holds it.
#[test]
fn a_cmake_target_with_its_own_cuda_architectures_is_told_what_it_leaves_out() {
    if !have_tool("cmake") || !have_tool("ninja") || !have_tool("g++") {
        return;
    }
    let Some((sb, proj, _)) = real_cuda13_project(&format!(
        "{KERNEL}void launch(float* x) {{ k<<<1, 1>>>(x); }}\n"
    )) else {
        return;
    };
    write(
        &proj.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.20)\nproject(k LANGUAGES CXX CUDA)\nadd_library(k STATIC k.cu)\nset_target_properties(k PROPERTIES CUDA_ARCHITECTURES \"75;80\")\n",
    );
    let file = proj.join("gpuenv.toml");
    write(&file, PINS_80_90);
    let build = || {
        let _ = fs::remove_dir_all(proj.join("build"));
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("PATH", "/usr/bin:/bin")
            .args([
                "run",
                "--",
                "sh",
                "-c",
                "cmake -S . -B build -G Ninja >/dev/null && cmake --build build",
            ])
            .output()
            .unwrap();
        succeeded(&out);
        String::from_utf8_lossy(&out.stdout).into_owned() + &stderr_of(&out)
    };
    let said = build();
    assert!(
        said.contains("leave out sm_90, pinned at")
            && said.contains(&format!("{}:3:", file.display())),
        "{said}"
    );
    let object = "build/CMakeFiles/k.dir/k.cu.o";
    assert_eq!(sass_in(&sb, &proj, object), ["sm_75", "sm_80"]);

    add_missing_archs(&sb, &file);
    let said = build();
    assert!(
        said.contains("gpuenv adds -gencode arch=compute_90,code=sm_90"),
        "{said}"
    );
    assert_eq!(sass_in(&sb, &proj, object), ["sm_75", "sm_80", "sm_90"]);
}

/// A separable CMake build (`CUDA_SEPARABLE_COMPILATION ON`, as every cuda-samples program):
/// its program runs only what CMake's device link makes, from the target's own
/// `CUDA_ARCHITECTURES` (80). With `archs = "add"` the device link gets the pinned 9.0 too,
/// and the program's loadable image holds sm_90: audit says so.
#[test]
fn a_separable_cmake_program_gets_the_added_arch_in_its_device_link() {
    if !have_tool("cmake") || !have_tool("ninja") || !have_tool("g++") {
        return;
    }
    let Some((sb, proj, _)) = real_cuda13_project(&format!(
        "{KERNEL}void launch(float* x) {{ k<<<1, 1>>>(x); }}\n"
    )) else {
        return;
    };
    write(
        &proj.join("main.cu"),
        "void launch(float* x);\nint main() { launch(nullptr); return 0; }\n",
    );
    write(
        &proj.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.20)\nproject(k LANGUAGES CXX CUDA)\nadd_executable(prog main.cu k.cu)\nset_target_properties(prog PROPERTIES CUDA_SEPARABLE_COMPILATION ON CUDA_ARCHITECTURES 80)\n",
    );
    let file = proj.join("gpuenv.toml");
    write(&file, PINS_80_90);
    let build = || {
        let _ = fs::remove_dir_all(proj.join("build"));
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("PATH", "/usr/bin:/bin")
            .args([
                "run",
                "--",
                "sh",
                "-c",
                "cmake -S . -B build -G Ninja >/dev/null && cmake --build build -v",
            ])
            .output()
            .unwrap();
        succeeded(&out);
        String::from_utf8_lossy(&out.stdout).into_owned() + &stderr_of(&out)
    };
    let audit = || {
        sb.gpuenv()
            .current_dir(&proj)
            .args(["audit", "build/prog"])
            .output()
            .unwrap()
    };
    let said = build();
    assert!(
        said.contains("-dlink") || said.contains("--device-link"),
        "{said}"
    );
    assert_eq!(sass_in(&sb, &proj, "build/prog"), ["sm_80"]);
    let out = audit();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no kernel image for sm_90"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    add_missing_archs(&sb, &file);
    build();
    assert_eq!(sass_in(&sb, &proj, "build/prog"), ["sm_80", "sm_90"]);
    let out = audit();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("runs SASS sm_90"), "{stdout}");
}

/// A setuptools extension whose `build_ext` runs nvcc with its own arch flags (8.0 only).
const NVCC_SETUP_PY: &str = r#"import os, subprocess
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class Nvcc(build_ext):
    def build_extension(self, ext):
        out = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.check_call(["nvcc", "-shared", "-Xcompiler", "-fPIC",
                               "-gencode", "arch=compute_80,code=sm_80", "k.cu", "-o", out])


setup(name="k", version="0.1", ext_modules=[Extension("k", ["k.cu"])],
      cmdclass={"build_ext": Nvcc})
"#;

/// pip hides a build's output unless it fails: the arch-loss notice said inside `pip wheel`
/// is seen by no one, so it must not use up the once-per-build marker. A real setuptools
/// extension, built with `pip wheel` (the torch venv's pip and setuptools, no index) and the
/// real nvcc 13; the next compile someone sees is told.
#[test]
fn a_pip_wheel_build_does_not_use_up_the_arch_notice() {
    let Some(venv) = common::real::torch_venv() else {
        return;
    };
    let Some((sb, proj, _)) = real_cuda13_project(&format!(
        "{KERNEL}void launch(float* x) {{ k<<<1, 1>>>(x); }}\n"
    )) else {
        return;
    };
    write(&proj.join("gpuenv.toml"), PINS_80_90);
    write(&proj.join("setup.py"), NVCC_SETUP_PY);
    write(
        &proj.join("pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n",
    );
    if !have_tool("script") {
        return;
    }
    // On a terminal (`script` gives it one), as a user runs pip.
    let pip = format!(
        "{} -m pip wheel --no-build-isolation --no-deps --no-index -w dist .",
        venv.join("bin/python").display()
    );
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("PATH", "/usr/bin:/bin")
        .env_remove("PIP_BUILD_TRACKER")
        .args(["run", "--", "script", "-qec", &pip, "/dev/null"])
        .output()
        .unwrap();
    let said = succeeded(&out) + &stderr_of(&out);
    assert!(
        fs::read_dir(proj.join("dist"))
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".whl")),
        "{said}"
    );
    // pip hid the build's stderr; the notice reached the terminal as one line.
    assert!(!said.contains("warning:"), "{said}");
    assert_eq!(
        said.matches("gpuenv: nvcc in a build whose output is hidden: its own arch flags leave out sm_90, pinned at").count(),
        1,
        "{said}"
    );

    // The next compile someone sees, missing the same arch, says it.
    let compile_for_sm80 = || {
        sb.gpuenv()
            .current_dir(&proj)
            .env("PATH", "/usr/bin:/bin")
            .args([
                "run",
                "--",
                "nvcc",
                "-gencode",
                "arch=compute_80,code=sm_80",
            ])
            .args(["-c", "k.cu", "-o", "k.o"])
            .output()
            .unwrap()
    };
    let out = compile_for_sm80();
    succeeded(&out);
    let err = stderr_of(&out);
    assert!(err.contains("leave out sm_90, pinned at"), "{err}");
    // And now it is used up, as in any build.
    let out = compile_for_sm80();
    succeeded(&out);
    assert!(
        !stderr_of(&out).contains("leave out"),
        "{}",
        stderr_of(&out)
    );
}

/// What pip and uv draw on the terminal around a hidden compile, byte for byte in kind:
/// pip a status line with a spinner and no newline, then `done`; uv two bars with the
/// cursor at the end of the second, then a redraw from one row up (indicatif's way).
const FRONTENDS_SH: &str = r#"#!/bin/sh
shim="$1"; pip_proj="$2"; uv_proj="$3"
compile() {
    ( cd "$1" && PIP_BUILD_TRACKER=/tmp/tracker "$shim" -gencode arch=compute_80,code=sm_80 \
        -c k.cu -o k.o 2>>hidden.log )
}
printf 'Building wheel for k (pyproject.toml) ... |'
compile "$pip_proj"
printf '\b/\bdone\n'
printf 'Preparing packages... (0/1)\nBuilding k @ file:///src/k'
compile "$uv_proj"
printf '\033[1A\r\033[2KPrepared 1 package in 3.1s\n\033[2KBuilt k @ file:///src/k\n'
"#;

/// The notice a hidden compile writes to the terminal, in a real terminal (tmux) under
/// pip's spinner and uv's redraw: whole, on its own line (issue 41: glued to pip's
/// spinner, its end erased by uv's redraw).
#[test]
fn the_terminal_notice_survives_pips_spinner_and_uvs_redraw() {
    if !have_tool("tmux") {
        return;
    }
    let (sb, pip_proj, _, _) = pinned("");
    let uv_proj = sb.path("uv-proj");
    fs::create_dir_all(&uv_proj).unwrap();
    fs::copy(pip_proj.join("gpuenv.toml"), uv_proj.join("gpuenv.toml")).unwrap();
    let script = sb.path("frontends.sh");
    write_exe(&script, FRONTENDS_SH);
    fs::create_dir_all(sb.path("work")).unwrap();
    let mut pane = common::pty::bash(&sb, "PS1='(none) $ '\n");
    let shim = sb.gpuenv_home().join("shims/nvcc");
    let ran = pane.run(&format!(
        "{} {} {} {}",
        script.display(),
        shim.display(),
        pip_proj.display(),
        uv_proj.display()
    ));
    let lines = ran.lines();
    let notices: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("in a build whose output is hidden"))
        .collect();
    assert_eq!(notices.len(), 2, "{}", ran.output);
    for notice in notices {
        assert!(
            notice.starts_with("gpuenv: nvcc in a build"),
            "{}",
            ran.output
        );
        assert!(
            notice
                .trim_end()
                .ends_with("(said again at the next compile you see)"),
            "{}",
            ran.output
        );
    }
    // The frontends' own lines are whole too.
    for theirs in [
        "Building wheel for k (pyproject.toml) ... |",
        "Prepared 1 package in 3.1s",
        "Built k @ file:///src/k",
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.trim_end() == theirs || l.starts_with(theirs)),
            "{theirs:?}:\n{}",
            ran.output
        );
    }
}
