//! The registered roots, looked up by a path. A copy carries a table of its toolchains'
//! roots by hash, written with it and searched in place (nothing of it is read whole: a
//! site's hundreds cost a call a binary search); entries held whole get such a table made
//! at the first question. A hash only finds candidates: each is decoded and compared whole,
//! so a table that lies (a copy is read as hostile) can hide a root, never add one.

use std::borrow::Cow;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::{line, Inner, Layer, Name, Slot};

/// `path` as the registry's roots are compared: as written, unless it has an empty or `.`
/// component or a trailing `/` (which comparing by components ignores): then rebuilt from
/// its components.
pub fn root_key(path: &Path) -> Cow<'_, [u8]> {
    let b = path.as_os_str().as_bytes();
    match is_plain(b) {
        true => Cow::Borrowed(b),
        false => Cow::Owned(
            path.components()
                .collect::<PathBuf>()
                .into_os_string()
                .into_vec(),
        ),
    }
}

/// No `//`, `/./`, trailing `/.` or trailing `/` (`/` itself is plain): a look at each
/// slash, not at each byte.
fn is_plain(b: &[u8]) -> bool {
    crate::byte_search::find_iter(b'/', b).all(|i| match b.get(i + 1) {
        Some(b'/') => false,
        Some(b'.') => !matches!(b.get(i + 2), None | Some(b'/')),
        Some(_) => true,
        None => i == 0,
    })
}

/// The hash of a root key in the tables (stable: tables are written to copies).
pub(super) fn hash(b: &[u8]) -> u64 {
    crate::fsutil::checksum(b)
}

/// A copy's table of roots: `count` records from `start` of its text, each the hash of a
/// toolchain's root key and the offset of its line, in hex and fixed width, ordered by
/// hash then offset.
#[derive(Clone, Copy)]
pub(super) struct Table {
    start: u32,
    count: u32,
}

/// `{hash:016x}\t{offset:08x}\n`.
const RECORD: usize = 26;

impl Table {
    /// The table at `at` of `text`: its number of records, then exactly that many to the
    /// end of the text.
    pub(super) fn of_copy(text: &str, at: usize) -> Option<Table> {
        let rest = text.get(at..)?;
        let n = crate::byte_search::find(b'\n', rest.as_bytes())?;
        let count: u32 = rest.get(..n)?.parse().ok()?;
        let start = at + n + 1;
        let size = (count as usize).checked_mul(RECORD)?;
        (text.len().checked_sub(start)? == size).then_some(())?;
        Some(Table {
            start: u32::try_from(start).ok()?,
            count,
        })
    }

    /// Appends the table of `roots` (hash, line offset) to `out`.
    pub(super) fn encode(out: &mut String, mut roots: Vec<(u64, u32)>) {
        roots.sort_unstable();
        *out += &format!("{}\n", roots.len());
        for (h, offset) in roots {
            *out += &format!("{h:016x}\t{offset:08x}\n");
        }
    }

    /// Record `i` of the table in `text`; `None` for one that does not read.
    fn record(self, text: &[u8], i: u32) -> Option<(u64, u32)> {
        let at = self.start as usize + i as usize * RECORD;
        let r = text.get(at..at + RECORD)?;
        let (h, tab, offset, nl) = (r.get(..16)?, r.get(16)?, r.get(17..25)?, r.get(25)?);
        (*tab == b'\t' && *nl == b'\n').then_some(())?;
        Some((hex(h)?, u32::try_from(hex(offset)?).ok()?))
    }
}

/// `h` as 16 lowercase hex digits, as the table writes it.
fn hex16(h: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, d) in out.iter_mut().enumerate() {
        let nibble = (h >> (60 - 4 * i)) & 0xf;
        *d = b"0123456789abcdef"[nibble as usize];
    }
    out
}

fn hex(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |v, c| {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        Some(v << 4 | u64::from(d))
    })
}

impl Inner {
    /// The slots of layer `l` its copy's table gives for the hash `h`: each the slot whose
    /// line is at the offset recorded, if that slot is the one its name finds here.
    pub(super) fn in_table<'a>(
        &'a self,
        l: usize,
        layer: &'a Layer,
        h: u64,
    ) -> impl Iterator<Item = &'a Slot> + 'a {
        let text = layer.text.as_bytes();
        let table = layer.table.unwrap_or(Table { start: 0, count: 0 });
        // Fixed-width lowercase hex: ordered as the numbers are, so compared as bytes.
        let want = hex16(h);
        let hash_of = move |i: u32| {
            let at = table.start as usize + i as usize * RECORD;
            text.get(at..at + 16)
        };
        let (mut lo, mut hi) = (0, table.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match hash_of(mid) {
                Some(x) if x < &want[..] => lo = mid + 1,
                _ => hi = mid,
            }
        }
        (lo..table.count)
            .map_while(move |i| table.record(text, i).filter(|(x, _)| *x == h))
            .filter_map(move |(_, offset)| self.slot_at(l, layer, offset))
    }

    /// The slot whose line starts at `offset` of layer `l`'s copy.
    fn slot_at(&self, l: usize, layer: &Layer, offset: u32) -> Option<&Slot> {
        let at = offset as usize;
        let text = layer.text.as_bytes();
        let starts_line =
            at == layer.lines.start as usize || text.get(at.checked_sub(1)?) == Some(&b'\n');
        (layer.lines.contains(&offset) && starts_line).then_some(())?;
        let rest = text.get(at..layer.lines.end as usize)?;
        let tab = rest.iter().position(|b| *b == b'\t' || *b == b'\n')?;
        let name = layer.text.get(at + 1..(at + tab).checked_sub(1)?)?;
        let s = self.slots.get(self.find(name).ok()?)?;
        let here = matches!(s.name, Name::Line { start, .. } if start == offset);
        (s.layer as usize == l && here).then_some(s)
    }

    /// The hash of each slot's root key and the slot, ordered by hash, for the slots no
    /// copy's table has: entries held whole.
    pub(super) fn root_table(&self) -> Vec<(u64, u32)> {
        let in_a_table = |s: &Slot| {
            matches!(s.name, Name::Line { .. })
                && self
                    .layers
                    .get(s.layer as usize)
                    .is_some_and(|l| l.table.is_some())
        };
        let mut table: Vec<(u64, u32)> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !in_a_table(s))
            .filter_map(|(i, s)| Some((self.root_hash(s)?, u32::try_from(i).ok()?)))
            .collect();
        table.sort_unstable();
        table
    }

    /// The hash of a slot's root key: read off its line where the root needs no unescaping,
    /// else from the decoded entry. `None` for a line that does not decode.
    fn root_hash(&self, s: &Slot) -> Option<u64> {
        let from_line = match (&s.name, s.entry.get()) {
            (Name::Line { start, end, .. }, None) => self
                .layers
                .get(s.layer as usize)
                .and_then(|l| l.text.get(*start as usize..*end as usize))
                .and_then(|l| line::fields(l).nth(4))
                .and_then(line::plain),
            _ => None,
        };
        match from_line {
            Some(root) => Some(hash(&root_key(Path::new(root)))),
            None => Some(hash(&root_key(&self.entry(s)?.root))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_is_compared_as_its_components_say() {
        for (path, key) in [
            ("/opt/cuda", "/opt/cuda"),
            ("/", "/"),
            ("/opt//cuda/./lib/", "/opt/cuda/lib"),
            ("/opt/cuda/.", "/opt/cuda"),
            ("/opt/cuda/", "/opt/cuda"),
            ("/opt/.cuda/..x/", "/opt/.cuda/..x"),
            ("/opt/.cuda", "/opt/.cuda"),
        ] {
            assert_eq!(root_key(Path::new(path)), key.as_bytes(), "{path}");
        }
        assert_ne!(hash(b"/opt/cuda-12.4"), hash(b"/opt/cuda-12.5"));
        assert_ne!(hash(b"/opt/cuda"), hash(b"/opt/cuda\0"));
        for h in [0, 1, 0xdead_beef, u64::MAX] {
            assert_eq!(hex16(h), format!("{h:016x}").as_bytes());
            assert_eq!(hex(&hex16(h)), Some(h));
        }
    }
}
