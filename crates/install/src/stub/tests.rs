//! The unit tests of `stub.rs`.

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

#[test]
fn nvml_names_are_the_declared_functions() {
    let header = "#define nvmlInit nvmlInit_v2\n#define nvmlClocksEventReasonAll (0x1ULL \\\n | 0x2)\nnvmlReturn_t DECLDIR nvmlInit_v2(void);\nconst DECLDIR char* nvmlErrorString (nvmlReturn_t result);\ntypedef struct nvmlDevice_st* nvmlDevice_t;\nnvmlReturn_t DECLDIR nvmlDeviceGetCount_v2(unsigned int *deviceCount);\n";
    let names = nvml_functions(header);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(
        names,
        ["nvmlDeviceGetCount_v2", "nvmlErrorString", "nvmlInit_v2"]
    );
}

#[test]
fn the_nvml_list_has_what_programs_link() {
    let names = nvml_functions(NVML_FUNCTIONS);
    assert!(names.len() > 400, "{}", names.len());
    for f in [
        "nvmlInit",
        "nvmlInit_v2",
        "nvmlShutdown",
        "nvmlDeviceGetHandleByIndex_v2",
        "nvmlDeviceGetPowerUsage",
    ] {
        assert!(names.contains(f), "{f}");
    }
    assert!(names.iter().all(|n| n.starts_with("nvml")));
}

/// The stub as a reader sees it, through `object`: its machine, soname, the dynamic
/// symbols the hash table finds, and its loadable segments (offset, size, alignment).
struct ReadBack {
    machine: u16,
    soname: Vec<u8>,
    found: Vec<(String, bool)>,
    dynamic_tags: Vec<u64>,
    loads: Vec<(u64, u64, u64, u32)>,
}

fn read_back(bytes: &[u8], names: &BTreeSet<String>) -> ReadBack {
    use object::elf;
    use object::read::elf::{Dyn as _, ElfFile64, FileHeader as _, ProgramHeader as _};
    use object::{Object, ObjectKind, ObjectSymbol, SymbolKind};
    let file = ElfFile64::<object::Endianness>::parse(bytes).unwrap();
    assert_eq!(file.kind(), ObjectKind::Dynamic);
    let endian = file.endian();
    let header = file.elf_header();
    let sections = file.elf_section_table();
    let (dynamic, strtab) = sections.dynamic(endian, bytes).unwrap().unwrap();
    let strings = sections.strings(endian, bytes, strtab).unwrap();
    let mut soname = Vec::new();
    let mut dynamic_tags = Vec::new();
    for d in dynamic {
        dynamic_tags.push(d.d_tag(endian));
        if d.d_tag(endian) == u64::from(elf::DT_SONAME) {
            soname = d.string(endian, strings).unwrap().to_vec();
        }
    }
    let symbols = file.elf_dynamic_symbol_table();
    let (hash, _) = sections.hash(endian, bytes).unwrap().unwrap();
    let versions = object::read::elf::VersionTable::default();
    let found = names
        .iter()
        .map(|n| {
            let by_hash = hash
                .find(
                    endian,
                    n.as_bytes(),
                    elf::hash(n.as_bytes()),
                    None,
                    symbols,
                    &versions,
                )
                .is_some();
            (n.clone(), by_hash)
        })
        .collect();
    for sym in file.dynamic_symbols() {
        assert_eq!(sym.kind(), SymbolKind::Text, "{:?}", sym.name());
        assert!(sym.is_definition() && sym.is_global(), "{:?}", sym.name());
    }
    assert_eq!(file.dynamic_symbols().count(), names.len());
    let loads = file
        .elf_program_headers()
        .iter()
        .filter(|p| p.p_type(endian) == elf::PT_LOAD)
        .map(|p| {
            assert_eq!(p.p_offset(endian), p.p_vaddr(endian));
            (
                p.p_offset(endian),
                p.p_memsz(endian),
                p.p_align(endian),
                p.p_flags(endian),
            )
        })
        .collect();
    ReadBack {
        machine: header.e_machine(endian),
        soname,
        found,
        dynamic_tags,
        loads,
    }
}

#[test]
fn a_reader_finds_the_soname_every_symbol_and_the_dynamic_entries() {
    let names = driver_functions(CUDA_H);
    for arch in ["x86_64", "aarch64"] {
        let r = read_back(&shared_object(SONAME, &names, arch).unwrap(), &names);
        assert_eq!(r.soname, SONAME.as_bytes(), "{arch}");
        assert!(r.found.iter().all(|(_, f)| *f), "{arch}: {:?}", r.found);
        use object::elf::*;
        let tags = [
            DT_SONAME, DT_HASH, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT, DT_NULL,
        ];
        let tags: Vec<u64> = tags.iter().map(|t| u64::from(*t)).collect();
        assert_eq!(r.dynamic_tags, tags, "{arch}");
    }
    let x86 = shared_object(SONAME, &names, "x86_64").unwrap();
    assert_eq!(read_back(&x86, &names).machine, object::elf::EM_X86_64);
    let arm = shared_object(SONAME, &names, "aarch64").unwrap();
    assert_eq!(read_back(&arm, &names).machine, object::elf::EM_AARCH64);
}

#[test]
fn code_and_data_never_share_a_page_of_the_largest_size_the_machine_uses() {
    let names = driver_functions(CUDA_H);
    for (arch, page) in [("x86_64", 0x1000u64), ("aarch64", 0x10000)] {
        let r = read_back(&shared_object(SONAME, &names, arch).unwrap(), &names);
        let [(code_at, code_size, code_align, code_flags), (data_at, _, data_align, data_flags)] =
            r.loads[..]
        else {
            panic!("{arch}: two loadable segments, not {:?}", r.loads);
        };
        use object::elf::{PF_R, PF_W, PF_X};
        assert_eq!(
            (code_flags, data_flags),
            (PF_R | PF_X, PF_R | PF_W),
            "{arch}"
        );
        assert_eq!((code_align, data_align), (page, page), "{arch}");
        assert_eq!(code_at, 0);
        assert!(
            data_at % page == 0 && data_at >= (code_at + code_size).div_ceil(page) * page,
            "{arch}: the dynamic section at {data_at:#x} is on a page of the code"
        );
    }
}
