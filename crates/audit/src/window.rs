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

/// A window reads as a file of its own: an archive's member is parsed as the object it is.
impl<'d, R: ReadRef<'d>> ReadRef<'d> for Window<R> {
    fn len(self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'d [u8], ()> {
        self.get(offset, size).ok_or(())
    }

    fn read_bytes_at_until(
        self,
        range: std::ops::Range<u64>,
        delimiter: u8,
    ) -> Result<&'d [u8], ()> {
        if range.end > self.len {
            return Err(());
        }
        let start = self.start.checked_add(range.start).ok_or(())?;
        let end = self.start.checked_add(range.end).ok_or(())?;
        self.data.read_bytes_at_until(start..end, delimiter)
    }
}

/// All of `bytes` as a window (tests, and callers that hold the section already).
pub fn of(bytes: &[u8]) -> Window<&[u8]> {
    Window::new(bytes, 0, bytes.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stay_inside_the_window_and_padding_is_skipped() {
        let bytes = [0u8, 0, 0, 7, 8, 9, 0, 0];
        let w = Window::new(&bytes[..], 2, 5);
        assert_eq!(w.get(1, 2), Some(&[7u8, 8][..]));
        assert_eq!(w.get(4, 2), None, "past the window's end");
        assert_eq!(w.get(u64::MAX, 2), None);
        assert_eq!(w.skip_zeros(0), Some(1));
        assert_eq!(w.skip_zeros(4), None);
        assert_eq!(w.from(2).get(0, 1), Some(&[8u8][..]));
        assert_eq!(w.until(2).get(1, 2), None);
        assert!(w.in_file());
        assert!(!Window::new(&bytes[..], 4, 5).in_file());
        assert!(!Window::new(&bytes[..], u64::MAX, 1).in_file());
    }
}
