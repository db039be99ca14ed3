//! The editor against files a user really has: each hostile form is made here.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

use super::*;

fn toml_file(path: &Path, within: &Path) -> UserFile<'static> {
    UserFile {
        path: Box::leak(path.to_path_buf().into_boxed_path()),
        within: Box::leak(within.to_path_buf().into_boxed_path()),
        scope: "the project",
        kind: outside::Kind::Pyproject,
    }
}

/// Appends `key = 1` to the top table through the document.
fn add_key(key: &'static str) -> impl FnOnce(&str) -> Result<Option<String>, EditError> {
    move |text| {
        let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
        doc[key] = toml_edit::value(1);
        Ok(Some(doc.to_string()))
    }
}

#[test]
fn the_form_the_mode_and_the_inode_stay() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("pyproject.toml");
    let text = "\u{feff}# mine\r\ntool.uv = { sources = { x = { index = \"corp\" } } } # why\r\n";
    fs_err::write(&p, text).unwrap();
    fs_err::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    let twin = dir.path().join("twin.toml");
    fs_err::hard_link(&p, &twin).unwrap();
    let ino = fs_err::metadata(&p).unwrap().ino();
    let out = edit(toml_file(&p, dir.path()), Check::TOML, add_key("a")).unwrap();
    assert_eq!(out.edited, Edited::Changed);
    let after = fs_err::read_to_string(&p).unwrap();
    assert_eq!(after, format!("{text}a = 1\r\n"));
    let m = fs_err::metadata(&p).unwrap();
    assert_eq!((m.ino(), m.mode() & 0o777, m.nlink()), (ino, 0o600, 2));
    assert_eq!(fs_err::read_to_string(&twin).unwrap(), after);
    assert!(!in_place::journal_of(&p).exists());
}

#[test]
fn a_read_only_file_a_link_out_and_a_fifo_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    fs_err::create_dir(&project).unwrap();
    let ro = project.join("ro.toml");
    fs_err::write(&ro, "a = 0\n").unwrap();
    fs_err::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    let e = edit(toml_file(&ro, &project), Check::TOML, add_key("b")).unwrap_err();
    assert!(matches!(e, EditError::ReadOnly { mode: 0o444, .. }), "{e}");
    assert_eq!(fs_err::read_to_string(&ro).unwrap(), "a = 0\n");

    let outside_file = dir.path().join("elsewhere.toml");
    fs_err::write(&outside_file, "x = 0\n").unwrap();
    let link = project.join("pyproject.toml");
    std::os::unix::fs::symlink("../elsewhere.toml", &link).unwrap();
    let e = edit(toml_file(&link, &project), Check::TOML, add_key("b")).unwrap_err();
    assert!(matches!(e, EditError::LinkOut { .. }), "{e}");
    assert_eq!(fs_err::read_to_string(&outside_file).unwrap(), "x = 0\n");

    // A link inside the project is followed and the file it names edited in place.
    let shared = project.join("shared.toml");
    fs_err::write(&shared, "y = 0\n").unwrap();
    let inner = project.join("inner.toml");
    std::os::unix::fs::symlink("shared.toml", &inner).unwrap();
    let out = edit(toml_file(&inner, &project), Check::TOML, add_key("b")).unwrap();
    assert_eq!(out.target, shared);
    assert!(fs_err::symlink_metadata(&inner)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs_err::read_to_string(&shared).unwrap(), "y = 0\nb = 1\n");

    let fifo = project.join("fifo.toml");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string and mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let e = edit(toml_file(&fifo, &project), Check::TOML, add_key("b")).unwrap_err();
    assert!(matches!(e, EditError::Read(_)), "{e}");
}

#[test]
fn an_edit_that_breaks_the_file_or_loses_a_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.toml");
    fs_err::write(&p, "[a]\nb = 1\n").unwrap();
    let broken = edit(toml_file(&p, dir.path()), Check::TOML, |_| {
        Ok::<_, EditError>(Some("[# oops\n".into()))
    })
    .unwrap_err();
    assert!(matches!(broken, EditError::WouldBreak { .. }), "{broken}");
    let lost = edit(toml_file(&p, dir.path()), Check::TOML, |_| {
        Ok::<_, EditError>(Some("[a]\n".into()))
    })
    .unwrap_err();
    assert!(
        matches!(&lost, EditError::WouldLose { key, .. } if key == "a.b"),
        "{lost}"
    );
    assert_eq!(fs_err::read_to_string(&p).unwrap(), "[a]\nb = 1\n");
}

#[test]
fn a_new_file_follows_the_umask_and_concurrent_edits_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("new.toml");
    let keys: Vec<&'static str> = (0..12)
        .map(|i| &*Box::leak(format!("k{i}").into_boxed_str()))
        .collect();
    std::thread::scope(|s| {
        for k in &keys {
            let (p, d) = (p.clone(), dir.path().to_path_buf());
            s.spawn(move || edit(toml_file(&p, &d), Check::TOML, add_key(k)).unwrap());
        }
    });
    let doc: toml_edit::DocumentMut = fs_err::read_to_string(&p).unwrap().parse().unwrap();
    for k in &keys {
        assert_eq!(doc[k].as_integer(), Some(1), "{k} lost: {doc}");
    }
    // SAFETY: umask(2) cannot fail; the old mask is put back at once.
    let mask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    };
    let mode = fs_err::metadata(&p).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o666 & !(mask as u32), "{mode:o}");
}

#[test]
fn a_text_check_that_fails_leaves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(".bashrc");
    fs_err::write(&p, "a=1\n").unwrap();
    let check = |copy: &Path| {
        let text = fs_err::read_to_string(copy).unwrap();
        match text.contains("fi\n") {
            true => Err(EditError::CheckFailed {
                path: copy.to_path_buf(),
                checker: "test".into(),
                output: "unexpected fi".into(),
            }),
            false => Ok(()),
        }
    };
    let file = UserFile {
        kind: outside::Kind::ShellRc,
        ..toml_file(&p, dir.path())
    };
    let e = edit(file, Check::Text(&check), |t| {
        Ok::<_, EditError>(Some(format!("{t}fi\n")))
    })
    .unwrap_err();
    assert!(matches!(e, EditError::CheckFailed { .. }), "{e}");
    assert_eq!(fs_err::read_to_string(&p).unwrap(), "a=1\n");
    let leftovers: Vec<_> = fs_err::read_dir(dir.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
}
