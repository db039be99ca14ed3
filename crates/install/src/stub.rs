//! The driver stub `lib64/stubs/libcuda.so`, so `-lcuda` and CMake's `CUDA::cuda_driver`
//! link on a machine without a driver. NVIDIA ships it in the `cuda_cudart` redist archive
//! (and its installers put it there); the `nvidia-cuda-runtime` wheels do not carry it, so a
//! toolkit made of wheels gets one made here, like NVIDIA's: a shared object named
//! `libcuda.so.1` that defines every driver API function the toolkit's own `cuda.h` declares,
//! each returning `CUDA_ERROR_STUB_LIBRARY` (34). It is written byte by byte (no compiler
//! runs at install time, and the same cuda.h always gives the same file, so a lock's file
//! list stays the same across machines). Programs linked against it load the real
//! `libcuda.so.1` of the driver at run time. `lib64/stubs/libnvidia-ml.so` (`-lnvidia-ml`,
//! `CUDA::nvml`; NVIDIA's is in `cuda_nvml_dev`, the wheel has only `nvml.h`) is made the
//! same way, named `libnvidia-ml.so.1` like the driver's NVML.

use std::collections::BTreeSet;
use std::path::Path;

use gpuenv_core::facts::nvidia_target::target_dir;
use gpuenv_core::{fsutil, outside};

/// What the stub's functions return: `CUDA_ERROR_STUB_LIBRARY`, as NVIDIA's do.
const STUB_ERROR: u8 = 34;
/// What the NVML stub's functions return: `NVML_ERROR_LIBRARY_NOT_FOUND`.
const NVML_STUB_ERROR: u8 = 12;
/// CUDA 13 declares about 650 driver functions.
const MAX_SYMBOLS: usize = 20_000;
const SONAME: &str = "libcuda.so.1";
const NVML_SONAME: &str = "libnvidia-ml.so.1";
/// The NVML functions of NVIDIA's headers and driver library, for a toolkit without nvml.h.
const NVML_FUNCTIONS: &str = include_str!("nvml-functions.txt");

/// Adds `lib/stubs/libcuda.so` under the target dir of `root` when no archive brought one and
/// the tree has the driver API's header to take the names from. True when it wrote one.
pub fn driver_stub(root: &Path) -> std::io::Result<bool> {
    let target = root.join(target_dir());
    let stub = target.join("lib/stubs/libcuda.so");
    if fs_err::symlink_metadata(&stub).is_ok() {
        return Ok(false);
    }
    // The archives' file: read as data, never through a link, and only names taken from it.
    let Ok(header) = outside::read(&target.join("include/cuda.h"), outside::Kind::Header) else {
        return Ok(false);
    };
    let names = driver_functions(&String::from_utf8_lossy(&header));
    write_stub(&stub, SONAME, &names, STUB_ERROR)
}

/// Adds `lib/stubs/libnvidia-ml.so` under the target dir of `root` when no archive brought
/// one: the functions the tree's `nvml.h` declares (when it has one) and those NVIDIA's
/// headers and driver declare, so `-lnvidia-ml` links without the `nvml` component too.
/// True when it wrote one.
pub fn nvml_stub(root: &Path) -> std::io::Result<bool> {
    let target = root.join(target_dir());
    let stub = target.join("lib/stubs/libnvidia-ml.so");
    if fs_err::symlink_metadata(&stub).is_ok() {
        return Ok(false);
    }
    let mut names = nvml_functions(NVML_FUNCTIONS);
    if let Ok(header) = outside::read(&target.join("include/nvml.h"), outside::Kind::Header) {
        names.extend(nvml_functions(&String::from_utf8_lossy(&header)));
    }
    write_stub(&stub, NVML_SONAME, &names, NVML_STUB_ERROR)
}

/// Writes the stub `soname` defining `names` at `stub`, readable by all. False when there is
/// nothing to write (no names, an architecture without [`code`]).
fn write_stub(
    stub: &Path,
    soname: &str,
    names: &BTreeSet<String>,
    value: u8,
) -> std::io::Result<bool> {
    if names.is_empty() {
        return Ok(false);
    }
    let Some(bytes) = shared_object_returning(soname, names, std::env::consts::ARCH, value) else {
        return Ok(false);
    };
    fs_err::create_dir_all(stub.parent().expect("the stub has a directory"))?;
    // Readable by every user the toolkit is (`write_atomic` makes it rw-r--r--).
    fsutil::write_atomic(stub, &bytes)?;
    Ok(true)
}

/// The NVML functions in `text` (`nvml.h`, or a list of names): each `nvmlX` followed by
/// `(` that a `#define` does not name, and each name alone on a line. Only identifiers.
pub fn nvml_functions(text: &str) -> BTreeSet<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let is_nvml = |w: &str| {
        w.len() <= 128
            && w.starts_with("nvml")
            && w[4..].starts_with(|c: char| c.is_ascii_uppercase())
            && w.chars().all(ident)
    };
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if is_nvml(line) {
            out.insert(line.to_string());
            continue;
        }
        let mut prev = "";
        let mut rest = line;
        while let Some(start) = rest.find(ident) {
            let tail = &rest[start..];
            let end = tail.find(|c: char| !ident(c)).unwrap_or(tail.len());
            let word = &tail[..end];
            rest = &tail[end..];
            if is_nvml(word) && rest.trim_start().starts_with('(') && prev != "define" {
                out.insert(word.to_string());
            }
            prev = word;
            if out.len() >= MAX_SYMBOLS {
                return out;
            }
        }
    }
    out
}

/// The driver functions `cuda.h` declares, under the names a program built with it links
/// to: `cuX`, the versioned names its defines map them to (`cuMemAlloc_v2`), and the
/// per-thread-stream variants (`cuStreamQuery_ptsz`). A few more names than are functions
/// (a macro's own name) cost nothing in a stub.
pub fn driver_functions(header: &str) -> BTreeSet<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let is_driver = |w: &str| {
        w.len() <= 128
            && w.starts_with("cu")
            && w[2..].starts_with(|c: char| c.is_ascii_uppercase())
    };
    let mut out = BTreeSet::new();
    let words: Vec<&str> = header
        .split(|c: char| !ident(c))
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        if out.len() >= MAX_SYMBOLS {
            break;
        }
        if is_driver(w) {
            out.insert(w.to_string());
        }
        let suffix = match *w {
            "__CUDA_API_PTSZ" => "_ptsz",
            "__CUDA_API_PTDS" => "_ptds",
            _ => continue,
        };
        if let Some(api) = words.get(i + 1).filter(|a| is_driver(a)) {
            out.insert(format!("{api}{suffix}"));
        }
    }
    out
}

/// The machine, the largest page size its kernels use, and the code every function runs
/// (return `value`). Segments are aligned to that page so the code and the dynamic
/// section never share a page: aarch64 kernels run with 4, 16 or 64 KiB pages.
fn code(arch: &str, value: u8) -> Option<(u16, usize, Vec<u8>)> {
    match arch {
        // mov eax, value; ret
        "x86_64" => Some((62, 0x1000, vec![0xb8, value, 0, 0, 0, 0xc3])),
        // mov w0, #value; ret
        "aarch64" => {
            let mov = 0x5280_0000u32 | (u32::from(value) << 5);
            let ret = 0xd65f_03c0u32;
            Some((
                183,
                0x10000,
                [mov.to_le_bytes(), ret.to_le_bytes()].concat(),
            ))
        }
        _ => None,
    }
}

/// The SysV hash of a dynamic symbol's name.
fn elf_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &c in name {
        h = (h << 4).wrapping_add(u32::from(c));
        let g = h & 0xf000_0000;
        if g != 0 {
            h ^= g >> 24;
        }
        h &= !g;
    }
    h
}

fn align(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// A little-endian ELF64 shared object named `soname` that defines `names` as functions
/// returning [`STUB_ERROR`]: see [`shared_object_returning`].
#[cfg(test)]
pub fn shared_object(soname: &str, names: &BTreeSet<String>, arch: &str) -> Option<Vec<u8>> {
    shared_object_returning(soname, names, arch, STUB_ERROR)
}

/// A little-endian ELF64 shared object named `soname` that defines `names` as functions
/// returning `value` ([`code`]): the headers, a SysV hash table, the dynamic symbols and
/// strings, the code, and the dynamic section, with section headers for the linker. `None`
/// for an architecture it does not know.
pub fn shared_object_returning(
    soname: &str,
    names: &BTreeSet<String>,
    arch: &str,
    value: u8,
) -> Option<Vec<u8>> {
    let (machine, page, text) = code(arch, value)?;
    let n = names.len() + 1; // with the null symbol

    let mut dynstr = vec![0u8];
    let soname_at = dynstr.len();
    dynstr.extend_from_slice(soname.as_bytes());
    dynstr.push(0);
    let mut name_at = Vec::with_capacity(names.len());
    for name in names {
        name_at.push(dynstr.len());
        dynstr.extend_from_slice(name.as_bytes());
        dynstr.push(0);
    }

    let nbucket = (names.len() / 2).max(1);
    let mut buckets = vec![0u32; nbucket];
    let mut chains = vec![0u32; n];
    for (i, name) in names.iter().enumerate() {
        let sym = (i + 1) as u32;
        let b = elf_hash(name.as_bytes()) as usize % nbucket;
        chains[sym as usize] = buckets[b];
        buckets[b] = sym;
    }

    let phnum = 3;
    let hash_off = align(64 + 56 * phnum, 8);
    let hash_size = 4 * (2 + nbucket + n);
    let dynsym_off = align(hash_off + hash_size, 8);
    let dynsym_size = 24 * n;
    let dynstr_off = dynsym_off + dynsym_size;
    let text_off = align(dynstr_off + dynstr.len(), 16);
    let text_end = text_off + text.len();
    let dynamic_off = align(text_end, page);
    let dynamic: [(u64, u64); 7] = [
        (14, soname_at as u64),    // DT_SONAME
        (4, hash_off as u64),      // DT_HASH
        (5, dynstr_off as u64),    // DT_STRTAB
        (6, dynsym_off as u64),    // DT_SYMTAB
        (10, dynstr.len() as u64), // DT_STRSZ
        (11, 24),                  // DT_SYMENT
        (0, 0),                    // DT_NULL
    ];
    let dynamic_size = 16 * dynamic.len();
    let shstrtab: &[u8] = b"\0.hash\0.dynsym\0.dynstr\0.text\0.dynamic\0.shstrtab\0";
    let shstrtab_off = dynamic_off + dynamic_size;
    let shoff = align(shstrtab_off + shstrtab.len(), 8);
    let shnum = 7;

    let mut f = Vec::with_capacity(shoff + 64 * shnum);
    let u16le = |f: &mut Vec<u8>, v: u16| f.extend_from_slice(&v.to_le_bytes());
    let u32le = |f: &mut Vec<u8>, v: u32| f.extend_from_slice(&v.to_le_bytes());
    let u64le = |f: &mut Vec<u8>, v: u64| f.extend_from_slice(&v.to_le_bytes());
    let pad_to = |f: &mut Vec<u8>, at: usize| f.resize(at, 0);

    // ELF header: 64-bit, little-endian, version 1, a shared object.
    f.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    f.extend_from_slice(&[0; 8]);
    u16le(&mut f, 3);
    u16le(&mut f, machine);
    u32le(&mut f, 1);
    u64le(&mut f, 0); // entry
    u64le(&mut f, 64); // program headers
    u64le(&mut f, shoff as u64);
    u32le(&mut f, 0);
    u16le(&mut f, 64);
    u16le(&mut f, 56);
    u16le(&mut f, phnum as u16);
    u16le(&mut f, 64);
    u16le(&mut f, shnum as u16);
    u16le(&mut f, 6); // .shstrtab

    // Program headers: code read+execute, the dynamic section read+write, PT_DYNAMIC.
    // Addresses are file offsets.
    let phdr = |f: &mut Vec<u8>, kind: u32, flags: u32, off: usize, size: usize, al: u64| {
        u32le(f, kind);
        u32le(f, flags);
        for v in [
            off as u64,
            off as u64,
            off as u64,
            size as u64,
            size as u64,
            al,
        ] {
            u64le(f, v);
        }
    };
    phdr(&mut f, 1, 4 | 1, 0, text_end, page as u64);
    phdr(&mut f, 1, 4 | 2, dynamic_off, dynamic_size, page as u64);
    phdr(&mut f, 2, 4 | 2, dynamic_off, dynamic_size, 8);

    pad_to(&mut f, hash_off);
    u32le(&mut f, nbucket as u32);
    u32le(&mut f, n as u32);
    for v in buckets.iter().chain(&chains) {
        u32le(&mut f, *v);
    }

    pad_to(&mut f, dynsym_off);
    f.extend_from_slice(&[0; 24]);
    for at in &name_at {
        u32le(&mut f, *at as u32);
        f.push(0x12); // STB_GLOBAL, STT_FUNC
        f.push(0); // STV_DEFAULT
        u16le(&mut f, 4); // .text
        u64le(&mut f, text_off as u64);
        u64le(&mut f, text.len() as u64);
    }
    f.extend_from_slice(&dynstr);

    pad_to(&mut f, text_off);
    f.extend_from_slice(&text);

    pad_to(&mut f, dynamic_off);
    for (tag, val) in dynamic {
        u64le(&mut f, tag);
        u64le(&mut f, val);
    }
    f.extend_from_slice(shstrtab);

    pad_to(&mut f, shoff);
    // The section headers: [name in .shstrtab, type, flags, link, info, align, entry size]
    // and where each is.
    let sections: [([u64; 7], usize, usize); 7] = [
        ([0, 0, 0, 0, 0, 0, 0], 0, 0),
        ([1, 5, 2, 2, 0, 8, 4], hash_off, hash_size),
        ([7, 11, 2, 3, 1, 8, 24], dynsym_off, dynsym_size),
        ([15, 3, 2, 0, 0, 1, 0], dynstr_off, dynstr.len()),
        ([23, 1, 2 | 4, 0, 0, 16, 0], text_off, text.len()),
        ([29, 6, 1 | 2, 3, 0, 8, 16], dynamic_off, dynamic_size),
        ([38, 3, 0, 0, 0, 1, 0], shstrtab_off, shstrtab.len()),
    ];
    for ([name, kind, flags, link, info, al, entsize], off, size) in sections {
        u32le(&mut f, name as u32);
        u32le(&mut f, kind as u32);
        u64le(&mut f, flags);
        // Loaded (SHF_ALLOC) sections have their offset as address; the others none.
        u64le(&mut f, if flags & 2 != 0 { off as u64 } else { 0 });
        u64le(&mut f, off as u64);
        u64le(&mut f, size as u64);
        u32le(&mut f, link as u32);
        u32le(&mut f, info as u32);
        u64le(&mut f, al);
        u64le(&mut f, entsize);
    }
    Some(f)
}

#[cfg(test)]
mod tests;
