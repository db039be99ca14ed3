//! A stand-in for AMD's ROCm wheel index (TheRock's multi-arch index, which the tests cannot
//! reach): PEP 503 pages whose wheels carry TheRock's names, extras, metadata and
//! site-packages layout — `rocm` (an sdist), `rocm-sdk-core` (`_rocm_sdk_core/`),
//! `rocm-sdk-libraries` (`_rocm_sdk_libraries/`), one `rocm-sdk-device-<gfx>` per ISA
//! (overlaying `_rocm_sdk_libraries/`, with `.devel_links/<gfx>.json`) and `rocm-sdk-devel`
//! (`rocm_sdk_devel/_devel.tar`: relative links into the runtime packages plus its own
//! files, in `os.walk` order as TheRock's packager writes it). The payload is real: Debian's
//! ROCm (hipcc 5.2, HIP headers and runtime, device bitcode, clang-15 and lld) copied into
//! that layout, so the tree an install makes compiles HIP code for real.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

use crate::archives::{sha256, zip, Item};

pub type Tree = Vec<(String, Vec<u8>, &'static str)>;

/// The release the index holds; pre-releases and a nightly sit beside it as decoys.
pub const RELEASE: &str = "7.14.0";
/// The ISAs the index has device wheels for.
pub const ISAS: &[&str] = &["gfx90a", "gfx1030"];
const CLANG: &str = "/usr/lib/llvm-15";
const MULTIARCH: &str = "/usr/lib/x86_64-linux-gnu";

/// One file or link of a package's platform directory, by its path inside it.
#[derive(Clone)]
enum Node {
    File(Vec<u8>, u32),
    Link(String),
}

type Files = BTreeMap<String, Node>;

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
fn core_files() -> Files {
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
fn libraries_files() -> Files {
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
fn device_files(isa: &str, version: &str) -> Files {
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
fn devel_files(runtime: &[(&str, &Files)]) -> Files {
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

/// The `_devel.tar` of `files` under `top/`, entries in `os.walk` order (each directory's
/// files and links, then its subdirectories' entries, then into each subdirectory), with
/// the names as long as they are.
fn devel_tar(top: &str, files: &Files) -> Vec<u8> {
    let mut dirs: BTreeMap<String, (Vec<String>, Vec<String>)> = BTreeMap::new();
    dirs.entry(String::new()).or_default();
    for rel in files.keys() {
        let parts: Vec<&str> = rel.split('/').collect();
        for i in 0..parts.len() - 1 {
            let parent = parts[..i].join("/");
            let dir = parts[..=i].join("/");
            let e = dirs.entry(parent).or_default();
            if !e.1.contains(&dir) {
                e.1.push(dir.clone());
            }
            dirs.entry(dir).or_default();
        }
        let parent = parts[..parts.len() - 1].join("/");
        dirs.entry(parent).or_default().0.push(rel.clone());
    }
    let mut b = tar::Builder::new(Vec::new());
    let mut walk = vec![String::new()];
    while let Some(dir) = walk.pop() {
        let (own, subdirs) = dirs[&dir].clone();
        for rel in own.iter().chain(subdirs.iter()) {
            let name = format!("{top}/{rel}");
            let mut h = tar::Header::new_gnu();
            h.set_mtime(1_700_000_000);
            match files.get(rel) {
                Some(Node::File(body, mode)) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_mode(*mode);
                    h.set_size(body.len() as u64);
                    b.append_data(&mut h, &name, body.as_slice()).unwrap();
                }
                Some(Node::Link(target)) => {
                    h.set_entry_type(tar::EntryType::Symlink);
                    h.set_mode(0o777);
                    h.set_size(0);
                    b.append_link(&mut h, &name, target).unwrap();
                }
                None => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_mode(0o755);
                    h.set_size(0);
                    b.append_data(&mut h, format!("{name}/"), std::io::empty())
                        .unwrap();
                }
            }
        }
        walk.extend(subdirs.into_iter().rev());
    }
    b.into_inner().unwrap()
}

/// RECORD's `sha256=` value: urlsafe base64 without padding.
fn record_hash(bytes: &[u8]) -> String {
    use sha2::Digest;
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let d = sha2::Sha256::digest(bytes);
    let mut out = String::new();
    for chunk in d.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | *b as u32) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn plat() -> String {
    format!("manylinux_2_28_{}", std::env::consts::ARCH)
}

/// A wheel of `project` whose files are `items` (paths inside site-packages), with its
/// METADATA (`extra` headers), WHEEL, entry points and a RECORD that hashes every file.
fn wheel(
    project: &str,
    version: &str,
    extra: &str,
    entry_points: &str,
    mut items: Vec<Item>,
    tag: &str,
) -> (String, Vec<u8>) {
    let dist = format!("{}-{version}.dist-info", project.replace('-', "_"));
    let file = |p: String, b: String| Item::File(p, b.into_bytes(), 0o644);
    items.push(file(
        format!("{dist}/METADATA"),
        format!("Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n{extra}\n"),
    ));
    items.push(file(
        format!("{dist}/WHEEL"),
        format!("Wheel-Version: 1.0\nGenerator: setuptools (80.9.0)\nRoot-Is-Purelib: false\nTag: py3-none-{tag}\n\n"),
    ));
    if !entry_points.is_empty() {
        items.push(file(
            format!("{dist}/entry_points.txt"),
            entry_points.into(),
        ));
    }
    let mut record = String::new();
    for i in &items {
        if let Item::File(p, b, _) = i {
            record.push_str(&format!("{p},sha256={},{}\n", record_hash(b), b.len()));
        }
    }
    record.push_str(&format!("{dist}/RECORD,,\n"));
    items.push(file(format!("{dist}/RECORD"), record));
    let name = format!("{}-{version}-py3-none-{tag}.whl", project.replace('-', "_"));
    (name, zip(&items))
}

fn items_under(top: &str, files: &Files) -> Vec<Item> {
    files
        .iter()
        .map(|(rel, n)| match n {
            Node::File(b, m) => Item::File(format!("{top}/{rel}"), b.clone(), *m),
            Node::Link(_) => panic!("runtime wheels hold no links: {rel}"),
        })
        .collect()
}

fn dist_info_py(version: &str) -> String {
    let mut s = format!("__version__ = '{version}'\nPY_PACKAGE_SUFFIX_NONCE = ''\nALL_PACKAGES['libraries'].dist_package_template = 'rocm-sdk-libraries'\nDEFAULT_TARGET_FAMILY = '{}'\n", ISAS[0]);
    for isa in ISAS {
        s.push_str(&format!("AVAILABLE_TARGET_FAMILIES.append('{isa}')\n"));
    }
    s
}

/// The `rocm` sdist: its setup.py picks dependencies when it is installed; its PKG-INFO
/// names the extras it had where it was built.
fn rocm_sdist(version: &str) -> (String, Vec<u8>) {
    let top = format!("rocm-{version}");
    let mut extras = String::new();
    for (extra, req) in [
        ("libraries", format!("rocm-sdk-libraries=={version}")),
        ("devel", format!("rocm-sdk-devel=={version}")),
    ] {
        extras.push_str(&format!(
            "Provides-Extra: {extra}\nRequires-Dist: {req}; extra == \"{extra}\"\n"
        ));
    }
    for isa in ISAS {
        extras.push_str(&format!(
            "Provides-Extra: device-{isa}\nRequires-Dist: rocm-sdk-device-{isa}=={version}; extra == \"device-{isa}\"\n"
        ));
    }
    let pkg_info = format!("Metadata-Version: 2.1\nName: rocm\nVersion: {version}\nRequires-Dist: rocm-sdk-core=={version}\n{extras}");
    let mut b = tar::Builder::new(Vec::new());
    for (path, body) in [
        (format!("{top}/PKG-INFO"), pkg_info),
        (
            format!("{top}/setup.py"),
            "from setuptools import setup\nsetup()\n".into(),
        ),
        (
            format!("{top}/src/rocm_sdk/_dist_info.py"),
            dist_info_py(version),
        ),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(body.len() as u64);
        h.set_mtime(1_700_000_000);
        b.append_data(&mut h, &path, body.as_bytes()).unwrap();
    }
    let tar = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    (format!("{top}.tar.gz"), gz.finish().unwrap())
}

/// A nightly, as AMD's nightly index numbers them.
pub const NIGHTLY: &str = "7.15.0a20260630";

/// Every file of the index of release `v` by project: (file name, bytes). The index of
/// [`RELEASE`] has decoys beside it.
fn packages(v: &str) -> BTreeMap<String, Vec<(String, Vec<u8>)>> {
    let tag = plat();
    let mut out: BTreeMap<String, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    let core = core_files();
    let libraries = libraries_files();
    let mut push = |project: &str, f: (String, Vec<u8>)| {
        out.entry(project.to_string()).or_default().push(f);
    };
    let mut core_items = items_under("_rocm_sdk_core", &core);
    core_items.push(Item::File(
        "rocm_sdk_core/__init__.py".into(),
        Vec::new(),
        0o644,
    ));
    core_items.push(Item::File(
        "rocm_sdk_core/_dist_info.py".into(),
        dist_info_py(v).into_bytes(),
        0o644,
    ));
    let scripts = "[console_scripts]\namdclang++ = rocm_sdk_core._cli:amdclangpp\nhipcc = rocm_sdk_core._cli:hipcc\nhipconfig = rocm_sdk_core._cli:hipconfig\n";
    push(
        "rocm-sdk-core",
        wheel("rocm-sdk-core", v, "", scripts, core_items, &tag),
    );
    let mut lib_items = items_under("_rocm_sdk_libraries", &libraries);
    lib_items.push(Item::File(
        "rocm_sdk_libraries/__init__.py".into(),
        Vec::new(),
        0o644,
    ));
    push(
        "rocm-sdk-libraries",
        wheel("rocm-sdk-libraries", v, "", "", lib_items, &tag),
    );
    for isa in ISAS {
        let project = format!("rocm-sdk-device-{isa}");
        let items = items_under("_rocm_sdk_libraries", &device_files(isa, v));
        let requires = format!("Requires-Dist: rocm-sdk-libraries=={v}");
        push(&project, wheel(&project, v, &requires, "", items, &tag));
    }
    let devel = devel_files(&[
        ("_rocm_sdk_core", &core),
        ("_rocm_sdk_libraries", &libraries),
    ]);
    let tar = devel_tar("_rocm_sdk_devel", &devel);
    let devel_items = vec![
        Item::File("rocm_sdk_devel/__init__.py".into(), Vec::new(), 0o644),
        Item::File("rocm_sdk_devel/_devel.tar".into(), tar, 0o644),
    ];
    push(
        "rocm-sdk-devel",
        wheel("rocm-sdk-devel", v, "", "", devel_items, &tag),
    );
    push("rocm", rocm_sdist(v));
    // Decoys: a release candidate, a nightly and a Windows wheel, none of which an install
    // of a final release may take.
    let broken = |project: &str, version: &str, tag: &str| {
        let items = vec![Item::File(
            "_rocm_sdk_core/bin/hipcc".into(),
            b"#!/bin/sh\necho decoy >&2; exit 1\n".to_vec(),
            0o755,
        )];
        wheel(project, version, "", "", items, tag)
    };
    if v == RELEASE {
        for version in ["7.14.1rc1", NIGHTLY] {
            push("rocm-sdk-core", broken("rocm-sdk-core", version, &tag));
            push("rocm", rocm_sdist(version));
        }
        push(
            "rocm-sdk-core",
            broken("rocm-sdk-core", "7.14.2", "win_amd64"),
        );
    }
    out
}

/// The index of [`RELEASE`]: see [`index_of`].
pub fn index() -> &'static Tree {
    index_of(RELEASE)
}

/// The index of release `v`, built once per test process: `files/<name>` and PEP 503
/// pages `simple/<project>/` (links carry `#sha256=`), and the `simple/` root.
pub fn index_of(v: &str) -> &'static Tree {
    type Built = std::sync::Mutex<BTreeMap<String, &'static Tree>>;
    static INDEXES: OnceLock<Built> = OnceLock::new();
    let mut built = INDEXES.get_or_init(Default::default).lock().unwrap();
    built.entry(v.to_string()).or_insert_with(|| {
        let mut tree: Tree = Vec::new();
        let mut root = String::from("<!DOCTYPE html>\n<html><body>\n");
        for (project, files) in packages(v) {
            root.push_str(&format!("<a href=\"{project}/\">{project}</a><br/>\n"));
            let mut html = format!(
                "<!DOCTYPE html>\n<html><head><title>Links for {project}</title></head><body>\n"
            );
            for (name, bytes) in files {
                html.push_str(&format!(
                    "<a href=\"../../files/{name}#sha256={}\">{name}</a><br/>\n",
                    sha256(&bytes)
                ));
                tree.push((format!("files/{name}"), bytes, "application/octet-stream"));
            }
            html.push_str("</body></html>\n");
            tree.push((format!("simple/{project}/"), html.into_bytes(), "text/html"));
        }
        root.push_str("</body></html>\n");
        tree.push(("simple/".into(), root.into_bytes(), "text/html"));
        Box::leak(Box::new(tree))
    })
}

/// Serves [`index`] on `server`; returns the index URL (`…/simple/`).
pub fn serve(server: &crate::server::Server) -> String {
    serve_at(server, "", RELEASE)
}

/// Serves the index of release `v` under `prefix` (`/nightly`); returns its URL.
pub fn serve_at(server: &crate::server::Server, prefix: &str, v: &str) -> String {
    for (path, body, ct) in index_of(v) {
        server.put(&format!("{prefix}/{path}"), body.clone(), ct);
    }
    server.url(&format!("{prefix}/simple/"))
}

/// The wheel file of `project` at [`RELEASE`] for this machine.
pub fn wheel_name(project: &str) -> String {
    format!(
        "{}-{RELEASE}-py3-none-{}.whl",
        project.replace('-', "_"),
        plat()
    )
}

/// Unzips the index's wheels of `projects` into `site` (a venv's site-packages), as pip
/// installs them, then expands the devel tarball as `rocm-sdk init` does (when `init`).
pub fn pip_install(site: &Path, projects: &[&str]) {
    for project in projects {
        let name = wheel_name(project);
        let bytes = &index()
            .iter()
            .find(|(p, _, _)| *p == format!("files/{name}"))
            .unwrap()
            .1;
        let mut z = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        z.extract(site).unwrap();
    }
}

/// What `rocm-sdk init` does to the devel wheel in `site`, done by Python's own `tarfile`
/// as TheRock's `_devel.py` does it: entries in the tarball's order, each directory cleaned
/// the first time an entry touches it, file links made hard links except `bin/amdclang*`,
/// directory links kept, then the tarball removed.
pub fn rocm_sdk_init(site: &Path) {
    let script = r#"
import pathlib, shutil, sys, tarfile
site = pathlib.Path(sys.argv[1])
tar = site / "rocm_sdk_devel" / "_devel.tar"
keep = {"amdclang", "amdclang++", "amdclang-cl", "amdclang-cpp", "amdflang", "amdlld", "amdllvm"}
cleaned = set()
def clean(d):
    cleaned.add(d)
    if d.exists():
        shutil.rmtree(d)
with tarfile.open(tar) as tf:
    while (ti := tf.next()):
        dest = site / ti.name
        if ti.isfile() or ti.issym():
            if dest.parent not in cleaned:
                clean(dest.parent)
            if ti.issym():
                dest.parent.mkdir(parents=True, exist_ok=True)
                target = dest.parent / ti.linkname
                if dest.name in keep and dest.parent.name == "bin" and dest.parent.parent.name.startswith("_rocm_sdk_devel"):
                    dest.symlink_to(ti.linkname)
                elif target.is_file():
                    dest.hardlink_to(target)
                else:
                    tf.extract(ti, path=site)
            else:
                tf.extract(ti, path=site)
        elif ti.isdir():
            if dest not in cleaned:
                clean(dest)
            tf.extract(ti, path=site)
tar.unlink()
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(site)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rocm-sdk init's expansion failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
