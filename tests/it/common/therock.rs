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

use std::process::Output;

use crate::common::archives::{sha256, zip, Item};
use crate::common::server::Server;
use crate::common::{cannot_run, succeeded, write, Sandbox};

pub type Tree = Vec<(String, Vec<u8>, &'static str)>;

/// The release the index holds; pre-releases and a nightly sit beside it as decoys.
pub const RELEASE: &str = "7.14.0";
/// The ISAs the index has device wheels for.
pub const ISAS: &[&str] = &["gfx90a", "gfx1030"];
#[path = "therock_payload.rs"]
mod payload;

pub use payload::payload_installed;
use payload::{core_files, devel_files, device_files, libraries_files, Files, Node};

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
pub fn serve(server: &crate::common::server::Server) -> String {
    serve_at(server, "", RELEASE)
}

/// Serves the index of release `v` under `prefix` (`/nightly`); returns its URL.
pub fn serve_at(server: &crate::common::server::Server, prefix: &str, v: &str) -> String {
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

// What the tests of ROCm wheels share.

pub const KERNEL: &str = r#"#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
int main() {
    int n = 0;
    hipError_t e = hipGetDeviceCount(&n);
    printf("%s\n", hipGetErrorName(e));
    return 0;
}
"#;

/// A sandbox and the index served; None (skipped outside CI) without Debian's ROCm.
pub fn setup() -> Option<(Sandbox, Server, String)> {
    if !payload_installed() {
        cannot_run("Debian's ROCm (hipcc, libamdhip64-dev, rocm-device-libs) and clang-15/lld-15 are not installed; .ci/run installs them");
        return None;
    }
    let server = Server::start();
    let index = serve(&server);
    Some((Sandbox::new(), server, index))
}

pub fn gpuenv(sb: &Sandbox, index: &str, dir: &Path, args: &[&str]) -> Output {
    sb.gpuenv()
        .current_dir(dir)
        .env("GPUENV_ROCM_INDEX_URL", index)
        .args(args)
        .output()
        .unwrap()
}

#[track_caller]
pub fn ok(sb: &Sandbox, index: &str, dir: &Path, args: &[&str]) -> String {
    let out = gpuenv(sb, index, dir, args);
    succeeded(&out);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A project pinning ROCm 7.14 and `archs` (as `gpuenv pin` writes them).
pub fn project(sb: &Sandbox, archs: &[&str]) -> std::path::PathBuf {
    let dir = sb.path("proj");
    let list: Vec<String> = archs.iter().map(|a| format!("\"{a}\"")).collect();
    write(
        &dir.join("gpuenv.toml"),
        &format!(
            "[toolchain]\nrocm = \"7.14\"\nrocm-arch = [{}]\n",
            list.join(", ")
        ),
    );
    write(&dir.join("k.hip"), KERNEL);
    dir
}

/// Which wheel files the server sent.
pub fn fetched(server: &Server) -> Vec<String> {
    let mut names: Vec<String> = server
        .log()
        .into_iter()
        .filter(|h| h.path.starts_with("/files/") && h.status == 200)
        .map(|h| h.path.trim_start_matches("/files/").to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}
