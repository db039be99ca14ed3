//! gpuenv.lock from a clone is a file gpuenv did not write: every field is checked with
//! file:line:column before use, no URL in it is fetched (releases are planned again from the
//! configured sources), and a link at its name is neither read nor written through.

use crate::common::install_fixtures as fixtures;
use crate::common::server;

use crate::common::*;
use fixtures::*;
use server::Server;

const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A lock of one installed CUDA toolchain with `extra` lines in its table.
fn lock(name: &str, extra: &str) -> String {
    format!(
        "lock-version = 1\n\n[[toolchain]]\nname = \"{name}\"\nkind = \"cuda\"\nversion = \"12.4.1\"\nsource = \"installed\"\nfiles = \"{SHA}\"\n{extra}"
    )
}

/// `install --locked` with `text` as the lock: refused as input (exit 2) at `at`, saying `why`.
#[track_caller]
fn refused(text: &str, at: &str, why: &str) {
    let sb = clone_with_lock(text);
    for args in [&["install", "--locked"][..], &["check", "--locked"][..]] {
        let out = gpuenv(&sb, &[], args);
        let t = text_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {t}");
        assert!(
            t.contains(&format!("gpuenv.lock:{at}: ")),
            "{args:?}: no {at} in {t}"
        );
        assert!(t.contains(why), "{args:?}: no {why} in {t}");
    }
    assert!(
        !sb.gpuenv_home().join("toolchains").exists()
            || fs_err::read_dir(sb.gpuenv_home().join("toolchains"))
                .unwrap()
                .count()
                == 0,
        "nothing installed"
    );
}

fn text_of(o: &std::process::Output) -> String {
    text(o)
}

#[test]
fn a_name_that_climbs_out_of_the_store_is_refused_where_it_is_written() {
    refused(&lock("cuda-12.4.1-../../x", ""), "4:8", "name:");
    refused(&lock("cuda-12.4.1/..", ""), "4:8", "cannot name a file");
    refused(&lock("rocm-6.2", ""), "4:8", "names a rocm toolchain");
}

#[test]
fn digests_versions_and_kinds_are_checked() {
    let bad_files = lock("cuda-12.4.1", "").replace(SHA, "../../../.bashrc");
    refused(&bad_files, "8:9", "is not 64 hex digits");
    let bad_version = lock("cuda-12.4.1", "").replace("\"12.4.1\"", "\"13.0\"");
    refused(&bad_version, "6:11", "is not a version of cuda-12.4.1");
    refused(
        &lock("cuda-12.4.1", "").replace("lock-version = 1", "lock-version = 7"),
        "1:16",
        "lock-version 7",
    );
    // The command is compared, never run; still, no escape sequences reach the terminal.
    refused(
        "lock-version = 1\n[host-compiler]\ncommand = \"g++\\u001b[2J\"\nversion = \"11.4.0\"\n",
        "3:11",
        "control characters",
    );
    refused(
        &lock("cuda-12.4.1", "surprise = 1\n"),
        "9:1",
        "unknown field `surprise`",
    );
}

#[test]
fn archives_are_checked_field_by_field() {
    let archive = |component: &str, url: &str, sha: &str| {
        lock(
            "cuda-12.4.1",
            &format!("from = \"nvidia\"\nprofile = \"default\"\n\n[[toolchain.archive]]\ncomponent = \"{component}\"\nversion = \"12.4.131\"\nurl = \"{url}\"\nsha256 = \"{sha}\"\n"),
        )
    };
    refused(
        &archive("cuda_nvcc", "https://example.com/a.tar.xz", "abc"),
        "16:10",
        "is not 64 hex digits",
    );
    refused(
        &archive("../../bin", "https://example.com/a.tar.xz", SHA),
        "13:13",
        "cannot name a file",
    );
    refused(&archive("cuda_nvcc", "not a url", SHA), "15:7", "url:");
    refused(
        &archive("cuda_nvcc", "ftp://example.com/a.tar.xz", SHA),
        "15:7",
        "the scheme ftp",
    );
    let bad_from = lock(
        "cuda-12.4.1",
        "from = \"https://evil\"\nprofile = \"default\"\n",
    );
    refused(&bad_from, "9:8", "is not nvidia, pypi, amd or manifest");
}

#[test]
fn a_linked_root_must_be_an_absolute_path_and_an_installed_one_has_none() {
    let linked = lock("cuda-12.4.1", "root = \"../../victim\"\n").replace("installed", "linked");
    refused(&linked, "9:8", "root: not an absolute path");
    refused(
        &lock("cuda-12.4.1", "root = \"/opt/cuda\"\n"),
        "9:8",
        "an installed toolchain's root is the store's",
    );
}

#[test]
fn urls_in_the_lock_are_never_fetched_only_the_configured_source_is() {
    let (server, mirror) = redist_mirror(&["12.4.1"]);
    let attacker = Server::start();
    serve(&attacker, "evil/", &redist_tree(&["12.4.1"]));
    let first = locked_project(&mirror, NVIDIA_12_4_1_MINIMAL);
    // The clone's lock points every archive at another host.
    let lock = fs_err::read_to_string(first.path("gpuenv.lock"))
        .unwrap()
        .replace(&mirror, &attacker.url("evil/"));
    assert!(lock.contains(&attacker.url("evil/")), "{lock}");

    let second = clone_with_lock(&lock);
    let out = ok(
        &second,
        &[("GPUENV_CUDA_MIRROR", mirror.as_str())],
        &["install", "--locked"],
    );
    assert!(out.contains("installed cuda-12.4.1 as locked"), "{out}");
    assert!(attacker.log().is_empty(), "{:?}", attacker.log());
    assert!(!server.hits(".tar.xz").is_empty());
}

#[test]
fn a_link_at_gpuenv_lock_is_neither_written_through_nor_read() {
    let sb = Sandbox::new();
    let tree = sb.linked_runfile("cuda-12.4", "cuda-12.4.1", "12.4.1");
    pin_cuda(&sb, "12.4");
    let victim = sb.home().join(".bashrc");
    write(&victim, "# mine\n");
    std::os::unix::fs::symlink(&victim, sb.path("gpuenv.lock")).unwrap();

    let out = gpuenv(&sb, &[], &["lock"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("is a symbolic link"), "{}", text(&out));
    assert_eq!(fs_err::read_to_string(&victim).unwrap(), "# mine\n");
    assert!(sb.path("gpuenv.lock").is_symlink());

    let out = gpuenv(&sb, &[], &["check", "--locked"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("gpuenv reads no lock through one"),
        "{}",
        text(&out)
    );

    // Without the link, a linked toolchain locks with its root, and checks.
    fs_err::remove_file(sb.path("gpuenv.lock")).unwrap();
    ok(&sb, &[], &["lock"]);
    let text = fs_err::read_to_string(sb.path("gpuenv.lock")).unwrap();
    assert!(text.contains("source = \"linked\""), "{text}");
    assert!(
        text.contains(&format!("root = \"{}\"", tree.display())),
        "{text}"
    );
    ok(&sb, &[], &["check", "--locked"]);
}

#[test]
fn a_lock_in_an_untrusted_project_makes_the_task_prolog_install_nothing_even_when_told() {
    let (server, mirror) = redist_mirror(&["12.4.1"]);
    let first = locked_project(&mirror, NVIDIA_12_4_1_MINIMAL);
    let requests = server.log().len();

    // A clone on a node that has nothing; the admin's TaskProlog may install.
    let clone = clone_with_lock(&fs_err::read_to_string(first.path("gpuenv.lock")).unwrap());
    let out = gpuenv(
        &clone,
        &[
            ("GPUENV_CUDA_MIRROR", mirror.as_str()),
            ("GPUENV_PROLOG_INSTALL", "locked"),
            ("SLURMD_NODENAME", "n2"),
        ],
        &["env", "--shell", "slurm"],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("export "), "{stdout}");
    assert!(
        stdout.contains("print gpuenv: cuda-12.4.1 is not installed on node n2; GPUENV_PROLOG_INSTALL=locked would install it"),
        "{stdout}"
    );
    assert!(stdout.contains("is not trusted"), "{stdout}");
    assert!(stdout.contains("print gpuenv: `gpuenv trust "), "{stdout}");
    assert!(!clone.toolchain("cuda-12.4.1").exists());
    assert_eq!(server.log().len(), requests, "no request was made");
}

#[test]
fn a_task_prolog_setting_gpuenv_does_not_know_is_refused_not_ignored() {
    let sb = Sandbox::new();
    sb.linked_runfile("cuda-12.4", "cuda-12.4.1", "12.4.1");
    pin_cuda(&sb, "12.4");
    ok(&sb, &[], &["lock"]);
    let out = gpuenv(
        &sb,
        &[("GPUENV_PROLOG_INSTALL", "yes\u{1b}[2J")],
        &["env", "--shell", "slurm"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("is not a setting gpuenv knows"), "{stdout}");
    assert!(
        !stdout.contains('\u{1b}'),
        "no escape reaches the task's output"
    );
}
