//! A section's bytes, read on demand: the parsers read headers only, so a 500 MB fatbinary
//! (libtorch_cuda.so's) costs a few thousand small reads, not 500 MB of memory.

use object::ReadRef;

#[derive(Debug, Clone, Copy)]
pub struct Window<R> {
    data: R,
    start: u64,
    len: u64,
}

/// How much is read at a time while skipping padding.
const CHUNK: u64 = 4096;

impl<'d, R: ReadRef<'d>> Window<R> {
    /// `len` bytes of `data` from `start`.
    pub fn new(data: R, start: u64, len: u64) -> Self {
        Window { data, start, len }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The same window, ending at `end` (a container inside a section).
    pub fn until(&self, end: u64) -> Window<R> {
        Window {
            len: self.len.min(end),
            ..*self
        }
    }

    /// The same window, starting at `at` (a bundle inside a section).
    pub fn from(&self, at: u64) -> Window<R> {
        let at = at.min(self.len);
        Window {
            start: self.start + at,
            len: self.len - at,
            ..*self
        }
    }

    /// Whether the file holds the whole window (a section header can claim more).
    pub fn in_file(&self) -> bool {
        let end = self.start.checked_add(self.len);
        matches!((self.data.len(), end), (Ok(size), Some(end)) if end <= size)
    }

    /// What is left from `at` to the end.
    pub fn left(&self, at: u64) -> u64 {
        self.len.saturating_sub(at)
    }

    /// `n` bytes at `at`, if the window holds them and the file can be read there.
    pub fn get(&self, at: u64, n: u64) -> Option<&'d [u8]> {
        let end = at.checked_add(n)?;
        if end > self.len {
            return None;
        }
        self.data.read_bytes_at(self.start.checked_add(at)?, n).ok()
    }

    /// The first byte at or after `at` that is not zero (padding between containers).
    pub fn skip_zeros(&self, mut at: u64) -> Option<u64> {
        while at < self.len {
            let n = CHUNK.min(self.len - at);
            let chunk = self.get(at, n)?;
            if let Some(i) = chunk.iter().position(|b| *b != 0) {
                return Some(at + i as u64);
            }
            at += n;
        }
        None
    }
}

/// All of `bytes` as a window (tests, and callers that hold the section already).
pub fn of(bytes: &[u8]) -> Window<&[u8]> {
    Window::new(bytes, 0, bytes.len() as u64)
}
