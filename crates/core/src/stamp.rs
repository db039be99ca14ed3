//! Which file a cache entry was made from, without reading it: device and inode (which
//! file), size, and the modification and change times to the nanosecond. The change time
//! cannot be set back, so a file edited or replaced in place, even with the same size and
//! modification time, gets a different stamp. The caches (the prompt's fast path, the
//! registry's copy, the host compiler's answers, nvcc's arch list) all compare this one.

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

const NS: i128 = 1_000_000_000;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub mtime_ns: u128,
    pub size: u64,
    /// Absent in states written before they were recorded: such a state then differs once.
    #[serde(default)]
    pub dev: u64,
    #[serde(default)]
    pub ino: u64,
    #[serde(default)]
    pub ctime_ns: i128,
}

impl Stamp {
    /// The stamp of a file's metadata; `None` for a modification time before 1970.
    pub fn of(meta: &std::fs::Metadata) -> Option<Stamp> {
        let mtime_ns = meta
            .modified()
            .ok()?
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_nanos();
        Some(Stamp {
            mtime_ns,
            size: meta.len(),
            dev: meta.dev(),
            ino: meta.ino(),
            ctime_ns: i128::from(meta.ctime()) * NS + i128::from(meta.ctime_nsec()),
        })
    }

    /// The stamp of the file `path` leads to.
    pub fn at(path: &Path) -> Option<Stamp> {
        Stamp::of(&fs_err::metadata(path).ok()?)
    }

    /// Whether the file's last change is at least two seconds before `now`: file times
    /// tick coarsely, and an edit within the same tick could keep them.
    pub fn settled(&self, now: SystemTime) -> bool {
        let now = now.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i128);
        matches!(now, Ok(n) if n.saturating_sub(self.ctime_ns.div_euclid(NS)) >= 2)
    }
}

/// `dev:ino:size:mtime.ns:ctime.ns`, as the caches write it down.
impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = NS as u128;
        write!(
            f,
            "{}:{}:{}:{}.{:09}:{}.{:09}",
            self.dev,
            self.ino,
            self.size,
            self.mtime_ns / ns,
            self.mtime_ns % ns,
            self.ctime_ns.div_euclid(NS),
            self.ctime_ns.rem_euclid(NS)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_in_place_with_the_same_size_and_time_has_another_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs_err::write(&p, "abc").unwrap();
        let before = Stamp::at(&p).unwrap();
        let mtime = fs_err::metadata(&p).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs_err::write(&p, "abd").unwrap();
        fs_err::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let after = Stamp::at(&p).unwrap();
        assert_eq!((after.size, after.mtime_ns), (before.size, before.mtime_ns));
        assert_ne!(after, before);
        assert_ne!(after.to_string(), before.to_string());
    }

    #[test]
    fn the_written_form_is_the_one_the_caches_kept() {
        let s = Stamp {
            mtime_ns: 1_700_000_000_000_000_005,
            size: 3,
            dev: 2049,
            ino: 77,
            ctime_ns: 1_700_000_001_000_000_010,
        };
        assert_eq!(
            s.to_string(),
            "2049:77:3:1700000000.000000005:1700000001.000000010"
        );
        let now = UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_002);
        assert!(!s.settled(now));
        assert!(s.settled(now + std::time::Duration::from_secs(1)));
    }
}
