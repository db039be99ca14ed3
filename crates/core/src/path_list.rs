//! One helper for `:`-separated path lists: split, drop entries, prepend, keeping the
//! user's order (and the user's own duplicates) for everything else. Lists are bytes: an
//! entry that is not UTF-8 passes through untouched.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// Entries in order; an unset or empty variable has none.
pub fn split(value: Option<&OsStr>) -> Vec<OsString> {
    match value {
        None => Vec::new(),
        Some(v) if v.is_empty() => Vec::new(),
        Some(v) => v
            .as_bytes()
            .split(|b| *b == b':')
            .map(|e| OsString::from_vec(e.to_vec()))
            .collect(),
    }
}

/// The entries of a list, without the empty ones (which mean "the current directory" to
/// some readers and nothing to gpuenv).
pub fn dirs(value: Option<&OsStr>) -> impl Iterator<Item = OsString> {
    split(value).into_iter().filter(|e| !e.is_empty())
}

pub fn join(entries: &[OsString]) -> OsString {
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b':');
        }
        out.extend_from_slice(e.as_bytes());
    }
    OsString::from_vec(out)
}

/// Keeps the entries `drop` says no to, in order.
pub fn remove(entries: Vec<OsString>, drop: impl Fn(&OsStr) -> bool) -> Vec<OsString> {
    entries.into_iter().filter(|e| !drop(e)).collect()
}

/// Puts `front` first (in its order) and removes the other copies of those entries; every
/// other entry stays where it was, duplicates included (they are the user's).
pub fn prepend(entries: Vec<OsString>, front: &[OsString]) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::with_capacity(front.len() + entries.len());
    for e in front {
        if !out.contains(e) {
            out.push(e.clone());
        }
    }
    out.extend(entries.into_iter().filter(|e| !front.contains(e)));
    out
}

/// True if `entry` is `dir` or inside it, comparing whole components (a trailing `/` in the
/// entry does not matter).
pub fn is_under(entry: &OsStr, dir: &Path) -> bool {
    !entry.is_empty() && Path::new(entry).starts_with(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(s: &str) -> Vec<OsString> {
        split(Some(OsStr::new(s)))
    }

    #[test]
    fn split_and_join_round_trip() {
        assert_eq!(list("/a:/b"), ["/a", "/b"]);
        assert!(split(None).is_empty());
        assert!(list("").is_empty());
        assert_eq!(join(&list("/a::/b")), "/a::/b");
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_through() {
        let value = OsStr::from_bytes(b"/usr/bin:/tmp/caf\xe9/bin:/bin");
        let entries = split(Some(value));
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[1].as_bytes(), b"/tmp/caf\xe9/bin");
        assert_eq!(join(&entries), value);
    }

    #[test]
    fn prepend_moves_existing_copies_to_the_front_once() {
        let out = prepend(list("/usr/bin:/v/bin:/bin"), &["/v/bin".into()]);
        assert_eq!(out, ["/v/bin", "/usr/bin", "/bin"]);
    }

    #[test]
    fn prepend_keeps_the_users_own_duplicates() {
        let out = prepend(list("/usr/bin:/bin:/usr/bin"), &["/v/bin".into()]);
        assert_eq!(out, ["/v/bin", "/usr/bin", "/bin", "/usr/bin"]);
    }

    #[test]
    fn remove_keeps_the_order_of_the_rest() {
        let out = remove(list("/x:/opt/cuda/bin:/y:/z"), |e| {
            is_under(e, Path::new("/opt/cuda"))
        });
        assert_eq!(out, ["/x", "/y", "/z"]);
    }

    #[test]
    fn is_under_compares_whole_components() {
        let under = |e: &str, d: &str| is_under(OsStr::new(e), Path::new(d));
        assert!(under("/usr/local/cuda-11.3/bin", "/usr/local/cuda-11.3"));
        assert!(under("/usr/local/cuda-11.3/", "/usr/local/cuda-11.3"));
        assert!(!under("/usr/local/cuda-11.30/bin", "/usr/local/cuda-11.3"));
        assert!(!under("", "/"));
    }
}
