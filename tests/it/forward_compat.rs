//! FM-15 decides forward compatibility as the NVIDIA Container Toolkit does: from the compat
//! `libcuda`'s own `.note.cuda.fwd_compatibility` (built here with `cc` into real ELF
//! libraries), the driver versions only where the library has no note.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use gpuenv_core::facts::compat_note::*;

/// `dir/libcuda.so.<version>`, a shared library with the note `desc` (none: no note).
fn compat_libcuda(dir: &Path, version: &str, desc: Option<&str>) -> PathBuf {
    let mut asm = String::from(".text\n.globl cuInit\ncuInit:\n  ret\n");
    if let Some(desc) = desc {
        let owner = "NVIDIA Corporation";
        let bytes = |s: &str| {
            s.bytes()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        asm.push_str(&format!(
            ".section .note.cuda.fwd_compatibility,\"a\",@note\n.balign 4\n.long {}\n.long {}\n.long 1\n.byte {},0\n.balign 4\n.byte {}\n.balign 4\n",
            owner.len() + 1,
            desc.len(),
            bytes(owner),
            bytes(desc)
        ));
    }
    fs_err::create_dir_all(dir).unwrap();
    let src = dir.join("note.s");
    fs_err::write(&src, asm).unwrap();
    let lib = dir.join(format!("libcuda.so.{version}"));
    let out = Command::new("cc")
        .args(["-shared", "-nostdlib", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .expect("cc (gcc) builds the test's ELF libraries");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs_err::remove_file(&src).unwrap();
    std::os::unix::fs::symlink(format!("libcuda.so.{version}"), dir.join("libcuda.so.1")).unwrap();
    lib
}

fn fm15(sb: &Sandbox, compat: &Path) -> serde_json::Value {
    let out = sb
        .gpuenv()
        .env("LD_LIBRARY_PATH", compat)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "FM-15")
        .unwrap_or_else(|| panic!("no FM-15: {json}"))
        .clone()
}

const N590: &str = r#"{"Format":1,"CUDA Version":"13.1","Driver":[535,550,570,575,580,590],"Device":[1,2,7,8,9,10,11,12,13,14]}"#;
const N575: &str = r#"{"Format":1,"CUDA Version":"12.9","Driver":[535,550,560,565,570,575],"Device":[1,2,7,8,9,10,11,12,13,14]}"#;

#[test]
fn forward_compatibility_follows_the_libraries_own_note() {
    let sb = Sandbox::new();
    sb.fake_driver("580.126.16");

    // Its note lists the host's branch, and it is newer: in effect.
    let ok = sb.path("cuda-13.1/compat");
    compat_libcuda(&ok, "590.44.01", Some(N590));
    let f = fm15(&sb, &ok);
    assert_eq!(f["status"], "ok", "{f}");
    assert!(
        f.to_string().contains("forward compatibility in effect"),
        "{f}"
    );
    assert!(
        f.to_string()
            .contains("its note lists the host's branch 580"),
        "{f}"
    );

    // Newer, but its note does not list the host's branch: the toolkit would not use it.
    // (A comparison of versions alone would have said yes.)
    let stale = sb.path("cuda-12.9/compat");
    compat_libcuda(&stale, "575.57.08", Some(N575));
    sb.fake_driver("570.211.01");
    assert_eq!(fm15(&sb, &stale)["status"], "ok");
    sb.fake_driver("560.35.03");
    let other = sb.path("other/compat");
    compat_libcuda(
        &other,
        "575.57.08",
        Some(r#"{"Format":1,"CUDA Version":"12.9","Driver":[570,575]}"#),
    );
    let f = fm15(&sb, &other);
    assert_eq!(f["status"], "error", "{f}");
    assert!(f.to_string().contains("not 560"), "{f}");

    // Without a note, the majors decide (the fallback).
    let bare = sb.path("bare/compat");
    compat_libcuda(&bare, "575.57.08", None);
    let f = fm15(&sb, &bare);
    assert_eq!(f["status"], "ok", "{f}");
    assert!(
        f.to_string()
            .contains("no note: compat major 575 against the host's 560"),
        "{f}"
    );
}

/// The environment keeps a compat dir the kernel driver can use and drops one the toolkit's
/// rule rejects (first on LD_LIBRARY_PATH it would give error 803); with no driver to
/// compare, nothing is decided and both stay.
#[test]
fn the_environment_keeps_only_the_compat_dirs_this_driver_can_use() {
    let sb = Sandbox::new();
    let cuda = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    sb.ok(&["link", "cuda-12.4", cuda.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"12.4\"\n");
    let good = sb.path("cuda-13.1/compat");
    compat_libcuda(&good, "590.44.01", Some(N590));
    let stale = sb.path("cuda-12.9/compat");
    compat_libcuda(&stale, "575.57.08", Some(N575));
    let lp = format!("{}:{}:/opt/lib", stale.display(), good.display());
    let env = || {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("LD_LIBRARY_PATH", &lp)
            .args(["env", "--shell", "json"])
            .output()
            .unwrap();
        let vars: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
        vars["LD_LIBRARY_PATH"].as_str().map(str::to_string)
    };
    let has = |v: &Option<String>, dir: &Path| {
        v.as_deref()
            .is_some_and(|v| v.split(':').any(|e| Path::new(e) == dir))
    };
    // No kernel driver here: nothing to compare, nothing removed.
    let none = env();
    assert!(
        none.is_none() || (has(&none, &stale) && has(&none, &good)),
        "{none:?}"
    );
    // Kernel driver 580: 13.1's compat lists branch 580 and is newer; 12.9's lists no 580.
    sb.fake_driver("580.126.16");
    let v = env();
    assert!(v.is_some(), "the stale compat dir must be taken off");
    assert!(!has(&v, &stale), "{v:?}");
    assert!(has(&v, &good) && has(&v, Path::new("/opt/lib")), "{v:?}");
}

/// `dir/libcuda.so.<version>` with a note of `owner` (no note: `None`), for the reader's own
/// tests; no `libcuda.so.1` link.
fn library_owned(dir: &Path, version: &str, note: Option<(&str, &str)>) -> PathBuf {
    let mut asm = String::from(".text\n.globl cuInit\ncuInit:\n  ret\n");
    if let Some((owner, desc)) = note {
        let bytes = |s: &str| {
            s.bytes()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        asm.push_str(&format!(
            ".section {SECTION},\"a\",@note\n.balign 4\n.long {}\n.long {}\n.long 1\n.byte {},0\n.balign 4\n.byte {}\n.balign 4\n",
            owner.len() + 1,
            desc.len(),
            bytes(owner),
            bytes(desc)
        ));
    }
    let src = dir.join(format!("{version}.s"));
    fs_err::write(&src, asm).unwrap();
    let out = dir.join(format!("libcuda.so.{version}"));
    let built = Command::new("cc")
        .args(["-shared", "-nostdlib", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .expect("cc (gcc) builds the test's ELF libraries");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    out
}

#[test]
fn the_note_is_read_from_the_library_itself() {
    let dir = tempfile::tempdir().unwrap();
    let library = |d: &Path, v: &str, note: Option<(&str, &str)>| library_owned(d, v, note);
    let lib = library(dir.path(), "590.44.01", Some((OWNER, N590)));
    let n = read(&lib).unwrap().unwrap();
    assert_eq!(n.cuda, "13.1");
    assert_eq!(n.driver, [535, 550, 570, 575, 580, 590]);
    assert_eq!(n.format, 1);
    // An Orin compat library declares only its release.
    let orin = library(
        dir.path(),
        "1.1",
        Some((OWNER, r#"{"Format":1,"CUDA Version":"13.2"}"#)),
    );
    let n = read(&orin).unwrap().unwrap();
    assert!(n.driver.is_empty() && n.cuda == "13.2");
    // No note, another owner's note: none, as the toolkit takes them.
    let bare = library(dir.path(), "580.82.07", None);
    assert_eq!(read(&bare).unwrap(), None);
    let other = library(dir.path(), "580.82.08", Some(("Someone Else", N590)));
    assert_eq!(read(&other).unwrap(), None);
    // A note that is not JSON is an error, said with the file.
    let bad = library(dir.path(), "99.88", Some((OWNER, "{not json")));
    let e = read(&bad).unwrap_err().to_string();
    assert!(
        e.contains("libcuda.so.99.88") && e.contains("not the JSON"),
        "{e}"
    );
    // Not an ELF file at all.
    let text = dir.path().join("libcuda.so.1.2");
    fs_err::write(&text, "not a library").unwrap();
    assert!(matches!(read(&text), Err(NoteError::NotElf { .. })));
}

#[test]
fn the_decision_is_the_container_toolkits() {
    let dir = tempfile::tempdir().unwrap();
    let library = |d: &Path, v: &str, note: Option<(&str, &str)>| library_owned(d, v, note);
    let n575 = read(&library(dir.path(), "575.57.08", Some((OWNER, N575)))).unwrap();
    let n590 = read(&library(dir.path(), "590.44.01", Some((OWNER, N590)))).unwrap();
    let yes = |note: &Option<CompatNote>, c: &str, h: &str| {
        decide(note.as_ref(), Some(c), Some(h), None).use_compat
    };
    // The toolkit's own cases (cuda-elf-header_test.go).
    assert!(
        !yes(&n575, "575.57.08", "590.44.01"),
        "host branch not listed"
    );
    assert!(yes(&n575, "575.57.08", "570.211.01"));
    assert!(yes(&n575, "575.57.08", "575.10.10"));
    assert!(!yes(&n575, "575.57.08", "575.57.08"));
    assert!(!yes(&n575, "575.57.08", "575.99.99"));
    let by_cuda = |cuda: &str| decide(n575.as_ref(), None, None, Some(cuda)).use_compat;
    assert!(by_cuda("12.8") && !by_cuda("12.9") && !by_cuda("12.10"));
    // The field failure: host 580.126.16, a container's 580.82.07 of the same branch. The
    // note says no (older than the host's); majors alone said nothing better.
    assert!(!yes(&n590, "590.44.01", "590.48.01"));
    assert!(!yes(&n590, "580.82.07", "580.126.16"));
    assert!(yes(&n590, "590.44.01", "580.126.16"));
    let d = decide(n590.as_ref(), Some("590.44.01"), Some("580.126.16"), None);
    assert_eq!(d.by, DecidedBy::Note);
    // Without a note: the majors, and only with both drivers known.
    let none = decide(None, Some("590.44.01"), Some("580.126.16"), None);
    assert!(none.use_compat && none.by == DecidedBy::Majors);
    assert!(!decide(None, Some("580.82.07"), Some("580.126.16"), None).use_compat);
    assert!(!decide(None, Some("590.44.01"), None, None).use_compat);
    assert!(!decide(None, Some("590.44.01"), Some("580.126.16"), Some("13.0")).use_compat);
}
