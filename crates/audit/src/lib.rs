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
pub const FATBIN_SECTIONS: &[&str] = &[".nv_fatbin", "__nv_relfatbin"];
/// Sections holding clang offload bundles (HIP).
pub const BUNDLE_SECTIONS: &[&str] = &[".hip_fatbin", "__CLANG_OFFLOAD_BUNDLE__"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectKind {
    /// A shared object (`.so`) or a position-independent executable.
    Shared,
    Relocatable,
    Executable,
    Other,
}

impl ObjectKind {
    pub fn describe(self) -> &'static str {
        match self {
            ObjectKind::Shared => "shared object",
            ObjectKind::Relocatable => "relocatable object",
            ObjectKind::Executable => "executable",
            ObjectKind::Other => "ELF file",
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
}

/// Reads an ELF object from a file, through a cache: only its headers and GPU sections are
/// read, so a 2 GB library costs what its fatbinary costs.
pub fn read_file(file: std::fs::File) -> Result<Object, AuditError> {
    read(&object::ReadCache::new(file))
}

/// Reads an ELF object from `data` (a byte slice, or an `object::ReadCache` over a file, so
/// only headers and GPU sections are read).
pub fn read<'d, R: ReadRef<'d>>(data: R) -> Result<Object, AuditError> {
    let len = data.len().unwrap_or(0).min(16);
    let start = data.read_bytes_at(0, len).unwrap_or(&[]);
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

fn read_elf<'d, Elf, R>(data: R) -> Result<Object, AuditError>
where
    Elf: FileHeader<Endian = Endianness>,
    R: ReadRef<'d>,
{
    let file = ElfFile::<Elf, R>::parse(data).map_err(AuditError::Elf)?;
    let kind = match file.kind() {
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
        let fat = FATBIN_SECTIONS.iter().find(|n| **n == name);
        let bundled = BUNDLE_SECTIONS.iter().find(|n| **n == name);
        if fat.is_none() && bundled.is_none() {
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
