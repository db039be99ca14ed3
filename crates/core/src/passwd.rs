//! The account's home directory from the password database, for processes started without
//! `HOME` (a SLURM step with `--export=NONE`).

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// `getpwuid_r(getuid())`'s home directory; `None` if the account has no entry.
pub fn account_home() -> Option<PathBuf> {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: `pwd` and `buf` outlive the call; getpwuid_r writes only into them and sets
    // `result` to `&pwd` on success, whose string fields point into `buf`.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::getuid(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        let dir = CStr::from_ptr(pwd.pw_dir).to_bytes();
        (!dir.is_empty()).then(|| PathBuf::from(OsStr::from_bytes(dir)))
    }
}

/// `nobody (uid 65534)`, or `uid 65534` for an id the password database does not know.
pub fn describe_uid(uid: u32) -> String {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: as in `account_home`: `pwd` and `buf` outlive the call, and the name points
    // into `buf`.
    let name = unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            uid,
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        );
        (rc == 0 && !result.is_null() && !pwd.pw_name.is_null())
            .then(|| CStr::from_ptr(pwd.pw_name).to_string_lossy().into_owned())
    };
    match name.filter(|n| !n.is_empty()) {
        Some(n) => format!("{} (uid {uid})", crate::ui::printable(&n)),
        None => format!("uid {uid}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_running_account_has_its_home_from_the_password_database() {
        let home = super::account_home().expect("this account is in the password database");
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let entry = std::process::Command::new("getent")
            .args(["passwd", &uid.to_string()])
            .output()
            .expect("getent runs");
        let entry = String::from_utf8(entry.stdout).unwrap();
        let dir = entry.trim_end().split(':').nth(5).expect("a passwd line");
        assert_eq!(home, std::path::Path::new(dir), "{entry}");
    }

    #[test]
    fn user_ids_are_named_when_the_database_knows_them() {
        assert_eq!(super::describe_uid(0), "root (uid 0)");
        assert_eq!(super::describe_uid(4_000_000_000), "uid 4000000000");
    }
}
