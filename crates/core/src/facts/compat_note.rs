//! Whether a forward-compatibility `libcuda` (a CUDA install's `compat/`) should be used on
//! this host, decided as the NVIDIA Container Toolkit decides it (its `enable-cuda-compat`
//! hook, `cmd/nvidia-cdi-hook/cudacompat`, PRs #1598, #1697, #1784): the library's own ELF
//! note `.note.cuda.fwd_compatibility` (owner "NVIDIA Corporation", a JSON description
//! `{"Format":1,"CUDA Version":"13.1","Driver":[535,…,590],"Device":[…]}`) lists the host
//! driver branches it supports; it is used when the host's branch is listed and the compat
//! driver is newer than the host's. A plain version comparison (the compat major above the
//! host's) is only the fallback for a library without the note: it failed in the field
//! (host 580.126.16 against a container's 580.82.07).

use std::path::Path;

use std::os::unix::fs::FileExt;

use super::lookup::driver_key;

/// The section NVIDIA's compat `libcuda` declares itself in.
pub const SECTION: &str = ".note.cuda.fwd_compatibility";
/// The note's owner.
pub const OWNER: &str = "NVIDIA Corporation";

/// What a compat `libcuda` declares.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct CompatNote {
    #[serde(rename = "Format", default)]
    pub format: u32,
    /// The CUDA release it brings (`13.1`).
    #[serde(rename = "CUDA Version", default)]
    pub cuda: String,
    /// The host driver branches (majors) it runs on.
    #[serde(rename = "Driver", default)]
    pub driver: Vec<u64>,
    #[serde(rename = "Device", default)]
    pub device: Vec<u64>,
}

/// Why the note could not be read.
#[derive(Debug, thiserror::Error)]
pub enum NoteError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not an ELF library: {why}")]
    NotElf { path: String, why: String },
    #[error("{path}: its {SECTION} note is not the JSON NVIDIA writes: {why}")]
    BadJson { path: String, why: String },
}

/// The most of a section table or section name table read (a libcuda has ~30 sections).
const MAX_TABLE: u64 = 1 << 20;
/// The most of the note section read (the real note is a few hundred bytes).
const MAX_NOTE: u64 = 64 << 10;

/// The note of the library at `path`: `Ok(None)` when it has none (or one of another owner),
/// as the toolkit treats both. Only the ELF header, the section tables and the note are
/// read, each capped: a compat `libcuda` is ~100 MB and is never read whole.
pub fn read(path: &Path) -> Result<Option<CompatNote>, NoteError> {
    let shown = || path.display().to_string();
    let file = fs_err::File::open(path).map_err(|e| NoteError::Read {
        path: shown(),
        source: e,
    })?;
    let meta = file.metadata().map_err(|e| NoteError::Read {
        path: shown(),
        source: e,
    })?;
    if !meta.is_file() {
        return Err(NoteError::NotElf {
            path: shown(),
            why: "not a regular file".into(),
        });
    }
    let at = |offset: u64, len: u64, cap: u64| -> Result<Vec<u8>, ParseError> {
        if len > cap || offset.checked_add(len).is_none_or(|end| end > meta.len()) {
            return Err(ParseError::NotElf(format!(
                "{len} bytes at {offset} are past its end or too many"
            )));
        }
        let mut buf = vec![0u8; len as usize];
        file.file()
            .read_exact_at(&mut buf, offset)
            .map_err(|e| ParseError::NotElf(e.to_string()))?;
        Ok(buf)
    };
    parse(at).map_err(|e| match e {
        ParseError::NotElf(why) => NoteError::NotElf { path: shown(), why },
        ParseError::BadJson(why) => NoteError::BadJson { path: shown(), why },
    })
}

enum ParseError {
    NotElf(String),
    BadJson(String),
}

/// Reads an unsigned field of `size` bytes at `at` in `b`.
fn field(b: &[u8], at: usize, size: usize, little: bool) -> Option<u64> {
    let bytes = b.get(at..at + size)?;
    let mut v = 0u64;
    for i in 0..size {
        let byte = if little {
            bytes[size - 1 - i]
        } else {
            bytes[i]
        };
        v = (v << 8) | u64::from(byte);
    }
    Some(v)
}

/// The note, from a reader of `(offset, length, cap)` of the file.
fn parse(
    at: impl Fn(u64, u64, u64) -> Result<Vec<u8>, ParseError>,
) -> Result<Option<CompatNote>, ParseError> {
    let bad = |why: &str| ParseError::NotElf(why.to_string());
    let ident = at(0, 64, 64).or_else(|_| at(0, 52, 52))?;
    if ident.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err(bad("no ELF magic"));
    }
    let wide = match ident[4] {
        1 => false,
        2 => true,
        _ => return Err(bad("an unknown ELF class")),
    };
    let little = match ident[5] {
        1 => true,
        2 => false,
        _ => return Err(bad("an unknown byte order")),
    };
    let f =
        |at: usize, size: usize| field(&ident, at, size, little).ok_or_else(|| bad("short header"));
    // e_shoff, e_shentsize, e_shnum, e_shstrndx (ELF64 / ELF32 offsets).
    let (shoff, entsize, shnum, strndx) = if wide {
        (f(0x28, 8)?, f(0x3A, 2)?, f(0x3C, 2)?, f(0x3E, 2)?)
    } else {
        (f(0x20, 4)?, f(0x2E, 2)?, f(0x30, 2)?, f(0x32, 2)?)
    };
    let min_entry = if wide { 64 } else { 40 };
    if shnum == 0 || entsize < min_entry || strndx >= shnum {
        return Ok(None);
    }
    let table = at(shoff, entsize * shnum, MAX_TABLE)?;
    // sh_name, sh_type, sh_offset, sh_size, sh_addralign of section `i`.
    let section = |i: u64| -> Option<(u64, u64, u64, u64, u64)> {
        let base = (i * entsize) as usize;
        let g = |off: usize, size: usize| field(&table, base + off, size, little);
        Some(if wide {
            (g(0, 4)?, g(4, 4)?, g(0x18, 8)?, g(0x20, 8)?, g(0x30, 8)?)
        } else {
            (g(0, 4)?, g(4, 4)?, g(0x10, 4)?, g(0x14, 4)?, g(0x20, 4)?)
        })
    };
    let (_, _, str_off, str_size, _) = section(strndx).ok_or_else(|| bad("short section table"))?;
    let names = at(str_off, str_size, MAX_TABLE)?;
    let name_of = |off: u64| -> Option<&[u8]> {
        let rest = names.get(off as usize..)?;
        Some(&rest[..rest.iter().position(|b| *b == 0)?])
    };
    const SHT_NOTE: u64 = 7;
    let Some((_, _, off, size, align)) = (0..shnum)
        .filter_map(section)
        .find(|(name, kind, ..)| *kind == SHT_NOTE && name_of(*name) == Some(SECTION.as_bytes()))
    else {
        return Ok(None);
    };
    let bytes = at(off, size, MAX_NOTE)?;
    let word = |at: usize| field(&bytes, at, 4, little).map(|v| v as usize);
    // An Elf32_Nhdr (as the toolkit reads it, whatever the class): name size, description
    // size, type; the name padded to the section's alignment, then the description.
    let (Some(namesz), Some(descsz)) = (word(0), word(4)) else {
        return Ok(None);
    };
    if namesz == 0 || descsz == 0 {
        return Ok(None);
    }
    let align = align.clamp(1, 4096) as usize;
    let padded = namesz.div_ceil(align) * align;
    let trim = |from: usize, n: usize| -> &[u8] {
        let from = from.min(bytes.len());
        let to = from.saturating_add(n).min(bytes.len());
        let s = &bytes[from..to];
        let start = s.iter().position(|b| *b != 0).unwrap_or(s.len());
        let end = s.iter().rposition(|b| *b != 0).map_or(start, |e| e + 1);
        &s[start..end]
    };
    if trim(12, padded) != OWNER.as_bytes() {
        return Ok(None);
    }
    let desc = trim(12 + padded, descsz);
    serde_json::from_slice(desc)
        .map(Some)
        .map_err(|e| ParseError::BadJson(e.to_string()))
}

/// What decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidedBy {
    /// The library's note and the host driver.
    Note,
    /// The note's CUDA release against the host driver's (no driver version to compare).
    NoteCuda,
    /// No note: the majors of the compat and host drivers.
    Majors,
    /// Nothing to compare.
    Unknown,
}

/// The toolkit's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub use_compat: bool,
    pub by: DecidedBy,
    /// Why, in words.
    pub why: String,
}

/// `major.minor` of a CUDA release text.
fn release(s: &str) -> Option<(u64, u64)> {
    let mut p = s.trim().split('.');
    Some((
        p.next()?.parse().ok()?,
        p.next().unwrap_or("0").parse().ok()?,
    ))
}

/// Whether the compat `libcuda` (version `compat_driver`, from its file name) is to be used
/// with the host's kernel driver (`host_driver`, and `host_cuda`, the release it supports as
/// nvidia-smi says), as `UseCompat` and `useCompatLibraries` decide.
pub fn decide(
    note: Option<&CompatNote>,
    compat_driver: Option<&str>,
    host_driver: Option<&str>,
    host_cuda: Option<&str>,
) -> Decision {
    let compat = compat_driver.and_then(driver_key);
    let host = host_driver.and_then(driver_key);
    let d = |use_compat, by, why: String| Decision {
        use_compat,
        by,
        why,
    };
    match (note, compat, host) {
        (Some(n), Some(c), Some(h)) => {
            let branch = h[0];
            if !n.driver.contains(&branch) {
                d(
                    false,
                    DecidedBy::Note,
                    format!(
                        "its note lists host driver branches {:?}, not {branch} (the host's {})",
                        n.driver,
                        host_driver.unwrap_or_default()
                    ),
                )
            } else if c > h {
                d(
                    true,
                    DecidedBy::Note,
                    format!(
                    "its note lists the host's branch {branch}, and {} is newer than the host's {}",
                    compat_driver.unwrap_or_default(),
                    host_driver.unwrap_or_default()
                ),
                )
            } else {
                d(false, DecidedBy::Note, format!(
                    "its note lists the host's branch {branch}, but {} is not newer than the host's {}",
                    compat_driver.unwrap_or_default(),
                    host_driver.unwrap_or_default()
                ))
            }
        }
        (Some(n), _, _) => match (release(&n.cuda), host_cuda.and_then(release)) {
            (Some(c), Some(h)) => d(
                c > h,
                DecidedBy::NoteCuda,
                format!(
                    "its note's CUDA {} against the host driver's CUDA {}",
                    n.cuda,
                    host_cuda.unwrap_or_default()
                ),
            ),
            _ => d(
                false,
                DecidedBy::Unknown,
                "no host driver or CUDA version to compare with its note".into(),
            ),
        },
        // Without the note, a known host CUDA version means no (the toolkit needs the note to
        // compare it with); else the majors, when both drivers are known.
        (None, _, _) if host_cuda.is_some() => d(
            false,
            DecidedBy::Unknown,
            "no note to compare the host driver's CUDA version with".into(),
        ),
        (None, _, _) if host.is_none() || compat.is_none() => d(
            false,
            DecidedBy::Unknown,
            "no note, and no driver versions to compare".into(),
        ),
        (None, Some(c), Some(h)) => d(
            c[0] > h[0],
            DecidedBy::Majors,
            format!("no note: compat major {} against the host's {}", c[0], h[0]),
        ),
        (None, _, _) => d(false, DecidedBy::Unknown, "no note".into()),
    }
}

/// The decision for a forward-compatibility directory on this host, as the toolkit's hook
/// makes it: its one `libcuda.so.X.Y…` (none, or more than one: `None`), that file's note, and
/// the kernel driver. `None` too when the directory cannot be listed.
pub fn for_dir(dir: &Path, host_driver: &str) -> Option<(String, Decision)> {
    let mut libs = fs_err::read_dir(dir).ok()?.flatten().filter_map(|e| {
        let name = e.file_name().into_string().ok()?;
        let version = super::driver_dirs::libcuda_version(&name)?.to_string();
        // `libcuda.so.*.*`: a version with a dot, as the hook's glob.
        version.contains('.').then_some(version)
    });
    let (version, None) = (libs.next()?, libs.next()) else {
        return None;
    };
    let note = read(&dir.join(format!("libcuda.so.{version}")))
        .ok()
        .flatten();
    let d = decide(note.as_ref(), Some(&version), Some(host_driver), None);
    Some((version, d))
}

#[cfg(test)]
mod tests;
