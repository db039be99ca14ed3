//! Clang offload bundles (the `.hip_fatbin` section hipcc writes): the magic
//! `__CLANG_OFFLOAD_BUNDLE__`, an entry count, then per entry the payload's offset and size
//! (from the bundle's start) and a target triple such as
//! `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`. A linked object holds one bundle per
//! translation unit, each padded to its section alignment.

use object::ReadRef;

use crate::arch::GfxTarget;
use crate::window::Window;

pub const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
/// A compressed bundle (clang 19+, `--offload-compress`): its entries are not readable
/// without decompressing it.
pub const COMPRESSED_MAGIC: &[u8] = b"CCOB";
/// No target triple is longer; a longer one is damage.
const MAX_TRIPLE: u64 = 1024;

/// What the bundles in a section hold.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Bundles {
    /// The AMD GPU code objects, one per target per bundle.
    pub targets: Vec<GfxTarget>,
    /// Compressed bundles, whose targets were not read.
    pub compressed: usize,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BundleError {
    #[error("byte {at} should start an offload bundle (`__CLANG_OFFLOAD_BUNDLE__`) but does not")]
    BadMagic { at: u64 },
    #[error(
        "the {what} of the bundle at byte {at} claims {claimed} bytes, but only {left} remain"
    )]
    Overrun {
        what: &'static str,
        at: u64,
        claimed: u64,
        left: u64,
    },
    #[error("the bundle at byte {at} names the target `{triple}`, which is not an AMD target ID")]
    BadTarget { at: u64, triple: String },
}

/// The bundles of a section, headers only.
pub fn parse<'d, R: ReadRef<'d>>(data: Window<R>) -> Result<Bundles, BundleError> {
    let mut found = Bundles::default();
    let mut pos = 0u64;
    // Bundles are padded to their section's alignment.
    while let Some(at) = data.skip_zeros(pos) {
        pos = at;
        let magic = data.get(pos, MAGIC.len() as u64);
        if data.get(pos, COMPRESSED_MAGIC.len() as u64) == Some(COMPRESSED_MAGIC) {
            // Its size field differs between format versions: stop at the first one.
            found.compressed += 1;
            return Ok(found);
        }
        if magic != Some(MAGIC) {
            return Err(BundleError::BadMagic { at: pos });
        }
        let bundle = data.from(pos);
        pos += read_bundle(&bundle, pos, &mut found.targets)?;
    }
    Ok(found)
}

/// Reads the bundle at the start of `b` (at byte `at` of the section); returns its length.
fn read_bundle<'d, R: ReadRef<'d>>(
    b: &Window<R>,
    at: u64,
    targets: &mut Vec<GfxTarget>,
) -> Result<u64, BundleError> {
    let overrun = |what, claimed: u64, left: u64| BundleError::Overrun {
        what,
        at,
        claimed,
        left,
    };
    let mut cur = MAGIC.len() as u64;
    let count = read_u64(b, &mut cur).ok_or(overrun("entry count", 8, b.left(cur)))?;
    // Each entry takes at least 24 bytes of header.
    if count > b.len() / 24 {
        return Err(overrun("entry count", count.saturating_mul(24), b.len()));
    }
    let mut end = cur;
    for _ in 0..count {
        let left = b.left(cur);
        let (Some(offset), Some(size), Some(len)) = (
            read_u64(b, &mut cur),
            read_u64(b, &mut cur),
            read_u64(b, &mut cur),
        ) else {
            return Err(overrun("entry header", 24, left));
        };
        let left = b.left(cur);
        let bytes = b
            .get(cur, len)
            .filter(|_| len <= MAX_TRIPLE)
            .ok_or(overrun("target triple", len, left))?;
        let triple = String::from_utf8_lossy(bytes).into_owned();
        cur += len;
        let payload_end = offset
            .checked_add(size)
            .filter(|e| *e <= b.len())
            .ok_or(overrun("code object", size, b.left(offset)))?;
        end = end.max(payload_end);
        if let Some(target) = amd_target(&triple, at)? {
            targets.push(target);
        }
    }
    Ok(end.max(cur))
}

/// `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-` (or `hip-amdgcn-amd-amdhsa-gfx906`) -> its target
/// ID; the host's entry and other offload kinds -> None.
pub fn amd_target(triple: &str, at: u64) -> Result<Option<GfxTarget>, BundleError> {
    let Some((_, id)) = triple.split_once("amdgcn-amd-amdhsa") else {
        return Ok(None);
    };
    GfxTarget::parse(id.trim_start_matches('-'))
        .map(Some)
        .ok_or_else(|| BundleError::BadTarget {
            at,
            triple: triple.to_string(),
        })
}

fn read_u64<'d, R: ReadRef<'d>>(b: &Window<R>, cur: &mut u64) -> Option<u64> {
    let bytes = b.get(*cur, 8)?;
    *cur += 8;
    Some(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
}

/// Builds bundles in the layout clang writes, for the tests of this crate and the hostile
/// ones.
pub mod build {
    /// A bundle with one entry per `(triple, code object)`.
    pub fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let header: usize =
            super::MAGIC.len() + 8 + entries.iter().map(|(t, _)| 24 + t.len()).sum::<usize>();
        let mut out = super::MAGIC.to_vec();
        out.extend((entries.len() as u64).to_le_bytes());
        let mut offset = header;
        for (triple, code) in entries {
            out.extend((offset as u64).to_le_bytes());
            out.extend((code.len() as u64).to_le_bytes());
            out.extend((triple.len() as u64).to_le_bytes());
            out.extend(triple.as_bytes());
            offset += code.len();
        }
        for (_, code) in entries {
            out.extend_from_slice(code);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::build::bundle;
    use super::*;
    use crate::window::of;

    #[test]
    fn targets_of_every_bundle_host_left_out() {
        let mut data = bundle(&[
            ("host-x86_64-unknown-linux", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", b"\x7fELF gfx90a"),
            ("hipv4-amdgcn-amd-amdhsa--gfx940", b"\x7fELF gfx940"),
        ]);
        data.resize(4096, 0);
        data.extend(bundle(&[("hip-amdgcn-amd-amdhsa-gfx906", b"code")]));
        let found = parse(of(&data)).unwrap();
        let names: Vec<String> = found.targets.iter().map(|t| t.to_string()).collect();
        assert_eq!(names, ["gfx90a:xnack-", "gfx940", "gfx906"]);
        assert_eq!(found.compressed, 0);
    }

    #[test]
    fn damaged_bundles_are_errors_naming_the_byte() {
        let good = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code object")]);
        let cut = &good[..good.len() - 4];
        assert!(matches!(
            parse(of(cut)),
            Err(BundleError::Overrun {
                what: "code object",
                ..
            })
        ));
        let mut huge_count = good.clone();
        huge_count[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            parse(of(&huge_count)),
            Err(BundleError::Overrun {
                what: "entry count",
                ..
            })
        ));
        let mut huge_triple = good.clone();
        huge_triple[48..56].copy_from_slice(&(1u64 << 62).to_le_bytes());
        assert!(matches!(
            parse(of(&huge_triple)),
            Err(BundleError::Overrun {
                what: "target triple",
                ..
            })
        ));
        let mut wrap = good.clone();
        wrap[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(of(&wrap)).is_err());
        assert_eq!(
            parse(of(b"junk")).unwrap_err(),
            BundleError::BadMagic { at: 0 }
        );
        let odd = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx90a;rm -rf", b"")]);
        assert!(matches!(
            parse(of(&odd)),
            Err(BundleError::BadTarget { .. })
        ));
    }
}
