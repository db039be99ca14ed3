//! Every command that writes a file of the user's, against every form such a file really
//! has (issue 39): inline tables, comments, CRLF, a byte-order mark, mode 0600, read-only, a
//! hard link, a link out of the project, the same command run concurrently, and a kill -9
//! mid-write. The file is always the old bytes or the old bytes plus exactly the intended
//! change; it always parses; its mode and inode stay. The hostile forms are made here.

use crate::common::accounts;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// A command that writes a user's file, with a project it runs in.
struct Writer {
    what: &'static str,
    file: &'static str,
    args: &'static [&'static str],
    /// A plain file of the user's, and one whose tables are written inline.
    seed: &'static str,
    inline: &'static str,
    /// Keys (dotted) the command adds.
    adds: &'static [&'static str],
    setup: fn(&Sandbox) -> PathBuf,
}

fn pin_project(sb: &Sandbox) -> PathBuf {
    let root = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    sb.ok(&["link", "cuda-12.4", root.to_str().unwrap()]);
    let proj = sb.path("proj");
    fs_err::create_dir_all(&proj).unwrap();
    proj
}

const WRITERS: &[Writer] = &[
    Writer {
        what: "gpuenv pin",
        file: "gpuenv.toml",
        args: &["pin", "cuda-12.4"],
        seed: "# my project\n[toolchain]\nrocm = \"6.2\" # the AMD box\n\n# notes\n[build]\ncache = \"off\" # no ccache here\n",
        inline: "# mine\ntoolchain = { rocm = \"6.2\" } # inline\nbuild = { cache = \"off\" }\n",
        adds: &["toolchain.cuda"],
        setup: pin_project,
    },
    Writer {
        what: "gpuenv torch index --write-pyproject",
        file: "pyproject.toml",
        args: &["torch", "index", "--write-pyproject"],
        seed: "# the app\n[project]\nname = \"app\" # its name\ndependencies = [\"torch\"]\n\n[tool.uv.sources]\ncorp-lib = { index = \"corp\" } # ours\n\n[[tool.uv.index]]\nname = \"corp\"\nurl = \"https://corp.example/simple\"\n",
        inline: "# my uv settings\n[project]\nname = \"app\"\n[tool]\nuv = { sources = { corp-lib = { index = \"corp\" } }, index = [{ name = \"corp\", url = \"https://corp.example/simple\" }] } # uv\n",
        adds: &["tool.uv.sources.torch.index", "tool.uv.sources.torchaudio.index"],
        setup: trusted_torch_auto_13_2,
    },
];

fn run(sb: &Sandbox, proj: &Path, args: &[&str]) -> Output {
    sb.gpuenv().current_dir(proj).args(args).output().unwrap()
}

/// The real gpuenv in `proj`, not waited for.
fn start(sb: &Sandbox, proj: &Path, args: &[&str]) -> std::process::Child {
    Command::new(assert_cmd::cargo::cargo_bin("gpuenv"))
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .current_dir(proj)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every key path of a TOML text (a byte-order mark allowed) and the parsed document.
fn keys(text: &str) -> Vec<String> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc: toml_edit::DocumentMut = body
        .parse()
        .unwrap_or_else(|e| panic!("not TOML ({e}):\n{text}"));
    let mut out = Vec::new();
    fn walk(t: &dyn toml_edit::TableLike, at: &str, out: &mut Vec<String>) {
        for (k, item) in t.iter() {
            let path = if at.is_empty() {
                k.to_string()
            } else {
                format!("{at}.{k}")
            };
            out.push(path.clone());
            if let Some(t) = item.as_table_like() {
                walk(t, &path, out);
            }
            if let Some(list) = item.as_array_of_tables() {
                for (i, t) in list.iter().enumerate() {
                    walk(t, &format!("{path}[{i}]"), out);
                }
            }
        }
    }
    walk(doc.as_table(), "", &mut out);
    out
}

/// `after` is `before` with lines added and, in a file whose tables are inline, lines
/// changed: every line of `before` that is not such a line is still there, in order, byte
/// for byte (its `\r` too); every key of `before` is there; the intended keys are there.
#[track_caller]
fn old_plus_change(before: &str, after: &str, w: &Writer, inline: bool) {
    let got = keys(after);
    for k in keys(before).iter().chain(
        w.adds
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .iter(),
    ) {
        assert!(got.contains(k), "{}: `{k}` missing from\n{after}", w.what);
    }
    let mut rest = after.split_inclusive('\n');
    for line in before.split_inclusive('\n') {
        if inline && line.contains('{') {
            continue;
        }
        assert!(
            rest.any(|l| l == line),
            "{}: the line {line:?} of the user's file is gone or moved:\n{after:?}",
            w.what
        );
    }
    if before.starts_with('\u{feff}') {
        assert!(after.starts_with('\u{feff}'), "{}: the BOM went", w.what);
    }
    if before.contains("\r\n") {
        let bare = after.replace("\r\n", "");
        assert!(
            !bare.contains('\n'),
            "{}: a line without CRLF:\n{after:?}",
            w.what
        );
    }
}

fn mode(p: &Path) -> u32 {
    fs_err::metadata(p).unwrap().mode() & 0o7777
}

fn fresh(w: &Writer) -> (Sandbox, PathBuf, PathBuf) {
    let sb = Sandbox::new();
    let proj = (w.setup)(&sb);
    let file = proj.join(w.file);
    (sb, proj, file)
}

#[test]
fn every_writer_keeps_the_form_of_the_users_file() {
    for w in WRITERS {
        let forms: [(&str, String, bool); 4] = [
            ("comments", w.seed.to_string(), false),
            ("inline tables", w.inline.to_string(), true),
            ("CRLF", w.seed.replace('\n', "\r\n"), false),
            ("a BOM", format!("\u{feff}{}", w.seed), false),
        ];
        for (form, before, inline) in forms {
            let (sb, proj, file) = fresh(w);
            write(&file, &before);
            let out = run(&sb, &proj, w.args);
            assert!(
                out.status.success(),
                "{} with {form}: {}",
                w.what,
                text(&out)
            );
            let after = fs_err::read_to_string(&file).unwrap();
            old_plus_change(&before, &after, w, inline);
            // Run again: nothing more changes.
            succeeded(&run(&sb, &proj, w.args));
            assert_eq!(
                fs_err::read_to_string(&file).unwrap(),
                after,
                "{} {form}",
                w.what
            );
        }
    }
}

#[test]
fn every_writer_keeps_the_mode_the_inode_and_a_hard_link() {
    for w in WRITERS {
        let (sb, proj, file) = fresh(w);
        write(&file, w.seed);
        fs_err::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let twin = sb.path("twin-of-the-file");
        fs_err::hard_link(&file, &twin).unwrap();
        let ino = fs_err::metadata(&file).unwrap().ino();
        succeeded(&run(&sb, &proj, w.args));
        let after = fs_err::read_to_string(&file).unwrap();
        old_plus_change(w.seed, &after, w, false);
        let m = fs_err::metadata(&file).unwrap();
        assert_eq!(
            (m.ino(), m.mode() & 0o7777, m.nlink()),
            (ino, 0o600, 2),
            "{}",
            w.what
        );
        assert_eq!(fs_err::read_to_string(&twin).unwrap(), after, "{}", w.what);
    }
}

#[test]
fn every_writer_refuses_a_read_only_file_and_a_link_out_of_the_project() {
    for w in WRITERS {
        let (sb, proj, file) = fresh(w);
        write(&file, w.seed);
        fs_err::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
        let out = run(&sb, &proj, w.args);
        assert!(!out.status.success(), "{}: {}", w.what, text(&out));
        assert!(
            text(&out).contains("read-only"),
            "{}: {}",
            w.what,
            text(&out)
        );
        assert_eq!(fs_err::read_to_string(&file).unwrap(), w.seed);
        assert_eq!(mode(&file), 0o444);

        let (sb, proj, file) = fresh(w);
        let elsewhere = sb.path("elsewhere");
        write(&elsewhere.join(w.file), w.seed);
        std::os::unix::fs::symlink(elsewhere.join(w.file), &file).unwrap();
        let out = run(&sb, &proj, w.args);
        assert!(!out.status.success(), "{}: {}", w.what, text(&out));
        assert_eq!(
            fs_err::read_to_string(elsewhere.join(w.file)).unwrap(),
            w.seed,
            "{}",
            w.what
        );
        assert!(fs_err::symlink_metadata(&file)
            .unwrap()
            .file_type()
            .is_symlink());
    }
}

#[test]
fn every_writer_run_concurrently_leaves_one_whole_change() {
    for w in WRITERS {
        let (sb, proj, file) = fresh(w);
        write(&file, w.seed);
        let children: Vec<_> = (0..8).map(|_| start(&sb, &proj, w.args)).collect();
        for c in children {
            succeeded(&c.wait_with_output().unwrap());
        }
        let after = fs_err::read_to_string(&file).unwrap();
        old_plus_change(w.seed, &after, w, false);
        let (sb2, proj2, file2) = fresh(w);
        write(&file2, w.seed);
        succeeded(&run(&sb2, &proj2, w.args));
        let once = fs_err::read_to_string(&file2).unwrap();
        assert_eq!(after, once, "{}", w.what);
        assert_no_leftovers(&proj);
    }
}

fn assert_no_leftovers(proj: &Path) {
    let names: Vec<String> = fs_err::read_dir(proj)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        // The editor's temp files and journal: `.NAME.gpuenv-…` (not the home's mark).
        .filter(|n| n.starts_with('.') && n[1..].contains(".gpuenv-"))
        .collect();
    assert!(names.is_empty(), "temp files left: {names:?}");
}

#[test]
fn twenty_concurrent_pins_keep_every_edit() {
    let sb = Sandbox::new();
    let proj = pin_project(&sb);
    let rocm_root = rocm(&sb.path("opt/rocm-6.2.4"), "6.2.4-120");
    sb.ok(&["link", "rocm-6.2", rocm_root.to_str().unwrap()]);
    let file = proj.join("gpuenv.toml");
    write(
        &file,
        "# the user's own words\n[toolchain]\n\n[env]\nKEEP = \"me\" # please\n",
    );
    // Four different edits, five times each, all at once: any lost update drops a key.
    let edits: [&[&str]; 4] = [
        &["pin", "cuda-12.4"],
        &["pin", "rocm-6.2"],
        &["pin", "--arch", "8.0,9.0"],
        &["pin", "--arch", "gfx90a"],
    ];
    let children: Vec<_> = (0..20).map(|i| start(&sb, &proj, edits[i % 4])).collect();
    for c in children {
        succeeded(&c.wait_with_output().unwrap());
    }
    let after = fs_err::read_to_string(&file).unwrap();
    let got = keys(&after);
    for k in [
        "toolchain.cuda",
        "toolchain.rocm",
        "toolchain.cuda-arch",
        "toolchain.rocm-arch",
        "env.KEEP",
    ] {
        assert!(got.contains(&k.to_string()), "{k} lost:\n{after}");
    }
    assert!(
        after.starts_with("# the user's own words\n[toolchain]\n"),
        "{after}"
    );
    assert!(after.contains("KEEP = \"me\" # please\n"), "{after}");
    assert_no_leftovers(&proj);
}

/// A small deterministic spread of delays (no randomness to reproduce).
fn delays() -> impl Iterator<Item = std::time::Duration> {
    (0u64..40).map(|i| std::time::Duration::from_micros((i * 7919) % 12_000))
}

#[test]
fn a_kill_mid_write_leaves_the_old_bytes_or_the_whole_change_and_the_next_run_finishes() {
    for w in WRITERS {
        let (sb, proj, file) = fresh(w);
        write(&file, w.seed);
        succeeded(&run(&sb, &proj, w.args));
        let done = fs_err::read_to_string(&file).unwrap();
        let journal = proj.join(format!(".{}.gpuenv-edit", w.file));
        let mut seen_old = false;
        for delay in delays() {
            write(&file, w.seed);
            let mut child = start(&sb, &proj, w.args);
            std::thread::sleep(delay);
            let _ = child.kill();
            let _ = child.wait();
            let now = fs_err::read_to_string(&file).unwrap();
            seen_old |= now == w.seed;
            assert!(
                now == w.seed || now == done || journal.exists(),
                "{} killed after {delay:?} left neither the old file, the new one nor a journal:\n{now:?}",
                w.what
            );
            succeeded(&run(&sb, &proj, w.args));
            assert_eq!(fs_err::read_to_string(&file).unwrap(), done, "{}", w.what);
            assert!(!journal.exists());
            assert_no_leftovers(&proj);
        }
        assert!(seen_old, "{}: no kill landed before the write", w.what);
    }
}

#[test]
fn env_for_github_refuses_a_fifo_or_a_directory_instead_of_hanging() {
    let sb = Sandbox::new();
    let proj = pin_project(&sb);
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"12.4\"\n");
    let fifo = sb.path("github_env");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string and mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let gpath = sb.path("github_path");
    for bad in [fifo, sb.path("a-dir")] {
        fs_err::create_dir_all(sb.path("a-dir")).unwrap();
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("gpuenv"))
            .env_clear()
            .env("HOME", sb.home())
            .env("PATH", "/usr/bin:/bin")
            .env("GITHUB_ENV", &bad)
            .env("GITHUB_PATH", &gpath)
            .current_dir(&proj)
            .args(["env", "--shell", "github"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Not a timing assertion: a hang would otherwise hang the whole test run.
        let mut waited = 0;
        while child.try_wait().unwrap().is_none() {
            assert!(
                waited < 600,
                "gpuenv env --shell github hangs on {}",
                bad.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
            waited += 1;
        }
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains("not the regular file a runner makes"),
            "{}",
            text(&out)
        );
    }
}

/// `gpuenv lock` rewrites the lock for a tree that changed: the one value changes, the
/// user's comments, line endings, mark, mode and inode stay.
#[test]
fn lock_keeps_the_users_copy_and_changes_only_what_changed() {
    for (form, crlf, bom) in [
        ("comments", false, false),
        ("CRLF", true, false),
        ("a BOM", false, true),
    ] {
        let sb = Sandbox::new();
        let proj = pin_project(&sb);
        let root = sb.path("opt/cuda-12.4");
        succeeded(&run(&sb, &proj, &["pin", "cuda-12.4"]));
        succeeded(&run(&sb, &proj, &["lock"]));
        let lock = proj.join("gpuenv.lock");
        let made = fs_err::read_to_string(&lock).unwrap();
        let mut mine = format!(
            "# locked for the cluster\n{}",
            made.replace("source = ", "# the kind of tree\nsource = ")
        );
        mine = mine.replace("lock-version = 1\n", "lock-version = 1 # do not edit\n");
        if crlf {
            mine = mine.replace('\n', "\r\n");
        }
        if bom {
            mine = format!("\u{feff}{mine}");
        }
        write(&lock, &mine);
        fs_err::set_permissions(&lock, std::fs::Permissions::from_mode(0o600)).unwrap();
        let twin = sb.path("lock-twin");
        fs_err::hard_link(&lock, &twin).unwrap();
        let ino = fs_err::metadata(&lock).unwrap().ino();
        // The tree changes: its digest in the lock is the one value that moves.
        write(&root.join("include/new.h"), "#define NEW 1\n");
        succeeded(&run(&sb, &proj, &["lock"]));
        let after = fs_err::read_to_string(&lock).unwrap();
        let files = |t: &str| {
            t.lines()
                .find(|l| l.starts_with("files"))
                .unwrap()
                .to_string()
        };
        assert_ne!(
            files(&after),
            files(&mine),
            "{form}: the digest did not move"
        );
        let unchanged: Vec<&str> = mine
            .split_inclusive('\n')
            .filter(|l| !l.starts_with("files"))
            .collect();
        let kept: Vec<&str> = after
            .split_inclusive('\n')
            .filter(|l| !l.starts_with("files"))
            .collect();
        assert_eq!(kept, unchanged, "{form}:\n{after:?}");
        let m = fs_err::metadata(&lock).unwrap();
        assert_eq!(
            (m.ino(), m.mode() & 0o777, m.nlink()),
            (ino, 0o600, 2),
            "{form}"
        );
        assert_eq!(fs_err::read_to_string(&twin).unwrap(), after);
        keys(&after);
    }
}

#[test]
fn check_locked_in_another_accounts_project_names_the_ownership_reason() {
    let sb = Sandbox::new();
    let proj = pin_project(&sb);
    succeeded(&run(&sb, &proj, &["pin", "cuda-12.4"]));
    succeeded(&run(&sb, &proj, &["lock"]));
    let Some(other) = accounts::Account::other("chk") else {
        return;
    };
    for f in ["gpuenv.toml", "gpuenv.lock"] {
        std::os::unix::fs::chown(proj.join(f), Some(other.uid), None).unwrap();
    }
    let out = run(&sb, &proj, &["check", "--locked"]);
    let err = text(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("no gpuenv.toml of yours"), "{err}");
    assert!(
        err.contains(&other.name) && err.contains("not to you"),
        "{err}"
    );
    assert!(err.contains("--safe-directory"), "{err}");
}

/// gpuenv's settings are edited as the user's file once it exists: their comments, order,
/// line endings, mode and inode stay through a change of state.
#[test]
fn settings_keep_the_users_comments_mode_and_inode() {
    let sb = Sandbox::new();
    pin_project(&sb);
    let settings = sb.gpuenv_home().join("settings.toml");
    let made = fs_err::read_to_string(&settings).unwrap();
    let mine = format!(
        "# my gpuenv settings: see the wiki\r\n{}",
        made.replace('\n', "\r\n")
    )
    .replace("[toolchains.", "# linked by hand\r\n[toolchains.");
    write(&settings, &mine);
    fs_err::set_permissions(&settings, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ino = fs_err::metadata(&settings).unwrap().ino();
    sb.ok(&["default", "cuda-12.4"]);
    let after = fs_err::read_to_string(&settings).unwrap();
    // A new top-level key goes before the tables (TOML has it no other way); the comments
    // stay with the table they were written above.
    assert!(
        after.contains("# my gpuenv settings: see the wiki\r\n# linked by hand\r\n[toolchains."),
        "{after:?}"
    );
    assert!(after.contains("default"), "{after:?}");
    assert!(!after.replace("\r\n", "").contains('\n'), "{after:?}");
    let m = fs_err::metadata(&settings).unwrap();
    assert_eq!((m.ino(), m.mode() & 0o777), (ino, 0o600));
    // It reads back: gpuenv still sees the toolchain and the default.
    assert!(sb.ok(&["list"]).contains("cuda-12.4"));
}

/// The kill loop of `a_kill_mid_write…` for a file whose seed and command are made at run
/// time: `seed` is written, `args` killed at spread delays, and the next run must finish it.
fn kill_loop(sb: &Sandbox, proj: &Path, file: &Path, seed: &str, args: &[&str]) {
    write(file, seed);
    succeeded(&run(sb, proj, args));
    let done = fs_err::read_to_string(file).unwrap();
    assert_ne!(done, seed, "{args:?} changed nothing");
    let name = file.file_name().unwrap().to_string_lossy();
    let journal = file.with_file_name(format!(".{name}.gpuenv-edit"));
    for delay in delays() {
        write(file, seed);
        let mut child = start(sb, proj, args);
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        let now = fs_err::read_to_string(file).unwrap();
        assert!(
            now == seed || now == done || journal.exists(),
            "{args:?} killed after {delay:?} left neither the old file, the new one nor a journal:\n{now:?}"
        );
        succeeded(&run(sb, proj, args));
        assert_eq!(fs_err::read_to_string(file).unwrap(), done, "{args:?}");
        assert!(!journal.exists());
        assert_no_leftovers(proj);
    }
}

#[test]
fn a_kill_mid_write_of_the_lock_or_the_settings_loses_nothing() {
    let sb = Sandbox::new();
    let proj = pin_project(&sb);
    succeeded(&run(&sb, &proj, &["pin", "cuda-12.4"]));
    succeeded(&run(&sb, &proj, &["lock"]));
    let lock = proj.join("gpuenv.lock");
    // A stale digest with the user's comment: each `gpuenv lock` puts the real one back.
    let made = fs_err::read_to_string(&lock).unwrap();
    let files = made.lines().find(|l| l.starts_with("files")).unwrap();
    let stale = made.replace(
        files,
        &format!("files = \"{}\" # checked by CI", "0".repeat(64)),
    );
    kill_loop(&sb, &proj, &lock, &format!("# ours\n{stale}"), &["lock"]);

    let home = sb.gpuenv_home();
    let settings = home.join("settings.toml");
    let mine = format!(
        "# my settings\n{}",
        fs_err::read_to_string(&settings).unwrap()
    );
    kill_loop(&sb, &home, &settings, &mine, &["default", "cuda-12.4"]);
}

/// The lock and the settings under concurrent writers: eight `gpuenv lock` runs at once leave
/// what one run leaves (the user's comment kept), and toolkits linked at once plus a default
/// set meanwhile are all in the settings (no run's edit lost to another's).
#[test]
fn concurrent_lock_and_settings_writers_keep_every_change() {
    let sb = Sandbox::new();
    let proj = pin_project(&sb);
    succeeded(&run(&sb, &proj, &["pin", "cuda-12.4"]));
    succeeded(&run(&sb, &proj, &["lock"]));
    let lock = proj.join("gpuenv.lock");
    let made = fs_err::read_to_string(&lock).unwrap();
    let files = made.lines().find(|l| l.starts_with("files")).unwrap();
    let stale = format!(
        "# ours\n{}",
        made.replace(files, &format!("files = \"{}\" # checked", "0".repeat(64)))
    );
    write(&lock, &stale);
    succeeded(&run(&sb, &proj, &["lock"]));
    let once = fs_err::read_to_string(&lock).unwrap();
    write(&lock, &stale);
    let children: Vec<_> = (0..8).map(|_| start(&sb, &proj, &["lock"])).collect();
    for c in children {
        succeeded(&c.wait_with_output().unwrap());
    }
    assert_eq!(fs_err::read_to_string(&lock).unwrap(), once);
    assert_no_leftovers(&proj);

    let names: Vec<String> = (1..=6).map(|i| format!("cuda-12.4-site{i}")).collect();
    let roots: Vec<PathBuf> = names
        .iter()
        .map(|n| cuda_runfile(&sb.path(&format!("opt/{n}")), "12.4.131"))
        .collect();
    let mut children: Vec<_> = names
        .iter()
        .zip(&roots)
        .map(|(n, r)| start(&sb, &proj, &["link", n, r.to_str().unwrap()]))
        .collect();
    children.push(start(&sb, &proj, &["default", "cuda-12.4"]));
    for c in children {
        succeeded(&c.wait_with_output().unwrap());
    }
    let settings = fs_err::read_to_string(sb.gpuenv_home().join("settings.toml")).unwrap();
    for n in &names {
        assert!(
            settings.contains(&format!("[toolchains.\"{n}\"]")),
            "{n} lost:\n{settings}"
        );
    }
    assert!(settings.contains("cuda-12.4"), "{settings}");
    let list = sb.ok(&["list"]);
    assert!(names.iter().all(|n| list.contains(n.as_str())), "{list}");
}
