//! Finding a byte, or a few bytes, in a buffer without asking the CPU what it has.
//!
//! The memchr crate's own entry points (`memchr::memchr`, `memmem::find`) ask the CPU for
//! AVX2 on their first call (the standard library's `is_x86_feature_detected!`, a dozen
//! `cpuid` instructions). In a virtual machine each `cpuid` traps to the hypervisor: that
//! first call cost ~50 µs, a tenth of the proxy's whole run at a prompt
//! (docs/performance.md). SSE2 is part of x86_64 itself, so its search needs no question;
//! on aarch64 memchr's NEON search is chosen when compiling, and elsewhere its plain search
//! asks nothing either.

/// Where `needle` first is in `haystack`.
#[inline]
pub fn find(needle: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        match memchr::arch::x86_64::sse2::memchr::One::new(needle) {
            Some(sse2) => sse2.find(haystack),
            None => memchr::arch::all::memchr::One::new(needle).find(haystack),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // Only x86_64's search asks the CPU; aarch64's NEON is chosen when compiling.
        #[allow(clippy::disallowed_methods)]
        memchr::memchr(needle, haystack)
    }
}

/// Every place `needle` is in `haystack`, in order.
pub fn find_iter(needle: u8, haystack: &[u8]) -> FindIter<'_> {
    FindIter {
        needle,
        haystack,
        from: 0,
    }
}

/// The places [`find_iter`] yields.
pub struct FindIter<'h> {
    needle: u8,
    haystack: &'h [u8],
    from: usize,
}

impl Iterator for FindIter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let at = self.from + find(self.needle, self.haystack.get(self.from..)?)?;
        self.from = at + 1;
        Some(at)
    }
}

/// Whether `needle` is somewhere in `haystack` (short needles: a word in a path).
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::arch::all::rabinkarp::Finder::new(needle)
        .find(haystack, needle)
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_place_of_a_byte_as_a_plain_scan_does() {
        // Lengths around the vector widths, the byte at the edges and nowhere.
        for len in [0usize, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200] {
            for marks in [
                vec![],
                vec![0],
                vec![len.saturating_sub(1)],
                vec![3, 16, 17, 40],
            ] {
                let mut hay = vec![b'a'; len];
                for &m in marks.iter().filter(|&&m| m < len) {
                    hay[m] = b'\n';
                }
                let plain: Vec<usize> = (0..len).filter(|&i| hay[i] == b'\n').collect();
                assert_eq!(
                    find_iter(b'\n', &hay).collect::<Vec<_>>(),
                    plain,
                    "{len} {marks:?}"
                );
                assert_eq!(find(b'\n', &hay), plain.first().copied());
            }
        }
    }

    #[test]
    fn a_word_is_found_anywhere_in_a_path() {
        assert!(contains(b"/usr/local/nvidia/lib64", b"nvidia"));
        assert!(contains(b"nvidia", b"nvidia"));
        assert!(contains(b"/opt/compat", b"compat"));
        assert!(!contains(b"/usr/lib/x86_64-linux-gnu", b"nvidia"));
        assert!(!contains(b"nvidi", b"nvidia"));
    }
}
