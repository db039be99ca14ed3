//! CUDA fatbinaries (the `.nv_fatbin` section of a linked object, `__nv_relfatbin` of a
//! relocatable one): one or more containers, each a 16-byte header (magic 0xBA55ED50,
//! version, header size, size of its entries) followed by entries, each with its own header
//! (kind, header size, payload size, format version, arch, flags) and payload. Only the
//! headers are read: a compressed payload still names its arch.

use serde::Serialize;

use object::ReadRef;

use crate::arch::{ImageArch, Suffix};
use crate::window::Window;

pub const MAGIC: u32 = 0xBA55_ED50;
const HEADER: usize = 16;
const ENTRY_HEADER: usize = 64;

const KIND_PTX: u16 = 1;
const KIND_ELF: u16 = 2;
/// LZ4 (older nvcc's `-compress-all`) and zstd (CUDA 13's default for PTX).
const FLAG_COMPRESSED: u64 = 0x2000 | 0x8000;
const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
const FLAG_FAMILY: u64 = 0x20_0000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageKind {
    /// Machine code (an ELF cubin).
    Sass,
    /// PTX the driver compiles at load time.
    Ptx,
}

/// One entry of a fatbinary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub kind: ImageKind,
    pub arch: ImageArch,
    pub compressed: bool,
    /// A PTX entry's ISA version (9.0 from CUDA 13.0): a driver older than the ISA cannot
    /// compile it.
    pub ptx_isa: Option<(u16, u16)>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FatbinError {
    #[error(
        "byte {at} should start a fatbinary header (magic 0xba55ed50) but holds {found:#010x}"
    )]
    BadMagic { at: u64, found: u32 },
    #[error("the {what} at byte {at} claims {claimed} bytes, but only {left} remain")]
    Overrun {
        what: &'static str,
        at: u64,
        claimed: u64,
        left: u64,
    },
    #[error("the entry at byte {at} has a header of {size} bytes, fewer than the {ENTRY_HEADER} every entry has")]
    ShortEntry { at: u64, size: u32 },
}

/// The entries of every container in a fatbin section, other kinds than SASS and PTX (LTO
/// IR) left out. Only headers are read.
pub fn parse<'d, R: ReadRef<'d>>(data: Window<R>) -> Result<Vec<Image>, FatbinError> {
    let mut images = Vec::new();
    let mut pos = 0u64;
    // Containers are 8-byte aligned; what follows the last is padding.
    while let Some(at) = data.skip_zeros(pos) {
        pos = at;
        let head = take(&data, pos, HEADER as u64, "fatbinary header")?;
        let magic = u32_at(head, 0);
        if magic != MAGIC {
            return Err(FatbinError::BadMagic {
                at: pos,
                found: magic,
            });
        }
        let header_size = u64::from(u16_at(head, 6)).max(HEADER as u64);
        let start = pos.saturating_add(header_size);
        let end = span_end(&data, pos, start, u64_at(head, 8), "fatbinary header")?;
        let mut at = start;
        while at < end {
            let (image, next) = entry(&data, at, end)?;
            images.extend(image);
            at = next;
        }
        pos = end.next_multiple_of(8);
    }
    Ok(images)
}

/// The entry at `at`, which must end by `end` (its container's end).
fn entry<'d, R: ReadRef<'d>>(
    data: &Window<R>,
    at: u64,
    end: u64,
) -> Result<(Option<Image>, u64), FatbinError> {
    let container = data.until(end);
    let head = take(&container, at, ENTRY_HEADER as u64, "fatbinary entry")?;
    let kind = u16_at(head, 0);
    let header_size = u32_at(head, 4);
    if (header_size as usize) < ENTRY_HEADER {
        return Err(FatbinError::ShortEntry {
            at,
            size: header_size,
        });
    }
    let start = at.saturating_add(u64::from(header_size));
    let next = span_end(&container, at, start, u64_at(head, 8), "fatbinary entry")?;
    let flags = u64_at(head, 40);
    let variant = if flags & FLAG_ARCH_SPECIFIC != 0 {
        Suffix::A
    } else if flags & FLAG_FAMILY != 0 {
        Suffix::F
    } else {
        Suffix::None
    };
    let arch = ImageArch::new(u32_at(head, 28), variant);
    let version = (u16_at(head, 26), u16_at(head, 24));
    let image = match kind {
        KIND_ELF => Some(ImageKind::Sass),
        KIND_PTX => Some(ImageKind::Ptx),
        _ => None,
    }
    .map(|kind| Image {
        kind,
        arch,
        compressed: flags & FLAG_COMPRESSED != 0,
        ptx_isa: (kind == ImageKind::Ptx).then_some(version),
    });
    Ok((image, next))
}

/// The end of `size` bytes from `start`, if the window holds them.
fn span_end<'d, R: ReadRef<'d>>(
    data: &Window<R>,
    at: u64,
    start: u64,
    size: u64,
    what: &'static str,
) -> Result<u64, FatbinError> {
    let left = data.left(start);
    if size <= left {
        Ok(start + size)
    } else {
        Err(FatbinError::Overrun {
            what,
            at,
            claimed: size,
            left,
        })
    }
}

fn take<'d, R: ReadRef<'d>>(
    data: &Window<R>,
    at: u64,
    len: u64,
    what: &'static str,
) -> Result<&'d [u8], FatbinError> {
    data.get(at, len).ok_or(FatbinError::Overrun {
        what,
        at,
        claimed: len,
        left: data.left(at),
    })
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Builds fatbinaries in the layout nvcc writes, for the tests of this crate and the
/// hostile ones.
pub mod build {
    use super::*;

    /// An entry: kind (1 PTX, 2 ELF), sm number, flags, payload.
    pub struct Entry<'a> {
        pub kind: u16,
        pub sm: u32,
        pub flags: u64,
        pub payload: &'a [u8],
    }

    /// One container holding `entries`.
    pub fn container(entries: &[Entry<'_>]) -> Vec<u8> {
        let mut body = Vec::new();
        for e in entries {
            let mut h = vec![0u8; ENTRY_HEADER];
            h[0..2].copy_from_slice(&e.kind.to_le_bytes());
            h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
            h[4..8].copy_from_slice(&(ENTRY_HEADER as u32).to_le_bytes());
            h[8..16].copy_from_slice(&(e.payload.len() as u64).to_le_bytes());
            let (minor, major): (u16, u16) = if e.kind == KIND_PTX { (0, 9) } else { (8, 1) };
            h[24..26].copy_from_slice(&minor.to_le_bytes());
            h[26..28].copy_from_slice(&major.to_le_bytes());
            h[28..32].copy_from_slice(&e.sm.to_le_bytes());
            h[40..48].copy_from_slice(&(e.flags | 0x11).to_le_bytes());
            body.extend(h);
            body.extend_from_slice(e.payload);
        }
        let mut out = Vec::new();
        out.extend(MAGIC.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend((HEADER as u16).to_le_bytes());
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(body);
        out.resize(out.len().next_multiple_of(8), 0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::build::{container, Entry};
    use super::*;
    use crate::window::of;

    const CUBIN: &[u8] = b"\x7fELF cubin";

    #[test]
    fn entries_of_every_container_with_their_variants() {
        let mut data = container(&[
            Entry {
                kind: 2,
                sm: 80,
                flags: 0,
                payload: CUBIN,
            },
            Entry {
                kind: 2,
                sm: 90,
                flags: FLAG_ARCH_SPECIFIC,
                payload: CUBIN,
            },
        ]);
        data.extend(container(&[
            Entry {
                kind: 1,
                sm: 100,
                flags: FLAG_FAMILY | 0x8000,
                payload: b"zstd",
            },
            Entry {
                kind: 8,
                sm: 90,
                flags: 0,
                payload: b"lto",
            },
        ]));
        data.extend([0; 16]);
        let images = parse(of(&data)).unwrap();
        let shown: Vec<(ImageKind, String, bool)> = images
            .iter()
            .map(|i| (i.kind, i.arch.to_string(), i.compressed))
            .collect();
        assert_eq!(
            shown,
            [
                (ImageKind::Sass, "sm_80".into(), false),
                (ImageKind::Sass, "sm_90a".into(), false),
                (ImageKind::Ptx, "sm_100f".into(), true),
            ]
        );
        assert_eq!(images[2].ptx_isa, Some((9, 0)));
    }

    #[test]
    fn damaged_fatbinaries_are_errors_naming_the_byte() {
        let good = container(&[Entry {
            kind: 2,
            sm: 80,
            flags: 0,
            payload: CUBIN,
        }]);
        // Cut inside the entry's payload.
        let cut = &good[..good.len() - 12];
        assert!(matches!(
            parse(of(cut)),
            Err(FatbinError::Overrun { at: 0, .. })
        ));
        // A header claiming more than a 64-bit size can hold.
        let mut huge = good.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        let err = parse(of(&huge)).unwrap_err().to_string();
        assert!(err.contains("claims 18446744073709551615 bytes"), "{err}");
        // An entry claiming more than its container.
        let mut entry = good.clone();
        entry[HEADER + 8..HEADER + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(matches!(
            parse(of(&entry)),
            Err(FatbinError::Overrun {
                what: "fatbinary entry",
                at: 16,
                ..
            })
        ));
        let mut short = good.clone();
        short[HEADER + 4..HEADER + 8].copy_from_slice(&0u32.to_le_bytes());
        assert!(matches!(
            parse(of(&short)),
            Err(FatbinError::ShortEntry { size: 0, .. })
        ));
        assert!(matches!(
            parse(of(b"not a fatbin at all")),
            Err(FatbinError::BadMagic { at: 0, .. })
        ));
        assert_eq!(
            parse(of(&good[..3])).unwrap_err().to_string(),
            "the fatbinary header at byte 0 claims 16 bytes, but only 3 remain"
        );
    }
}
