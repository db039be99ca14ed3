//! ROCm from AMD's wheels (TheRock), installed the way CUDA is: a local PEP 503 index over
//! real HTTP whose wheels have TheRock's names, metadata and layout and Debian's real ROCm
//! inside (tests/it/common/therock.rs), so the tree `gpuenv install rocm-7.14` makes compiles
//! and links HIP code with its own hipcc, for the ISA the project pins.

use crate::common::therock;

use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;
use therock::{fetched, gpuenv, ok, project, setup, RELEASE};

const NAME: &str = "rocm-7.14.0";

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

    // A GPU pinned later: `gpuenv install` adds its device wheel to the tree in place.
    ok(
        &sb,
        &index,
        &dir,
        &["pin", NAME, "--arch", "gfx90a,gfx1030"],
    );
    let before = fetched(&server).len();
    let err = ok(&sb, &index, &dir, &["install"]);
    assert!(err.contains("adding device-gfx1030"), "{err}");
    assert_eq!(fetched(&server).len(), before + 1);
    assert!(root
        .join("lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat")
        .is_file());
    let err = ok(&sb, &index, &dir, &["install"]);
    assert!(!err.contains("adding"), "{err}");
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
