//! Upstreams' toolchains layered under the own: one merge of two name-ordered lists, each
//! toolchain remembering the upstream it comes from (its views are there).

use std::path::Path;
use std::sync::Arc;

use super::{Layer, Toolchains, Upstream};

impl Toolchains {
    /// Adds `theirs`, an upstream's toolchains, under these: a name already here stays
    /// this one. One merge of the two name-ordered lists; nothing is decoded.
    pub fn layer_under(&mut self, theirs: Toolchains, upstream: Upstream) {
        let theirs = Arc::try_unwrap(theirs.inner).unwrap_or_else(|shared| (*shared).clone());
        let inner = self.inner_mut();
        let offset = inner.layers.len() as u32;
        inner
            .layers
            .extend(theirs.layers.into_iter().map(|l| Layer {
                upstream: Some(upstream.clone()),
                ..l
            }));
        let mine = std::mem::take(&mut inner.slots);
        let mut merged = Vec::with_capacity(mine.len() + theirs.slots.len());
        let mut mine = mine.into_iter().peekable();
        for mut s in theirs.slots {
            s.layer += offset;
            let name = inner.name(&s);
            while let Some(m) = mine.next_if(|m| inner.name(m) < name) {
                merged.push(m);
            }
            if mine.peek().is_none_or(|m| inner.name(m) != name) {
                merged.push(s);
            }
        }
        merged.extend(mine);
        inner.slots = merged;
    }

    /// The upstream `name` comes from; `None` for the own home's, or no such toolchain.
    pub fn upstream_of(&self, name: &str) -> Option<&Upstream> {
        let inner = &*self.inner;
        let s = inner.slots.get(inner.find(name).ok()?)?;
        inner.entry(s)?;
        inner.layers.get(s.layer as usize)?.upstream.as_ref()
    }

    /// The toolchains that come from an upstream, and each one's upstream.
    pub fn from_upstreams(&self) -> impl Iterator<Item = (&str, &Upstream)> + '_ {
        let inner = &*self.inner;
        inner.slots.iter().filter_map(move |s| {
            let upstream = inner.layers.get(s.layer as usize)?.upstream.as_ref()?;
            inner.entry(s)?;
            Some((inner.name(s), upstream))
        })
    }

    /// The `views/` directories of the upstreams some toolchain here comes from, each once.
    pub fn upstream_view_dirs(&self) -> Vec<Arc<Path>> {
        let inner = &*self.inner;
        let mut used = vec![false; inner.layers.len()];
        for s in &inner.slots {
            if let Some(u) = used.get_mut(s.layer as usize) {
                *u = true;
            }
        }
        let mut dirs: Vec<Arc<Path>> = Vec::new();
        for (layer, _) in inner.layers.iter().zip(used).filter(|(_, u)| *u) {
            if let Some(up) = &layer.upstream {
                if !dirs.iter().any(|d| d == &up.views) {
                    dirs.push(up.views.clone());
                }
            }
        }
        dirs
    }
}
