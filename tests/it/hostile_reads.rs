//! Every read of a file gpuenv did not write is bounded, every reply capped, every probe's
//! whole process group stopped, and every file that steers gpuenv follows one owner rule.
//! A FIFO, `/dev/zero`, a file past its kind's cap and a link to each, planted where an
//! upstream's settings, the system config, a loaded module file, a tree's version.json or
//! torch's version.py belong, make each command that reads it return promptly with one
//! error naming the file, its kind and why; an endless reply from a mirror is refused
//! naming its size and URL. Each input is made here and goes through the real binary.

use crate::common;
use crate::common::accounts;
// Shared with the other hostile groups; `shell` is theirs.
#[allow(dead_code)]
use crate::common::hostile;
use crate::common::server;

use std::ffi::CString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::*;
use accounts::Account;
use fs_err as fs;
use hostile::stderr;
use server::Server;

/// What a hostile file can be.
#[derive(Debug, Clone, Copy)]
enum Plant {
    Fifo,
    DevZero,
    Huge,
    /// A link to a FIFO elsewhere.
    LinkToFifo,
}

const PLANTS: [Plant; 4] = [Plant::Fifo, Plant::DevZero, Plant::Huge, Plant::LinkToFifo];

fn mkfifo(path: &Path) {
    let _ = fs::remove_file(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string and mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// Puts `plant` at `path` (replacing what is there); what the error must say about it.
fn plant(path: &Path, plant: Plant) -> &'static str {
    let _ = fs::remove_file(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    match plant {
        Plant::Fifo => {
            mkfifo(path);
            "a FIFO"
        }
        Plant::DevZero => {
            std::os::unix::fs::symlink("/dev/zero", path).unwrap();
            "a character device"
        }
        Plant::Huge => {
            // Sparse: larger than any cap, nothing on disk.
            let f = fs::File::create(path).unwrap();
            f.set_len(1 << 30).unwrap();
            "larger than"
        }
        Plant::LinkToFifo => {
            let fifo = path.with_extension("fifo-elsewhere");
            mkfifo(&fifo);
            std::os::unix::fs::symlink(&fifo, path).unwrap();
            "a FIFO"
        }
    }
}

/// Runs `cmd`, which must end on its own well within the limit (a hang fails the test).
#[track_caller]
fn prompt(mut cmd: assert_cmd::Command, what: &str) -> Output {
    let start = Instant::now();
    let out = cmd.timeout(Duration::from_secs(60)).output().unwrap();
    assert!(
        out.status.code().is_some(),
        "{what}: killed after {:?}, it hung: {}",
        start.elapsed(),
        stderr(&out)
    );
    out
}

/// A site store linking CUDA 12.4 (what upstream settings look like), at `site`.
fn site_store(sb: &Sandbox) -> PathBuf {
    let site = sb.path("site");
    let root = cuda_runfile(&sb.path("opt/site-cuda"), "12.4.131");
    succeeded(
        &sb.gpuenv()
            .env("GPUENV_HOME", &site)
            .args(["link", "cuda-12.4-site", root.to_str().unwrap()])
            .output()
            .unwrap(),
    );
    site
}

#[test]
fn a_hostile_upstream_settings_file_hangs_no_command() {
    let (sb, proj) = hostile::pinned_project();
    let site = site_store(&sb);
    let settings = site.join("settings.toml");
    write(&proj.join("k.cu"), "__global__ void k() {}\n");
    for p in PLANTS {
        let why = plant(&settings, p);
        let commands: [&[&str]; 4] = [
            &["hook-env", "--shell", "bash"],
            &["list"],
            &["env", "--shell", "json"],
            &["env", "--shell", "slurm"],
        ];
        for args in commands {
            let mut cmd = sb.gpuenv();
            cmd.current_dir(&proj)
                .env("GPUENV_UPSTREAMS", &site)
                .args(args);
            let out = prompt(cmd, &format!("{p:?} {args:?}"));
            let err = stderr(&out);
            assert!(err.contains("settings file"), "{p:?} {args:?}: {err}");
            assert!(
                err.contains(&settings.display().to_string()),
                "{p:?} {args:?}: {err}"
            );
            assert!(err.contains(why), "{p:?} {args:?}: {err}");
        }
        // A compile through the proxy.
        let mut nvcc = assert_cmd::Command::new(sb.gpuenv_home().join("shims/nvcc"));
        nvcc.current_dir(&proj)
            .env_clear()
            .env("HOME", sb.home())
            .env("PATH", "/usr/bin:/bin")
            .env("GPUENV_UPSTREAMS", &site)
            .args(["-c", "k.cu"]);
        let out = prompt(nvcc, &format!("{p:?} nvcc"));
        assert!(stderr(&out).contains(why), "{p:?} nvcc: {}", stderr(&out));
    }
}

#[test]
fn a_hostile_system_config_hangs_no_command() {
    let (sb, proj) = hostile::pinned_project();
    let config = sb.path("etc/gpuenv/config.toml");
    for p in PLANTS {
        let why = plant(&config, p);
        for args in [
            &["list"][..],
            &["env", "--shell", "json"],
            &["hook-env", "--shell", "bash"],
        ] {
            let mut cmd = sb.gpuenv();
            cmd.current_dir(&proj)
                .env("GPUENV_SYSTEM_CONFIG", &config)
                .args(args);
            let out = prompt(cmd, &format!("{p:?} {args:?}"));
            let err = stderr(&out);
            if args[0] == "hook-env" {
                // The prompt stays quiet about the site's config (commands say it), and
                // comes back.
                succeeded(&out);
                continue;
            }
            assert!(
                err.contains(&config.display().to_string()),
                "{p:?} {args:?}: {err}"
            );
            assert!(err.contains(why), "{p:?} {args:?}: {err}");
        }
    }
}

#[test]
fn a_hostile_loaded_module_file_hangs_no_command() {
    let (sb, proj) = hostile::pinned_project();
    let loaded = sb.path("modules/cuda/11.8.lua");
    for p in PLANTS {
        plant(&loaded, p);
        for args in [
            &["env", "--shell", "json"][..],
            &["hook-env", "--shell", "bash"],
        ] {
            let mut cmd = sb.gpuenv();
            cmd.current_dir(&proj)
                .env("_LMFILES_", &loaded)
                .env("LOADEDMODULES", "cuda/11.8")
                .args(args);
            let out = prompt(cmd, &format!("{p:?} {args:?}"));
            succeeded(&out);
        }
    }
}

#[test]
fn a_hostile_version_file_stops_link_and_discover_with_its_name() {
    let sb = Sandbox::new();
    let root = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    let version = root.join("version.json");
    let mods = sb.path("site-modules");
    write(
        &mods.join("cuda/12.4.lua"),
        &format!("setenv(\"CUDA_HOME\", \"{}\")\n", root.display()),
    );
    for p in PLANTS {
        let why = plant(&version, p);
        let mut link = sb.gpuenv();
        link.args(["link", "cuda-12.4", root.to_str().unwrap()]);
        let out = prompt(link, &format!("{p:?} link"));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{p:?}: {err}");
        assert!(err.contains("version file"), "{p:?}: {err}");
        assert!(err.contains("version.json"), "{p:?}: {err}");
        assert!(err.contains(why), "{p:?}: {err}");

        let mut discover = sb.gpuenv();
        discover
            .env("MODULEPATH", &mods)
            .args(["discover", "--modules"]);
        let out = prompt(discover, &format!("{p:?} discover --modules"));
        let err = stderr(&out);
        assert!(err.contains("version.json"), "{p:?}: {err}");
        assert!(err.contains(why), "{p:?}: {err}");
    }
}

#[test]
fn a_hostile_torch_version_py_does_not_hang_the_proxy() {
    let (sb, proj) = hostile::pinned_project();
    let site = torch_package(&sb.path("venv/site-packages"), "2.5.1", Some("12.4"), None);
    let version = site.join("torch/version.py");
    let include = site.join("torch/include");
    write(&proj.join("k.cu"), "__global__ void k() {}\n");
    for p in PLANTS {
        let why = plant(&version, p);
        let mut nvcc = assert_cmd::Command::new(sb.gpuenv_home().join("shims/nvcc"));
        nvcc.current_dir(&proj)
            .env_clear()
            .env("HOME", sb.home())
            .env("PATH", "/usr/bin:/bin")
            .arg(format!("-I{}", include.display()))
            .args(["-c", "k.cu"]);
        let out = prompt(nvcc, &format!("{p:?} nvcc"));
        let err = stderr(&out);
        assert!(err.contains("torch version.py"), "{p:?}: {err}");
        assert!(err.contains(why), "{p:?}: {err}");
    }
}

/// A redist mirror whose manifest for 12.4.1 never ends.
#[test]
fn an_endless_manifest_or_listing_is_refused_naming_its_cap_and_url() {
    let server = Server::start();
    let index =
        "<html><body><a href=\"redistrib_12.4.1.json\">redistrib_12.4.1.json</a></body></html>\n";
    server.put("redist/", index, "text/html");
    server.endless("/redist/redistrib_12.4.1.json");
    let mirror = server.url("redist/");
    let sb = Sandbox::new();
    let mut install = sb.gpuenv();
    install.env("GPUENV_CUDA_MIRROR", &mirror).args([
        "install",
        "cuda-12.4.1",
        "--source",
        "nvidia",
    ]);
    let out = prompt(install, "install");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let url = server.url("redist/redistrib_12.4.1.json");
    assert!(
        err.contains(&format!(
            "the manifest is larger than 16777216 bytes from {url}"
        )),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );

    // `self update-data` lists the releases first: an endless listing is an index page.
    let listing = Server::start();
    listing.endless("/redist/");
    let mut update = sb.gpuenv();
    update
        .env("GPUENV_CUDA_MIRROR", listing.url("redist/"))
        .args(["self", "update-data"]);
    let out = prompt(update, "self update-data");
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "the index page is larger than 67108864 bytes from {}",
            listing.url("redist/")
        )),
        "{err}"
    );
}

#[test]
fn an_archive_longer_than_its_manifest_says_is_cut_at_that_size() {
    let server = Server::start();
    let sb = Sandbox::new();
    let url = server.url("rocm.tar.gz");
    server.endless("/rocm.tar.gz");
    let manifest = sb.path("rocm.toml");
    write(
        &manifest,
        &format!(
            "kind = \"rocm\"\nversion = \"6.2.4\"\n\n[[archive]]\nurl = \"{url}\"\nsha256 = \"{}\"\nsize = 4096\nstrip-prefix = \"rocm-6.2.4\"\n",
            "ab".repeat(32)
        ),
    );
    let mut install = sb.gpuenv();
    install.args([
        "install",
        "rocm-6.2.4",
        "--source",
        "manifest",
        "--manifest",
        manifest.to_str().unwrap(),
    ]);
    let out = prompt(install, "install");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("larger than 4096 bytes from {url}")),
        "{err}"
    );
}

/// Pids of the processes whose parent is `ppid`... gone when killed: `pid` is no more, or a
/// zombie waiting for init.
fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return true;
        };
        if stat
            .rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('Z'))
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn a_probe_that_hangs_leaves_no_child_behind() {
    let (sb, proj) = hostile::pinned_project();
    let stubs = sb.path("stubs");
    // Wrappers as a module's g++, a vendor's nvidia-smi script or pyenv's python3 shim are:
    // a child that sleeps, and the wrapper waiting for it.
    let pids = sb.path("pids");
    fs::create_dir_all(&pids).unwrap();
    for tool in ["g++", "nvidia-smi", "python3"] {
        write_exe(
            &stubs.join(tool),
            &format!(
                "#!/bin/sh\nsleep 600 &\necho $! > '{}/{tool}.child'\necho $$ > '{}/{tool}.wrapper'\nwait\n",
                pids.display(),
                pids.display()
            ),
        );
    }
    let path = format!("{}:/usr/bin:/bin", stubs.display());
    write(&proj.join("k.cu"), "__global__ void k() {}\n");
    let site = torch_package(&sb.path("venv/site-packages"), "2.5.1", Some("12.4"), None);
    let _ = site;
    let runs: [(&str, &[&str]); 3] = [
        ("g++", &["env", "--shell", "json"]),
        ("nvidia-smi", &["pin", "cuda-12.4", "--arch", "native"]),
        ("python3", &["check"]),
    ];
    for (tool, args) in runs {
        let mut cmd = sb.gpuenv();
        cmd.current_dir(&proj)
            .env("PATH", &path)
            .env("GPUENV_PROBE_TIMEOUT", "0.5")
            .args(args);
        let out = prompt(cmd, tool);
        let err = stderr(&out);
        assert!(err.contains("did not answer within 0.5 s"), "{tool}: {err}");
        for who in ["wrapper", "child"] {
            let file = pids.join(format!("{tool}.{who}"));
            let pid: u32 = fs::read_to_string(&file)
                .unwrap_or_else(|_| panic!("{tool} was not asked: {err}"))
                .trim()
                .parse()
                .unwrap();
            assert!(gone(pid), "{tool}'s {who} ({pid}) is still running");
        }
    }
}

#[test]
fn one_owner_rule_for_every_file_that_steers_gpuenv() {
    let Some(other) = Account::other("rd") else {
        return;
    };
    let (sb, proj) = hostile::pinned_project();
    let chown = |p: &Path, uid: u32, mode: u32| {
        std::os::unix::fs::chown(p, Some(uid), None).unwrap();
        fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    };
    let owner_and_mode =
        |mode: &str| format!("owner {} (uid {}), mode {mode}", other.name, other.uid);

    // The system config: another user's, or root's and writable by all, is refused with one
    // line naming owner and mode; root's own is obeyed.
    let config = sb.path("etc/gpuenv/config.toml");
    write(&config, "[build]\ncache = \"off\"\n");
    for (uid, mode, shown) in [
        (other.uid, 0o644, owner_and_mode("0644")),
        (other.uid, 0o666, owner_and_mode("0666")),
        (0, 0o666, "owner root (uid 0), mode 0666".to_string()),
    ] {
        chown(&config, uid, mode);
        let mut cmd = sb.gpuenv();
        cmd.current_dir(&proj)
            .env("GPUENV_SYSTEM_CONFIG", &config)
            .args(["env", "--shell", "json"]);
        let err = stderr(&prompt(cmd, "env"));
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(&shown)).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].contains(&config.display().to_string()), "{err}");
    }
    chown(&config, 0, 0o644);
    let mut cmd = sb.gpuenv();
    cmd.current_dir(&proj)
        .env("GPUENV_SYSTEM_CONFIG", &config)
        .args(["env", "--shell", "json"]);
    let out = prompt(cmd, "env");
    assert!(!stderr(&out).contains("mode 0"), "{}", stderr(&out));

    // An upstream's settings: the same rule.
    let site = site_store(&sb);
    let settings = site.join("settings.toml");
    chown(&settings, other.uid, 0o644);
    let mut cmd = sb.gpuenv();
    cmd.current_dir(&proj)
        .env("GPUENV_UPSTREAMS", &site)
        .args(["list"]);
    let err = stderr(&prompt(cmd, "list"));
    assert!(err.contains(&owner_and_mode("0644")), "{err}");
    assert!(err.contains(&settings.display().to_string()), "{err}");
    chown(&settings, 0, 0o644);
    let mut cmd = sb.gpuenv();
    cmd.current_dir(&proj)
        .env("GPUENV_UPSTREAMS", &site)
        .args(["list"]);
    let out = prompt(cmd, "list");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("cuda-12.4-site"),
        "{}",
        stderr(&out)
    );

    // A copy of the compatibility data with the same owner and mode: the same words.
    let copy = sb.gpuenv_home().join("facts/cuda.toml");
    write(&copy, "format = 1\n");
    chown(&copy, other.uid, 0o644);
    let mut cmd = sb.gpuenv();
    cmd.current_dir(&proj).args(["doctor"]);
    let err = stderr(&prompt(cmd, "doctor"));
    assert!(err.contains(&owner_and_mode("0644")), "{err}");
    fs::remove_file(&copy).unwrap();

    // A module file on MODULEPATH another user may rewrite names no root to register.
    let cuda = cuda_runfile(&sb.path("sw/cuda-11.8"), "11.8.89");
    let module = sb.path("site-modules/cuda/11.8.lua");
    write(
        &module,
        &format!("setenv(\"CUDA_HOME\", \"{}\")\n", cuda.display()),
    );
    chown(&module, other.uid, 0o644);
    let mut cmd = sb.gpuenv();
    cmd.env("MODULEPATH", sb.path("site-modules"))
        .args(["discover", "--modules", "--register"]);
    let err = stderr(&prompt(cmd, "discover"));
    assert!(err.contains(&owner_and_mode("0644")), "{err}");
    assert!(
        !sb.ok(&["list"]).contains("cuda-11.8"),
        "registered from a foreign module file"
    );
    let _ = fs::metadata(&module).unwrap().uid();
}

/// The scan the variable registry's test does, for reads: no file outside these reads a
/// file whole (`read_to_string`, `fs::read`, `read_to_end`, `File::open`) outside its tests.
/// Everything else goes through `outside::read` (the cap of its kind).
#[test]
fn no_unbounded_read_of_a_file_comes_back() {
    const ALLOWED: &[(&str, &str)] = &[
        ("crates/core/src/outside.rs", "the bounded reader itself"),
        (
            "crates/core/src/user_file/mod.rs",
            "the user's file, opened without following a link or blocking, checked regular and read to its kind's cap; its directory opened only to lock it",
        ),
        (
            "crates/core/src/user_file/in_place.rs",
            "the editor's own journal (a regular file, never a link, of a size checked first); a directory opened only to sync it",
        ),
        (
            "crates/core/src/user_file/tests.rs",
            "unit tests reading the files they made",
        ),
        (
            "crates/core/src/ask/mod.rs",
            "a probe's output, through a pipe, capped at 1 MiB",
        ),
        (
            "crates/core/src/fsutil.rs",
            "same_bytes compares two files in fixed blocks",
        ),
        (
            "crates/core/src/store/toolchain/registry_cache.rs",
            "gpuenv's own copy: O_NOFOLLOW|O_NONBLOCK, owner and size checked on the handle",
        ),
        ("crates/core/src/test_support.rs", "tests only"),
        (
            "crates/core/src/facts/compat_note.rs",
            "a compat libcuda: only its ELF header, section tables (1 MiB cap) and note (64 KiB cap), each checked against the file's size",
        ),
        ("crates/core/build.rs", "the crate's own data at build time"),
        (
            "crates/install/src/unpack.rs",
            "archives checked against their sha256 first; a link target capped at 4 KiB",
        ),
        (
            "crates/install/src/cache.rs",
            "gpuenv's cache: pages capped, tags read to 4 KiB, hashes streamed",
        ),
        (
            "crates/install/src/fetch.rs",
            "a reply read up to its kind's cap",
        ),
    ];
    let re = [
        "read_to_string(",
        "fs_err::read(",
        "fs::read(",
        "read_to_end(",
        "File::open(",
    ];
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let mut todo = vec![top.join("src"), top.join("crates")];
    while let Some(dir) = todo.pop() {
        for e in fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("target") {
                    todo.push(p);
                }
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            if p.ends_with("tests.rs") {
                continue; // a module's unit tests (`#[cfg(test)] mod tests;`), as an inline one
            }
            let rel = p.strip_prefix(top).unwrap().display().to_string();
            let text = fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
            for (i, line) in code.lines().enumerate() {
                if re.iter().any(|r| line.contains(r)) && !ALLOWED.iter().any(|(f, _)| *f == rel) {
                    found.push(format!("{rel}:{}: {}", i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "read a file gpuenv did not write through gpuenv_core::outside::read (or add the file here with a reason):\n{}",
        found.join("\n")
    );
}

/// How many times the g++ stub was started (one line per start).
fn starts(log: &Path) -> usize {
    fs::read_to_string(log).map_or(0, |t| t.lines().count())
}

/// Prompts on the pane so far.
fn prompts(pane: &common::pty::Pane) -> usize {
    pane.screen()
        .lines()
        .filter(|l| common::pty::active_in_prompt(l).is_some())
        .count()
}

/// Ctrl-C while `hook-env` waits gives the prompt back, and that prompt does not ask gpuenv
/// again (bash ran its PROMPT_COMMAND again, which waited again: no typed command ever
/// ran). The next command's prompt asks again; a question that is answered then applies.
#[test]
fn ctrl_c_during_the_hook_returns_a_prompt_that_does_not_run_it_again() {
    use crate::common::pty::*;
    for shell in common::shells::SHELLS {
        if !have_tool("tmux") || !have_tool(shell) {
            continue;
        }
        let (sb, _) = hostile::pinned_project();
        fs::create_dir_all(sb.path("work")).unwrap();
        fs::rename(sb.path("proj"), sb.path("work/proj")).unwrap();
        // A g++ that waits for ever (a wedged wrapper), until `answer` exists.
        let stubs = sb.path("stubs");
        let (log, answer) = (sb.path("g++.log"), sb.path("answer"));
        write_exe(
            &stubs.join("g++"),
            &format!(
                "#!/bin/sh\necho start >> '{}'\nwhile [ ! -e '{}' ]; do sleep 0.05; done\necho 'g++ (GCC) 12.2.0'\n",
                log.display(),
                answer.display()
            ),
        );
        let env = format!("PATH='{}':$PATH GPUENV_PROBE_TIMEOUT=600", stubs.display());
        let bin = gpuenv_bin();
        let mut pane = match shell {
            "bash" => bash(&sb, &bash_rc_with(&bin, &format!("export {env}"))),
            "zsh" => zsh(&sb, &zsh_rc_with(&bin, &format!("export {env}"))),
            _ => fish(
                &sb,
                &format!(
                    "set -gx PATH '{}' $PATH\nset -gx GPUENV_PROBE_TIMEOUT 600\n{}",
                    stubs.display(),
                    fish_rc_with(&bin)
                ),
            ),
        };
        assert_eq!(pane.run("true").active, "none", "{shell}");
        let shown = prompts(&pane);
        pane.type_line("cd proj");
        pane.wait_for("g++ to be asked", |_| (starts(&log) == 1).then_some(()));
        pane.tmux(&["send-keys", "-t", "t", "C-c"]);
        pane.wait_for("a prompt after Ctrl-C", |_| {
            (prompts(&pane) > shown).then_some(())
        });
        // That prompt stays: the hook is not run again for it.
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(
            starts(&log),
            1,
            "{shell}: the hook ran again for the same prompt"
        );
        // A typed command runs; its prompt asks gpuenv again, which waits again.
        pane.type_line("echo typed-''ran");
        pane.wait_for("the typed command", |s| {
            s.contains("typed-ran").then_some(())
        });
        pane.wait_for("the next prompt's hook", |_| {
            (starts(&log) == 2).then_some(())
        });
        let shown = prompts(&pane);
        pane.tmux(&["send-keys", "-t", "t", "C-c"]);
        pane.wait_for("a prompt after Ctrl-C", |_| {
            (prompts(&pane) > shown).then_some(())
        });
        // Once g++ answers, the next prompt applies the project.
        write(&answer, "");
        assert_eq!(pane.run("true").active, "cuda-12.4", "{shell}");
        assert!(pane.run("pwd").output.ends_with("/work/proj"), "{shell}");
    }
}
