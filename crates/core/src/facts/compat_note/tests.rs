//! Compat libraries built here with the system compiler, each carrying one kind of note, read
//! and decided on as the NVIDIA Container Toolkit's tests decide (its testdata has the real
//! 575.57.08 and 590.44.01 notes, whose JSON these use).

use super::*;
use std::process::Command;

/// A shared library `libcuda.so.<version>` whose note section holds `owner` and `desc`.
fn library(dir: &Path, version: &str, note: Option<(&str, &str)>) -> std::path::PathBuf {
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
        .output();
    match built {
        Ok(o) if o.status.success() => out,
        Ok(o) => panic!("cc failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => panic!("the tests build ELF files with cc (gcc): {e}"),
    }
}

const N575: &str = r#"{"Format":1,"CUDA Version":"12.9","Driver":[535,550,560,565,570,575],"Device":[1,2,7,8,9,10,11,12,13,14]}"#;
const N590: &str = r#"{"Format":1,"CUDA Version":"13.1","Driver":[535,550,570,575,580,590],"Device":[1,2,7,8,9,10,11,12,13,14]}"#;

#[test]
fn the_note_is_read_from_the_library_itself() {
    let dir = tempfile::tempdir().unwrap();
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
