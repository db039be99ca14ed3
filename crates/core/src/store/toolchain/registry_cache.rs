//! A compact copy of a settings file, so that the proxy, the hook and `env` do not parse
//! hundreds of toolchains of TOML on every call (about 7 µs each with toml 0.8; a site store
//! has every CUDA patch release). The settings file stays the source of truth: the copy is
//! the parsed registry, under `Home::registry_cache()` in the reading user's own home (one
//! file per settings path, an upstream's too: nothing is written into an upstream). Its
//! layout: a header (magic, the settings path, its stamp, a check of the rest:
//! `fsutil::checksum`), the registry without toolchains
//! as one JSON line, then the toolchains (`Toolchains::encode_copy`: their number, one line
//! per toolchain in name order, `toolchains::line`, and a table of their roots by hash).
//! Reading it decodes no toolchain: the lines are found, their names checked for order,
//! and each line is decoded when a call asks for that toolchain (`Toolchains`), so a call
//! costs the same with one toolchain as with hundreds. It is used only while
//! - it is a regular file owned by the user, not a link, and not writable by others;
//! - it names the settings path read, and that file's device, inode, size, modification
//!   and change times to the nanosecond (an edit by hand with the old size and modification
//!   time still moves the change time, which cannot be set back);
//! - the rest is what its check says (a damaged or cut copy is made again);
//! - it has the shape gpuenv writes: the count matches the lines, the names are JSON strings
//!   without escapes in strictly increasing order, and nothing follows. A line that does not
//!   decode when asked for (or whose name the settings could not hold, `check_name`) is no
//!   toolchain.
//!
//! Otherwise the settings file is parsed and the copy written again, atomically. A settings
//! file changed in the last two seconds is not copied yet: file times tick coarsely, so an
//! edit within the same tick could leave them as they were. A copy that cannot be written
//! only costs the next call the parse.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use fs_err::os::unix::fs::OpenOptionsExt;

use super::registry::{self, Registry, StateError};
use super::toolchains::Toolchains;
use crate::stamp::Stamp;
use crate::store::home::Home;
use crate::{fsutil, outside};

/// The first line of a copy; a new layout gets a new one.
const MAGIC: &str = "gpuenv registry cache 3";
/// The check line: 16 hex digits and its newline.
const CHECK_LINE: usize = 17;
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
        let stamp = Stamp::of(meta)?;
        Some(Cache {
            at: own.registry_cache().join(file_name(&source)),
            stamp: stamp.to_string(),
            settled: stamp.settled(SystemTime::now()),
            source,
        })
    }

    pub fn path(&self) -> &Path {
        &self.at
    }

    /// The registry the copy holds, when it can be trusted and matches the settings file.
    /// Its toolchains' lines are checked for shape and order only, and each is decoded when
    /// asked for (`Toolchains`).
    pub fn read(&self) -> Option<Registry> {
        let file = fs_err::OpenOptions::new()
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
        // The std file reads in one call what its size says (fs_err's would grow a buffer).
        let mut text = String::with_capacity(meta.len() as usize + 1);
        file.file().read_to_string(&mut text).ok()?;
        let text = Arc::new(text);
        let mut at = 0;
        let (magic, source) = (line(&text, &mut at)?, line(&text, &mut at)?);
        let (stamp, check) = (line(&text, &mut at)?, line(&text, &mut at)?);
        if magic != MAGIC || source != self.source || stamp != self.stamp {
            return None;
        }
        // A damaged, cut or garbled copy is made again, as a copy that does not parse was
        // before lines were read one at a time.
        let body = text.as_bytes().get(at..)?;
        if check != format!("{:016x}", fsutil::checksum(body)) {
            return None;
        }
        let mut registry: Registry = serde_json::from_str(line(&text, &mut at)?).ok()?;
        registry.toolchains = Toolchains::of_copy(text.clone(), at)?;
        Some(registry)
    }

    /// Writes `registry`, just parsed from the settings file, as its copy; nothing when the
    /// file is too new to be copied or the copy cannot be written.
    pub fn write(&self, registry: &Registry) {
        if !self.settled {
            return;
        }
        let rest = Registry {
            toolchains: Default::default(),
            ..registry.clone()
        };
        let Ok(rest) = serde_json::to_string(&rest) else {
            return;
        };
        // The check is of everything after its own line, which has a fixed width.
        let head = format!("{MAGIC}\n{}\n{}\n", self.source, self.stamp);
        let mut body = format!("{rest}\n");
        let at = head.len() + CHECK_LINE + body.len();
        let Some(toolchains) = registry.toolchains.encode_copy(at) else {
            return;
        };
        body += &toolchains;
        let check = fsutil::checksum(body.as_bytes());
        let text = format!("{head}{check:016x}\n{body}");
        if fsutil::write_atomic(&self.at, text.as_bytes()).is_ok() {
            // The first layout's copy of the same file (`<hash>.json`), now never read.
            let _ = fs_err::remove_file(self.at.with_extension("json"));
            self.remove_older_copies();
        }
    }

    /// Earlier copies of the same settings file under other names (the first layout's
    /// `<hash>.json`, a name from before copies were named by sha256), now never read.
    fn remove_older_copies(&self) {
        let Some(dir) = self.at.parent() else { return };
        let Ok(entries) = fs_err::read_dir(dir) else {
            return;
        };
        for path in entries.flatten().map(|e| e.path()) {
            let ours = path == self.at;
            let copy = path.extension().is_some_and(|e| e == "copy" || e == "json");
            if !ours && copy && names_source(&path, &self.source) {
                let _ = fs_err::remove_file(&path);
            }
        }
    }
}

/// Whether the copy at `path` (the user's own regular file, not followed if a link) was
/// made of the settings file `source`: every layout names it on its second line.
fn names_source(path: &Path, source: &str) -> bool {
    let Ok(file) = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !file.metadata().is_ok_and(|m| m.is_file() && m.uid() == me) {
        return false;
    }
    let mut head = String::new();
    let _ = file.file().take(64 * 1024).read_to_string(&mut head);
    let mut lines = head.split('\n');
    lines
        .next()
        .is_some_and(|m| m.starts_with("gpuenv registry cache "))
        && lines.next() == Some(source)
}

/// The line at `at`, which moves past it.
fn line<'t>(text: &'t str, at: &mut usize) -> Option<&'t str> {
    let rest = text.get(*at..)?;
    let n = crate::byte_search::find(b'\n', rest.as_bytes())?;
    *at += n + 1;
    rest.get(..n)
}

/// One file per settings path (the path itself is inside, and compared), named by its
/// sha256: the same name from every build of gpuenv.
fn file_name(source: &str) -> String {
    format!("{}.copy", fsutil::cache_name(source))
}

impl Registry {
    /// The registry of `home`, read through its compact copy in `own` (the home of the
    /// user reading, which may be `home` itself): the copy is used only while it matches
    /// the settings file as it is now, and is made again when it does not. An upstream's
    /// copy lives in the reader's own home, so nothing is written into an upstream.
    pub fn load_cached(home: &Home, own: &Home) -> Result<Registry, StateError> {
        let path = home.settings();
        let file = match outside::open(&path, outside::Kind::Settings) {
            Ok(f) => f,
            Err(e) if e.is_missing() => return Ok(Registry::default()),
            Err(e) => return Err(registry::refused(e)),
        };
        let cache = Cache::of(own, &path, file.metadata());
        if let Some(registry) = cache.as_ref().and_then(Cache::read) {
            return Ok(registry);
        }
        let text = file.text().map_err(registry::refused)?;
        let registry = Registry::parse(home, path, &text)?;
        if let Some(cache) = cache.filter(|_| registry.notice.is_none()) {
            cache.write(&registry);
        }
        Ok(registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::toolchain::entry::Collectives;
    use crate::store::toolchain::registry::Entry;
    use crate::store::toolchain::system::System;
    use crate::store::toolchain::toolchains::root_key;

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
            at: own.registry_cache().join("x.copy"),
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
        let named = text.replace("\"cuda-12.4.1\"", "\"../../x\"");
        fs_err::write(c.path(), &named).unwrap();
        assert_eq!(c.read(), None, "damaged: its check says so");
        // Forged with a check that matches: read, and the line is no toolchain.
        let head: usize = named.split_inclusive('\n').take(3).map(str::len).sum();
        let body = &named[head + CHECK_LINE..];
        let check = fsutil::checksum(body.as_bytes());
        fs_err::write(c.path(), format!("{}{check:016x}\n{body}", &named[..head])).unwrap();
        let read = c.read().unwrap();
        assert_eq!(read.toolchains.get("../../x"), None);
        assert_eq!(read.toolchains.iter().count(), 0);
        assert!(!read.toolchains.contains_key("../../x"));
    }

    #[test]
    fn writing_a_copy_removes_the_first_layouts_copy_of_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let own = Home::new(dir.path());
        let c = cache(&own, "1:2:3:4.0:5.0");
        let legacy = c.path().with_extension("json");
        let other = c.path().with_file_name("other.json");
        for f in [&legacy, &other] {
            fsutil::write_atomic(f, b"gpuenv registry cache 1\n").unwrap();
        }
        let r = registry(&["cuda-12.4.1"]);
        c.write(&r);
        assert_eq!(c.read(), Some(r));
        assert!(!legacy.exists());
        assert!(other.exists(), "another file's copy is left alone");
    }

    #[test]
    fn an_entry_with_odd_paths_collectives_and_a_system_prefix_comes_back_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let own = Home::new(dir.path());
        let mut r = registry(&["cuda-12.4.1", "cuda-11.8"]);
        let e = r.toolchains.get_mut("cuda-11.8").unwrap();
        e.root = "/opt/a\tb\nc \"d\" \\e/é".into();
        e.collectives = Some(Collectives {
            root: "/opt/nccl".into(),
            include_dir: "/opt/nccl/include".into(),
            lib_dir: "/opt/nccl/lib".into(),
        });
        e.system = Some(System {
            prefix: "/usr".into(),
            tools: vec!["/usr/bin/nvcc".into()],
            tools_from: "dpkg".into(),
        });
        r.default = vec!["cuda-12".into()];
        let c = cache(&own, "1:2:3:4.0:5.0");
        c.write(&r);
        let text = fs_err::read_to_string(c.path()).unwrap();
        // The header and its check, the count, one line each, the table of roots: its count and a record
        // each (no tab or newline of a path made a line of its own).
        assert_eq!(text.lines().count(), 11, "{text}");
        let read = c.read().unwrap();
        assert_eq!(read, r);
        let odd = root_key(Path::new("/opt/a\tb\nc \"d\" \\e/é"));
        assert_eq!(read.toolchains.with_root(&odd).count(), 1);
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

    #[test]
    fn writing_a_copy_removes_the_older_copies_of_the_same_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let own = Home::new(dir.path());
        let c = Cache {
            at: own.registry_cache().join(file_name("/site/settings.toml")),
            ..cache(&own, "1:2:3")
        };
        fs_err::create_dir_all(own.registry_cache()).unwrap();
        let old = own.registry_cache().join("0123456789abcdef.copy");
        let first = own.registry_cache().join("fedcba9876543210.json");
        let other = own.registry_cache().join("1111111111111111.copy");
        fs_err::write(&old, format!("{MAGIC}\n/site/settings.toml\nx\n")).unwrap();
        fs_err::write(&first, "gpuenv registry cache 1\n/site/settings.toml\nx\n").unwrap();
        fs_err::write(&other, format!("{MAGIC}\n/home/u/settings.toml\nx\n")).unwrap();
        c.write(&registry(&["cuda-12.4"]));
        assert!(c.read().is_some());
        assert!(
            !old.exists() && !first.exists(),
            "an older copy of the file is left"
        );
        assert!(other.exists(), "another file's copy was removed");
    }
}
