//! What the state keeps of each variable the hook set ([`Saved`]), and how it writes it:
//! the value before in full, the value after as much of it as a later prompt needs.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::path_list;
use crate::plan::env::PATH_LISTS;

/// One variable the hook set: what was there before, and what it set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "SavedWire", into = "SavedWire")]
pub struct Saved {
    pub before: Option<OsString>,
    pub after: After,
}

/// What the hook set a variable to, as much of it as a later prompt needs. A later prompt
/// asks whether the variable still holds it (else the user changed it, and it is theirs),
/// and of a path list, which entries the hook added and removed. So a value longer than
/// [`After::KEPT`] that is not a path list is kept as its checksum (the value itself is in
/// the environment while it holds), and a path list as its checksum and those entries
/// where that is shorter than the list (a user's long `PATH`, to which the hook adds one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    Value(Option<OsString>),
    Sum(u64),
    Entries {
        sum: u64,
        /// In the list the hook set, not in the one before.
        added: Vec<OsString>,
        /// In the list before, not in the one the hook set.
        removed: Vec<OsString>,
    },
}

impl After {
    /// Values up to this long are kept as they are (a checksum is about as long).
    pub const KEPT: usize = 24;

    /// What the hook set `key` to (`value`; `before` was there), as it is kept.
    pub fn new(key: &str, before: Option<&OsStr>, value: Option<OsString>) -> After {
        let v = match value {
            Some(v) if v.len() > After::KEPT => v,
            short => return After::Value(short),
        };
        let sum = crate::fsutil::checksum(v.as_bytes());
        if !PATH_LISTS.contains(&key) {
            return After::Sum(sum);
        }
        let (added, removed) = list_changes(before, Some(&v));
        // Each entry costs its quotes and a comma; the checksum up to 20 digits.
        let size: usize = added.iter().chain(&removed).map(|e| e.len() + 3).sum();
        if size + 20 < v.len() {
            After::Entries {
                sum,
                added,
                removed,
            }
        } else {
            After::Value(Some(v))
        }
    }

    /// Whether a variable whose value is `now` still holds what the hook set.
    pub fn holds(&self, now: Option<&OsStr>) -> bool {
        match self {
            After::Value(v) => v.as_deref() == now,
            After::Sum(sum) | After::Entries { sum, .. } => now.is_some_and(|n| {
                n.len() > After::KEPT && crate::fsutil::checksum(n.as_bytes()) == *sum
            }),
        }
    }

    /// The value itself, where it was kept.
    pub fn value(&self) -> Option<&OsStr> {
        match self {
            After::Value(v) => v.as_deref(),
            After::Sum(_) | After::Entries { .. } => None,
        }
    }

    /// Of a path list: the entries the hook added to `before`, and those it took out.
    /// A checksum alone tells neither: nothing counts as added, all of `before` as taken
    /// out (so nothing of a user's list is taken out, and what is missing is put back).
    pub(super) fn list_changes(&self, before: Option<&OsStr>) -> (Vec<OsString>, Vec<OsString>) {
        match self {
            After::Entries { added, removed, .. } => (added.clone(), removed.clone()),
            other => list_changes(before, other.value()),
        }
    }
}

/// The entries of path list `after` not in `before`, and those of `before` not in `after`.
pub(super) fn list_changes(
    before: Option<&OsStr>,
    after: Option<&OsStr>,
) -> (Vec<OsString>, Vec<OsString>) {
    let before = path_list::split(before);
    let after = path_list::split(after);
    let added = after
        .iter()
        .filter(|e| !before.contains(e))
        .cloned()
        .collect();
    let removed = before
        .iter()
        .filter(|e| !after.contains(e))
        .cloned()
        .collect();
    (added, removed)
}

/// [`Saved`] as the state writes it: `[before, after]`, `after` a number where it is a
/// checksum, `[checksum, [added…], [removed…]]` where it is a path list's entries.
#[derive(Serialize, Deserialize)]
struct SavedWire(#[serde(with = "os_value")] Option<OsString>, AfterWire);

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum AfterWire {
    Sum(u64),
    Entries(
        u64,
        #[serde(with = "os_value::list")] Vec<OsString>,
        #[serde(with = "os_value::list")] Vec<OsString>,
    ),
    Value(#[serde(with = "os_value")] Option<OsString>),
}

impl From<SavedWire> for Saved {
    fn from(SavedWire(before, after): SavedWire) -> Saved {
        let after = match after {
            AfterWire::Sum(sum) => After::Sum(sum),
            AfterWire::Entries(sum, added, removed) => After::Entries {
                sum,
                added,
                removed,
            },
            AfterWire::Value(v) => After::Value(v),
        };
        Saved { before, after }
    }
}

impl From<Saved> for SavedWire {
    fn from(saved: Saved) -> SavedWire {
        let after = match saved.after {
            After::Sum(sum) => AfterWire::Sum(sum),
            After::Entries {
                sum,
                added,
                removed,
            } => AfterWire::Entries(sum, added, removed),
            After::Value(v) => AfterWire::Value(v),
        };
        SavedWire(saved.before, after)
    }
}

/// [`Saved`] as versions up to 2 wrote it: both values in full, by name.
#[derive(Deserialize)]
pub(super) struct SavedV2 {
    #[serde(with = "os_value")]
    before: Option<OsString>,
    #[serde(with = "os_value")]
    after: Option<OsString>,
}

impl From<SavedV2> for Saved {
    fn from(old: SavedV2) -> Saved {
        Saved {
            before: old.before,
            after: After::Value(old.after),
        }
    }
}

pub(super) fn from_v2(vars: BTreeMap<String, SavedV2>) -> BTreeMap<String, Saved> {
    vars.into_iter().map(|(k, s)| (k, s.into())).collect()
}

/// A value in the state: a JSON string when it is UTF-8, else its bytes as an array, so
/// the state (itself an environment variable) stays text and every byte comes back.
mod os_value {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub fn serialize<S: Serializer>(v: &Option<OsString>, s: S) -> Result<S::Ok, S::Error> {
        v.as_deref().map(Repr::of).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<OsString>, D::Error> {
        Ok(Option::<Repr>::deserialize(d)?.map(Repr::into_os))
    }

    impl Repr {
        fn of(v: &OsStr) -> Repr {
            match v.to_str() {
                Some(t) => Repr::Text(t.to_string()),
                None => Repr::Bytes(v.as_bytes().to_vec()),
            }
        }

        fn into_os(self) -> OsString {
            match self {
                Repr::Text(t) => OsString::from(t),
                Repr::Bytes(b) => OsString::from_vec(b),
            }
        }
    }

    /// Path list entries, each as a value is.
    pub mod list {
        use super::*;

        pub fn serialize<S: Serializer>(v: &[OsString], s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(v.iter().map(|e| Repr::of(e)))
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<OsString>, D::Error> {
            Ok(Vec::<Repr>::deserialize(d)?
                .into_iter()
                .map(Repr::into_os)
                .collect())
        }
    }
}
