//! The unit tests of `outside.rs`.
use super::*;
use std::os::unix::fs::PermissionsExt;

#[test]
fn a_fifo_is_refused_without_blocking_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("version.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string and mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let e = read(&fifo, Kind::VersionFile).unwrap_err();
    assert!(matches!(e.why, Why::NotRegular("a FIFO")), "{e}");
    let text = e.to_string();
    assert!(text.contains("version file"), "{text}");
    assert!(text.contains(fifo.to_str().unwrap()), "{text}");
}

#[test]
fn dev_zero_and_a_file_over_the_cap_are_refused_naming_the_cap() {
    let e = read(Path::new("/dev/zero"), Kind::TorchVersion).unwrap_err();
    assert!(
        matches!(e.why, Why::NotRegular("a character device")),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("version.py");
    let f = fs_err::File::create(&big).unwrap();
    f.set_len(Kind::TorchVersion.limit() + 1).unwrap();
    let e = read(&big, Kind::TorchVersion).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("larger than 65536 bytes"), "{text}");
    assert!(text.contains("torch version.py"), "{text}");
    fs_err::write(&big, "cuda = '13.2'\n").unwrap();
    assert_eq!(
        read_text(&big, Kind::TorchVersion).unwrap(),
        "cuda = '13.2'\n"
    );
}

#[test]
fn a_link_is_resolved_once_and_the_target_read() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    fs_err::write(&real, "x").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(read(&link, Kind::VersionFile).unwrap(), b"x");
    let missing = read_text_if_present(&dir.path().join("none"), Kind::VersionFile);
    assert!(matches!(missing, Ok(None)));
}

#[test]
fn one_rule_for_owner_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = dir.path().join("config.toml");
    fs_err::write(&f, "").unwrap();
    fs_err::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let meta = |p: &Path| fs_err::metadata(p).unwrap();
    let me = meta(&f).uid();
    assert_eq!(rule(&f, &meta(&f), me), Ok(()));
    let other = rule(&f, &meta(&f), me + 4242);
    if me != ROOT {
        assert!(matches!(
            other,
            Err(Foreign {
                what: ForeignWhy::Owner,
                ..
            })
        ));
    }
    fs_err::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
    let e = rule(&f, &meta(&f), me).unwrap_err();
    assert_eq!(e.what, ForeignWhy::Writable);
    assert!(e.to_string().contains("mode 0666"), "{e}");
    fs_err::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    fs_err::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = rule(&f, &meta(&f), me).unwrap_err();
    assert!(matches!(e.what, ForeignWhy::OpenDirectory(_)), "{e}");
    fs_err::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    assert_eq!(rule(&f, &meta(&f), me), Ok(()));
}

#[test]
fn every_link_of_the_chain_and_every_directory_above_is_checked() {
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != ROOT {
        // Another account's link needs chown; tests/it/hostile_site.rs covers it with accounts.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    fs_err::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let real = dir.path().join("config.toml");
    fs_err::write(&real, "").unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::os::unix::fs::symlink("b", &a).unwrap();
    std::os::unix::fs::symlink(&real, &b).unwrap();
    let meta = fs_err::metadata(&real).unwrap();
    // Root's files, links and directories: fine for a user 4242.
    assert_eq!(rule(&a, &meta, 4242), Ok(()));
    // The second link of the chain is another account's: it chose the file.
    std::os::unix::fs::lchown(&b, Some(4243), None).unwrap();
    let e = rule(&a, &meta, 4242).unwrap_err();
    assert_eq!((e.what, e.owner), (ForeignWhy::Owner, 4243));
    // A directory above the file that is another account's.
    std::os::unix::fs::lchown(&b, Some(0), None).unwrap();
    let sub = dir.path().join("sub");
    fs_err::create_dir(&sub).unwrap();
    fs_err::rename(&real, sub.join("config.toml")).unwrap();
    std::os::unix::fs::chown(&sub, Some(4243), None).unwrap();
    let e = rule(&sub.join("config.toml"), &meta, 4242).unwrap_err();
    assert!(
        matches!(e.what, ForeignWhy::OwnerOfDirectory(ref d) if d == &sub),
        "{e}"
    );
}
