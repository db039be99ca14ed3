//! The driver stub `lib64/stubs/libcuda.so`, so `-lcuda` and CMake's `CUDA::cuda_driver`
//! link on a machine without a driver. NVIDIA ships it in the `cuda_cudart` redist archive
//! (and its installers put it there); the `nvidia-cuda-runtime` wheels do not carry it, so a
//! toolkit made of wheels gets one made here, like NVIDIA's: a shared object named
//! `libcuda.so.1` that defines every driver API function the toolkit's own `cuda.h` declares,
//! each returning `CUDA_ERROR_STUB_LIBRARY` (34). It is written byte by byte (no compiler
//! runs at install time, and the same cuda.h always gives the same file, so a lock's file
//! list stays the same across machines). Programs linked against it load the real
//! `libcuda.so.1` of the driver at run time.

use std::collections::BTreeSet;
use std::path::Path;

use gpuenv_core::facts::nvidia_target::target_dir;
use gpuenv_core::fsutil;

/// What the stub's functions return: `CUDA_ERROR_STUB_LIBRARY`, as NVIDIA's do.
const STUB_ERROR: u8 = 34;
/// cuda.h of CUDA 13 is about 1.2 MB; more is not a header.
const MAX_HEADER: u64 = 16 << 20;
/// CUDA 13 declares about 650 driver functions.
const MAX_SYMBOLS: usize = 20_000;
const SONAME: &str = "libcuda.so.1";

/// Adds `lib/stubs/libcuda.so` under the target dir of `root` when no archive brought one and
/// the tree has the driver API's header to take the names from. True when it wrote one.
pub fn driver_stub(root: &Path) -> std::io::Result<bool> {
    let target = root.join(target_dir());
    let stub = target.join("lib/stubs/libcuda.so");
    if fs_err::symlink_metadata(&stub).is_ok() {
        return Ok(false);
    }
    // The archives' file: read as data, never through a link, and only names taken from it.
    let Ok(header) = fsutil::read_regular(&target.join("include/cuda.h"), MAX_HEADER) else {
        return Ok(false);
    };
    let names = driver_functions(&String::from_utf8_lossy(&header));
    if names.is_empty() {
        return Ok(false);
    }
    let Some(bytes) = shared_object(SONAME, &names, std::env::consts::ARCH) else {
        return Ok(false);
    };
    fs_err::create_dir_all(stub.parent().expect("the stub has a directory"))?;
    // Readable by every user the toolkit is (`write_atomic` makes it rw-r--r--).
    fsutil::write_atomic(&stub, &bytes)?;
    Ok(true)
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

/// The code every function runs: return [`STUB_ERROR`].
fn code(arch: &str) -> Option<(u16, Vec<u8>)> {
    match arch {
        // mov eax, 34; ret
        "x86_64" => Some((62, vec![0xb8, STUB_ERROR, 0, 0, 0, 0xc3])),
        // mov w0, #34; ret
        "aarch64" => {
            let mov = 0x5280_0000u32 | (u32::from(STUB_ERROR) << 5);
            let ret = 0xd65f_03c0u32;
            Some((183, [mov.to_le_bytes(), ret.to_le_bytes()].concat()))
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
/// running [`code`]: the headers, a SysV hash table, the dynamic symbols and strings, the
/// code, and the dynamic section, with section headers for the linker. `None` for an
/// architecture it does not know.
pub fn shared_object(soname: &str, names: &BTreeSet<String>, arch: &str) -> Option<Vec<u8>> {
    let (machine, text) = code(arch)?;
    const PAGE: usize = 0x1000;
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
    let dynamic_off = align(text_end, PAGE);
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
    phdr(&mut f, 1, 4 | 1, 0, text_end, PAGE as u64);
    phdr(&mut f, 1, 4 | 2, dynamic_off, dynamic_size, PAGE as u64);
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
mod tests {
    use super::*;

    const CUDA_H: &str = "#define __CUDA_API_PTSZ(api) api ## _ptsz\n#define cuMemAlloc cuMemAlloc_v2\n#define cuStreamQuery __CUDA_API_PTSZ(cuStreamQuery)\ntypedef struct CUctx_st *CUcontext; typedef unsigned cuuint32_t;\nCUresult CUDAAPI cuInit(unsigned int Flags);\nCUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);\n";

    #[test]
    fn names_are_the_functions_a_program_links_to() {
        let names = driver_functions(CUDA_H);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "cuInit",
                "cuMemAlloc",
                "cuMemAlloc_v2",
                "cuStreamQuery",
                "cuStreamQuery_ptsz"
            ]
        );
    }

    #[test]
    fn a_hostile_header_gives_names_only() {
        let long = format!("cuX{}", "a".repeat(200));
        let text = format!("cuA/../../etc;cuB\0cuC {long} __CUDA_API_PTSZ(../x) cu\u{e9}D");
        let names = driver_functions(&text);
        assert!(names
            .iter()
            .all(|n| n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')));
        assert!(!names.contains(&long));
        assert!(names.contains("cuA") && names.contains("cuC"));
    }

    #[test]
    fn the_same_header_makes_the_same_file() {
        let names = driver_functions(CUDA_H);
        let a = shared_object(SONAME, &names, "x86_64").unwrap();
        assert_eq!(a, shared_object(SONAME, &names, "x86_64").unwrap());
        assert_eq!(&a[..4], b"\x7fELF");
        assert!(a.windows(SONAME.len()).any(|w| w == SONAME.as_bytes()));
        assert!(shared_object(SONAME, &names, "riscv64").is_none());
    }
}
