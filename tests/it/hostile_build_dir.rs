//! Build directories are anyone's: what the proxy's stale check reads there (CMakeCache.txt,
//! CMakeFiles/<ver>/CMakeCUDACompiler.cmake, build.ninja) may be huge, binary, a FIFO, or
//! name a program. None of it runs, hangs the compile or crashes the proxy; what is shown
//! from it is made printable. The parsers get the same inputs directly.

use crate::common::proxy_world as world;

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;
use fs_err as fs;
use gpuenv_core::facts::build_files::{cmake_cache, cmake_sets, ninja_vars, MAX_LINE};
use world::{stderr, World};

/// cuda-12.4 pinned; `proj/build/` with `files` (relative path, bytes) in it.
fn build_dir(files: &[(&str, &[u8])]) -> (World, PathBuf) {
    let w = World::new("12.4");
    let build = w.proj.join("build");
    fs::create_dir_all(&build).unwrap();
    for (rel, bytes) in files {
        let p = build.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, bytes).unwrap();
    }
    (w, build)
}

/// nvcc through the shims dir, compiling in `dir`, the way a build runs it.
fn compile_in(w: &World, dir: &Path) -> Output {
    let nvcc = w.sb.gpuenv_home().join("shims/nvcc");
    let args: Vec<String> = ["-c", "k.cu", "-o", "k.o"].map(String::from).to_vec();
    w.command(&nvcc, &args, &[])
        .current_dir(dir)
        .output()
        .unwrap()
}

fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a plain mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn a_fifo_named_like_a_build_file_neither_hangs_nor_stops_the_compile() {
    let (w, build) = build_dir(&[("CMakeCache.txt", b"CMAKE_BUILD_TYPE:STRING=Release\n")]);
    mkfifo(&build.join("CMakeFiles/3.25.1/CMakeCUDACompiler.cmake"));
    let sub = build.join("sub");
    fs::create_dir_all(&sub).unwrap();
    mkfifo(&sub.join("build.ninja"));
    for dir in [&build, &sub] {
        let out = compile_in(&w, dir);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let log = w.log("cuda-12.4").unwrap();
    assert_eq!(log.lines().count(), 2, "both compiles ran: {log}");
}

#[test]
fn huge_and_binary_build_files_are_read_to_a_limit_and_do_not_crash_the_proxy() {
    // 20 MB on one line, then a line that would say CUDA is off: past the read limit.
    let mut cache = vec![b'x'; 20 << 20];
    cache.extend_from_slice(b"\nUSE_CUDA:BOOL=OFF\n");
    // Binary, with a version line past the 64 KiB the compiler file is read to.
    let mut binary: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    binary.extend_from_slice(b"\nset(CMAKE_CUDA_COMPILER_VERSION \"\xff\xfe12.4.131\")\n");
    let (w, build) = build_dir(&[
        ("CMakeCache.txt", &cache),
        ("CMakeFiles/3.25.1/CMakeCUDACompiler.cmake", &binary),
    ]);
    let out = compile_in(&w, &build);
    assert!(out.status.success(), "{}", stderr(&out));

    // Without the compiler file, the cache is read up to 1 MiB: the line past it is unseen.
    fs::remove_dir_all(build.join("CMakeFiles")).unwrap();
    let out = compile_in(&w, &build);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(w.log("cuda-12.4").unwrap().lines().count(), 2);
}

#[test]
fn a_program_a_build_file_names_is_never_run_and_its_name_is_shown_printable() {
    let marker = std::env::temp_dir().join(format!("gpuenv-stale-{}", std::process::id()));
    let evil = format!(
        "#!/bin/sh\ntouch {}\n",
        marker.to_str().expect("a UTF-8 temp dir")
    );
    let (w, build) = build_dir(&[]);
    // A real program, in a directory whose name would clear the terminal.
    let nvcc = w.sb.path("evil\x1b[2J/bin/nvcc");
    write_exe(&nvcc, &evil);
    write(
        &build.join("build.ninja"),
        &format!(
            "nvcc = {} $(sh {})\ncuda_cflags = -I/x/include\n",
            nvcc.display(),
            nvcc.display()
        ),
    );
    let out = compile_in(&w, &build);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "nvcc {}/evil\\x1b[2J/bin/nvcc",
            w.sb.dir.path().display()
        )),
        "escaped: {err}"
    );
    assert!(!err.contains('\x1b'), "{err:?}");
    assert!(!marker.exists(), "the build file's program ran");
    assert_eq!(w.log("cuda-12.4"), None, "refused before compiling");
}

#[test]
fn a_build_file_that_names_no_toolkit_says_nothing() {
    let (w, build) = build_dir(&[(
        "CMakeCache.txt",
        b"CMAKE_CUDA_COMPILER\nCMAKE_CUDA_COMPILER:FILEPATH\n=\n:=\nCUDAToolkit_ROOT:PATH=\n",
    )]);
    let out = compile_in(&w, &build);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn parsers_skip_huge_lines_and_take_any_bytes() {
    let long = format!("CMAKE_CUDA_COMPILER:FILEPATH=/{}\n", "a".repeat(MAX_LINE));
    assert!(cmake_cache(&long).is_empty());
    let long = format!(
        "set(CMAKE_CUDA_COMPILER_VERSION \"{}\")\n",
        "9".repeat(MAX_LINE)
    );
    assert!(cmake_sets(&long).is_empty());
    let long = format!("nvcc = /{}\n", "a".repeat(MAX_LINE));
    assert!(ninja_vars(&long).is_empty());

    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let text = String::from_utf8_lossy(&bytes);
    let _ = cmake_cache(&text);
    let _ = cmake_sets(&text);
    let _ = ninja_vars(&text);

    // Missing or malformed keys are absent, never an error.
    for odd in [
        "",
        "=",
        "set(",
        "set()",
        "set(X",
        "set(X \"unterminated)",
        ") = (",
        "\0\0\0",
    ] {
        assert!(
            !cmake_sets(odd).contains_key("CMAKE_CUDA_COMPILER_VERSION"),
            "{odd:?}"
        );
        assert!(
            !cmake_cache(odd).contains_key("CMAKE_CUDA_COMPILER"),
            "{odd:?}"
        );
        assert!(!ninja_vars(odd).contains_key("nvcc"), "{odd:?}");
    }
    let sets = cmake_sets("set(X \"unterminated)\n");
    assert_eq!(
        sets["X"].value, "\"unterminated",
        "taken as written, quotes and all"
    );
}

#[test]
fn a_stale_check_setting_gpuenv_does_not_know_stops_the_compile_and_is_shown_escaped() {
    let (w, build) = build_dir(&[("CMakeCache.txt", b"CMAKE_BUILD_TYPE:STRING=Release\n")]);
    let nvcc = w.sb.gpuenv_home().join("shims/nvcc");
    let args: Vec<String> = ["-c", "k.cu", "-o", "k.o"].map(String::from).to_vec();
    let out = w
        .command(&nvcc, &args, &[("GPUENV_STALE_CHECK", "sometimes\x1b[2J")])
        .current_dir(&build)
        .output()
        .unwrap();
    let err = stderr(&out);
    // A typo must not silently turn the check off (or on): exit 2, nothing compiled.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("GPUENV_STALE_CHECK=sometimes"), "{err}");
    assert!(err.contains("is not `on` or `off`"), "{err}");
    assert!(
        !err.contains('\x1b'),
        "an escape reached the terminal: {err:?}"
    );
    assert!(w.log("cuda-12.4").is_none(), "nvcc ran");
}
