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

use object::{Object, ObjectSection, SectionKind};

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

/// A compat `libcuda` is at most this large (the real ones are ~100 MB); larger is not read.
const MAX_LIBCUDA: u64 = 1 << 30;

/// The note of the library at `path`: `Ok(None)` when it has none (or one of another owner),
/// as the toolkit treats both.
pub fn read(path: &Path) -> Result<Option<CompatNote>, NoteError> {
    let shown = || path.display().to_string();
    let meta = fs_err::metadata(path).map_err(|e| NoteError::Read {
        path: shown(),
        source: e,
    })?;
    if !meta.is_file() || meta.len() > MAX_LIBCUDA {
        return Err(NoteError::NotElf {
            path: shown(),
            why: "not a regular file of a library's size".into(),
        });
    }
    let data = fs_err::read(path).map_err(|e| NoteError::Read {
        path: shown(),
        source: e,
    })?;
    parse(&data).map_err(|e| match e {
        ParseError::NotElf(why) => NoteError::NotElf { path: shown(), why },
        ParseError::BadJson(why) => NoteError::BadJson { path: shown(), why },
    })
}

enum ParseError {
    NotElf(String),
    BadJson(String),
}

fn parse(data: &[u8]) -> Result<Option<CompatNote>, ParseError> {
    let file = object::File::parse(data).map_err(|e| ParseError::NotElf(e.to_string()))?;
    let Some(section) = file
        .sections()
        .find(|s| s.name() == Ok(SECTION) && s.kind() == SectionKind::Note)
    else {
        return Ok(None);
    };
    let bytes = section
        .data()
        .map_err(|e| ParseError::NotElf(e.to_string()))?;
    let little = file.is_little_endian();
    let word = |at: usize| -> Option<usize> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        } as usize)
    };
    // An Elf32_Nhdr (as the toolkit reads it, whatever the class): name size, description
    // size, type; the name padded to the section's alignment, then the description.
    let (Some(namesz), Some(descsz)) = (word(0), word(4)) else {
        return Ok(None);
    };
    if namesz == 0 || descsz == 0 {
        return Ok(None);
    }
    let align = section.align().max(1) as usize;
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
