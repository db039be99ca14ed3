//! `gpuenv audit`: what GPU code a built ELF object carries (the SASS and PTX of its CUDA
//! fatbinary, the gfx targets of its HIP offload bundle) and which GPU runtime it needs
//! (DT_NEEDED), read from the bytes alone; [`compare`] checks that against the archs asked
//! for (pins, TORCH_CUDA_ARCH_LIST, the GPUs present) and [`report`] renders the findings.
//! Nothing here runs a tool or reads the environment.

pub mod arch;
pub mod bundle;
pub mod compare;
pub mod fatbin;
pub mod finding;
pub mod report;
pub mod runtime;
pub mod symbols;
pub mod want;
pub mod window;

use object::read::elf::{ElfFile, FileHeader};
use object::{elf, Endianness, Object as _, ObjectSection as _, ObjectSymbol as _, ReadRef};

use arch::GfxTarget;
use fatbin::Image;
use window::Window;

/// Sections holding a CUDA fatbinary: linked objects, relocatable (`-rdc`) objects.
pub const FATBIN_SECTIONS: &[&str] = &[".nv_fatbin", RELOCATABLE_FATBIN];
/// The section of relocatable (`-rdc`) cubins. A linked program or `.so` keeps it, but runs
/// only what the device link (`-dlink`) put into `.nv_fatbin`: it is read for a `.o` only.
pub const RELOCATABLE_FATBIN: &str = "__nv_relfatbin";
/// Sections holding clang offload bundles (HIP).
pub const BUNDLE_SECTIONS: &[&str] = &[".hip_fatbin", "__CLANG_OFFLOAD_BUNDLE__"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectKind {
    /// A shared object (`.so`).
    Shared,
    Relocatable,
    /// A program: fixed-address, or position-independent (PIE, ELF type DYN with an
    /// interpreter).
    Executable,
    Other,
    /// A static library (`.a`): what its members hold, together.
    Archive,
    /// A raw CUDA fatbinary (`nvcc -fatbin`).
    Fatbin,
    /// A raw HIP offload bundle (`hipcc --genco`).
    Bundle,
}

impl ObjectKind {
    pub fn describe(self) -> &'static str {
        match self {
            ObjectKind::Shared => "shared object",
            ObjectKind::Relocatable => "relocatable object",
            ObjectKind::Executable => "executable",
            ObjectKind::Other => "ELF file",
            ObjectKind::Archive => "static library",
            ObjectKind::Fatbin => "CUDA fatbinary",
            ObjectKind::Bundle => "HIP code object bundle",
        }
    }
}

/// What an object carries and needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub kind: ObjectKind,
    /// CUDA images, each (kind, arch) once, SASS first, by arch.
    pub cuda: Vec<Image>,
    /// HIP code objects' targets, each once.
    pub hip: Vec<GfxTarget>,
    /// Compressed offload bundles whose targets could not be read.
    pub hip_compressed: usize,
    /// DT_NEEDED, in the object's order.
    pub needed: Vec<String>,
    /// The CUDA runtime is linked in (nvcc's default, `-cudart static`), not needed.
    pub static_cudart: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("it is not an ELF object ({start})")]
    NotElf { start: String },
    #[error("its ELF headers are damaged: {0}")]
    Elf(object::Error),
    #[error(
        "its section {section} claims {size} bytes at byte {offset}, past the end of the file"
    )]
    Beyond {
        section: String,
        offset: u64,
        size: u64,
    },
    #[error("its dynamic section is damaged: a DT_NEEDED entry points outside its string table")]
    Needed,
    #[error("the CUDA fatbinary in its section {section} is damaged: {source}")]
    Fatbin {
        section: &'static str,
        source: fatbin::FatbinError,
    },
    #[error("the HIP offload bundle in its section {section} is damaged: {source}")]
    Bundle {
        section: &'static str,
        source: bundle::BundleError,
    },
    #[error("it is a CUDA fatbinary, and damaged: {0}")]
    RawFatbin(fatbin::FatbinError),
    #[error("it is a HIP offload bundle, and damaged: {0}")]
    RawBundle(bundle::BundleError),
    #[error("it is a static library (ar archive), and damaged: {0}")]
    Archive(object::Error),
    #[error("it is a thin archive: its members are other files, which audit does not follow; audit those files")]
    ThinArchive,
    #[error("its member {member} claims {size} bytes at byte {offset}, past the end of the file")]
    MemberBeyond {
        member: String,
        offset: u64,
        size: u64,
    },
    #[error("its member {member} (byte {offset}): {source}")]
    Member {
        member: String,
        offset: u64,
        source: Box<AuditError>,
    },
}

/// A `.a`'s first bytes.
const ARCHIVE_MAGIC: &[u8] = b"!<arch>\n";
/// Sections of a HIP `-fgpu-rdc` object: one per target, the triple after this prefix, holding
/// that target's bitcode (linked into code at the program's device link).
const RDC_BUNDLE_PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";

/// Reads an ELF object from a file, through a cache: only its headers and GPU sections are
/// read, so a 2 GB library costs what its fatbinary costs.
pub fn read_file(file: std::fs::File) -> Result<Object, AuditError> {
    read(&object::ReadCache::new(file))
}

/// Reads an ELF object from `data` (a byte slice, or an `object::ReadCache` over a file, so
/// only headers and GPU sections are read).
pub fn read<'d, R: ReadRef<'d>>(data: R) -> Result<Object, AuditError> {
    let total = data.len().unwrap_or(0);
    let len = total.min(bundle::MAGIC.len() as u64);
    let start = data.read_bytes_at(0, len).unwrap_or(&[]);
    if start.starts_with(ARCHIVE_MAGIC) {
        return read_archive(data);
    }
    read_single(data, start, total)
}

/// One object (not an archive: a member that is one holds no code gpuenv reads).
fn read_single<'d, R: ReadRef<'d>>(
    data: R,
    start: &[u8],
    total: u64,
) -> Result<Object, AuditError> {
    if start.starts_with(&fatbin::MAGIC.to_le_bytes()) {
        let cuda = fatbin::parse(Window::new(data, 0, total)).map_err(AuditError::RawFatbin)?;
        return Ok(Object::of(ObjectKind::Fatbin, cuda, Vec::new(), 0));
    }
    if start.starts_with(bundle::MAGIC) || start.starts_with(bundle::COMPRESSED_MAGIC) {
        let found = bundle::parse(Window::new(data, 0, total)).map_err(AuditError::RawBundle)?;
        return Ok(Object::of(
            ObjectKind::Bundle,
            Vec::new(),
            found.targets,
            found.compressed,
        ));
    }
    if !start.starts_with(&elf::ELFMAG) {
        return Err(AuditError::NotElf {
            start: shown_start(start),
        });
    }
    // EI_CLASS: 32- or 64-bit.
    match start.get(4) {
        Some(&elf::ELFCLASS32) => read_elf::<elf::FileHeader32<Endianness>, R>(data),
        _ => read_elf::<elf::FileHeader64<Endianness>, R>(data),
    }
}

impl Object {
    fn of(
        kind: ObjectKind,
        mut cuda: Vec<Image>,
        mut hip: Vec<GfxTarget>,
        hip_compressed: usize,
    ) -> Object {
        cuda.sort_by_key(|i| (i.kind, i.arch));
        cuda.dedup_by_key(|i| (i.kind, i.arch));
        hip.sort();
        hip.dedup();
        Object {
            kind,
            cuda,
            hip,
            hip_compressed,
            needed: Vec::new(),
            static_cudart: false,
        }
    }
}

/// A static library: each member read as the object it is (headers and GPU sections only,
/// through a window on the archive), their code together. A member that is not ELF (a
/// symbol table, a text file) holds no GPU code; a damaged one is an error naming it.
fn read_archive<'d, R: ReadRef<'d>>(data: R) -> Result<Object, AuditError> {
    let archive = object::read::archive::ArchiveFile::parse(data).map_err(AuditError::Archive)?;
    if archive.is_thin() {
        // Its members are other files, named inside it: never followed.
        return Err(AuditError::ThinArchive);
    }
    let total = data.len().unwrap_or(0);
    let (mut cuda, mut hip, mut compressed) = (Vec::new(), Vec::new(), 0);
    for member in archive.members() {
        let member = member.map_err(AuditError::Archive)?;
        let (offset, size) = member.file_range();
        let name = ui_name(member.name());
        if offset.checked_add(size).is_none_or(|end| end > total) {
            return Err(AuditError::MemberBeyond {
                member: name,
                offset,
                size,
            });
        }
        let window = Window::new(data, offset, size);
        let start = window
            .get(0, size.min(bundle::MAGIC.len() as u64))
            .unwrap_or(&[]);
        match read_single(window, start, size) {
            Ok(o) => {
                cuda.extend(o.cuda);
                hip.extend(o.hip);
                compressed += o.hip_compressed;
            }
            Err(AuditError::NotElf { .. }) => {}
            Err(e) => {
                return Err(AuditError::Member {
                    member: name,
                    offset,
                    source: Box::new(e),
                })
            }
        }
    }
    Ok(Object::of(ObjectKind::Archive, cuda, hip, compressed))
}

fn read_elf<'d, Elf, R>(data: R) -> Result<Object, AuditError>
where
    Elf: FileHeader<Endian = Endianness>,
    R: ReadRef<'d>,
{
    let file = ElfFile::<Elf, R>::parse(data).map_err(AuditError::Elf)?;
    let kind = match file.kind() {
        // A position-independent executable is ELF type DYN too: it names the program
        // interpreter that runs it, which a shared object does not.
        object::ObjectKind::Dynamic if file.section_by_name(".interp").is_some() => {
            ObjectKind::Executable
        }
        object::ObjectKind::Dynamic => ObjectKind::Shared,
        object::ObjectKind::Relocatable => ObjectKind::Relocatable,
        object::ObjectKind::Executable => ObjectKind::Executable,
        _ => ObjectKind::Other,
    };
    let mut cuda = Vec::new();
    let mut hip = Vec::new();
    let mut hip_compressed = 0;
    for section in file.sections() {
        let Ok(name) = section.name() else { continue };
        // A HIP `-fgpu-rdc` object: its targets are in its sections' names.
        if let Some(triple) = name
            .strip_prefix(RDC_BUNDLE_PREFIX)
            .filter(|t| !t.is_empty() && kind == ObjectKind::Relocatable)
        {
            if let Ok(Some(target)) = bundle::amd_target(triple, 0) {
                hip.push(target);
            }
            continue;
        }
        let fat = FATBIN_SECTIONS.iter().find(|n| **n == name);
        let bundled = BUNDLE_SECTIONS.iter().find(|n| **n == name);
        if fat.is_none() && bundled.is_none() {
            continue;
        }
        if name == RELOCATABLE_FATBIN && kind != ObjectKind::Relocatable {
            continue;
        }
        let Some((offset, size)) = section.file_range() else {
            continue;
        };
        let bytes = Window::new(data, offset, size);
        if !bytes.in_file() {
            return Err(AuditError::Beyond {
                section: name.to_string(),
                offset,
                size,
            });
        }
        if let Some(section) = fat {
            cuda.extend(
                fatbin::parse(bytes).map_err(|source| AuditError::Fatbin { section, source })?,
            );
        }
        if let Some(section) = bundled {
            let found =
                bundle::parse(bytes).map_err(|source| AuditError::Bundle { section, source })?;
            hip.extend(found.targets);
            hip_compressed += found.compressed;
        }
    }
    cuda.sort_by_key(|i| (i.kind, i.arch));
    cuda.dedup_by_key(|i| (i.kind, i.arch));
    hip.sort();
    hip.dedup();
    let needed = needed(&file)?;
    let static_cudart = !cuda.is_empty()
        && !needed.iter().any(|n| n.starts_with("libcudart.so"))
        && defines(&file, "cudaRuntimeGetVersion");
    Ok(Object {
        kind,
        cuda,
        hip,
        hip_compressed,
        needed,
        static_cudart,
    })
}

/// The DT_NEEDED sonames, in order.
fn needed<'d, Elf, R>(file: &ElfFile<'d, Elf, R>) -> Result<Vec<String>, AuditError>
where
    Elf: FileHeader<Endian = Endianness>,
    R: ReadRef<'d>,
{
    use object::read::elf::Dyn as _;
    let endian = file.endian();
    let table = file.elf_section_table();
    let Some((entries, link)) = table
        .dynamic(endian, file.data())
        .map_err(AuditError::Elf)?
    else {
        return Ok(Vec::new());
    };
    let strings = table
        .strings(endian, file.data(), link)
        .map_err(AuditError::Elf)?;
    let mut out = Vec::new();
    for d in entries {
        if d.tag32(endian) == Some(elf::DT_NEEDED) {
            let offset = d.d_val(endian).into();
            let name = u32::try_from(offset)
                .ok()
                .and_then(|o| strings.get(o).ok())
                .ok_or(AuditError::Needed)?;
            out.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    Ok(out)
}

/// Whether a symbol table defines `name` (static cudart leaves its API in the object).
fn defines<'d, Elf, R>(file: &ElfFile<'d, Elf, R>, name: &str) -> bool
where
    Elf: FileHeader<Endian = Endianness>,
    R: ReadRef<'d>,
{
    file.symbols()
        .chain(file.dynamic_symbols())
        .any(|s| !s.is_undefined() && s.name() == Ok(name))
}

/// A member's name as messages show it: printable, at most 100 bytes.
fn ui_name(name: &[u8]) -> String {
    let name = &name[..name.len().min(100)];
    String::from_utf8_lossy(name)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The first bytes of a file that is not ELF, for the message: printable ones as text.
fn shown_start(start: &[u8]) -> String {
    if start.is_empty() {
        return "it is empty".into();
    }
    let head = &start[..start.len().min(8)];
    if head.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("it starts with `{}`", String::from_utf8_lossy(head))
    } else {
        let hex: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
        format!("it starts with the bytes {}", hex.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_elf_says_what_it_starts_with() {
        let err = read(&b"#!/bin/sh\necho"[..]).unwrap_err().to_string();
        assert_eq!(err, "it is not an ELF object (it starts with `#!/bin/s`)");
        let err = read(&b""[..]).unwrap_err().to_string();
        assert_eq!(err, "it is not an ELF object (it is empty)");
        let err = read(&b"\x7fELF\x02\x01"[..]).unwrap_err().to_string();
        assert!(err.starts_with("its ELF headers are damaged"), "{err}");
    }
}
