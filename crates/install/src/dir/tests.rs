//! The unit tests of `dir.rs`.

use super::*;

#[test]
fn a_link_where_a_directory_belongs_is_neither_entered_nor_removed_through() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs_err::create_dir_all(&outside).unwrap();
    fs_err::write(outside.join("mine"), "x").unwrap();
    let cache = dir.path().join("cache");
    fs_err::create_dir_all(&cache).unwrap();
    std::os::unix::fs::symlink(&outside, cache.join("objects")).unwrap();
    let top = Dir::open_path(&cache).unwrap();
    assert!(top.open("objects").is_err());
    let mut seen = 0;
    top.for_each_file("objects", &mut |_| seen += 1).unwrap();
    assert_eq!(seen, 0);
    top.remove_tree("objects").unwrap();
    assert!(outside.join("mine").exists());
    let made = top.create("objects").unwrap();
    assert!(made.names().unwrap().is_empty());
}

#[test]
fn a_directory_of_yours_that_others_may_write_becomes_yours_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("made-with-umask-002");
    fs_err::create_dir_all(&shared).unwrap();
    let mode = |m| std::fs::Permissions::from_mode(m);
    fs_err::set_permissions(&shared, mode(0o775)).unwrap();
    Dir::open_path(&shared).unwrap().check().unwrap();
    let now = fs_err::metadata(&shared).unwrap().permissions().mode();
    assert_eq!(now & 0o7777, 0o755);
    // Sticky, like /tmp: others may write, but not rename what is not theirs.
    fs_err::set_permissions(&shared, mode(0o1777)).unwrap();
    Dir::open_path(&shared).unwrap().check().unwrap();
    let now = fs_err::metadata(&shared).unwrap().permissions().mode();
    assert_eq!(now & 0o7777, 0o1777);
}

/// Runs `f` as an account file modes bind: this one, or, as root (whom they do not
/// bind), a child process as uid and gid 65534 that is given everything under `owned`.
fn as_bound_by_modes(owned: &Path, f: impl FnOnce() -> bool) -> bool {
    if !rustix::process::geteuid().is_root() {
        return f();
    }
    fn give(path: &Path) {
        std::os::unix::fs::lchown(path, Some(65534), Some(65534)).unwrap();
        if path.is_dir() && !path.is_symlink() {
            for e in fs_err::read_dir(path).unwrap() {
                give(&e.unwrap().path());
            }
        }
    }
    give(owned);
    // SAFETY: the child only drops its ids, runs `f` and exits; glibc's fork keeps its
    // allocator usable in the child.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
    if pid == 0 {
        let ok = unsafe {
            libc::setgroups(0, std::ptr::null()) == 0
                && libc::setgid(65534) == 0
                && libc::setuid(65534) == 0
        } && std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(false);
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) }
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

#[test]
fn a_read_only_tree_is_removed_and_nothing_beside_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    fs_err::create_dir_all(tree.join("a/b")).unwrap();
    fs_err::write(tree.join("a/b/f"), "x").unwrap();
    fs_err::write(dir.path().join("keep"), "x").unwrap();
    for d in ["a/b", "a"] {
        let mode = std::fs::Permissions::from_mode(0o555);
        fs_err::set_permissions(tree.join(d), mode).unwrap();
    }
    let removed = as_bound_by_modes(dir.path(), || remove_tree(&tree).is_ok());
    assert!(removed, "the read-only tree was not removed");
    let top = Dir::open_path(dir.path()).unwrap();
    assert_eq!(top.names().unwrap(), vec![OsString::from("keep")]);
}

#[test]
fn leftovers_of_one_name_never_match_a_longer_one() {
    let dir = tempfile::tempdir().unwrap();
    let mine = temp_dir(dir.path(), "cuda-12.4").unwrap().keep();
    let longer = temp_dir(dir.path(), "cuda-12.4.1").unwrap().keep();
    let labelled = temp_dir(dir.path(), "cuda-12.4-foo").unwrap().keep();
    let old = dir.path().join(".old-cuda-12.4@1");
    fs_err::create_dir(&old).unwrap();
    remove_leftovers(dir.path(), "cuda-12.4");
    assert!(!mine.exists() && !old.exists());
    assert!(
        longer.exists() && labelled.exists(),
        "another toolchain's temp dir was removed"
    );
}
