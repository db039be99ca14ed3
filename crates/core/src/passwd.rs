//! The account's home directory from the password database, for processes started without
//! `HOME` (a SLURM step with `--export=NONE`), and account names for messages.
//!
//! A static musl build (the release wheels' proxy) reads `/etc/passwd` alone: musl has no
//! NSS, so an LDAP, SSSD or NIS account is not found there. Such a build then asks
//! `getent passwd <uid>`, which is the system's own C library and goes through NSS
//! ([`ask_nss_with`]); only when the C library found nothing, and never in a glibc build.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The account's home directory: `getpwuid_r(getuid())`'s, else (a static musl build)
/// `getent`'s; `None` if neither knows the account.
pub fn account_home() -> Option<PathBuf> {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    c_library_home(uid).or_else(|| through_nss(uid).map(|e| e.home))
}

/// `getpwuid_r(uid)`'s home directory; `None` if the account has no entry or no home.
fn c_library_home(uid: u32) -> Option<PathBuf> {
    let home = c_library_entry(uid)?.home;
    (!home.as_os_str().is_empty()).then_some(home)
}

/// `nobody (uid 65534)`, or `uid 65534` for an id the password database does not know.
pub fn describe_uid(uid: u32) -> String {
    let name = c_library_entry(uid)
        .map(|e| e.name)
        .filter(|n| !n.is_empty())
        .or_else(|| through_nss(uid).map(|e| e.name));
    match name {
        Some(n) => format!("{} (uid {uid})", crate::ui::printable(&n)),
        None => format!("uid {uid}"),
    }
}

/// `uid`'s entry as the C library's `getpwuid_r` has it (a field it leaves out is empty);
/// `None` if it has none.
fn c_library_entry(uid: u32) -> Option<Entry> {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: `pwd` and `buf` outlive the call; getpwuid_r writes only into them and sets
    // `result` to `&pwd` on success, whose string fields point into `buf` (or are null).
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            uid,
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() {
            return None;
        }
        let field = |p: *const libc::c_char| match p.is_null() {
            true => &[][..],
            false => CStr::from_ptr(p).to_bytes(),
        };
        Some(Entry {
            name: String::from_utf8_lossy(field(pwd.pw_name)).into_owned(),
            home: PathBuf::from(OsStr::from_bytes(field(pwd.pw_dir))),
        })
    }
}

/// An account's name and home.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    name: String,
    home: PathBuf,
}

/// How a build whose C library has no NSS (musl) asks it: set once by the edge that starts
/// such a process (`proxy::process`), which runs `getent passwd <uid>` through `ask` and
/// returns what it printed. Unset, as in a glibc build, whose `getpwuid_r` already went
/// through NSS.
static NSS: OnceLock<Lookup> = OnceLock::new();

/// What asks NSS for a uid's `passwd` line: its output, or `None`.
pub type Lookup = fn(u32) -> Option<Vec<u8>>;

/// From now on an account the C library does not know is asked of `lookup`.
pub fn ask_nss_with(lookup: Lookup) {
    let _ = NSS.set(lookup);
}

/// `uid`'s entry as NSS has it, when a lookup is set and its answer is well-formed.
fn through_nss(uid: u32) -> Option<Entry> {
    let out = NSS.get()?(uid)?;
    parse_entry(&out, uid)
}

/// The entry of `uid` in `getent passwd` output (`name:x:uid:gid:gecos:home:shell`): one
/// line of seven fields, for this uid, with a printable name and an absolute home. Anything
/// else is no entry.
fn parse_entry(out: &[u8], uid: u32) -> Option<Entry> {
    let line = out.strip_suffix(b"\n").unwrap_or(out);
    if line.contains(&b'\n') {
        return None;
    }
    let fields: Vec<&[u8]> = line.split(|b| *b == b':').collect();
    let [name, _, id, _, _, home, _] = fields[..] else {
        return None;
    };
    let name = std::str::from_utf8(name).ok()?;
    let printable = !name.is_empty() && !name.chars().any(char::is_control);
    let ours = std::str::from_utf8(id).ok()?.parse::<u32>().ok() == Some(uid);
    let home = PathBuf::from(OsStr::from_bytes(home));
    (printable && ours && home.is_absolute()).then(|| Entry {
        name: name.to_string(),
        home,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_running_account_has_its_home_from_the_password_database() {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let home = super::c_library_home(uid).expect("this account is in the password database");
        let entry = std::process::Command::new("getent")
            .args(["passwd", &uid.to_string()])
            .output()
            .expect("getent runs");
        let entry = String::from_utf8(entry.stdout).unwrap();
        let dir = entry.trim_end().split(':').nth(5).expect("a passwd line");
        assert_eq!(home, std::path::Path::new(dir), "{entry}");
    }

    #[test]
    fn getents_line_gives_the_name_and_home_of_that_uid_and_nothing_else() {
        use super::{parse_entry, Entry};
        let line = b"ada:*:4100123:4100123:Ada L.:/home/ada:/bin/bash\n";
        assert_eq!(
            parse_entry(line, 4_100_123),
            Some(Entry {
                name: "ada".into(),
                home: "/home/ada".into()
            })
        );
        for hostile in [
            &b"ada:*:4100124:4100123::/home/ada:/bin/bash\n"[..],
            b"ada:*:4100123:4100123::home/ada:/bin/bash\n",
            b"ada:*:4100123:4100123::/home/ada\n",
            b"ada:*:4100123:4100123::/home/ada:/bin/bash:x\n",
            b"ada:*:4100123:4100123::/home/ada:/bin/bash\nbob:*:4100123:1::/tmp:/bin/sh\n",
            b"\x1b[2J:*:4100123:4100123::/home/ada:/bin/bash\n",
            b":*:4100123:4100123::/home/ada:/bin/bash\n",
            b"",
        ] {
            assert_eq!(parse_entry(hostile, 4_100_123), None, "{hostile:?}");
        }
    }

    #[test]
    fn user_ids_are_named_when_the_database_knows_them() {
        assert_eq!(super::describe_uid(0), "root (uid 0)");
        assert_eq!(super::describe_uid(4_000_000_000), "uid 4000000000");
    }
}
