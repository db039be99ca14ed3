//! A compact copy of a settings file, so that the proxy, the hook and `env` do not parse
//! hundreds of toolchains of TOML on every call (about 7 µs each with toml 0.8; a site store
//! has every CUDA patch release). The settings file stays the source of truth: the copy is
//! JSON of the parsed registry, under `Home::registry_cache()` in the reading user's own home
//! (one file per settings path, an upstream's too: nothing is written into an upstream), and
//! is used only while
//! - it is a regular file owned by the user, not a link, and not writable by others;
//! - it names the settings path read, and that file's device, inode, size, modification
//!   and change times to the nanosecond (an edit by hand with the old size and modification
//!   time still moves the change time, which cannot be set back);
//! - it parses, and every toolchain name in it passes the same check the settings' do.
//!
//! Otherwise the settings file is parsed and the copy written again, atomically. A settings
//! file changed in the last two seconds is not copied yet: file times tick coarsely, so an
//! edit within the same tick could leave them as they were. A copy that cannot be written
//! only costs the next call the parse.

use std::hash::{Hash, Hasher};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use fs_err::os::unix::fs::OpenOptionsExt;

use super::registry::Registry;
use crate::fsutil;
use crate::store::home::Home;

/// The first line of a copy; a new layout gets a new one.
const MAGIC: &str = "gpuenv registry cache 1";
/// Copies larger than this are not read (a settings file of thousands of toolchains is
/// well under it).
const LIMIT: u64 = 64 << 20;

/// The copy of one settings file as it is now.
pub struct Cache {
    /// The copy's file.
    at: PathBuf,
    /// The settings file's path, as read.
    source: String,
    /// `stamp` of the settings file read.
    stamp: String,
    /// Whether the settings file is old enough to be copied.
    settled: bool,
}

impl Cache {
    /// The copy in `own` of the settings file at `source`, whose metadata (of the opened
    /// file) is `meta`. `None` for a path that is not UTF-8.
    pub fn of(own: &Home, source: &Path, meta: &std::fs::Metadata) -> Option<Cache> {
        let source = source.to_str()?.to_string();
        Some(Cache {
            at: own.registry_cache().join(file_name(&source)),
            stamp: stamp(meta),
            settled: settled(meta, SystemTime::now()),
            source,
        })
    }

    pub fn path(&self) -> &Path {
        &self.at
    }

    /// The registry the copy holds, when it can be trusted and matches the settings file.
    pub fn read(&self) -> Option<Registry> {
        let mut file = fs_err::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&self.at)
            .ok()?;
        let meta = file.metadata().ok()?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if !meta.is_file() || meta.uid() != me || meta.mode() & 0o022 != 0 || meta.len() > LIMIT {
            return None;
        }
        let mut text = String::new();
        file.read_to_string(&mut text).ok()?;
        let mut lines = text.splitn(4, '\n');
        let (magic, source, stamp) = (lines.next()?, lines.next()?, lines.next()?);
        if magic != MAGIC || source != self.source || stamp != self.stamp {
            return None;
        }
        let registry: Registry = serde_json::from_str(lines.next()?).ok()?;
        registry.check_names().ok()?;
        Some(registry)
    }

    /// Writes `registry`, just parsed from the settings file, as its copy; nothing when the
    /// file is too new to be copied or the copy cannot be written.
    pub fn write(&self, registry: &Registry) {
        if !self.settled {
            return;
        }
        let Ok(body) = serde_json::to_string(registry) else {
            return;
        };
        let text = format!("{MAGIC}\n{}\n{}\n{body}", self.source, self.stamp);
        let _ = fsutil::write_atomic(&self.at, text.as_bytes());
    }
}

/// One file per settings path (the path itself is inside, and compared).
fn file_name(source: &str) -> String {
    let mut h = std::hash::DefaultHasher::new();
    source.hash(&mut h);
    format!("{:016x}.json", h.finish())
}

/// The settings file as the copy compares it: device, inode, size, and the modification
/// and change times to the nanosecond.
fn stamp(m: &std::fs::Metadata) -> String {
    format!(
        "{}:{}:{}:{}.{:09}:{}.{:09}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

/// Whether the file's last change is at least two seconds before `now`.
fn settled(m: &std::fs::Metadata, now: SystemTime) -> bool {
    let now = now.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64);
    matches!(now, Ok(n) if n.saturating_sub(m.ctime()) >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::toolchain::registry::Entry;

    fn registry(names: &[&str]) -> Registry {
        let mut r = Registry::default();
        for n in names {
            r.toolchains.insert(
                n.to_string(),
                Entry::linked_cuda(format!("/opt/{n}"), n.trim_start_matches("cuda-")),
            );
        }
        r
    }

    fn cache(own: &Home, stamp: &str) -> Cache {
        Cache {
            at: own.registry_cache().join("x.json"),
            source: "/site/settings.toml".into(),
            stamp: stamp.into(),
            settled: true,
        }
    }

    #[test]
    fn a_copy_is_used_only_for_the_file_it_was_made_of() {
        let dir = tempfile::tempdir().unwrap();
        let own = Home::new(dir.path());
        let r = registry(&["cuda-12.4.1", "cuda-11.8"]);
        cache(&own, "1:2:3:4.0:5.0").write(&r);
        assert_eq!(cache(&own, "1:2:3:4.0:5.0").read(), Some(r));
        assert_eq!(cache(&own, "1:2:3:4.0:6.0").read(), None, "another ctime");
        let mut other = cache(&own, "1:2:3:4.0:5.0");
        other.source = "/other/settings.toml".into();
        assert_eq!(other.read(), None, "another file");
    }

    #[test]
    fn a_copy_with_a_name_the_settings_could_not_hold_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let own = Home::new(dir.path());
        let c = cache(&own, "1:2:3:4.0:5.0");
        c.write(&registry(&["cuda-12.4.1"]));
        let text = fs_err::read_to_string(c.path()).unwrap();
        fs_err::write(c.path(), text.replace("\"cuda-12.4.1\"", "\"../../x\"")).unwrap();
        assert_eq!(c.read(), None);
    }

    #[test]
    fn a_file_changed_just_now_is_not_copied_yet() {
        let dir = tempfile::tempdir().unwrap();
        let own = Home::new(dir.path());
        let mut c = cache(&own, "1:2:3:4.0:5.0");
        c.settled = false;
        c.write(&registry(&["cuda-12.4.1"]));
        assert!(!c.path().exists());
    }
}
