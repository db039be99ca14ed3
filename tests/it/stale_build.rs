//! REAL: a build directory configured for one CUDA toolkit is refused by the proxy, before
//! compiling, once another toolkit is active, and builds again once configured afresh. Real
//! CMake (Ninja and Makefiles) with two real toolkits, CUDA 13 from NVIDIA's wheels and
//! Debian's CUDA 11.8; a real PyTorch extension's ninja build; a CMake tree configured
//! without CUDA.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::real::{
    debian_cuda_root, gpuenv_in_venv, install_torch, plain_module, real_cuda13, torch_venv,
    twice_extension,
};
use crate::common::*;
use fs_err as fs;

const KERNEL: &str = "__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n\
                      int main() { return 0; }\n";
const LIB_KERNEL: &str = "__global__ void half(float* x) { x[threadIdx.x] *= 0.5f; }\n";

/// A CUDA project with a subdirectory: with Makefiles its objects compile in `build/lib`.
const CMAKE_LISTS: &str = "cmake_minimum_required(VERSION 3.18)\n\
                           project(x LANGUAGES CXX CUDA)\n\
                           add_subdirectory(lib)\n\
                           add_executable(k k.cu)\n";
const LIB_LISTS: &str = "add_library(half STATIC half.cu)\n";

fn pin(dir: &Path, spec: &str) {
    write(
        &dir.join("gpuenv.toml"),
        &format!("[toolchain]\ncuda = \"{spec}\"\ncuda-arch = [\"8.0\"]\n"),
    );
}

/// A run the proxy refused: what it said (stderr, then stdout).
#[track_caller]
fn refused(out: &Output) -> String {
    let err =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{err}");
    err
}

/// An edit to a source, so the build has something to compile.
fn edit(file: &Path) {
    let text = fs::read_to_string(file).unwrap();
    fs::write(file, format!("{text}// edited\n")).unwrap();
}

struct Cmake {
    sb: Sandbox,
    debian: PathBuf,
    proj: PathBuf,
}

/// CUDA 13 linked as cuda-13.0, Debian's 11.8 discovered, the project pinned to 13.0.
fn cmake_project() -> Option<Cmake> {
    if !have_tool("cmake") || !have_tool("ninja") || !have_tool("g++-11") {
        return None;
    }
    let cuda13 = real_cuda13()?;
    let debian = debian_cuda_root()?;
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", cuda13.to_str().unwrap()]);
    succeeded(
        &sb.gpuenv()
            .env("GPUENV_DISCOVER_ROOTS", &debian)
            .args(["discover", "--register"])
            .output()
            .unwrap(),
    );
    let proj = sb.path("proj");
    write(&proj.join("CMakeLists.txt"), CMAKE_LISTS);
    write(&proj.join("k.cu"), KERNEL);
    write(&proj.join("lib/CMakeLists.txt"), LIB_LISTS);
    write(&proj.join("lib/half.cu"), LIB_KERNEL);
    pin(&proj, "13.0");
    Some(Cmake { sb, debian, proj })
}

impl Cmake {
    /// `gpuenv run -- <args>` in the project: what a shell with the hook would run.
    fn run(&self, args: &[&str]) -> Output {
        self.sb
            .gpuenv()
            .current_dir(&self.proj)
            .arg("run")
            .arg("--")
            .args(args)
            .output()
            .unwrap()
    }

    /// Configures `build/` for the active toolkit with `generator`. Debian's toolkit is
    /// found by CMake through `/usr/lib/cuda/nvvm/libdevice`; extracted under a prefix, that
    /// prefix is CMake's link sysroot (the flags are otherwise the same).
    fn configure(&self, generator: &str, debian: bool) {
        let mut args = vec!["cmake", "-S", ".", "-B", "build", "-G", generator];
        let sysroot = format!("-DCMAKE_SYSROOT_LINK={}", self.debian.display());
        if debian {
            args.push(&sysroot);
        }
        succeeded(&self.run(&args));
    }

    fn build(&self) -> Output {
        self.run(&["cmake", "--build", "build"])
    }

    fn compiler_file(&self) -> String {
        fs::read_to_string(
            self.proj
                .join("build/CMakeFiles")
                .join(cmake_version())
                .join("CMakeCUDACompiler.cmake"),
        )
        .unwrap()
    }
}

/// The version directory CMake writes under `CMakeFiles/`.
fn cmake_version() -> String {
    let out = std::process::Command::new("cmake")
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace().nth(2).unwrap().to_string()
}

#[test]
fn a_cmake_tree_configured_for_one_real_toolkit_is_refused_under_the_other_until_configured_afresh()
{
    let Some(p) = cmake_project() else { return };
    let build = p.proj.join("build");

    // Ninja, CUDA 13: configured and built.
    p.configure("Ninja", false);
    succeeded(&p.build());
    assert!(p
        .compiler_file()
        .contains("CMAKE_CUDA_COMPILER_VERSION \"13.0"));

    // The pin moves to Debian's 11.8; the next build compiles an edited source.
    pin(&p.proj, "11.8");
    edit(&p.proj.join("k.cu"));
    let err = refused(&p.build());
    for said in [
        format!(
            "the build directory {} was configured with cuda-13.0 (CUDA 13.0",
            build.display()
        ),
        "CMakeCUDACompiler.cmake:".to_string(),
        "but cuda-11.8-debian (11.8.89) is active here: pinned to 11.8 in".to_string(),
        format!("`rm -rf {}`", build.display()),
        // The tree's generator kept: `ninja` in it works after the fresh configure.
        format!(
            "`cmake --fresh -S {} -B {} -G Ninja`",
            p.proj.display(),
            build.display()
        ),
        "`gpuenv use cuda-13.0`".to_string(),
        "GPUENV_STALE_CHECK=off".to_string(),
    ] {
        assert!(err.contains(&said), "{said:?} not in:\n{err}");
    }

    // The doctor's FM-06 reads the same files: the tree was configured through 13.0's view
    // (its nvcc resolves to the proxy, but names its toolchain), so it is stale here.
    let out =
        p.sb.gpuenv()
            .current_dir(&p.proj)
            .arg("doctor")
            .output()
            .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let fm06 = said
        .lines()
        .find(|l| l.contains("FM-06"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        fm06.starts_with("error FM-06")
            && fm06.contains(&format!(
                "the build directory {} was configured with cuda-13.0",
                build.display()
            )),
        "{said}"
    );
    assert!(said.contains("cmake --fresh -S "), "{said}");

    // Afresh: the hint's command, pasted in the project root with the other options,
    // configures for 11.8 with the tree's generator, and `ninja` in the tree builds it.
    let fresh = err
        .split('`')
        .find(|w| w.starts_with("cmake --fresh"))
        .unwrap();
    let configure = format!("{fresh} -DCMAKE_SYSROOT_LINK={}", p.debian.display());
    succeeded(&p.run(&["sh", "-c", &configure]));
    succeeded(&p.run(&["ninja", "-C", "build"]));
    assert!(p
        .compiler_file()
        .contains("CMAKE_CUDA_COMPILER_VERSION \"11.8.89\""));

    // Back to 13: the library's object compiles in build/lib, found by walking up.
    pin(&p.proj, "13.0");
    edit(&p.proj.join("lib/half.cu"));
    let err = refused(&p.build());
    assert!(
        err.contains(&format!(
            "the build directory {} was configured with cuda-11.8-debian (CUDA 11.8.89",
            build.display()
        )) && err.contains("but cuda-13.0 (13.0"),
        "{err}"
    );

    // Whoever knows better turns the check off for one build: the tree's own nvcc (11.8,
    // through its view) compiles.
    let out =
        p.sb.gpuenv()
            .current_dir(&p.proj)
            .env("GPUENV_STALE_CHECK", "off")
            .args(["run", "--", "cmake", "--build", "build"])
            .output()
            .unwrap();
    succeeded(&out);
}

/// A tree configured outside gpuenv with a real nvcc path runs that nvcc itself: its builds
/// never reach the proxy, so nothing could refuse them after the pin moves. `gpuenv pin`
/// says so when it moves the pin, with the `cmake --fresh` that keeps the tree's generator
/// and leaves the old compiler out; followed, the tree builds through gpuenv's nvcc, so the
/// next move of the pin is refused at compile time like any gpuenv-configured tree.
#[test]
fn a_cmake_tree_configured_outside_gpuenv_is_named_when_the_pin_moves() {
    let Some(p) = cmake_project() else { return };
    let build = p.proj.join("build");
    let cuda13 = real_cuda13().unwrap();
    let nvcc13 = cuda13.join("bin/nvcc");

    // Configured without gpuenv: no hook, the real nvcc by its path.
    let out = std::process::Command::new("cmake")
        .current_dir(&p.proj)
        .env_clear()
        .env("HOME", p.sb.home())
        .env("PATH", system_path())
        .args(["-S", ".", "-B", "build", "-G", "Ninja"])
        .arg(format!("-DCMAKE_CUDA_COMPILER={}", nvcc13.display()))
        .args([
            "-DCMAKE_CUDA_ARCHITECTURES=80",
            "-DCMAKE_CUDA_HOST_COMPILER=g++-11",
        ])
        .output()
        .unwrap();
    succeeded(&out);

    let out =
        p.sb.gpuenv()
            .current_dir(&p.proj)
            .args(["pin", "cuda-11.8"])
            .output()
            .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    for wanted in [
        format!(
            "warning: the build directory {} was configured with cuda-13.0 (CUDA 13.0",
            build.display()
        ),
        "but cuda-11.8-debian (11.8.89) is active here".to_string(),
        format!(
            "its builds run {} themselves, not through gpuenv, so nothing refuses them",
            nvcc13.display()
        ),
        format!(
            "`cmake --fresh -S {} -B {} -G Ninja` (with your other options but not -DCMAKE_CUDA_COMPILER",
            p.proj.display(),
            build.display()
        ),
    ] {
        assert!(said.contains(&wanted), "{wanted:?} not in:\n{said}");
    }

    // The hint, followed in a shell with gpuenv active: the tree now compiles through the
    // pinned toolkit's view, and builds.
    let fresh = said
        .split('`')
        .find(|w| w.starts_with("cmake --fresh"))
        .unwrap();
    let configure = format!("{fresh} -DCMAKE_SYSROOT_LINK={}", p.debian.display());
    succeeded(&p.run(&["sh", "-c", &configure]));
    succeeded(&p.build());
    assert!(p
        .compiler_file()
        .contains("CMAKE_CUDA_COMPILER_VERSION \"11.8.89\""));

    // Moved again: said at the pin, and now refused at the compile too.
    let out =
        p.sb.gpuenv()
            .current_dir(&p.proj)
            .args(["pin", "cuda-13.0"])
            .output()
            .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        said.contains("its next compile is refused until it is configured afresh"),
        "{said}"
    );
    edit(&p.proj.join("k.cu"));
    let err = refused(&p.build());
    assert!(
        err.contains("was configured with cuda-11.8-debian"),
        "{err}"
    );
}

#[test]
fn a_cmake_tree_configured_without_cuda_refuses_nvcc_until_cmake_enables_it() {
    if !have_tool("cmake") {
        return;
    }
    let Some(cuda13) = real_cuda13() else { return };
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", cuda13.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(
        &proj.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.18)\nproject(x LANGUAGES CXX)\n\
         option(USE_CUDA \"build the CUDA parts\" OFF)\n\
         if(USE_CUDA)\n  enable_language(CUDA)\n  add_library(half STATIC half.cu)\nendif()\n",
    );
    write(&proj.join("half.cu"), LIB_KERNEL);
    pin(&proj, "13.0");
    let run = |dir: &Path, args: &[&str]| {
        sb.gpuenv()
            .current_dir(dir)
            .arg("run")
            .arg("--")
            .args(args)
            .output()
            .unwrap()
    };
    succeeded(&run(
        &proj,
        &["cmake", "-S", ".", "-B", "build", "-DUSE_CUDA=OFF"],
    ));

    // nvcc in the CPU-only tree: its objects would join a build configured without CUDA.
    let build = proj.join("build");
    let out = run(&build, &["nvcc", "-c", "../half.cu", "-o", "half.o"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the build directory {} was configured without CUDA (USE_CUDA=OFF at {}:",
            build.display(),
            build.join("CMakeCache.txt").display()
        )) && err.contains("but cuda-13.0 (13.0"),
        "{err}"
    );
    assert!(!build.join("half.o").exists());

    // Turning CUDA on reconfigures the tree: CMake's own nvcc calls (inside CMakeFiles/)
    // are not refused, and the build then compiles.
    succeeded(&run(
        &proj,
        &["cmake", "-S", ".", "-B", "build", "-DUSE_CUDA=ON"],
    ));
    succeeded(&run(&proj, &["cmake", "--build", "build"]));
    assert!(build.join("libhalf.a").is_file());
}

const TWICE_KERNEL: &str = "__global__ void twice_kernel(float* x) { x[threadIdx.x] *= 2.0f; }\n";

/// PyTorch's BuildExtension writes `build/temp.*/build.ninja` afresh at every
/// `setup.py build_ext`, for the toolkit active then; what goes stale is that directory
/// rebuilt by `ninja` itself, which runs the nvcc of the toolkit it was written for.
#[test]
fn a_pytorch_extension_build_dir_rebuilt_by_ninja_after_a_switch_is_refused() {
    if !have_tool("g++") || !have_tool("ninja") {
        return;
    }
    let Some(venv) = torch_venv() else { return };
    let Some(cuda13) = real_cuda13() else { return };
    let sb = Sandbox::new();
    succeeded(&install_torch(&sb, &venv));
    sb.ok(&["link", "cuda-13.0", cuda13.to_str().unwrap()]);
    let ext = twice_extension(&sb, TWICE_KERNEL, &plain_module("twice"));
    let run = |dir: &Path, args: &[&str]| {
        gpuenv_in_venv(&sb, &venv, dir)
            .arg("run")
            .arg("--")
            .args(args)
            .output()
            .unwrap()
    };
    succeeded(&run(&ext, &["python", "setup.py", "-q", "build_ext"]));
    let temp = fs::read_dir(ext.join("build"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("temp.")
        })
        .expect("build/temp.*");
    let ninja = fs::read_to_string(temp.join("build.ninja")).unwrap();
    assert!(
        ninja.contains("views/cuda-13.2.2-torch/bin/nvcc"),
        "{ninja}"
    );

    // The project moves to CUDA 13.0; the extension's directory is rebuilt by ninja.
    write(
        &ext.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"13.0\"\ncuda-arch = [\"9.0\"]\n",
    );
    edit(&ext.join("twice.cu"));
    let err = refused(&run(&ext, &["ninja", "-C", temp.to_str().unwrap()]));
    assert!(
        err.contains(&format!(
            "the build directory {} was configured with cuda-13.2.2-torch",
            temp.display()
        )) && err.contains(&format!(
            "read from {}:",
            temp.join("build.ninja").display()
        )) && err.contains("but cuda-13.0 (13.0")
            && err.contains("pinned to 13.0 in"),
        "{err}"
    );

    // `setup.py build_ext` writes build.ninja for 13.0 first: the directory is current, and
    // what stops this build is the torch guard (torch is built for 13.2).
    let err = refused(&run(&ext, &["python", "setup.py", "-q", "build_ext"]));
    assert!(!err.contains("was configured with"), "{err}");
    assert!(err.contains("13.2"), "the guard's refusal: {err}");
}
