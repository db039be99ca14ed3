//! `gpuenv audit` reads objects that gpuenv did not write: a fatbinary or offload bundle cut
//! short or claiming huge sizes, a section header pointing past the end of the file, escape
//! sequences in a target triple, something that is not an ELF object at all, a raw
//! fatbinary cut short, an archive member that lies about its size, an 8 GiB `.a`. Each gives a
//! clear error naming the file and the byte, exit status 2, never a panic or a hang. The
//! inputs are built here: a real object from `cc`, with the GPU section added by `objcopy`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::*;
use fs_err as fs;
use gpuenv_audit::bundle::build::bundle;
use gpuenv_audit::fatbin::build::{container, Entry};

const CUBIN: &[u8] = b"\x7fELF not really a cubin, but the audit reads no payload";

/// `dir/NAME`: an object compiled by `cc` with `section` holding `blob`. None (skipped
/// outside CI) without cc or objcopy.
fn object_with(dir: &Path, name: &str, section: &str, blob: &[u8]) -> Option<PathBuf> {
    if !have_tool("cc") || !have_tool("objcopy") {
        return None;
    }
    fs::create_dir_all(dir).unwrap();
    write(&dir.join("plain.c"), "int f(void) { return 1; }\n");
    let run = |cmd: &mut Command| succeeded(&cmd.current_dir(dir).output().unwrap());
    run(Command::new("cc").args(["-c", "plain.c", "-o", "plain.o"]));
    fs::write(dir.join("blob"), blob).unwrap();
    run(Command::new("objcopy")
        .arg(format!("--add-section={section}=blob"))
        .args(["plain.o", name]));
    Some(dir.join(name))
}

fn audit(sb: &Sandbox, file: &Path) -> Output {
    sb.gpuenv()
        .env("PATH", sb.path("no-tools"))
        .arg("audit")
        .arg(file)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

/// The run failed as an input error (2) with `expected` in its message, and did not panic.
#[track_caller]
fn refused(out: &Output, expected: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(expected), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

fn two_entries() -> Vec<u8> {
    container(&[
        Entry {
            kind: 2,
            sm: 80,
            flags: 0,
            payload: CUBIN,
        },
        Entry {
            kind: 2,
            sm: 90,
            flags: 0,
            payload: CUBIN,
        },
    ])
}

#[test]
fn a_fatbinary_built_here_is_read_so_the_damaged_ones_below_are_damage() {
    let sb = Sandbox::new();
    let Some(o) = object_with(&sb.path("w"), "good.o", ".nv_fatbin", &two_entries()) else {
        return;
    };
    let stdout = succeeded(&audit(&sb, &o));
    assert!(stdout.contains("CUDA code: SASS sm_80, sm_90"), "{stdout}");
}

#[test]
fn a_fatbinary_cut_short_names_the_entry_and_the_bytes_missing() {
    let sb = Sandbox::new();
    let good = two_entries();
    let cut = &good[..good.len() - CUBIN.len() / 2 - 8];
    let Some(o) = object_with(&sb.path("w"), "cut.o", ".nv_fatbin", cut) else {
        return;
    };
    let stderr = refused(&audit(&sb, &o), "the CUDA fatbinary in its section .nv_fatbin is damaged: the fatbinary header at byte 0 claims");
    assert!(
        stderr.contains(&format!("cannot audit {}", o.display())),
        "{stderr}"
    );
    assert!(stderr.contains("hint: rebuild it"), "{stderr}");
}

#[test]
fn fatbinary_headers_claiming_huge_sizes_are_refused_without_reading_them() {
    let sb = Sandbox::new();
    let mut huge = two_entries();
    huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    let Some(o) = object_with(&sb.path("a"), "huge.o", ".nv_fatbin", &huge) else {
        return;
    };
    refused(
        &audit(&sb, &o),
        "claims 18446744073709551615 bytes, but only",
    );

    // An entry claiming 1 TiB inside a container that is honest about its own size.
    let mut entry = two_entries();
    entry[16 + 8..16 + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let o = object_with(&sb.path("b"), "entry.o", "__nv_relfatbin", &entry).unwrap();
    refused(
        &audit(&sb, &o),
        "__nv_relfatbin is damaged: the fatbinary entry at byte 16 claims 1099511627776 bytes",
    );

    // An entry whose header says it is shorter than a header.
    let mut short = two_entries();
    short[16 + 4..16 + 8].copy_from_slice(&8u32.to_le_bytes());
    let o = object_with(&sb.path("c"), "short.o", ".nv_fatbin", &short).unwrap();
    refused(&audit(&sb, &o), "has a header of 8 bytes");

    let o = object_with(
        &sb.path("d"),
        "junk.o",
        ".nv_fatbin",
        b"junk in place of a fatbin",
    )
    .unwrap();
    refused(
        &audit(&sb, &o),
        "byte 0 should start a fatbinary header (magic 0xba55ed50)",
    );
}

/// Sets the size of `section` in the section header table of the ELF at `path`.
fn set_section_size(path: &Path, section: &str, size: u64) {
    let mut b = fs::read(path).unwrap();
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as usize;
    let u64_at =
        |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) = (
        u64_at(&b, 0x28),
        u16_at(&b, 0x3a),
        u16_at(&b, 0x3c),
        u16_at(&b, 0x3e),
    );
    let strtab = u64_at(&b, shoff + shstrndx * shentsize + 0x18);
    let header = (0..shnum)
        .map(|i| shoff + i * shentsize)
        .find(|h| {
            let name = strtab + u32::from_le_bytes(b[*h..*h + 4].try_into().unwrap()) as usize;
            b[name..].starts_with(section.as_bytes()) && b[name + section.len()] == 0
        })
        .unwrap();
    b[header + 0x20..header + 0x28].copy_from_slice(&size.to_le_bytes());
    fs::write(path, b).unwrap();
}

#[test]
fn a_section_header_claiming_a_terabyte_is_refused_before_anything_is_read() {
    let sb = Sandbox::new();
    let Some(o) = object_with(&sb.path("w"), "big.o", ".nv_fatbin", &two_entries()) else {
        return;
    };
    set_section_size(&o, ".nv_fatbin", 1 << 40);
    refused(
        &audit(&sb, &o),
        "its section .nv_fatbin claims 1099511627776 bytes at byte",
    );
}

#[test]
fn offload_bundles_cut_short_or_claiming_huge_counts_are_refused() {
    let sb = Sandbox::new();
    let good = bundle(&[
        ("host-x86_64-unknown-linux", b""),
        ("hipv4-amdgcn-amd-amdhsa--gfx90a", CUBIN),
    ]);
    let Some(o) = object_with(&sb.path("a"), "good.o", ".hip_fatbin", &good) else {
        return;
    };
    let stdout = succeeded(&audit(&sb, &o));
    assert!(stdout.contains("HIP code:  gfx90a"), "{stdout}");

    let cut = &good[..good.len() - 10];
    let o = object_with(&sb.path("b"), "cut.o", ".hip_fatbin", cut).unwrap();
    refused(
        &audit(&sb, &o),
        "the HIP offload bundle in its section .hip_fatbin is damaged: the code object of the bundle at byte 0 claims",
    );

    let mut count = good.clone();
    count[24..32].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let o = object_with(&sb.path("c"), "count.o", ".hip_fatbin", &count).unwrap();
    refused(
        &audit(&sb, &o),
        "the entry count of the bundle at byte 0 claims",
    );

    let mut triple = good.clone();
    triple[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
    let o = object_with(&sb.path("d"), "triple.o", ".hip_fatbin", &triple).unwrap();
    refused(
        &audit(&sb, &o),
        "the target triple of the bundle at byte 0 claims 18446744073709551615 bytes",
    );
}

#[test]
fn escape_sequences_in_a_target_triple_are_not_printed_raw() {
    let sb = Sandbox::new();
    let evil = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a\x1b]0;owned\x07", CUBIN)]);
    let Some(o) = object_with(&sb.path("w"), "evil.o", ".hip_fatbin", &evil) else {
        return;
    };
    let stderr = refused(&audit(&sb, &o), "which is not an AMD target ID");
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\x07'),
        "{stderr:?}"
    );
}

#[test]
fn what_is_not_an_elf_object_is_named_for_what_it_is() {
    let sb = Sandbox::new();
    let script = sb.path("run.sh");
    write(&script, "#!/bin/sh\necho hi\n");
    refused(
        &audit(&sb, &script),
        "it is not an ELF object (it starts with `#!/bin/s`)",
    );
    let stderr = refused(&audit(&sb, &script), "hint: gpuenv audit reads ELF objects");
    assert!(stderr.contains(&script.display().to_string()), "{stderr}");

    let empty = sb.path("empty.so");
    write(&empty, "");
    refused(&audit(&sb, &empty), "it is not an ELF object (it is empty)");

    let dir = sb.path("build");
    fs::create_dir_all(&dir).unwrap();
    refused(&audit(&sb, &dir), "is a directory, not an ELF object");

    refused(&audit(&sb, &sb.path("missing.so")), "cannot read");
}

#[test]
fn a_fifo_named_like_an_object_does_not_hang_the_audit() {
    let sb = Sandbox::new();
    let fifo = sb.path("k.so");
    if !have_tool("mkfifo") {
        return;
    }
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    refused(&audit(&sb, &fifo), "is a FIFO, not an ELF object");
}

#[test]
fn an_elf_object_cut_in_half_is_damaged_headers() {
    let sb = Sandbox::new();
    let Some(o) = object_with(&sb.path("w"), "whole.o", ".nv_fatbin", &two_entries()) else {
        return;
    };
    let bytes = fs::read(&o).unwrap();
    let half = sb.path("half.o");
    fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    refused(&audit(&sb, &half), "its ELF headers are damaged");
}

/// An `ar` member header: name, zeros for date/uid/gid, mode, `size` as written.
fn ar_member(name: &str, size: &str, data: &[u8]) -> Vec<u8> {
    let mut h = format!(
        "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
        format!("{name}/"),
        0,
        0,
        0,
        644,
        size
    )
    .into_bytes();
    assert_eq!(h.len(), 60);
    h.extend(data);
    if data.len() % 2 == 1 {
        h.push(b'\n');
    }
    h
}

#[test]
fn a_raw_fatbinary_cut_short_is_damage_named_as_such() {
    let sb = Sandbox::new();
    let good = two_entries();
    let file = sb.path("k.fatbin");
    fs::write(&file, &good).unwrap();
    let stdout = succeeded(&audit(&sb, &file));
    assert!(stdout.contains("(CUDA fatbinary)"), "{stdout}");
    fs::write(&file, &good[..good.len() - CUBIN.len() / 2 - 8]).unwrap();
    refused(
        &audit(&sb, &file),
        "it is a CUDA fatbinary, and damaged: the fatbinary header at byte 0 claims",
    );
}

#[test]
fn an_archive_member_that_lies_about_its_size_is_refused_naming_it() {
    let sb = Sandbox::new();
    let Some(o) = object_with(&sb.path("w"), "good.o", ".nv_fatbin", &two_entries()) else {
        return;
    };
    let object = fs::read(&o).unwrap();
    let mut good = b"!<arch>\n".to_vec();
    good.extend(ar_member("good.o", &object.len().to_string(), &object));
    let lib = sb.path("libk.a");
    fs::write(&lib, &good).unwrap();
    let stdout = succeeded(&audit(&sb, &lib));
    assert!(stdout.contains("(static library)"), "{stdout}");
    assert!(stdout.contains("CUDA code: SASS sm_80, sm_90"), "{stdout}");

    let mut lying = b"!<arch>\n".to_vec();
    lying.extend(ar_member("good.o", "9999999999", &object));
    fs::write(&lib, &lying).unwrap();
    refused(
        &audit(&sb, &lib),
        "its member good.o claims 9999999999 bytes at byte 68, past the end of the file",
    );

    // A member that is a damaged object is named with what is wrong in it.
    let mut damaged = b"!<arch>\n".to_vec();
    damaged.extend(ar_member("cut.o", "64", &object[..64]));
    fs::write(&lib, &damaged).unwrap();
    refused(
        &audit(&sb, &lib),
        "its member cut.o (byte 68): its ELF headers are damaged",
    );
}

/// An 8 GiB static library (sparse here: its second member is all holes) is audited by
/// its headers: the run reads kilobytes, not the file.
#[test]
fn a_huge_static_library_is_read_by_its_headers_only() {
    let sb = Sandbox::new();
    let Some(o) = object_with(&sb.path("w"), "good.o", ".nv_fatbin", &two_entries()) else {
        return;
    };
    let object = fs::read(&o).unwrap();
    // The most a member header can say (10 digits): 8.4 GiB.
    let huge: u64 = 9_000_000_000;
    let mut head = b"!<arch>\n".to_vec();
    head.extend(ar_member("good.o", &object.len().to_string(), &object));
    head.extend(ar_member("holes.o", &huge.to_string(), &[]));
    let lib = sb.path("libhuge.a");
    fs::write(&lib, &head).unwrap();
    let file = fs::OpenOptions::new().write(true).open(&lib).unwrap();
    file.set_len(head.len() as u64 + huge).unwrap();
    drop(file);
    let out = sb
        .gpuenv()
        .env("PATH", sb.path("no-tools"))
        .arg("audit")
        .arg(&lib)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(stdout.contains("CUDA code: SASS sm_80, sm_90"), "{stdout}");
}
