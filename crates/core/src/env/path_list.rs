//! One helper for `:`-separated path lists: split, drop entries, prepend, dedupe, keeping
//! the user's order for everything else.

use std::path::Path;

/// Entries in order; an unset or empty variable has none.
pub fn split(value: Option<&str>) -> Vec<String> {
    match value {
        None | Some("") => Vec::new(),
        Some(v) => v.split(':').map(str::to_string).collect(),
    }
}

pub fn join(entries: &[String]) -> String {
    entries.join(":")
}

/// Keeps the entries `drop` says no to, in order.
pub fn remove(entries: Vec<String>, drop: impl Fn(&str) -> bool) -> Vec<String> {
    entries.into_iter().filter(|e| !drop(e)).collect()
}

/// Puts `front` first (in its order) and removes later copies of those entries.
pub fn prepend(entries: Vec<String>, front: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(front.len() + entries.len());
    for e in front.iter().cloned().chain(entries) {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// True if `entry` is `dir` or inside it, comparing whole components (a trailing `/` in the
/// entry does not matter).
pub fn is_under(entry: &str, dir: &Path) -> bool {
    !entry.is_empty() && Path::new(entry).starts_with(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(s: &str) -> Vec<String> {
        split(Some(s))
    }

    #[test]
    fn split_and_join_round_trip() {
        assert_eq!(list("/a:/b"), ["/a", "/b"]);
        assert!(split(None).is_empty());
        assert!(split(Some("")).is_empty());
        assert_eq!(join(&list("/a::/b")), "/a::/b");
    }

    #[test]
    fn prepend_moves_existing_copies_to_the_front_once() {
        let out = prepend(
            list("/usr/bin:/v/bin:/bin:/usr/bin"),
            &["/v/bin".to_string()],
        );
        assert_eq!(out, ["/v/bin", "/usr/bin", "/bin"]);
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
        assert!(is_under(
            "/usr/local/cuda-11.3/bin",
            Path::new("/usr/local/cuda-11.3")
        ));
        assert!(is_under(
            "/usr/local/cuda-11.3/",
            Path::new("/usr/local/cuda-11.3")
        ));
        assert!(!is_under(
            "/usr/local/cuda-11.30/bin",
            Path::new("/usr/local/cuda-11.3")
        ));
        assert!(!is_under("", Path::new("/")));
    }
}
