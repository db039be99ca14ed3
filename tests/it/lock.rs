//! gpuenv.lock: `gpuenv lock` records the exact toolchains a project's pins resolve to,
//! `check --locked` names each way the active ones differ, `install --locked` reproduces
//! them on a fresh home (from the download cache without the network, too). Releases come
//! from a local redist mirror on 127.0.0.1.

use crate::common::install_fixtures as fixtures;

use crate::common::*;
use fixtures::*;

/// The TaskProlog failed the task: no environment for it, and each of `want` in its output.
fn refused_by_the_prolog(out: &std::process::Output, want: &[&str]) {
    assert!(!out.status.success(), "{}", text(out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("export "), "{stdout}");
    for w in want {
        assert!(stdout.contains(w), "no {w} in\n{stdout}");
    }
}

fn lock_text(sb: &Sandbox) -> String {
    fs_err::read_to_string(sb.path("gpuenv.lock")).unwrap()
}

/// `sb`'s cuda-12.4.1 replaced by another build of the same version (the minimal profile),
/// installed outside the project: an install inside it would update its lock.
fn another_build_of_12_4_1(sb: &Sandbox, mirror: &str) {
    ok(sb, &[], &["uninstall", "cuda-12.4.1"]);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = sb
        .gpuenv()
        .current_dir(elsewhere.path())
        .env("GPUENV_CUDA_MIRROR", mirror)
        .args(NVIDIA_12_4_1_MINIMAL)
        .output()
        .unwrap();
    succeeded(&out);
}

#[test]
fn lock_then_check_passes_and_another_build_of_the_same_version_is_named() {
    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    let sb = Sandbox::new();
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    ok(
        &sb,
        &vars,
        &["install", "cuda-12.4.1", "--source", "nvidia"],
    );
    pin_cuda(&sb, "12.4");

    let out = ok(&sb, &[], &["lock"]);
    assert!(
        out.contains("wrote") && out.contains("cuda-12.4.1"),
        "{out}"
    );
    let lock = lock_text(&sb);
    for want in [
        "lock-version = 1",
        "name = \"cuda-12.4.1\"",
        "version = \"12.4.1\"",
        "source = \"installed\"",
        "from = \"nvidia\"",
        "profile = \"default\"",
        "component = \"libcublas\"",
        "/cuda_nvcc/",
    ] {
        assert!(lock.contains(want), "no {want} in\n{lock}");
    }
    let out = ok(&sb, &[], &["check", "--locked"]);
    assert!(out.contains("match"), "{out}");

    // The same version, another build (the minimal profile has no cuBLAS).
    another_build_of_12_4_1(&sb, &mirror);
    let out = gpuenv(&sb, &[], &["check", "--locked"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    for want in [
        "gpuenv.lock:6:1: cuda-12.4.1: archive libcublas: locked, but not there",
        "selection: the lock has profile default",
        "files: the tree's file list differs",
        "gpuenv install --locked",
    ] {
        assert!(t.contains(want), "no {want} in\n{t}");
    }

    // A tree linked under the locked name: its source and files differ.
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    sb.linked_runfile("elsewhere/cuda-12.4", "cuda-12.4.1", "12.4.1");
    let out = gpuenv(&sb, &[], &["check", "--locked"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("source: the lock has a installed toolchain, this one is linked"),
        "{t}"
    );
    assert!(t.contains("files: the tree's file list differs"), "{t}");
}

#[test]
fn check_locked_names_a_locked_toolchain_that_is_not_installed_here() {
    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    let sb = locked_project(&mirror, NVIDIA_12_4_1_MINIMAL);
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);

    // A difference like any other: exit 1, what differs, and the command that installs it.
    let out = gpuenv(&sb, &[], &["check", "--locked"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("cuda-12.4.1 is locked but not installed here"),
        "{t}"
    );
    assert!(t.contains("`gpuenv install --locked`"), "{t}");

    // A pin the lock does not name, that nothing registered matches either.
    write(
        &sb.path("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\nrocm = \"6.2\"\n",
    );
    let out = gpuenv(&sb, &[], &["check", "--locked"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("cuda-12.4.1 is locked but not installed here"),
        "{t}"
    );
    assert!(
        t.contains("rocm-6.2 is pinned but not locked, and the pin at "),
        "{t}"
    );
}

#[test]
fn install_locked_reproduces_the_toolchain_on_a_fresh_home_and_offline_from_the_cache() {
    let (server, mirror) = redist_mirror(&["12.4.1"]);
    let first = locked_project(&mirror, NVIDIA_12_4_1_MINIMAL);
    let lock = lock_text(&first);

    // A clone of the project on a fresh home, with a download cache of its own.
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().join("downloads");
    let with_cache = [
        ("GPUENV_CUDA_MIRROR", mirror.as_str()),
        ("GPUENV_DOWNLOAD_CACHE", cache_dir.to_str().unwrap()),
    ];
    let second = clone_with_lock(&lock);
    let out = ok(&second, &with_cache, &["install", "--locked"]);
    assert!(out.contains("installed cuda-12.4.1 as locked"), "{out}");
    assert!(
        !second
            .toolchain("cuda-12.4.1")
            .join("include/cublas.h")
            .exists(),
        "the locked profile (minimal) is what was installed"
    );
    ok(&second, &[], &["check", "--locked"]);
    // Installing again changes nothing.
    let out = ok(&second, &with_cache, &["install", "--locked"]);
    assert!(out.contains("cuda-12.4.1 is registered as locked"), "{out}");
    // It locks to the same text.
    ok(&second, &[], &["lock"]);
    assert_eq!(lock_text(&second), lock);

    // A third home sharing that cache: no request reaches the mirror.
    let hits = server.log().len();
    let third = clone_with_lock(&lock);
    let out = ok(&third, &with_cache, &["install", "--locked", "--offline"]);
    assert!(out.contains("from the cache"), "{out}");
    ok(&third, &[], &["check", "--locked"]);
    assert_eq!(server.log().len(), hits, "offline means no request");
}

#[test]
fn install_locked_fails_naming_the_archive_a_source_now_serves_differently() {
    let (server, mirror) = redist_mirror(&["12.4.1"]);
    let first = locked_project(&mirror, NVIDIA_12_4_1_MINIMAL);

    // The mirror now has another cuda_nvcc archive under the same release.
    let mut tree = redist_tree(&["12.4.1"]);
    let json = tree
        .iter_mut()
        .find(|(p, _, _)| p == "redistrib_12.4.1.json")
        .unwrap();
    let mut manifest: serde_json::Value = serde_json::from_slice(&json.1).unwrap();
    manifest["cuda_nvcc"][platform()]["sha256"] = "ab".repeat(32).into();
    json.1 = serde_json::to_vec(&manifest).unwrap();
    serve(&server, "changed/", &tree);
    let changed = server.url("changed/");

    let second = clone_with_lock(&lock_text(&first));
    let out = gpuenv(
        &second,
        &[("GPUENV_CUDA_MIRROR", changed.as_str())],
        &["install", "--locked"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("cuda-12.4.1: the nvidia source: archive cuda_nvcc: sha256 abababababab is not the locked"),
        "{t}"
    );
    assert!(!second.toolchain("cuda-12.4.1").exists());
    assert!(
        server
            .hits(".tar.xz")
            .iter()
            .all(|h| !h.path.starts_with("/changed/")),
        "nothing was downloaded"
    );
}

#[test]
fn pin_rewrites_an_existing_lock_and_leaves_a_project_without_one_alone() {
    let sb = Sandbox::new();
    sb.linked_runfile("trees/cuda-12.4", "cuda-12.4.1", "12.4.1");
    let old = sb.linked_runfile("trees/cuda-11.8", "cuda-11.8", "11.8.89");

    ok(&sb, &[], &["pin", "cuda-12.4"]);
    assert!(
        !sb.path("gpuenv.lock").exists(),
        "no lock until `gpuenv lock`"
    );
    ok(&sb, &[], &["lock"]);
    assert!(lock_text(&sb).contains("name = \"cuda-12.4.1\""));

    let out = ok(&sb, &[], &["pin", "cuda-11.8"]);
    assert!(out.contains("wrote"), "{out}");
    let lock = lock_text(&sb);
    assert!(lock.contains("name = \"cuda-11.8\""), "{lock}");
    assert!(
        lock.contains(&format!("root = \"{}\"", old.display())),
        "{lock}"
    );
    ok(&sb, &[], &["check", "--locked"]);
}

#[test]
fn a_pinned_host_compiler_is_locked_with_its_version_and_checked() {
    let sb = Sandbox::new();
    sb.linked_runfile("trees/cuda-11.8", "cuda-11.8", "11.8.89");
    let gxx = sb.path("bin/g++-11");
    let fake = |version: &str| {
        // A new file each time: what the compiler said is cached per file.
        let _ = fs_err::remove_file(&gxx);
        write_exe(
            &gxx,
            &format!("#!/bin/sh\necho 'g++ (Debian {version}-7) {version}'\n"),
        );
    };
    fake("11.4.0");
    write(
        &sb.path("gpuenv.toml"),
        "[toolchain]\ncuda = \"11.8\"\nhost-compiler = \"g++-11\"\n",
    );
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", sb.path("bin").display());
    let vars = [("PATH", path.as_str())];
    // Untrusted, the file's host compiler is not used, so not locked.
    ok(&sb, &vars, &["lock"]);
    assert!(!lock_text(&sb).contains("[host-compiler]"));
    ok(&sb, &vars, &["trust"]);
    ok(&sb, &vars, &["lock"]);
    let lock = lock_text(&sb);
    assert!(
        lock.contains("[host-compiler]\ncommand = \"g++-11\"\nversion = \"11.4.0\""),
        "{lock}"
    );
    ok(&sb, &vars, &["check", "--locked"]);

    fake("11.5.0");
    let out = gpuenv(&sb, &vars, &["check", "--locked"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("host compiler: the lock has g++-11 11.4.0, this is g++-11 11.5.0"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_shell_hook_says_when_the_active_toolchain_is_not_the_locked_one() {
    let sb = Sandbox::new();
    sb.linked_runfile("trees/cuda-12.4.1", "cuda-12.4.1", "12.4.1");
    pin_cuda(&sb, "12.4");
    ok(&sb, &[], &["lock"]);
    let out = gpuenv(&sb, &[], &["hook-env", "--shell", "bash"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("the lock has"), "{}", text(&out));

    // A newer 12.4 appears: the pin now picks it, and the prompt says so.
    sb.linked_runfile("trees/cuda-12.4.2", "cuda-12.4.2", "12.4.2");
    let out = gpuenv(&sb, &[], &["hook-env", "--shell", "bash"]);
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gpuenv.lock:6:1: the lock has cuda-12.4.1 (linked 12.4.1), but cuda-12.4.2 (linked 12.4.2) is active"),
        "{err}"
    );
}

/// `gpuenv env --shell slurm` as a SLURM TaskProlog runs it, on node `n2`.
fn task_prolog(sb: &Sandbox, vars: &[(&str, &str)]) -> std::process::Output {
    let mut all = vec![("SLURMD_NODENAME", "n2")];
    all.extend_from_slice(vars);
    gpuenv(sb, &all, &["env", "--shell", "slurm"])
}

#[test]
fn the_task_prolog_refuses_a_build_that_is_not_the_locked_one_and_installs_a_missing_one_only_when_told(
) {
    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    let told = [vars[0], ("GPUENV_PROLOG_INSTALL", "locked")];
    let sb = locked_project(&mirror, &["install", "cuda-12.4.1", "--source", "nvidia"]);
    let out = task_prolog(&sb, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("export CUDA_HOME="),
        "{}",
        text(&out)
    );

    // The node has another build of the same version (the minimal profile).
    another_build_of_12_4_1(&sb, &mirror);
    let cublas = sb.toolchain("cuda-12.4.1").join("include/cublas.h");
    for vars in [&vars[..], &told[..]] {
        refused_by_the_prolog(
            &task_prolog(&sb, vars),
            &[
                "print gpuenv: node n2 does not have the toolchains",
                "gpuenv.lock:6:1: cuda-12.4.1: archive libcublas: locked, but not there",
                "print gpuenv: on node n2, `gpuenv install --locked` in",
            ],
        );
        assert!(!cublas.exists(), "a tree that is there is never replaced");
    }

    // Gone from the node: told to, and with the project trusted, the prolog installs the
    // locked build and sets the task up.
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    let out = task_prolog(&sb, &vars);
    assert!(!out.status.success(), "not told: {}", text(&out));
    assert!(!cublas.exists(), "not told: nothing installed");
    ok(&sb, &[], &["trust"]);
    let out = task_prolog(&sb, &told);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("export CUDA_HOME="),
        "{}",
        text(&out)
    );
    assert!(
        cublas.is_file(),
        "the locked (default) profile was installed"
    );
    ok(&sb, &[], &["check", "--locked"]);
}

#[test]
fn the_task_prolog_names_a_locked_toolchain_not_installed_on_the_node_as_check_locked_does() {
    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    let sb = locked_project(&mirror, NVIDIA_12_4_1_MINIMAL);
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);

    // The same difference `check --locked` names, in the task's output, with the node.
    let check = text(&gpuenv(&sb, &[], &["check", "--locked"]));
    refused_by_the_prolog(
        &task_prolog(&sb, &[]),
        &[
            "print gpuenv: node n2 does not have the toolchains",
            "gpuenv.lock:6:1: cuda-12.4.1 is locked but not installed here",
            "print gpuenv: on node n2, `gpuenv install --locked` in",
        ],
    );
    let line = "cuda-12.4.1 is locked but not installed here";
    assert!(check.contains(line), "check --locked says it too:\n{check}");
    // And the node's report that `doctor --all-nodes` collects.
    let report = text(&gpuenv(&sb, &[], &["doctor", "--node-report"]));
    assert!(
        report.contains("differs: ") && report.contains(line),
        "{report}"
    );
}

/// A project locked on a toolkit of the site's store, and a node whose copy of the store
/// lacks it: the TaskProlog says the store is incomplete on that node and whom to ask, never
/// to `gpuenv uninstall` (refused for a store's toolchain) or `gpuenv install` it.
#[test]
fn the_task_prolog_on_a_node_whose_store_lacks_the_locked_toolkit_says_the_store_is_incomplete() {
    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    let sb = Sandbox::new();
    let store_n1 = sb.path("n1/gpuenv");
    let store_n2 = sb.path("n2/gpuenv");
    fs_err::create_dir_all(&store_n2).unwrap();
    let n1 = store_n1.display().to_string();
    ok(
        &sb,
        &[("GPUENV_HOME", &n1), ("GPUENV_CUDA_MIRROR", &mirror)],
        NVIDIA_12_4_1_MINIMAL,
    );
    pin_cuda(&sb, "12.4");
    ok(&sb, &[("GPUENV_UPSTREAMS", &n1)], &["lock"]);
    assert!(lock_text(&sb).contains("cuda-12.4.1"));
    let out = task_prolog(&sb, &[("GPUENV_UPSTREAMS", &n1)]);
    assert!(out.status.success(), "{}", text(&out));

    let n2 = store_n2.display().to_string();
    let out = task_prolog(&sb, &[("GPUENV_UPSTREAMS", &n2)]);
    refused_by_the_prolog(
        &out,
        &[
            "print gpuenv: node n2 does not have the toolchains",
            &format!("cuda-12.4.1 is the site store's, and the store at {n2} on node n2 does not have the locked one: the store is incomplete on node n2; ask the site's admins (root"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("uninstall"), "{stdout}");
}
