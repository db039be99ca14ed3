//! `gpuenv self uninstall` with `GPUENV_HOME` in directories that were the user's before
//! gpuenv used them (`~/.local`, `$HOME`, `/usr/local` as root, laid out in a temp root):
//! nothing gpuenv did not write goes, another account's entries stay, a directory without
//! gpuenv's mark is refused, and a hook block inside `if … fi` leaves a `.bashrc` that a
//! real bash still runs to its end (issue 39).

use crate::common::install_fixtures as fixtures;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;

use crate::common::*;

fn with_home(sb: &Sandbox, home: &Path, args: &[&str]) -> std::process::Output {
    sb.gpuenv()
        .env("GPUENV_HOME", home)
        .args(args)
        .output()
        .unwrap()
}

/// Links a toolkit, so gpuenv writes its state (settings, views, shims, the proxy) there.
fn use_home(sb: &Sandbox, home: &Path) {
    let root = cuda_runfile(&sb.path("cuda"), "12.4.131");
    succeeded(&with_home(
        sb,
        home,
        &["link", "cuda-12.4", root.to_str().unwrap()],
    ));
    assert!(home.join(".gpuenv-home").is_file());
    assert!(home.join("bin/gpuenv-shim").is_file());
}

fn said(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The user's files, made before gpuenv, each checked after.
fn users_files(dir: &Path, rel: &[&str]) -> Vec<(std::path::PathBuf, String)> {
    rel.iter()
        .map(|r| {
            let p = dir.join(r);
            let body = format!("the user's {r}\n");
            write(&p, &body);
            (p, body)
        })
        .collect()
}

#[track_caller]
fn all_kept(files: &[(std::path::PathBuf, String)], log: &str) {
    for (p, body) in files {
        assert_eq!(
            fs_err::read_to_string(p).ok().as_deref(),
            Some(body.as_str()),
            "{} was removed or changed:\n{log}",
            p.display()
        );
    }
}

#[test]
fn in_dot_local_only_gpuenvs_files_go() {
    let sb = Sandbox::new();
    let local = sb.home().join(".local");
    let mine = users_files(
        &local,
        &[
            "bin/my-script",
            "share/app/data",
            "lib/python3/site.py",
            "cache/pip/x",
        ],
    );
    std::os::unix::fs::symlink("../share/app/data", local.join("bin/pipx-link")).unwrap();
    use_home(&sb, &local);
    let out = with_home(&sb, &local, &["self", "uninstall", "-y"]);
    let log = said(&out);
    assert!(out.status.success(), "{log}");
    all_kept(&mine, &log);
    assert!(local.join("bin/pipx-link").is_symlink(), "{log}");
    for gone in [
        "views",
        "shims",
        "settings.toml",
        "bin/gpuenv-shim",
        "bin/gpuenv",
        ".gpuenv-home",
    ] {
        assert!(
            fs_err::symlink_metadata(local.join(gone)).is_err(),
            "{gone} stays:\n{log}"
        );
    }
    assert!(local.join("bin").is_dir() && local.is_dir());
}

#[test]
fn in_home_itself_nothing_of_the_users_goes_and_home_stays() {
    let sb = Sandbox::new();
    let home = sb.home();
    let mine = users_files(
        &home,
        &[
            "bin/tool",
            "downloads/photo.jpg",
            "cache/thing",
            "facts/notes.txt",
            "toolchains/mine.txt",
        ],
    );
    use_home(&sb, &home);
    let out = with_home(&sb, &home, &["self", "uninstall", "-y"]);
    let log = said(&out);
    assert!(out.status.success(), "{log}");
    all_kept(&mine, &log);
    assert!(home.is_dir());
    assert!(
        !home.join("views").exists() && !home.join("shims").exists(),
        "{log}"
    );
    assert!(
        log.contains("it was there before gpuenv first used"),
        "{log}"
    );
}

#[test]
fn in_usr_local_as_root_another_accounts_entries_stay() {
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        cannot_run("this test runs as root (another account's file is made with chown)");
        return;
    }
    let sb = Sandbox::new();
    let usr_local = sb.path("root/usr/local");
    let mine = users_files(
        &usr_local,
        &[
            "bin/cmake",
            "lib/libfoo.so",
            "share/man/man1/foo.1",
            "include/foo.h",
        ],
    );
    use_home(&sb, &usr_local);
    let theirs = usr_local.join("toolchains/cuda-their-own");
    write(&theirs.join("bin/nvcc"), "theirs\n");
    for p in [theirs.clone(), theirs.join("bin"), theirs.join("bin/nvcc")] {
        std::os::unix::fs::chown(&p, Some(4242), Some(4242)).unwrap();
    }
    let out = with_home(&sb, &usr_local, &["self", "uninstall", "-y"]);
    let log = said(&out);
    assert!(out.status.success(), "{log}");
    all_kept(&mine, &log);
    assert_eq!(
        fs_err::read_to_string(theirs.join("bin/nvcc")).unwrap(),
        "theirs\n"
    );
    assert!(log.contains("another account's"), "{log}");
    assert!(!usr_local.join("bin/gpuenv-shim").exists() && usr_local.join("bin").is_dir());
}

#[test]
fn a_directory_without_the_mark_is_refused_and_an_old_home_of_gpuenvs_alone_is_recognised() {
    let sb = Sandbox::new();
    let dir = sb.path("somewhere");
    let mine = users_files(&dir, &["views/holiday.png", "notes.txt"]);
    write(&dir.join("settings.toml"), "");
    let out = with_home(&sb, &dir, &["self", "uninstall", "-y"]);
    assert!(!out.status.success());
    assert!(
        said(&out).contains("carries no gpuenv mark"),
        "{}",
        said(&out)
    );
    all_kept(&mine, &said(&out));
    assert!(dir.join("settings.toml").is_file());

    // A home made before marks existed: gpuenv's names only; it goes, the directory too.
    let old = sb.path("old-home");
    use_home(&sb, &old);
    fs_err::remove_file(old.join(".gpuenv-home")).unwrap();
    // A journal a killed settings edit left is gpuenv's too.
    write(
        &old.join(".settings.toml.gpuenv-edit"),
        "gpuenv-edit 1 0 0\n",
    );
    let out = with_home(&sb, &old, &["self", "uninstall", "-y"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(!old.exists(), "{}", said(&out));
}

#[test]
fn a_hook_inside_if_fi_is_removed_and_bashrc_still_runs_to_its_end() {
    if !have_tool("bash") {
        cannot_run("bash is not installed");
        return;
    }
    let sb = Sandbox::new();
    use_home(&sb, &sb.gpuenv_home());
    let rc = sb.home().join(".bashrc");
    let before = "export A=1\nif [ -n \"$A\" ]; then\n  # >>> gpuenv hook >>>\n  eval \"$(gpuenv hook bash)\"\n  # <<< gpuenv hook <<<\nfi\nif true; then\n  eval \"$(gpuenv hook bash)\"\nfi\necho \"reached the end\"\n";
    write(&rc, before);
    fs_err::set_permissions(&rc, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ino = fs_err::metadata(&rc).unwrap().ino();
    let out = sb
        .gpuenv()
        .args(["self", "uninstall", "-y"])
        .output()
        .unwrap();
    let log = said(&out);
    assert!(out.status.success(), "{log}");
    let after = fs_err::read_to_string(&rc).unwrap();
    assert!(!after.contains(">>> gpuenv hook"), "{after}");
    // The line outside the marks is not gpuenv's to remove: kept, and named.
    assert!(
        after.contains("if true; then\n  eval \"$(gpuenv hook bash)\"\nfi\n"),
        "{after}"
    );
    assert!(
        log.contains("outside the `# >>> gpuenv hook >>>` marks"),
        "{log}"
    );
    let m = fs_err::metadata(&rc).unwrap();
    assert_eq!((m.ino(), m.mode() & 0o777), (ino, 0o600));
    let backup = sb.home().join(".bashrc.gpuenv-uninstall.bak");
    assert_eq!(fs_err::read_to_string(&backup).unwrap(), before);
    assert_eq!(fs_err::metadata(&backup).unwrap().mode() & 0o777, 0o600);
    // A real bash reads it to its end (gpuenv itself is gone from PATH: the unmarked line
    // fails quietly, as it would).
    let run = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", ". \"$HOME/.bashrc\""])
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&run.stdout).contains("reached the end"),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn a_toolchain_in_use_is_retired_not_deleted() {
    let sb = Sandbox::new();
    let dir = sb.path("mirror");
    fixtures::write_tree(&dir, &fixtures::redist_tree(&["12.6.3"]));
    let url = format!("file://{}", dir.display());
    fixtures::ok(
        &sb,
        &[("GPUENV_CUDA_MIRROR", url.as_str())],
        &["install", "cuda-12.6.3", "--profile", "minimal"],
    );
    let tree = sb.toolchain("cuda-12.6.3");
    // A job sitting in the tree.
    let mut job = std::process::Command::new("sleep")
        .arg("600")
        .current_dir(&tree)
        .spawn()
        .unwrap();
    let exe = format!("/proc/{}/exe", job.id());
    while !fs_err::read_link(&exe).is_ok_and(|e| e.ends_with("sleep")) {
        std::thread::yield_now();
    }
    let out = sb
        .gpuenv()
        .args(["self", "uninstall", "-y"])
        .output()
        .unwrap();
    let log = said(&out);
    let _ = job.kill();
    let _ = job.wait();
    assert!(out.status.success(), "{log}");
    assert!(log.contains("cuda-12.6.3 is retired"), "{log}");
    assert!(
        tree.join("bin/nvcc").exists(),
        "the tree in use was deleted:\n{log}"
    );
    assert!(!sb.gpuenv_home().join("settings.toml").exists(), "{log}");
    // Once nothing uses it, the reap deletes it.
    sb.ok(&["uninstall", "--reap"]);
    assert!(!tree.exists());
}

#[test]
fn zsh_and_fish_start_up_files_keep_working_after_their_blocks_go() {
    let sb = Sandbox::new();
    use_home(&sb, &sb.gpuenv_home());
    let cases = [
        (
            "zsh",
            ".zshrc",
            "if [[ -n \"$HOME\" ]]; then\n  # >>> gpuenv hook >>>\n  eval \"$(gpuenv hook zsh)\"\n  # <<< gpuenv hook <<<\nfi\necho \"reached the end\"\n",
        ),
        (
            "fish",
            ".config/fish/config.fish",
            "if status is-interactive\n  # >>> gpuenv hook >>>\n  gpuenv hook fish | source\n  # <<< gpuenv hook <<<\nend\necho \"reached the end\"\n",
        ),
    ];
    let mut ran = Vec::new();
    for (shell, rel, text) in cases {
        if !have_tool(shell) {
            if in_ci() {
                panic!("{shell} is not installed");
            }
            continue;
        }
        write(&sb.home().join(rel), text);
        ran.push((shell, rel));
    }
    let out = sb
        .gpuenv()
        .args(["self", "uninstall", "-y"])
        .output()
        .unwrap();
    let log = said(&out);
    assert!(out.status.success(), "{log}");
    for (shell, rel) in ran {
        let rc = sb.home().join(rel);
        let after = fs_err::read_to_string(&rc).unwrap();
        assert!(!after.contains("gpuenv hook"), "{shell}: {after}");
        let run = std::process::Command::new(shell)
            .args(["-c", &format!("source \"$HOME/{rel}\"")])
            .env_clear()
            .env("HOME", sb.home())
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&run.stdout).contains("reached the end"),
            "{shell}: {after}\n{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
}
