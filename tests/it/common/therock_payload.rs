//! The payload of the TheRock stand-in (therock.rs): Debian's real ROCm (hipcc 5.2, HIP
//! headers and runtime, device bitcode, clang-15 and lld) sorted into the platform
//! directories of TheRock's packages as its packager sorts a ROCm build.

use std::collections::BTreeMap;
use std::path::Path;

use super::ISAS;

const CLANG: &str = "/usr/lib/llvm-15";
const MULTIARCH: &str = "/usr/lib/x86_64-linux-gnu";

/// One file or link of a package's platform directory, by its path inside it.
#[derive(Clone)]
pub enum Node {
    File(Vec<u8>, u32),
    Link(String),
}

pub type Files = BTreeMap<String, Node>;

/// Whether Debian's ROCm and clang-15 (what the payload is copied from) are installed.
pub fn payload_installed() -> bool {
    [
        "/usr/bin/hipcc.pl",
        "/usr/include/hip/hip_runtime.h",
        "/usr/lib/llvm-15/bin/clang",
        "/usr/lib/llvm-15/bin/lld",
        "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc",
    ]
    .iter()
    .all(|p| Path::new(p).exists())
}

fn read(path: &str) -> Vec<u8> {
    fs_err::read(path).unwrap()
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Every regular file under `from` (following nothing), as `to/<relative path>`.
fn copy_dir(files: &mut Files, from: &str, to: &str) {
    for e in walkdir::WalkDir::new(from).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e
                .path()
                .strip_prefix(from)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            files.insert(
                format!("{to}/{rel}"),
                Node::File(fs_err::read(e.path()).unwrap(), mode(e.path())),
            );
        }
    }
}

fn copy(files: &mut Files, from: &str, to: &str) {
    let p = Path::new(from);
    files.insert(to.into(), Node::File(read(from), mode(p)));
}

/// `_rocm_sdk_core/`: HIP runtime and headers, hipcc, LLVM under `lib/llvm` with the device
/// bitcode in `lib/llvm/amdgcn/bitcode`. Runtime packages hold no links: only the soname
/// file of a library, and one copy of each program.
pub fn core_files() -> Files {
    let mut f = Files::new();
    f.insert("__init__.py".into(), Node::File(Vec::new(), 0o644));
    for tool in [
        "hipcc",
        "hipcc.pl",
        "hipvars.pm",
        "hipconfig",
        "hipconfig.pl",
    ] {
        copy(&mut f, &format!("/usr/bin/{tool}"), &format!("bin/{tool}"));
    }
    copy_dir(&mut f, "/usr/include/hip", "include/hip");
    copy(
        &mut f,
        &format!("{MULTIARCH}/libamdhip64.so.5"),
        "lib/libamdhip64.so.5",
    );
    for tool in ["clang", "lld", "clang-offload-bundler"] {
        copy(
            &mut f,
            &format!("{CLANG}/bin/{tool}"),
            &format!("lib/llvm/bin/{tool}"),
        );
    }
    let resource = format!("{CLANG}/lib/clang/15.0.6");
    copy_dir(
        &mut f,
        &format!("{resource}/include"),
        "lib/llvm/lib/clang/15.0.6/include",
    );
    copy(
        &mut f,
        &format!("{resource}/lib/linux/libclang_rt.builtins-x86_64.a"),
        "lib/llvm/lib/clang/15.0.6/lib/linux/libclang_rt.builtins-x86_64.a",
    );
    copy_dir(
        &mut f,
        &format!("{MULTIARCH}/amdgcn/bitcode"),
        "lib/llvm/amdgcn/bitcode",
    );
    let targets = ISAS.join(";");
    f.insert(
        "share/therock/dist_info.json".into(),
        Node::File(
            format!("{{\"dist_amdgpu_targets\": \"{targets}\"}}\n").into_bytes(),
            0o644,
        ),
    );
    f
}

/// A real shared library named as hipBLAS's soname, built with the host compiler.
fn hipblas_so() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("hipblas.c");
    fs_err::write(
        &src,
        "int hipblasCreate(void **handle) { *handle = 0; return 0; }\n",
    )
    .unwrap();
    let out = dir.path().join("libhipblas.so.3");
    let st = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-Wl,-soname,libhipblas.so.3", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "cc could not build the hipBLAS stand-in");
    fs_err::read(&out).unwrap()
}

/// `_rocm_sdk_libraries/`: arch-neutral host libraries (here hipBLAS).
pub fn libraries_files() -> Files {
    let mut f = Files::new();
    f.insert("__init__.py".into(), Node::File(Vec::new(), 0o644));
    f.insert(
        "lib/libhipblas.so.3".into(),
        Node::File(hipblas_so(), 0o755),
    );
    f
}

/// A device wheel's overlay of `_rocm_sdk_libraries/`: kernel databases for one ISA and the
/// manifest `rocm-sdk init` links them into the devel tree from.
pub fn device_files(isa: &str, version: &str) -> Files {
    let mut f = Files::new();
    f.insert("__init__.py".into(), Node::File(Vec::new(), 0o644));
    let kernels = [
        format!("lib/rocblas/library/TensileLibrary_lazy_{isa}.dat"),
        format!("lib/hipblaslt/library/hipblasltExtOpLibrary_{isa}.dat"),
    ];
    let mut links = Vec::new();
    for rel in &kernels {
        f.insert(
            rel.clone(),
            Node::File(format!("{isa} kernels of {rel}\n").into_bytes(), 0o644),
        );
        let back = "../".repeat(rel.split('/').count());
        links.push(serde_json::json!({"relpath": rel, "target": format!("{back}_rocm_sdk_libraries/{rel}")}));
    }
    let manifest = serde_json::json!({"version": version, "links": links});
    f.insert(
        format!(".devel_links/{isa}.json"),
        Node::File(serde_json::to_vec_pretty(&manifest).unwrap(), 0o644),
    );
    f
}

/// `_rocm_sdk_devel/` as the packager makes it: a relative link to the sibling package for
/// every file a runtime package has, soname and tool links, the `llvm` compatibility link,
/// and its own files (CMake configs, HSA headers, the libraries' headers) verbatim.
pub fn devel_files(runtime: &[(&str, &Files)]) -> Files {
    let mut f = Files::new();
    f.insert("__init__.py".into(), Node::File(Vec::new(), 0o644));
    for (package, files) in runtime {
        for rel in files.keys().filter(|r| *r != "__init__.py") {
            let back = "../".repeat(rel.split('/').count());
            f.insert(rel.clone(), Node::Link(format!("{back}{package}/{rel}")));
        }
    }
    for (link, target) in [
        ("lib/libamdhip64.so", "libamdhip64.so.5"),
        ("lib/libhipblas.so", "libhipblas.so.3"),
        ("lib/llvm/bin/clang++", "clang"),
        ("lib/llvm/bin/clang-15", "clang"),
        ("lib/llvm/bin/clang++-15", "clang"),
        ("lib/llvm/bin/ld.lld", "lld"),
        ("bin/amdclang", "../lib/llvm/bin/clang"),
        ("bin/amdclang++", "../lib/llvm/bin/clang++"),
        ("llvm", "lib/llvm"),
    ] {
        f.insert(link.into(), Node::Link(target.into()));
    }
    copy_dir(&mut f, &format!("{MULTIARCH}/cmake/hip"), "lib/cmake/hip");
    copy_dir(
        &mut f,
        &format!("{MULTIARCH}/cmake/hip-lang"),
        "lib/cmake/hip-lang",
    );
    if Path::new("/usr/include/hsa").is_dir() {
        copy_dir(&mut f, "/usr/include/hsa", "include/hsa");
    }
    f.insert(
        "include/hipblas/hipblas.h".into(),
        Node::File(
            b"#pragma once\nint hipblasCreate(void **handle);\n".to_vec(),
            0o644,
        ),
    );
    f
}
