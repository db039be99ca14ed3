//! ROCm from AMD's wheels (TheRock), installed the way CUDA is: a local PEP 503 index over
//! real HTTP whose wheels have TheRock's names, metadata and layout and Debian's real ROCm
//! inside (tests/common/therock.rs), so the tree `gpuenv install rocm-7.14` makes compiles
//! and links HIP code with its own hipcc, for the ISA the project pins.

#[path = "common/archives.rs"]
mod archives;
mod common;
#[path = "common/server.rs"]
mod server;
#[path = "common/therock.rs"]
mod therock;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use server::Server;
use therock::RELEASE;

const NAME: &str = "rocm-7.14.0";

const KERNEL: &str = r#"#include <hip/hip_runtime.h>
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
fn setup() -> Option<(Sandbox, Server, String)> {
    if !therock::payload_installed() {
        cannot_run("Debian's ROCm (hipcc, libamdhip64-dev, rocm-device-libs) and clang-15/lld-15 are not installed; .ci/run installs them");
        return None;
    }
    let server = Server::start();
    let index = therock::serve(&server);
    Some((Sandbox::new(), server, index))
}

fn gpuenv(sb: &Sandbox, index: &str, dir: &Path, args: &[&str]) -> Output {
    sb.gpuenv()
        .current_dir(dir)
        .env("GPUENV_ROCM_INDEX_URL", index)
        .args(args)
        .output()
        .unwrap()
}

#[track_caller]
fn ok(sb: &Sandbox, index: &str, dir: &Path, args: &[&str]) -> String {
    let out = gpuenv(sb, index, dir, args);
    succeeded(&out);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A project pinning ROCm 7.14 and `archs` (as `gpuenv pin` writes them).
fn project(sb: &Sandbox, archs: &[&str]) -> std::path::PathBuf {
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
fn fetched(server: &Server) -> Vec<String> {
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

/// Runs `script` in a bash where `gpuenv use rocm-7.14.0` took effect (its printed code
/// evaluated), in `dir`.
fn in_used_shell(sb: &Sandbox, dir: &Path, script: &str) -> Output {
    let gpuenv = assert_cmd::cargo::cargo_bin("gpuenv");
    let full = format!(
        "set -e\neval \"$('{}' use --print {NAME})\"\n{script}",
        gpuenv.display()
    );
    Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &full])
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn install_rocm_from_amds_wheels_then_use_it_and_compile_for_the_pinned_isa() {
    let Some((sb, server, index)) = setup() else {
        return;
    };
    let dir = project(&sb, &["gfx90a"]);
    let err = ok(&sb, &index, &dir, &["install", "rocm-7.14"]);
    assert!(err.contains(&format!("installed {NAME}")), "{err}");
    // Only the pinned ISA's device code, and never a decoy (rc, nightly, Windows).
    let got = fetched(&server);
    let mut want: Vec<String> = [
        "rocm-sdk-core",
        "rocm-sdk-device-gfx90a",
        "rocm-sdk-devel",
        "rocm-sdk-libraries",
    ]
    .iter()
    .map(|p| therock::wheel_name(p))
    .collect();
    want.sort();
    assert_eq!(got, want);
    // The layout a ROCm user expects, as one tree.
    let root = sb.toolchain(NAME);
    for f in [
        "bin/hipcc",
        "bin/amdclang++",
        "lib/llvm/bin/clang",
        "llvm/bin/clang++-15",
        "include/hip/hip_runtime.h",
        "include/hipblas/hipblas.h",
        "lib/libamdhip64.so",
        "lib/libhipblas.so",
        "lib/llvm/amdgcn/bitcode/ocml.bc",
        "lib/cmake/hip/hip-config.cmake",
        "lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat",
        ".devel_links/gfx90a.json",
    ] {
        assert!(root.join(f).exists(), "{} lacks {f}", root.display());
    }
    assert!(!root
        .join("lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat")
        .exists());
    // As `rocm-sdk init` makes it: file links are hard links, bin/amdclang* stays a link.
    use std::os::unix::fs::MetadataExt;
    let meta = |p: &str| fs_err::symlink_metadata(root.join(p)).unwrap();
    assert_eq!(
        meta("lib/libamdhip64.so").ino(),
        meta("lib/libamdhip64.so.5").ino()
    );
    assert!(meta("bin/amdclang++").is_symlink());
    assert!(meta("llvm").is_symlink());
    assert!(!root.join("rocm_sdk_core").exists() && !root.join("_rocm_sdk_core").exists());
    let list = sb.ok(&["list"]);
    assert!(list.contains(NAME), "{list}");

    // `gpuenv use` it, then its real hipcc compiles (and links) for the pinned ISA.
    let out = in_used_shell(
        &sb,
        &dir,
        "echo \"ROCM_PATH=$ROCM_PATH\"\ncommand -v hipcc\nhipcc --offload-arch=gfx90a -c k.hip -o k.o\nhipcc --offload-arch=gfx90a k.hip -o k\n",
    );
    let text = succeeded(&out);
    assert!(
        text.contains(&format!("views/{NAME}")),
        "ROCM_PATH is the view: {text}"
    );
    let object = fs_err::read(dir.join("k.o")).unwrap();
    assert!(
        object.windows(6).any(|w| w == b"gfx90a"),
        "k.o holds no gfx90a code"
    );
    assert!(dir.join("k").is_file());
    let run = sb
        .gpuenv()
        .current_dir(&dir)
        .args(["run", NAME, "--", "./k"])
        .output()
        .unwrap();
    let said = succeeded(&run);
    assert!(
        [
            "hipErrorNoDevice",
            "hipSuccess",
            "hipErrorInsufficientDriver"
        ]
        .iter()
        .any(|a| said.trim() == *a),
        "the HIP runtime answered {said:?}"
    );
}

#[test]
fn a_second_isa_is_added_in_place_and_the_lock_reproduces_the_tree() {
    let Some((sb, server, index)) = setup() else {
        return;
    };
    let dir = project(&sb, &["gfx90a"]);
    ok(
        &sb,
        &index,
        &dir,
        &["install", "rocm-7.14", "--profile", "minimal"],
    );
    let root = sb.toolchain(NAME);
    assert!(root.join("bin/hipcc").is_file());
    // Minimal and a pin: core, devel, and the pinned ISA's device wheel with its libraries.
    assert!(root
        .join("lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat")
        .is_file());
    // Pinning a second GPU says the tree has no device code for it yet; doctor too.
    let err = ok(
        &sb,
        &index,
        &dir,
        &["pin", NAME, "--arch", "gfx90a,gfx1030"],
    );
    assert!(
        err.contains("for gfx90a only, not gfx1030")
            && err.contains(&format!(
                "`gpuenv install {NAME} --component device-gfx1030` adds them"
            )),
        "{err}"
    );
    let doctor = |sb: &Sandbox| {
        let out = gpuenv(sb, &index, &dir, &["doctor", "--json"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let report = doctor(&sb);
    assert!(
        report.contains(
            "names gfx1030, for which rocm-7.14.0 carries no device wheel (it has gfx90a)"
        ),
        "{report}"
    );
    // A program built for both: audit says its kernels run, the libraries' for gfx1030 are missing.
    let out = sb
        .gpuenv()
        .current_dir(&dir)
        .args([
            "run",
            "--",
            "hipcc",
            "--offload-arch=gfx90a",
            "--offload-arch=gfx1030",
            "k.hip",
            "-o",
            "k",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    let audit = |sb: &Sandbox| {
        let out = sb
            .gpuenv()
            .current_dir(&dir)
            .args(["audit", "k", "--json"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let report = audit(&sb);
    assert!(
        report.contains("the active rocm-7.14.0 carries no device wheel for it (it has gfx90a)"),
        "{report}"
    );
    let before = fetched(&server).len();
    let err = ok(
        &sb,
        &index,
        &dir,
        &["install", NAME, "--component", "device-gfx1030"],
    );
    assert!(err.contains("device-gfx1030"), "{err}");
    let added: Vec<String> = fetched(&server);
    assert_eq!(
        added.len(),
        before + 1,
        "only the new device wheel: {added:?}"
    );
    assert!(added.contains(&therock::wheel_name("rocm-sdk-device-gfx1030")));
    for isa in ["gfx90a", "gfx1030"] {
        let f = format!("lib/rocblas/library/TensileLibrary_lazy_{isa}.dat");
        assert!(root.join(&f).is_file(), "{f}");
    }
    assert!(root.join("include/hip/hip_runtime.h").is_file());
    let report = doctor(&sb);
    assert!(
        report.contains("rocm-7.14.0 carries device code for gfx1030, gfx90a"),
        "{report}"
    );
    let report = audit(&sb);
    assert!(!report.contains("device-wheels"), "{report}");
    assert!(report.contains("gfx1030"), "{report}");

    // The lock names every wheel with its sha256.
    ok(&sb, &index, &dir, &["lock"]);
    let lock = fs_err::read_to_string(dir.join("gpuenv.lock")).unwrap();
    for project in [
        "rocm-sdk-core",
        "rocm-sdk-devel",
        "rocm-sdk-libraries",
        "rocm-sdk-device-gfx90a",
        "rocm-sdk-device-gfx1030",
    ] {
        let name = therock::wheel_name(project);
        let (_, bytes, _) = therock::index()
            .iter()
            .find(|(p, _, _)| *p == format!("files/{name}"))
            .unwrap();
        assert!(
            lock.contains(&archives::sha256(bytes)),
            "{project} not locked:\n{lock}"
        );
    }
    assert!(lock.contains("from = \"amd\""), "{lock}");

    // Another machine (an empty home) gets exactly that tree from the lock.
    let other = Sandbox::new();
    let clone = other.path("proj");
    fs_err::create_dir_all(&clone).unwrap();
    for f in ["gpuenv.toml", "gpuenv.lock", "k.hip"] {
        fs_err::copy(dir.join(f), clone.join(f)).unwrap();
    }
    ok(&other, &index, &clone, &["install", "--locked"]);
    let again = other.toolchain(NAME);
    for isa in ["gfx90a", "gfx1030"] {
        let f = format!("lib/rocblas/library/TensileLibrary_lazy_{isa}.dat");
        assert!(again.join(&f).is_file(), "{f}");
    }
    ok(&other, &index, &clone, &["install", "--locked"]);
}

#[test]
fn a_hostile_rocm_index_is_refused_and_nothing_is_installed() {
    let Some((sb, server, index)) = setup() else {
        return;
    };
    let dir = project(&sb, &["gfx90a"]);
    // A wheel whose bytes are not what the page's sha256 says.
    let devel = therock::wheel_name("rocm-sdk-devel");
    server.put(
        &format!("/files/{devel}"),
        b"PK not the wheel".to_vec(),
        "application/octet-stream",
    );
    let out = gpuenv(&sb, &index, &dir, &["install", "rocm-7.14"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("sha256"), "{err}");
    assert!(!sb.toolchain(NAME).exists());

    // A devel wheel whose tarball writes outside the site-packages directory.
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_size(0);
    h.set_mode(0o777);
    b.append_link(&mut h, "_rocm_sdk_devel/bin/x", "../../../../etc/passwd")
        .unwrap();
    let tar = b.into_inner().unwrap();
    let wheel = archives::zip(&[archives::Item::File(
        "rocm_sdk_devel/_devel.tar".into(),
        tar,
        0o644,
    )]);
    let sha = archives::sha256(&wheel);
    server.put(
        &format!("/files/{devel}"),
        wheel,
        "application/octet-stream",
    );
    server.put(
        "/simple/rocm-sdk-devel/",
        format!("<a href=\"../../files/{devel}#sha256={sha}\">{devel}</a>"),
        "text/html",
    );
    let out = gpuenv(&sb, &index, &dir, &["install", "rocm-7.14"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("_rocm_sdk_devel/bin/x"), "{err}");
    assert!(!sb.toolchain(NAME).exists());
    assert!(!sb.path("etc").exists());

    // A project page that never ends.
    server.endless("/simple/rocm-sdk-core/");
    let out = sb
        .gpuenv()
        .current_dir(&dir)
        .env("GPUENV_ROCM_INDEX_URL", &index)
        .env("GPUENV_HTTP_TIMEOUT", "5")
        .args(["install", "rocm-7.14"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("rocm-sdk-core"), "{err}");
    assert!(!sb.toolchain(NAME).exists());
}

#[test]
fn list_available_rocm_names_the_indexs_final_releases() {
    let Some((sb, _server, index)) = setup() else {
        return;
    };
    let out = gpuenv(&sb, &index, &sb.path(""), &["list", "--available", "rocm"]);
    let text = succeeded(&out);
    assert_eq!(text.trim(), format!("rocm-{RELEASE}"), "{text}");
    // The same index from `[rocm] index-url` in the settings, with no variable.
    write(
        &sb.gpuenv_home().join("settings.toml"),
        &format!("[rocm]\nindex-url = \"{index}\"\n"),
    );
    let out = sb
        .gpuenv()
        .args(["list", "--available", "rocm"])
        .output()
        .unwrap();
    let text = succeeded(&out);
    assert_eq!(text.trim(), format!("rocm-{RELEASE}"), "{text}");
    // A release the index lacks says what it has.
    let out = gpuenv(&sb, &index, &sb.path(""), &["install", "rocm-7.15"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("has no release rocm-7.15"),
        "{err}"
    );
    assert!(err.contains(RELEASE), "{err}");
}

/// A venv as pip and `rocm-sdk init` leave it after `pip install "rocm[libraries,devel,
/// device-gfx90a]"` (before `init` when `init` is false); its site-packages.
fn therock_venv(sb: &Sandbox, init: bool) -> std::path::PathBuf {
    let site = sb.path("venv/lib/python3.12/site-packages");
    fs_err::create_dir_all(&site).unwrap();
    therock::pip_install(
        &site,
        &[
            "rocm-sdk-core",
            "rocm-sdk-libraries",
            "rocm-sdk-device-gfx90a",
            "rocm-sdk-devel",
        ],
    );
    if init {
        therock::rocm_sdk_init(&site);
    }
    site
}

#[test]
fn discover_registers_the_rocm_of_a_therock_venv_and_the_guard_holds_torch_to_it() {
    if !therock::payload_installed() {
        cannot_run("Debian's ROCm and clang-15/lld-15 are not installed; .ci/run installs them");
        return;
    }
    let sb = Sandbox::new();
    let venv = sb.path("venv");
    // Before `rocm-sdk init`: the core package is the tree.
    let site = therock_venv(&sb, false);
    let out = sb
        .gpuenv()
        .env("VIRTUAL_ENV", &venv)
        .args(["discover", "--json"])
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = rows.to_string();
    assert!(text.contains("_rocm_sdk_core"), "{text}");
    assert!(text.contains("rocm-7.14.0-venv"), "{text}");
    // After it: the devel tree `rocm-sdk path --root` prints.
    therock::rocm_sdk_init(&site);
    let out = sb
        .gpuenv()
        .env("VIRTUAL_ENV", &venv)
        .args(["discover", "--register"])
        .output()
        .unwrap();
    let said = succeeded(&out);
    assert!(said.contains("rocm-7.14.0-venv"), "{said}");
    let settings = sb.settings().unwrap();
    assert!(settings.contains("_rocm_sdk_devel"), "{settings}");
    assert!(
        settings.contains("rocm_sdk_core-7.14.0.dist-info"),
        "{settings}"
    );

    // Its hipcc compiles from the venv's tree; torch built for another ROCm is refused
    // before anything is compiled, a matching one passes.
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\nrocm = \"7.14.0-venv\"\nrocm-arch = [\"gfx90a\"]\n",
    );
    write(&proj.join("k.hip"), KERNEL);
    let hipcc = |site_of_torch: &Path, out: &str| {
        let inc = format!("-I{}", site_of_torch.join("torch/include").display());
        sb.gpuenv()
            .current_dir(&proj)
            .args([
                "run",
                "--",
                "hipcc",
                &inc,
                "--offload-arch=gfx90a",
                "-c",
                "k.hip",
                "-o",
                out,
            ])
            .output()
            .unwrap()
    };
    let old = sb.path("old/site-packages");
    torch_package(&old, "2.13.0+rocm7.13", None, Some("7.13.25101-abc"));
    let out = hipcc(&old, "ext.o");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("refusing to build a PyTorch extension"),
        "{err}"
    );
    assert!(err.contains("7.13") && err.contains("7.14"), "{err}");
    assert!(!proj.join("ext.o").exists(), "refused before compiling");
    torch_package(&site, "2.14.0+rocm7.14", None, Some("7.14.26014-def"));
    let out = hipcc(&site, "ext.o");
    succeeded(&out);
    let object = fs_err::read(proj.join("ext.o")).unwrap();
    assert!(object.windows(6).any(|w| w == b"gfx90a"));
}

#[test]
fn install_torch_for_a_rocm_torch_links_its_rocm_wheels_and_downloads_only_devel() {
    let Some((sb, server, index)) = setup() else {
        return;
    };
    // What `pip install torch` from AMD's index leaves: torch and rocm[libraries] with the
    // device wheel of this GPU; no devel wheel.
    let site = sb.path("venv/lib/python3.12/site-packages");
    fs_err::create_dir_all(&site).unwrap();
    therock::pip_install(
        &site,
        &[
            "rocm-sdk-core",
            "rocm-sdk-libraries",
            "rocm-sdk-device-gfx90a",
        ],
    );
    torch_package(&site, "2.14.0+rocm7.14", None, Some("7.14.26014-def"));
    let proj = project(&sb, &["gfx90a"]);
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("VIRTUAL_ENV", sb.path("venv"))
        .env("GPUENV_ROCM_INDEX_URL", &index)
        .args(["install", "torch"])
        .output()
        .unwrap();
    succeeded(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("installed rocm-7.14.0-torch"), "{err}");
    assert_eq!(fetched(&server), [therock::wheel_name("rocm-sdk-devel")]);
    let root = sb.toolchain("rocm-7.14.0-torch");
    // The venv's files are linked, not copied.
    let hipcc = fs_err::read_link(root.join("bin/hipcc")).unwrap();
    assert!(hipcc.starts_with(&site), "{}", hipcc.display());
    assert!(root.join("lib/cmake/hip/hip-config.cmake").is_file());
    assert!(root
        .join("lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat")
        .exists());
    // Its hipcc compiles an extension of that torch, through the guard.
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\nrocm = \"7.14.0-torch\"\nrocm-arch = [\"gfx90a\"]\n",
    );
    let inc = format!("-I{}", site.join("torch/include").display());
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("VIRTUAL_ENV", sb.path("venv"))
        .args([
            "run",
            "--",
            "hipcc",
            &inc,
            "--offload-arch=gfx90a",
            "-c",
            "k.hip",
            "-o",
            "ext.o",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    assert!(proj.join("ext.o").is_file());
}

#[test]
fn a_nightly_index_installs_a_nightly_only_by_its_own_name() {
    let Some((sb, server, _)) = setup() else {
        return;
    };
    let nightly = therock::serve_at(&server, "/nightly", therock::NIGHTLY);
    let dir = project(&sb, &["gfx90a"]);
    write(
        &dir.join("gpuenv.toml"),
        "[toolchain]\nrocm-arch = [\"gfx90a\"]\n",
    );
    // `rocm-7.15` names no final release; the hint names the nightly's own name.
    let out = gpuenv(&sb, &nightly, &dir, &["install", "rocm-7.15"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("rocm-7.15.0-a20260630"), "{err}");
    let err = ok(&sb, &nightly, &dir, &["install", "rocm-7.15.0-a20260630"]);
    assert!(err.contains("installed rocm-7.15.0-a20260630"), "{err}");
    let root = sb.toolchain("rocm-7.15.0-a20260630");
    assert!(root.join("bin/hipcc").is_file());
    let out = sb
        .gpuenv()
        .current_dir(&dir)
        .args([
            "run",
            "rocm-7.15.0-a20260630",
            "--",
            "hipcc",
            "--offload-arch=gfx90a",
            "-c",
            "k.hip",
            "-o",
            "k.o",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    assert!(dir.join("k.o").is_file());
}
