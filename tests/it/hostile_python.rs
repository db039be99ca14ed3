//! Hostile inputs to what Python environments are given (issue 33): a pyproject.toml that is
//! not TOML, a link or another account's (a real second account); an index base URL with a
//! newline or a user's password, from the variable or the settings, is refused with a clear
//! error, and nothing is exported or written.

use crate::common::accounts;

use crate::common::*;
use accounts::Account;

#[test]
fn an_index_url_with_a_newline_or_a_password_is_refused() {
    let sb = Sandbox::new();
    let proj = trusted_torch_auto_13_2(&sb);
    let settings = sb.gpuenv_home().join("settings.toml");
    let before = fs_err::read_to_string(&settings).unwrap();
    for (bad, why) in [
        ("https://m.example/whl\nexport EVIL=1", "a newline"),
        ("https://user:secret@m.example/whl", "names a user"),
        ("file:///srv/whl", "not an http:// or https:// URL"),
    ] {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("GPUENV_TORCH_INDEX_URL", bad)
            .args(["env", "--shell", "bash"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad:?} was taken: {err}");
        assert!(out.stdout.is_empty(), "{bad:?}: something was exported");
        assert!(err.contains("GPUENV_TORCH_INDEX_URL"), "{err}");
        assert!(err.contains(why), "{bad:?}: {err}");
        assert!(!err.contains("secret@"), "the password is repeated: {err}");
        assert!(err.contains("hint:"), "{err}");
        assert_eq!(fs_err::read_to_string(&settings).unwrap(), before);
    }

    // The same from the settings file: named with the file.
    write(
        &settings,
        &format!("{before}\n[torch]\nindex-url = \"https://a:b@m.example/whl\"\n"),
    );
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("[torch] index-url in gpuenv's settings.toml"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

fn write_pyproject(sb: &Sandbox, proj: &std::path::Path) -> std::process::Output {
    sb.gpuenv()
        .current_dir(proj)
        .args(["torch", "index", "--write-pyproject"])
        .output()
        .unwrap()
}

#[test]
fn a_pyproject_that_is_not_toml_a_link_or_another_accounts_is_refused_and_left_as_it_was() {
    let sb = Sandbox::new();
    let proj = trusted_torch_auto_13_2(&sb);
    let file = proj.join("pyproject.toml");

    // Not TOML: the line is named, nothing is written.
    let broken = "[project]\nname = \"app\"\ndependencies = [\"torch\"\n";
    write(&file, broken);
    let out = write_pyproject(&sb, &proj);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("is not valid TOML: line 4, column 1: invalid array: expected `]`"),
        "{err}"
    );
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(fs_err::read_to_string(&file).unwrap(), broken);
    // `check` says it cannot tell, naming the file.
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .arg("check")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pyproject.toml is not valid TOML"), "{err}");

    // A link (to a good file elsewhere): neither followed nor replaced.
    let elsewhere = sb.path("elsewhere/pyproject.toml");
    let good = "[project]\nname = \"app\"\n";
    write(&elsewhere, good);
    fs_err::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
    let out = write_pyproject(&sb, &proj);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("is a symbolic link"), "{err}");
    assert!(fs_err::symlink_metadata(&file)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs_err::read_to_string(&elsewhere).unwrap(), good);

    // Another account's file.
    let Some(other) = Account::other("py") else {
        return;
    };
    fs_err::remove_file(&file).unwrap();
    write(&file, good);
    std::os::unix::fs::chown(&file, Some(other.uid), None).unwrap();
    let out = write_pyproject(&sb, &proj);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("not to you"), "{err}");
    assert!(err.contains(&other.name), "{err}");
    assert_eq!(fs_err::read_to_string(&file).unwrap(), good);
    use std::os::unix::fs::MetadataExt;
    assert_eq!(fs_err::metadata(&file).unwrap().uid(), other.uid);
}
