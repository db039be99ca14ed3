//! One toolchain as one line of a registry copy: its name and fixed fields separated by
//! tabs, each string a JSON string (so a tab or newline in a path is escaped, never a
//! separator), then what it has besides them as JSON. Read by finding tabs, not by parsing
//! JSON objects, and only for a toolchain a call asks about.

use std::path::Path;

use super::super::entry::{Collectives, Entry, Source};
use super::super::system::System;

/// What an entry has besides its fixed fields, as JSON (absent when it has none).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Extra {
    collectives: Option<Collectives>,
    system: Option<System>,
}

/// The line of `name` and `e`; `None` for a path that is not UTF-8.
pub fn encode(name: &str, e: &Entry) -> Option<String> {
    let s = |v: &str| serde_json::to_string(v).ok();
    let p = |v: &Path| v.to_str().and_then(s);
    let extra = match (&e.collectives, &e.system) {
        (None, None) => String::new(),
        (c, sys) => serde_json::to_string(&Extra {
            collectives: c.clone(),
            system: sys.clone(),
        })
        .ok()?,
    };
    Some(
        [
            s(name)?,
            e.kind.to_string(),
            e.version.to_string(),
            e.source.as_str().to_string(),
            p(&e.root)?,
            s(&e.version_from)?,
            p(&e.include_dir)?,
            p(&e.lib_dir)?,
            extra,
        ]
        .join("\t"),
    )
}

/// The fields of `line`, found byte by byte (`split('\t')`'s searcher cost more than the
/// rest of a line's decoding).
pub fn fields(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(line);
    std::iter::from_fn(move || {
        let s = rest?;
        match crate::byte_search::find(b'\t', s.as_bytes()) {
            Some(i) => {
                rest = s.get(i + 1..);
                s.get(..i)
            }
            None => {
                rest = None;
                Some(s)
            }
        }
    })
}

/// The entry of the line [`encode`] wrote for `name`; `None` for anything else: another
/// name, a field that does not read, a name the settings could not hold (`check_name`).
pub fn decode(line: &str, name: &str) -> Option<Entry> {
    let mut next = fields(line);
    if string(next.next()?)? != name {
        return None;
    }
    let kind = next.next()?.parse().ok()?;
    super::super::check_name(name, kind).ok()?;
    let version = next.next()?.parse().ok()?;
    let source = match next.next()? {
        "linked" => Source::Linked,
        "discovered" => Source::Discovered,
        "installed" => Source::Installed,
        _ => return None,
    };
    let root = string(next.next()?)?.into();
    let version_from = string(next.next()?)?;
    let include_dir = string(next.next()?)?.into();
    let lib_dir = string(next.next()?)?.into();
    let extra = match next.next()? {
        "" => Extra {
            collectives: None,
            system: None,
        },
        json => serde_json::from_str(json).ok()?,
    };
    if next.next().is_some() {
        return None;
    }
    Some(Entry {
        kind,
        version,
        root,
        source,
        version_from,
        include_dir,
        lib_dir,
        collectives: extra.collectives,
        system: extra.system,
    })
}

/// A JSON string's inner text when it has no escapes (what names and most paths are):
/// the bytes as they are. `None` otherwise.
pub fn plain(field: &str) -> Option<&str> {
    let inner = field.strip_prefix('"')?.strip_suffix('"')?;
    let escaped = inner.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20);
    (!escaped).then_some(inner)
}

/// A JSON string; the common one, without escapes, taken as it is.
fn string(field: &str) -> Option<String> {
    match plain(field) {
        Some(inner) => Some(inner.to_string()),
        None => serde_json::from_str(field).ok(),
    }
}
