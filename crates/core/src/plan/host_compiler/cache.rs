//! What each host compiler's `--version` printed, remembered, so that a compile through the
//! proxy does not start g++ to ask it every time (about 1 ms a call). An entry is used only
//! while the compiler is the same file: its path, and the device, inode, size, modification
//! and change times of the file the path leads to (links followed). Any difference, and the
//! compiler is asked again. Entries live under `Home::host_compilers()`, one file per
//! compiler path, written atomically; one that cannot be written is only not remembered. A
//! compiler changed in the last two seconds is not remembered yet: file times tick coarsely,
//! so an edit within the same tick could leave them as they were.

use crate::facts::vars;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::{parse_gcc_version, version_output, PathProbe, Probe};
use crate::context::Context;
use crate::fsutil;
use crate::stamp::Stamp;
use crate::store::home::Home;
use crate::store::toolchain::Version;

/// `PathProbe` that asks each compiler file for its version once.
pub struct CachedProbe<'a> {
    pub probe: PathProbe<'a>,
    /// Where the entries are (`Home::host_compilers()`).
    pub dir: PathBuf,
    /// The time now, which a compiler's change time is compared with.
    pub now: SystemTime,
}

impl<'a> CachedProbe<'a> {
    /// The probe every command and the proxy choose a host compiler with: PATH from
    /// `ctx`, entries in `home`, checked against the time now; a compiler that does not
    /// answer in time is told to `timed_out`.
    pub fn new(
        ctx: &'a Context,
        home: &Home,
        timed_out: fn(&crate::ask::AskError),
    ) -> CachedProbe<'a> {
        CachedProbe {
            probe: PathProbe {
                path: ctx.var_os(vars::PATH),
                timed_out,
            },
            dir: home.host_compilers(),
            now: SystemTime::now(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Entry {
    compiler: String,
    /// `identity` of the file when it was asked.
    file: String,
    /// The first line of its `--version` (all that `parse_gcc_version` reads).
    banner: String,
}

impl Probe for CachedProbe<'_> {
    fn which(&self, command: &str) -> Option<PathBuf> {
        self.probe.which(command)
    }

    fn gcc_version(&self, compiler: &Path) -> Option<Version> {
        let (Some(name), Some(stamp)) = (compiler.to_str(), Stamp::at(compiler)) else {
            return self.probe.gcc_version(compiler);
        };
        let at = self.dir.join(entry_name(name));
        let file = stamp.to_string();
        if let Some(entry) = read(&at).filter(|e| e.compiler == name && e.file == file) {
            return parse_gcc_version(&entry.banner);
        }
        let (text, success) = version_output(compiler, self.probe.timed_out)?;
        let banner = text.lines().next().unwrap_or_default().to_string();
        // Not remembered: a failed run, a file that changed while it ran, or one changed
        // within the last seconds (file times tick coarsely: an edit in the same tick
        // could keep them).
        let after = Stamp::at(compiler);
        if success && after == Some(stamp) && stamp.settled(self.now) {
            let entry = Entry {
                compiler: name.to_string(),
                file,
                banner,
            };
            if let Ok(text) = serde_json::to_string(&entry) {
                let _ = fsutil::write_atomic(&at, text.as_bytes());
            }
        }
        parse_gcc_version(&text)
    }
}

fn entry_name(compiler: &str) -> String {
    format!("{}.json", fsutil::cache_name(compiler))
}

/// An entry is JSON, which the proxy parses anyway (the registry's copy), not TOML: a
/// compile through the proxy runs no TOML parser for it.
fn read(at: &Path) -> Option<Entry> {
    let bytes = crate::outside::read(at, crate::outside::Kind::CacheEntry).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::time::Duration;

    /// A fake g++ at `path` that says `version` and logs each run to `<path>.log`, written
    /// under a new inode (as a package upgrade does).
    fn fake_gxx(path: &Path, version: &str) {
        let tmp = path.with_extension("new");
        let log = path.with_extension("log");
        let script = format!(
            "#!/bin/sh\necho run >> '{}'\necho 'g++ (GCC) {version}'\necho 'Copyright'\n",
            log.display()
        );
        fs_err::write(&tmp, script).unwrap();
        fs_err::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        fs_err::rename(&tmp, path).unwrap();
    }

    fn runs(path: &Path) -> usize {
        fs_err::read_to_string(path.with_extension("log"))
            .map(|l| l.lines().count())
            .unwrap_or(0)
    }

    /// The probe as the proxy makes it a minute from now, when the fakes written now have
    /// settled.
    fn probe(dir: &Path) -> CachedProbe<'static> {
        CachedProbe {
            probe: PathProbe {
                path: None,
                timed_out: crate::plan::host_compiler::quietly,
            },
            dir: dir.join("cache"),
            now: SystemTime::now() + Duration::from_secs(60),
        }
    }

    #[test]
    fn a_compiler_is_asked_once_and_again_after_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let gxx = dir.path().join("g++");
        fake_gxx(&gxx, "12.2.0");
        let probe = probe(dir.path());
        let v = |p: &CachedProbe| p.gcc_version(&gxx).map(|v| v.to_string());

        assert_eq!(v(&probe).as_deref(), Some("12.2.0"));
        assert_eq!(v(&probe).as_deref(), Some("12.2.0"));
        assert_eq!(runs(&gxx), 1, "the second call reads the cache");

        // An upgrade to another release: another file under the same path.
        fake_gxx(&gxx, "14.1.0");
        assert_eq!(v(&probe).as_deref(), Some("14.1.0"));
        assert_eq!(runs(&gxx), 2, "a changed compiler is asked again");
        assert_eq!(v(&probe).as_deref(), Some("14.1.0"));
        assert_eq!(runs(&gxx), 2);
    }

    #[test]
    fn a_compiler_edited_in_place_with_its_old_size_and_time_is_asked_again() {
        let dir = tempfile::tempdir().unwrap();
        let gxx = dir.path().join("g++");
        fake_gxx(&gxx, "12.2.0");
        let probe = probe(dir.path());
        assert!(probe.gcc_version(&gxx).is_some());
        let before = fs_err::metadata(&gxx).unwrap();
        // File times tick with the kernel's clock (a few ms): let the change time move on.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let script = fs_err::read_to_string(&gxx)
            .unwrap()
            .replace("12.2.0", "13.2.0");
        fs_err::write(&gxx, script).unwrap();
        let file = fs_err::File::options().write(true).open(&gxx).unwrap();
        file.file()
            .set_modified(before.modified().unwrap())
            .unwrap();
        drop(file);
        let after = fs_err::metadata(&gxx).unwrap();
        assert_eq!((after.ino(), after.len()), (before.ino(), before.len()));
        assert_eq!(after.modified().unwrap(), before.modified().unwrap());

        assert_eq!(probe.gcc_version(&gxx).unwrap().to_string(), "13.2.0");
        assert_eq!(runs(&gxx), 2, "the change time differs");
    }

    #[test]
    fn an_entry_for_another_file_or_a_damaged_one_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let gxx = dir.path().join("g++");
        fake_gxx(&gxx, "12.2.0");
        let probe = probe(dir.path());
        let at = probe.dir.join(entry_name(gxx.to_str().unwrap()));
        // An entry that claims another version for another file at this path.
        let forged = Entry {
            compiler: gxx.to_str().unwrap().into(),
            file: "1:2:3:4.000000000:5.000000000".into(),
            banner: "g++ (GCC) 9.1.0".into(),
        };
        fsutil::write_atomic(&at, serde_json::to_string(&forged).unwrap().as_bytes()).unwrap();
        assert_eq!(probe.gcc_version(&gxx).unwrap().to_string(), "12.2.0");
        assert_eq!(runs(&gxx), 1);

        fs_err::write(&at, "{\"compiler\": [").unwrap();
        assert_eq!(probe.gcc_version(&gxx).unwrap().to_string(), "12.2.0");
        assert_eq!(runs(&gxx), 2);
        assert_eq!(read(&at).unwrap().banner, "g++ (GCC) 12.2.0", "rewritten");
    }

    #[test]
    fn a_compiler_changed_in_the_last_seconds_is_not_remembered_yet() {
        let dir = tempfile::tempdir().unwrap();
        let gxx = dir.path().join("g++");
        fake_gxx(&gxx, "12.2.0");
        let now = CachedProbe {
            now: SystemTime::now(),
            ..probe(dir.path())
        };
        assert!(now.gcc_version(&gxx).is_some());
        assert!(now.gcc_version(&gxx).is_some());
        assert_eq!(
            runs(&gxx),
            2,
            "asked each time until its change time is 2 s old"
        );
        assert!(probe(dir.path()).gcc_version(&gxx).is_some());
        assert!(probe(dir.path()).gcc_version(&gxx).is_some());
        assert_eq!(runs(&gxx), 3);
    }

    #[test]
    fn a_compiler_that_fails_is_not_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let cc = dir.path().join("cc");
        fs_err::write(&cc, "#!/bin/sh\necho 'gcc (GCC) 12.2.0'\nexit 1\n").unwrap();
        fs_err::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
        let probe = probe(dir.path());
        assert!(probe.gcc_version(&cc).is_some(), "read as before");
        assert!(!probe.dir.join(entry_name(cc.to_str().unwrap())).exists());
    }
}
