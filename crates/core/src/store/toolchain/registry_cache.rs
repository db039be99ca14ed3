//! A compact copy of a settings file, so that the proxy, the hook and `env` do not parse
//! hundreds of toolchains of TOML on every call (about 7 µs each with toml 0.8; a site store
//! has every CUDA patch release). The settings file stays the source of truth: the copy is
//! the parsed registry, under `Home::registry_cache()` in the reading user's own home (one
//! file per settings path, an upstream's too: nothing is written into an upstream). Its
//! layout: a header (magic, the settings path, its stamp), the registry without toolchains
//! as one JSON line, the number of toolchains, then one line per toolchain in name order
//! ([`encode`]), read by splitting lines rather than parsing JSON objects (a sixth fewer
//! instructions than serde_json's parse of the same registry). It is used only while
//! - it is a regular file owned by the user, not a link, and not writable by others;
//! - it names the settings path read, and that file's device, inode, size, modification
//!   and change times to the nanosecond (an edit by hand with the old size and modification
//!   time still moves the change time, which cannot be set back);
//! - it parses whole: the count matches the lines, the names are in order and nothing
//!   follows, and every toolchain name in it passes the same check the settings' do.
//!
//! Otherwise the settings file is parsed and the copy written again, atomically. A settings
//! file changed in the last two seconds is not copied yet: file times tick coarsely, so an
//! edit within the same tick could leave them as they were. A copy that cannot be written
//! only costs the next call the parse.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use fs_err::os::unix::fs::OpenOptionsExt;

use super::entry::Collectives;
use super::registry::{self, Entry, Registry, Source, StateError};
use super::system::System;
use crate::stamp::Stamp;
use crate::store::home::Home;
use crate::{fsutil, outside};

/// The first line of a copy; a new layout gets a new one.
const MAGIC: &str = "gpuenv registry cache 2";
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
        let mut lines = text.split('\n');
        let (magic, source, stamp) = (lines.next()?, lines.next()?, lines.next()?);
        if magic != MAGIC || source != self.source || stamp != self.stamp {
            return None;
        }
        let mut registry: Registry = serde_json::from_str(lines.next()?).ok()?;
        let count: usize = lines.next()?.parse().ok()?;
        let mut toolchains = Vec::with_capacity(count.min(1 << 16));
        for line in lines.by_ref().take(count) {
            toolchains.push(decode(line)?);
        }
        // A copy cut short, or with more after its entries, is not the one gpuenv wrote.
        if toolchains.len() != count || lines.ne([""]) {
            return None;
        }
        // In name order, as written: the map is built in one pass, not by insertions.
        if !toolchains.windows(2).all(|w| w[0].0 < w[1].0) {
            return None;
        }
        registry.toolchains = toolchains.into_iter().collect();
        registry.check_names().ok()?;
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
        let count = registry.toolchains.len();
        let mut text = format!(
            "{MAGIC}\n{}\n{}\n{rest}\n{count}\n",
            self.source, self.stamp
        );
        for (name, entry) in &registry.toolchains {
            let Some(line) = encode(name, entry) else {
                return;
            };
            text += &line;
            text.push('\n');
        }
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

/// What an entry has besides its fixed fields, as JSON (absent when it has none).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Extra {
    collectives: Option<Collectives>,
    system: Option<System>,
}

/// One toolchain as one line: its name and fixed fields separated by tabs, each string a
/// JSON string (so a tab or newline in a path is escaped, never a separator), then
/// [`Extra`]. Reading it is splitting a line, not parsing JSON objects: a store of hundreds
/// costs each call little more than one of a few. `None` for a path that is not UTF-8.
fn encode(name: &str, e: &Entry) -> Option<String> {
    let s = |v: &str| serde_json::to_string(v).ok();
    let p = |v: &Path| v.to_str().and_then(s);
    let extra = match (&e.collectives, &e.system) {
        (None, None) => String::new(),
        (c, sys) => serde_json::to_string(&Extra {
            collectives: c.clone(),
            system: sys.clone(),
        })
        .ok()?,
    };
    Some(
        [
            s(name)?,
            e.kind.to_string(),
            e.version.to_string(),
            e.source.as_str().to_string(),
            p(&e.root)?,
            s(&e.version_from)?,
            p(&e.include_dir)?,
            p(&e.lib_dir)?,
            extra,
        ]
        .join("\t"),
    )
}

/// The line [`encode`] wrote; `None` for anything else.
fn decode(line: &str) -> Option<(String, Entry)> {
    // Fields found byte by byte: `split('\t')`'s searcher cost more than the rest of the
    // line's decoding, hundreds of times a call.
    let mut rest = Some(line);
    let mut next = || {
        let s = rest?;
        match s.bytes().position(|b| b == b'\t') {
            Some(i) => {
                rest = Some(&s[i + 1..]);
                Some(&s[..i])
            }
            None => {
                rest = None;
                Some(s)
            }
        }
    };
    let name = string(next()?)?;
    let kind = next()?.parse().ok()?;
    let version = next()?.parse().ok()?;
    let source = match next()? {
        "linked" => Source::Linked,
        "discovered" => Source::Discovered,
        "installed" => Source::Installed,
        _ => return None,
    };
    let root = string(next()?)?.into();
    let version_from = string(next()?)?;
    let include_dir = string(next()?)?.into();
    let lib_dir = string(next()?)?.into();
    let extra = match next()? {
        "" => Extra {
            collectives: None,
            system: None,
        },
        json => serde_json::from_str(json).ok()?,
    };
    if next().is_some() {
        return None;
    }
    let entry = Entry {
        kind,
        version,
        root,
        source,
        version_from,
        include_dir,
        lib_dir,
        collectives: extra.collectives,
        system: extra.system,
    };
    Some((name, entry))
}

/// A JSON string; the common one, without escapes, taken as it is.
fn string(field: &str) -> Option<String> {
    let inner = field.strip_prefix('"')?.strip_suffix('"')?;
    if inner.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20) {
        return serde_json::from_str(field).ok();
    }
    Some(inner.to_string())
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
        fs_err::write(c.path(), text.replace("\"cuda-12.4.1\"", "\"../../x\"")).unwrap();
        assert_eq!(c.read(), None);
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
        assert_eq!(text.lines().count(), 7, "{text}");
        assert_eq!(c.read(), Some(r));
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
