//! The compact copy gpuenv keeps of a settings file (`cache/registry/`) is believed only
//! while it is the user's own regular file, not a link, not writable by others, made of the
//! settings file as it is now, and holding only names a settings file may hold. Each forged
//! copy here matches the settings file's identity, so only the rule under test refuses it.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::common::hostile::resealed;
use crate::common::*;
use fs_err as fs;

/// CUDA 12.4 linked and its settings old enough to be copied; the copy, made by `prefix`.
fn copied() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let root = sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    std::thread::sleep(std::time::Duration::from_millis(2200));
    assert_eq!(prefix(&sb), root);
    let dir = sb.gpuenv_home().join("cache/registry");
    let copies: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    (sb, copies[0].clone())
}

fn prefix(sb: &Sandbox) -> PathBuf {
    PathBuf::from(sb.ok(&["prefix", "cuda-12.4"]).trim_end())
}

/// The copy at `copy` with cuda-12.4's root moved to `evil/` (the header kept, so it still
/// matches the settings file).
fn forge(sb: &Sandbox, copy: &Path) -> String {
    let text = fs::read_to_string(copy).unwrap();
    let real = sb.path("opt/cuda-12.4").display().to_string();
    let evil = sb.path("evil/cuda-12.4").display().to_string();
    assert!(text.contains(&real));
    resealed(&text.replace(&real, &evil))
}

#[test]
fn a_hand_edit_with_the_old_size_and_modification_time_is_seen() {
    let (sb, _) = copied();
    let settings = sb.gpuenv_home().join("settings.toml");
    let mtime = fs::metadata(&settings).unwrap().modified().unwrap();
    let other = cuda_runfile(&sb.path("opt/cuda-12.5"), "12.4.131");
    let text = fs::read_to_string(&settings).unwrap();
    fs::write(&settings, text.replace("opt/cuda-12.4", "opt/cuda-12.5")).unwrap();
    let file = fs::File::options().write(true).open(&settings).unwrap();
    file.set_modified(mtime).unwrap();
    drop(file);
    let meta = fs::metadata(&settings).unwrap();
    assert_eq!(
        (meta.len(), meta.modified().unwrap()),
        (text.len() as u64, mtime)
    );
    assert_eq!(prefix(&sb), other);
}

#[test]
fn another_users_copy_is_not_believed() {
    let (sb, copy) = copied();
    fs::write(&copy, forge(&sb, &copy)).unwrap();
    std::os::unix::fs::chown(&copy, Some(65534), Some(65534)).unwrap();
    assert_eq!(prefix(&sb), sb.path("opt/cuda-12.4"));
}

#[test]
fn a_copy_writable_by_others_is_not_believed() {
    let (sb, copy) = copied();
    fs::write(&copy, forge(&sb, &copy)).unwrap();
    fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(prefix(&sb), sb.path("opt/cuda-12.4"));
}

#[test]
fn a_link_planted_as_the_copy_is_not_followed_and_is_replaced() {
    let (sb, copy) = copied();
    let planted = sb.path("planted.json");
    fs::write(&planted, forge(&sb, &copy)).unwrap();
    fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o600)).unwrap();
    fs::remove_file(&copy).unwrap();
    symlink(&planted, &copy).unwrap();
    assert_eq!(prefix(&sb), sb.path("opt/cuda-12.4"));
    assert!(!fs::symlink_metadata(&copy).unwrap().is_symlink());
    assert!(
        fs::read_to_string(&planted).unwrap().contains("evil"),
        "the target is not written"
    );
}

#[test]
fn a_copy_naming_a_path_instead_of_a_toolchain_is_not_believed() {
    let (sb, copy) = copied();
    let text = fs::read_to_string(&copy).unwrap();
    let named = text.replace("\"cuda-12.4\"", "\"../../x\"");
    // Edited without its check: damaged, so made again from the settings.
    fs::write(&copy, &named).unwrap();
    let list = sb.ok(&["list"]);
    assert!(
        list.contains("cuda-12.4") && !list.contains("../../x"),
        "{list}"
    );
    // Forged with its check: the line names no toolchain, and no path is made of it.
    fs::write(&copy, resealed(&named)).unwrap();
    let list = sb.ok(&["list"]);
    assert!(!list.contains("../../x"), "{list}");
    sb.ok(&["reshim"]);
    assert!(!sb.gpuenv_home().join("views/../../x").exists());
}

#[test]
fn a_forged_copy_that_breaks_no_rule_is_believed() {
    // What the tests above refuse is each rule's doing, not the forgery's.
    let (sb, copy) = copied();
    fs::write(&copy, forge(&sb, &copy)).unwrap();
    assert_eq!(prefix(&sb), sb.path("evil/cuda-12.4"));
}
