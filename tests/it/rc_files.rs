//! The shell start-up files `gpuenv self uninstall` edits, in every form a user's really has
//! (issue 39): CRLF and a byte-order mark, mode 0600, a hard link (a dotfiles checkout), read
//! only, a link out of the home, two uninstalls at once and a kill -9 mid-edit. The file is
//! always the old bytes or the old bytes without exactly gpuenv's marked block; its mode and
//! inode stay; what gpuenv may not touch is left whole and named.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

use crate::common::*;

const BLOCK: &str = "# >>> gpuenv hook >>>\neval \"$(gpuenv hook bash)\"\n# <<< gpuenv hook <<<\n";

/// A sandbox whose home gpuenv made (a linked toolkit: settings, views, shims, the proxy).
fn used() -> Sandbox {
    let sb = Sandbox::new();
    let root = cuda_runfile(&sb.path("cuda"), "12.4.131");
    sb.ok(&["link", "cuda-12.4", root.to_str().unwrap()]);
    sb
}

fn uninstall(sb: &Sandbox) -> Output {
    sb.gpuenv()
        .args(["self", "uninstall", "-y"])
        .output()
        .unwrap()
}

fn start_uninstall(sb: &Sandbox) -> Child {
    sb.gpuenv_std()
        .args(["self", "uninstall", "-y"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn said(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn bashrc(sb: &Sandbox) -> PathBuf {
    sb.home().join(".bashrc")
}

fn journal(rc: &Path) -> PathBuf {
    let name = rc.file_name().unwrap().to_string_lossy();
    rc.with_file_name(format!(".{name}.gpuenv-edit"))
}

fn mode(p: &Path) -> u32 {
    fs_err::metadata(p).unwrap().mode() & 0o777
}

#[test]
fn crlf_a_bom_the_mode_and_a_hard_link_are_kept_and_only_the_block_goes() {
    let sb = used();
    let rc = bashrc(&sb);
    // A dotfiles checkout: ~/.bashrc is a hard link to the repository's copy.
    let repo = sb.home().join("dotfiles/bashrc");
    let before = format!(
        "\u{feff}export A=1\r\n{}echo end\r\n",
        BLOCK.replace('\n', "\r\n")
    );
    write(&repo, &before);
    fs_err::set_permissions(&repo, std::fs::Permissions::from_mode(0o600)).unwrap();
    fs_err::hard_link(&repo, &rc).unwrap();
    let ino = fs_err::metadata(&rc).unwrap().ino();

    let out = uninstall(&sb);
    assert!(out.status.success(), "{}", said(&out));
    let after = fs_err::read_to_string(&rc).unwrap();
    assert_eq!(after, "\u{feff}export A=1\r\necho end\r\n");
    assert_eq!(fs_err::read_to_string(&repo).unwrap(), after, "one file");
    let m = fs_err::metadata(&rc).unwrap();
    assert_eq!((m.ino(), m.nlink(), m.mode() & 0o777), (ino, 2, 0o600));
    let backup = sb.home().join(".bashrc.gpuenv-uninstall.bak");
    assert_eq!(fs_err::read_to_string(&backup).unwrap(), before);
    assert_eq!(mode(&backup), 0o600);
}

#[test]
fn a_read_only_rc_and_one_linked_out_of_the_home_are_left_whole_and_named() {
    let sb = used();
    let rc = bashrc(&sb);
    let before = format!("export A=1\n{BLOCK}echo end\n");
    write(&rc, &before);
    fs_err::set_permissions(&rc, std::fs::Permissions::from_mode(0o400)).unwrap();
    // ~/.zshrc from a directory outside the home (a site's shared dotfiles).
    let outside = sb.path("site/zshrc");
    let theirs = format!("setopt x\n{}", BLOCK.replace("bash", "zsh"));
    write(&outside, &theirs);
    std::os::unix::fs::symlink(&outside, sb.home().join(".zshrc")).unwrap();

    let out = uninstall(&sb);
    let log = said(&out);
    assert!(out.status.success(), "{log}");
    assert_eq!(fs_err::read_to_string(&rc).unwrap(), before);
    assert_eq!(mode(&rc), 0o400);
    assert_eq!(fs_err::read_to_string(&outside).unwrap(), theirs);
    assert!(
        log.contains(&format!(
            "left in place: gpuenv's lines in {}",
            rc.display()
        )),
        "{log}"
    );
    assert!(log.contains(".zshrc"), "the link is named: {log}");
    assert!(!journal(&rc).exists());
}

#[test]
fn two_uninstalls_at_once_remove_the_block_once_and_keep_the_first_copy() {
    let sb = used();
    let rc = bashrc(&sb);
    let before = format!("export A=1\n{BLOCK}echo end\n");
    write(&rc, &before);
    let children: Vec<Child> = (0..4).map(|_| start_uninstall(&sb)).collect();
    for c in children {
        // One run removes the home; the others may find it gone or half gone. Whatever each
        // says, the start-up file is whole.
        let _ = c.wait_with_output().unwrap();
    }
    assert_eq!(
        fs_err::read_to_string(&rc).unwrap(),
        "export A=1\necho end\n"
    );
    let backup = sb.home().join(".bashrc.gpuenv-uninstall.bak");
    assert_eq!(fs_err::read_to_string(&backup).unwrap(), before);
    assert!(!journal(&rc).exists());
}

#[test]
fn a_kill_mid_uninstall_leaves_the_old_rc_or_the_whole_edit_and_the_next_run_finishes() {
    // Inside `if … fi`: the edit is checked with `bash -n` before it lands.
    let before = "export A=1\nif true; then\n  # >>> gpuenv hook >>>\n  eval \"$(gpuenv hook bash)\"\n  # <<< gpuenv hook <<<\nfi\necho end\n";
    let done = {
        let sb = used();
        write(&bashrc(&sb), before);
        let out = uninstall(&sb);
        assert!(out.status.success(), "{}", said(&out));
        fs_err::read_to_string(bashrc(&sb)).unwrap()
    };
    assert!(
        !done.contains("gpuenv hook >>>") && done.ends_with("fi\necho end\n"),
        "{done}"
    );
    let mut seen_old = false;
    for delay in (0u64..24).map(|i| std::time::Duration::from_micros((i * 7919) % 40_000)) {
        let sb = used();
        let rc = bashrc(&sb);
        write(&rc, before);
        let mut child = start_uninstall(&sb);
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        let now = fs_err::read_to_string(&rc).unwrap();
        seen_old |= now == before;
        assert!(
            now == before || now == done || journal(&rc).exists(),
            "killed after {delay:?}: neither the old file, the edited one nor a journal:\n{now:?}"
        );
        let out = uninstall(&sb);
        assert!(
            out.status.success(),
            "after a kill at {delay:?}: {}",
            said(&out)
        );
        assert_eq!(fs_err::read_to_string(&rc).unwrap(), done, "{delay:?}");
        assert!(!journal(&rc).exists());
        let backup = sb.home().join(".bashrc.gpuenv-uninstall.bak");
        assert_eq!(
            fs_err::read_to_string(&backup).unwrap(),
            before,
            "the copy is the user's file"
        );
    }
    assert!(seen_old, "no kill landed before the edit");
}

/// A kill after the edited start-up file landed and before its journal went: the file has
/// no block left, and the next run still finishes the edit (drops the journal, changes
/// nothing of the file).
#[test]
fn a_journal_left_beside_a_finished_rc_goes_with_the_next_uninstall() {
    let sb = used();
    let rc = bashrc(&sb);
    let finished =
        "export A=1\nif true; then\n  : # gpuenv hook removed by gpuenv self uninstall\nfi\n";
    write(&rc, finished);
    fs_err::write(journal(&rc), "not a journal gpuenv could apply").unwrap();
    let out = uninstall(&sb);
    assert!(out.status.success(), "{}", said(&out));
    assert!(!journal(&rc).exists(), "{}", said(&out));
    assert_eq!(fs_err::read_to_string(&rc).unwrap(), finished);
}

/// The state a kill between removing the mark and removing the home leaves: an empty home
/// without its mark. Nothing there is the user's or gpuenv's; the next run finishes the
/// start-up file and succeeds.
#[test]
fn an_emptied_home_without_its_mark_is_nothing_to_remove_and_the_rc_still_goes() {
    let sb = Sandbox::new();
    fs_err::create_dir_all(sb.gpuenv_home()).unwrap();
    let rc = bashrc(&sb);
    write(&rc, &format!("export A=1\n{BLOCK}"));
    let out = uninstall(&sb);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(fs_err::read_to_string(&rc).unwrap(), "export A=1\n");
    assert!(sb.gpuenv_home().is_dir(), "not gpuenv's to remove");
}
