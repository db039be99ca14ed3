//! The registered toolchains by name, in name order: the registry's map. An entry is held
//! whole (parsed from a settings file, or added), or is a line of a compact copy
//! (`registry_cache`) decoded the first time it is asked for, so a call that uses one of a
//! site store's hundreds of toolchains decodes one line, not hundreds. The copy is read as
//! hostile: every offset is checked, and a line that does not decode whole (fields, name,
//! kind) is no toolchain, its name never given out. Upstreams' toolchains are layered under
//! the own ones in one merge of the two name-ordered lists ([`Toolchains::layer_under`]),
//! each remembering its upstream.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Index;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::entry::Entry;

mod layers;
pub mod line;
mod roots;

pub use roots::root_key;

/// The registered toolchains by name (see the module's doc). Clones share what was read.
#[derive(Clone, Default)]
pub struct Toolchains {
    inner: Arc<Inner>,
}

#[derive(Clone, Default)]
struct Inner {
    /// In strictly increasing name order.
    slots: Vec<Slot>,
    /// Where slots come from: a copy's text, an upstream. Every slot's `layer` is one.
    layers: Vec<Layer>,
    /// The roots' hashes, made at the first question about a root ([`Toolchains::with_root`]).
    roots: OnceLock<Vec<(u64, u32)>>,
}

#[derive(Clone, Default)]
struct Layer {
    /// The copy the slots' lines are in (empty for entries held whole; shared, not copied).
    text: Arc<String>,
    /// Where in `text` the toolchains' lines are, and its table of their roots
    /// (`roots::Table`).
    lines: std::ops::Range<u32>,
    table: Option<roots::Table>,
    /// The upstream its toolchains come from; `None` for the own home.
    upstream: Option<Upstream>,
}

/// An upstream home a toolchain comes from, and its `views/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    pub root: PathBuf,
    pub views: Arc<Path>,
}

#[derive(Clone)]
struct Slot {
    layer: u32,
    name: Name,
    /// The entry, once decoded (`None` inside: the line does not decode).
    entry: OnceLock<Option<Box<Entry>>>,
}

#[derive(Clone)]
enum Name {
    Owned(Box<str>),
    /// The line `start..end` of its layer's text, whose name field (a JSON string without
    /// escapes) ends at the tab at `tab`.
    Line {
        start: u32,
        tab: u32,
        end: u32,
    },
}

impl Inner {
    fn name<'a>(&'a self, s: &'a Slot) -> &'a str {
        match &s.name {
            Name::Owned(n) => n,
            Name::Line { start, tab, .. } => self
                .layers
                .get(s.layer as usize)
                .and_then(|l| {
                    l.text
                        .get(*start as usize + 1..(*tab as usize).saturating_sub(1))
                })
                .unwrap_or_default(),
        }
    }

    /// The slot's entry, decoded at the first question.
    fn entry<'a>(&'a self, s: &'a Slot) -> Option<&'a Entry> {
        s.entry.get_or_init(|| self.decode(s)).as_deref()
    }

    fn decode(&self, s: &Slot) -> Option<Box<Entry>> {
        let Name::Line { start, end, .. } = s.name else {
            return None;
        };
        let text = &self.layers.get(s.layer as usize)?.text;
        let line = text.get(start as usize..end as usize)?;
        line::decode(line, self.name(s)).map(Box::new)
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.slots.binary_search_by(|s| self.name(s).cmp(name))
    }

    /// A slot's entry, taken out of it.
    fn take(&self, mut s: Slot) -> Option<Entry> {
        match s.entry.take() {
            Some(decoded) => decoded.map(|e| *e),
            None => self.decode(&s).map(|e| *e),
        }
    }

    /// The layer of the own home's entries held whole.
    fn own_layer(&mut self) -> u32 {
        match self.layers.iter().position(|l| l.upstream.is_none()) {
            Some(i) => i as u32,
            None => {
                self.layers.push(Layer::default());
                (self.layers.len() - 1) as u32
            }
        }
    }
}

impl Toolchains {
    pub fn new() -> Self {
        Toolchains::default()
    }

    /// The toolchains of a copy, as [`Toolchains::encode_copy`] wrote them from `start` to
    /// the end of `text`: their number, that many lines in strictly increasing name order
    /// (each name a JSON string without escapes), and the table of their roots. Only that
    /// shape is checked here; each line is decoded when asked for. `None` for anything else.
    pub fn of_copy(text: Arc<String>, start: usize) -> Option<Toolchains> {
        let bytes = text.as_bytes();
        u32::try_from(bytes.len()).ok()?;
        let head = crate::byte_search::find(b'\n', bytes.get(start..)?)?;
        let count: usize = text.get(start..start + head)?.parse().ok()?;
        let first = start + head + 1;
        let mut slots = Vec::with_capacity(count.min(1 << 16));
        let (mut at, mut prev) = (first, None::<&[u8]>);
        // One search for the line ends, not one set up per line.
        let mut ends = crate::byte_search::find_iter(b'\n', bytes.get(first..)?).map(|i| first + i);
        for _ in 0..count {
            let end = ends.next()?;
            let line = bytes.get(at..end)?;
            // Names are short: a plain look for the tab beats setting up a vector search.
            let tab = line.iter().position(|b| *b == b'\t')?;
            let name = match (line.first(), line.get(tab.checked_sub(1)?)) {
                (Some(b'"'), Some(b'"')) if tab >= 3 => line.get(1..tab - 1)?,
                _ => return None,
            };
            if prev.is_some_and(|p| p >= name) {
                return None;
            }
            prev = Some(name);
            slots.push(Slot {
                layer: 0,
                name: Name::Line {
                    start: at as u32,
                    tab: (at + tab) as u32,
                    end: end as u32,
                },
                entry: OnceLock::new(),
            });
            at = end + 1;
        }
        let table = roots::Table::of_copy(&text, at)?;
        let layers = vec![Layer {
            lines: first as u32..at as u32,
            table: Some(table),
            text,
            upstream: None,
        }];
        Some(Toolchains {
            inner: Arc::new(Inner {
                slots,
                layers,
                roots: OnceLock::new(),
            }),
        })
    }

    /// The toolchains as a copy holds them ([`Toolchains::of_copy`]), written at `at` of the
    /// copy; `None` for a path that is not UTF-8.
    pub fn encode_copy(&self, at: usize) -> Option<String> {
        let mut out = format!("{}\n", self.len());
        let mut roots = Vec::new();
        for (name, entry) in self.iter() {
            let offset = u32::try_from(at + out.len()).ok()?;
            roots.push((roots::hash(&root_key(&entry.root)), offset));
            out += &line::encode(name, entry)?;
            out.push('\n');
        }
        roots::Table::encode(&mut out, roots);
        Some(out)
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.get_key_value(name).map(|(_, e)| e)
    }

    pub fn get_key_value(&self, name: &str) -> Option<(&str, &Entry)> {
        let inner = &*self.inner;
        let s = inner.slots.get(inner.find(name).ok()?)?;
        Some((inner.name(s), inner.entry(s)?))
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every toolchain in name order (each line decoded).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            inner: &self.inner,
            slots: self.inner.slots.iter(),
        }
    }

    /// The toolchains whose name `keep` says yes to, in name order: only those are decoded.
    pub fn iter_where<'a, F: Fn(&str) -> bool>(
        &'a self,
        keep: F,
    ) -> impl Iterator<Item = (&'a str, &'a Entry)> + use<'a, F> {
        let inner = &*self.inner;
        inner.slots.iter().filter_map(move |s| {
            let name = inner.name(s);
            keep(name).then_some(())?;
            Some((name, inner.entry(s)?))
        })
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.iter().map(|(n, _)| n)
    }

    pub fn values(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.iter().map(|(_, e)| e)
    }

    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether it has no entry at all (without decoding any).
    pub fn is_empty(&self) -> bool {
        self.inner.slots.is_empty()
    }

    /// The first question about a root builds the table of them; a change drops it.
    fn inner_mut(&mut self) -> &mut Inner {
        let inner = Arc::make_mut(&mut self.inner);
        inner.roots = OnceLock::new();
        inner
    }

    /// Adds or replaces `name` as the own home's; the entry it replaces, if any.
    pub fn insert(&mut self, name: String, entry: Entry) -> Option<Entry> {
        let inner = self.inner_mut();
        let layer = inner.own_layer();
        let slot = Slot {
            layer,
            entry: OnceLock::from(Some(Box::new(entry))),
            name: Name::Owned(name.into()),
        };
        match inner.find(inner.name(&slot)) {
            Ok(i) => {
                let old = std::mem::replace(&mut inner.slots[i], slot);
                inner.take(old)
            }
            Err(i) => {
                inner.slots.insert(i, slot);
                None
            }
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<Entry> {
        let inner = self.inner_mut();
        let i = inner.find(name).ok()?;
        let old = inner.slots.remove(i);
        inner.take(old)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Entry> {
        let inner = self.inner_mut();
        let i = inner.find(name).ok()?;
        inner.entry(inner.slots.get(i)?)?;
        // Held whole from now on: its line (and the copy's table of roots) no longer say
        // what it is.
        let owned: Box<str> = name.into();
        let slot = inner.slots.get_mut(i)?;
        slot.name = Name::Owned(owned);
        slot.entry.get_mut()?.as_deref_mut()
    }

    /// Keeps the toolchains `keep` says yes to (a line that does not decode goes too).
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &mut Entry) -> bool) {
        let inner = self.inner_mut();
        let slots = std::mem::take(&mut inner.slots);
        for s in slots {
            let (layer, name): (u32, Box<str>) = (s.layer, inner.name(&s).into());
            if let Some(mut entry) = inner.take(s) {
                if keep(&name, &mut entry) {
                    inner.slots.push(Slot {
                        layer,
                        name: Name::Owned(name),
                        entry: OnceLock::from(Some(Box::new(entry))),
                    });
                }
            }
        }
    }

    /// The toolchains whose root, compared as [`root_key`] says, is `key`: looked up in
    /// each copy's table (a binary search, nothing read whole), and among the entries held
    /// whole, whose table is made at the first question.
    pub fn with_root<'a>(&'a self, key: &'a [u8]) -> impl Iterator<Item = &'a Entry> + 'a {
        let inner = &*self.inner;
        let h = roots::hash(key);
        let in_copies = inner
            .layers
            .iter()
            .enumerate()
            .flat_map(move |(l, layer)| inner.in_table(l, layer, h));
        let held = inner.roots.get_or_init(|| inner.root_table());
        let from = held.partition_point(|(x, _)| *x < h);
        let held = held[from..]
            .iter()
            .take_while(move |(x, _)| *x == h)
            .filter_map(move |(_, i)| inner.slots.get(*i as usize));
        in_copies
            .chain(held)
            .filter_map(move |s| inner.entry(s))
            .filter(move |e| *root_key(&e.root) == *key)
    }
}

/// The toolchains in name order, each decoded as it comes (a line that does not decode is
/// left out).
pub struct Iter<'a> {
    inner: &'a Inner,
    slots: std::slice::Iter<'a, Slot>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a Entry);
    fn next(&mut self) -> Option<Self::Item> {
        let inner = self.inner;
        self.slots
            .by_ref()
            .find_map(|s| Some((inner.name(s), inner.entry(s)?)))
    }
}

impl<'a> IntoIterator for &'a Toolchains {
    type Item = (&'a str, &'a Entry);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<(String, Entry)> for Toolchains {
    fn from_iter<I: IntoIterator<Item = (String, Entry)>>(iter: I) -> Self {
        let map: BTreeMap<String, Entry> = iter.into_iter().collect();
        let slots = map
            .into_iter()
            .map(|(name, entry)| Slot {
                layer: 0,
                name: Name::Owned(name.into()),
                entry: OnceLock::from(Some(Box::new(entry))),
            })
            .collect();
        Toolchains {
            inner: Arc::new(Inner {
                slots,
                layers: vec![Layer::default()],
                roots: OnceLock::new(),
            }),
        }
    }
}

impl IntoIterator for Toolchains {
    type Item = (String, Entry);
    type IntoIter = std::vec::IntoIter<(String, Entry)>;
    fn into_iter(self) -> Self::IntoIter {
        let mut inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| (*shared).clone());
        let slots = std::mem::take(&mut inner.slots);
        let mut out = Vec::with_capacity(slots.len());
        for s in slots {
            let name = inner.name(&s).to_string();
            out.extend(inner.take(s).map(|e| (name, e)));
        }
        out.into_iter()
    }
}

impl<Q: AsRef<str> + ?Sized> Index<&Q> for Toolchains {
    type Output = Entry;
    fn index(&self, name: &Q) -> &Entry {
        self.get(name.as_ref()).expect("no toolchain of that name")
    }
}

impl PartialEq for Toolchains {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || self.iter().eq(other.iter())
    }
}

impl Eq for Toolchains {}

impl fmt::Debug for Toolchains {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl serde::Serialize for Toolchains {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Toolchains {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(BTreeMap::<String, Entry>::deserialize(d)?
            .into_iter()
            .collect())
    }
}

/// Where an upstream toolchain's view is: its upstream's `views/` directory.
impl crate::store::home::UpstreamViews for Toolchains {
    fn views_of(&self, name: &str) -> Option<&Path> {
        self.upstream_of(name).map(|u| &*u.views)
    }

    fn dirs(&self) -> Vec<Arc<Path>> {
        self.upstream_view_dirs()
    }
}

#[cfg(test)]
mod tests;
