//! An attacker's checklist against trust: a cloned project's toolchain file that names a
//! program (`host-compiler = "./evil.sh"`, `[build] cache`), relaxes the guard or pins a
//! toolkit for an automatic install; a file another user owns or planted in a directory
//! everyone may write. Nothing of it runs or writes before the user said so (`gpuenv trust`,
//! `gpuenv trust --safe-directory`). The compile cases use the real nvcc 13.

use crate::common::hostile;
use crate::common::install_fixtures as fixtures;
use crate::common::proxy_world;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::real::real_cuda13;
use crate::common::*;
use fs_err as fs;
use hostile::{pinned_project, shell, stderr};

/// A host compiler that leaves a mark each time it runs, then compiles with g++.
fn evil_compiler(dir: &Path, marker: &Path) {
    write_exe(
        &dir.join("evil.sh"),
        &format!(
            "#!/bin/sh\necho ran >> '{}'\nexec g++ \"$@\"\n",
            marker.display()
        ),
    );
}

/// A `ccache` in `<sandbox>/cache-bin` that notes each run in `<sandbox>/marker` and runs
/// the compile: (its directory, the marker).
fn noting_ccache(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let marker = sb.path("marker");
    let cache_bin = sb.path("cache-bin");
    write_exe(
        &cache_bin.join("ccache"),
        &format!(
            "#!/bin/sh\necho ran >> '{}'\nexec \"$@\"\n",
            marker.display()
        ),
    );
    (cache_bin, marker)
}

fn times_run(marker: &Path) -> usize {
    fs::read_to_string(marker).map_or(0, |t| t.lines().count())
}

/// `program` in `dir` with a clean environment and `vars`.
fn run_in(
    sb: &Sandbox,
    dir: &Path,
    program: &Path,
    args: &[&str],
    vars: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", system_path())
        .env("NO_COLOR", "1")
        .current_dir(dir);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn gpuenv_in(sb: &Sandbox, dir: &Path, args: &[&str]) -> Output {
    sb.gpuenv().current_dir(dir).args(args).output().unwrap()
}

/// Gives `path` (not what a link names) to user 65534 (`nobody`): another user's file.
/// Needs root; skipped elsewhere, failed under CI.
fn give_to_another_user(path: &Path) -> bool {
    match std::os::unix::fs::lchown(path, Some(65534), None) {
        Ok(()) => true,
        Err(e) => {
            cannot_run(format!(
                "cannot give a file to another user here (chown to uid 65534 needs root): {e}"
            ));
            false
        }
    }
}

#[test]
fn an_untrusted_host_compiler_never_runs_on_a_real_nvcc_compile_nor_in_doctor_show_env() {
    let Some(root) = real_cuda13() else { return };
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", root.to_str().unwrap()]);
    let proj = sb.path("proj");
    let marker = sb.path("marker");
    evil_compiler(&proj, &marker);
    write(
        &proj.join("k.cu"),
        "__global__ void k(float* x) { x[0] = 1; }\n",
    );
    let file = proj.join("gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"13.0\"\nhost-compiler = \"./evil.sh\"\n",
    );
    let shim = sb.gpuenv_home().join("shims/nvcc");
    let view = sb.gpuenv_home().join("views/cuda-13.0/bin/nvcc");

    for nvcc in [&shim, &view] {
        let out = run_in(&sb, &proj, nvcc, &["-c", "k.cu", "-o", "k.o"], &[]);
        succeeded(&out);
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "{} sets host-compiler, which is not applied until you trust the file: gpuenv trust {}",
                file.display(),
                file.display()
            )),
            "{err}"
        );
        assert_eq!(times_run(&marker), 0, "{} ran it", nvcc.display());
    }
    let _ = gpuenv_in(&sb, &proj, &["doctor"]);
    let show: serde_json::Value =
        serde_json::from_str(&succeeded(&gpuenv_in(&sb, &proj, &["show", "--json"]))).unwrap();
    assert_eq!(show["held_back"], serde_json::json!(["host-compiler"]));
    let env = succeeded(&gpuenv_in(&sb, &proj, &["env", "--shell", "json"]));
    assert!(!env.contains("CUDAHOSTCXX"), "{env}");
    assert_eq!(times_run(&marker), 0, "doctor, show or env ran it");

    // Trusted, it is the file's: taken from the file's directory, also from a subdirectory,
    // and exported absolute.
    succeeded(&gpuenv_in(&sb, &proj, &["trust"]));
    let sub = proj.join("src");
    fs::create_dir_all(&sub).unwrap();
    fs::copy(proj.join("k.cu"), sub.join("k.cu")).unwrap();
    let out = run_in(&sb, &sub, &shim, &["-c", "k.cu", "-o", "k.o"], &[]);
    succeeded(&out);
    assert!(!stderr(&out).contains("not applied"), "{}", stderr(&out));
    assert!(
        times_run(&marker) > 0,
        "the trusted host compiler did not run"
    );
    assert!(sub.join("k.o").is_file());
    let env: serde_json::Value = serde_json::from_str(&succeeded(&gpuenv_in(
        &sb,
        &sub,
        &["env", "--shell", "json"],
    )))
    .unwrap();
    assert_eq!(env["CUDAHOSTCXX"], proj.join("evil.sh").to_str().unwrap());

    // Edited, it is held back again.
    write(
        &file,
        "[toolchain]\ncuda = \"13.0\"\nhost-compiler = \"./evil.sh\" # changed\n",
    );
    let before = times_run(&marker);
    succeeded(&run_in(
        &sb,
        &proj,
        &shim,
        &["-c", "k.cu", "-o", "k.o"],
        &[],
    ));
    assert_eq!(times_run(&marker), before);
}

#[test]
fn an_untrusted_build_cache_and_guard_relaxation_change_nothing_until_trusted() {
    let w = proxy_world::World::new("12.4");
    let (cache_bin, marker) = noting_ccache(&w.sb);
    let file = w.proj.join("gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\n[build]\ncache = \"ccache\"\n[torch]\ncheck = \"off\"\n",
    );
    let nvcc = w.view_nvcc("cuda-12.4");
    let path = format!("{}:/usr/bin:/bin", cache_bin.display());
    let vars = [("PATH", path.as_str())];

    // torch 2.4.1+cu121 against CUDA 12.4: the guard still refuses, and ccache never runs.
    let out = w.run(&nvcc, &w.ext_args(), &vars);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "sets [build] cache and [torch] check, which are not applied until you trust the file"
        ),
        "{err}"
    );
    let plain = ["-c".to_string(), "k.cu".into()];
    succeeded(&w.run(&nvcc, &plain, &vars));
    assert_eq!(times_run(&marker), 0);

    // A cache turned off runs nothing: it applies untrusted.
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\n[build]\ncache = \"off\"\n",
    );
    let out = w.run(&nvcc, &plain, &vars);
    assert!(!stderr(&out).contains("not applied"), "{}", stderr(&out));

    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\n[build]\ncache = \"ccache\"\n[torch]\ncheck = \"off\"\n",
    );
    w.sb.ok(&["trust", file.to_str().unwrap()]);
    succeeded(&w.run(&nvcc, &w.ext_args(), &vars));
    assert!(times_run(&marker) > 0, "the trusted cache did not run");
}

#[test]
fn another_users_toolchain_file_is_passed_over_until_its_directory_is_accepted() {
    let (sb, _) = pinned_project();
    let shared = sb.path("shared/proj");
    let marker = sb.path("marker");
    evil_compiler(&shared, &marker);
    let file = shared.join(".gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\nhost-compiler = \"./evil.sh\"\n",
    );
    if !give_to_another_user(&file) {
        return;
    }
    let out = gpuenv_in(&sb, &shared, &["show"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "warning: ignoring {}: it belongs to nobody (uid 65534), not to you; to use it anyway: gpuenv trust --safe-directory {}",
            file.display(),
            shared.display()
        )),
        "{err}"
    );
    assert!(err.contains("no toolchain is active here"), "{err}");
    let show: serde_json::Value =
        serde_json::from_slice(&gpuenv_in(&sb, &shared, &["show", "--json"]).stdout).unwrap();
    assert_eq!(show["passed_over"][0], file.to_str().unwrap());
    let _ = gpuenv_in(&sb, &shared, &["doctor"]);
    assert_eq!(times_run(&marker), 0, "doctor ran another user's program");

    // Accepted, it selects; what it would run still waits for `gpuenv trust`.
    succeeded(&gpuenv_in(
        &sb,
        &shared,
        &["trust", "--safe-directory", "."],
    ));
    let out = gpuenv_in(&sb, &shared, &["show"]);
    let text = succeeded(&out);
    assert!(text.contains("cuda-12.4 (pinned to 12.4 in "), "{text}");
    assert!(
        stderr(&out).contains("sets host-compiler, which is not applied"),
        "{text}"
    );
    let _ = gpuenv_in(&sb, &shared, &["doctor"]);
    assert_eq!(times_run(&marker), 0);
    let settings = sb.settings().unwrap();
    assert!(settings.contains("safe-directories"), "{settings}");

    succeeded(&gpuenv_in(&sb, &shared, &["trust"]));
    let _ = gpuenv_in(&sb, &shared, &["doctor"]);
    assert!(
        times_run(&marker) > 0,
        "doctor did not check the trusted compiler"
    );
}

#[test]
fn at_the_prompt_another_users_file_is_one_line_once_and_selects_nothing() {
    let (sb, _) = pinned_project();
    let planted = sb.path("tmp/.gpuenv.toml");
    write(&planted, "[toolchain]\ncuda = \"12.4\"\n");
    if !give_to_another_user(&planted) {
        return;
    }
    let tmp = sb.path("tmp");
    let out = shell(
        &sb,
        "bash",
        "eval \"$(\"$GPUENV_BIN\" hook bash)\"\ncd \"$T\"; _gpuenv_hook; _gpuenv_hook\n\
         echo \"[$CUDA_HOME]\" > \"$OUT/cuda\"\n",
        &[("T", tmp.as_os_str())],
    );
    assert_eq!(
        fs::read_to_string(sb.path("out/cuda")).unwrap().trim(),
        "[]"
    );
    let err = stderr(&out);
    assert_eq!(
        err.matches(&format!("gpuenv: ignoring {}", planted.display()))
            .count(),
        1,
        "{err}"
    );
}

#[test]
fn a_file_in_a_directory_every_user_may_write_applies_only_under_a_sticky_bit() {
    let (sb, _) = pinned_project();
    let scratch = sb.path("scratch");
    let work = scratch.join("work");
    fs::create_dir_all(&work).unwrap();
    write(
        &scratch.join(".gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = gpuenv_in(&sb, &work, &["show"]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "ignoring {}: {} is writable by every user, so anyone could have put it there",
            scratch.join(".gpuenv.toml").display(),
            scratch.display()
        )),
        "{err}"
    );
    assert!(err.contains("no toolchain is active here"), "{err}");

    // As /tmp is: root's, sticky, so nobody else can swap the file.
    fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let text = succeeded(&gpuenv_in(&sb, &work, &["show"]));
    assert!(text.contains("cuda-12.4 (pinned to 12.4 in "), "{text}");
    assert!(!text.contains("ignoring"), "{text}");
}

#[test]
fn what_another_user_planted_under_the_name_is_passed_over_not_an_error() {
    let (sb, proj) = pinned_project();
    for (dir, planted) in [("fifo", "gpuenv.toml"), ("dir", ".gpuenv.toml")] {
        let sub = proj.join(dir);
        fs::create_dir_all(&sub).unwrap();
        let name = sub.join(planted);
        if dir == "fifo" {
            let c = std::ffi::CString::new(name.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        } else {
            fs::create_dir_all(&name).unwrap();
        }
        if !give_to_another_user(&name) {
            return;
        }
        // The project's own file above applies; the planted name is one notice.
        let out = gpuenv_in(&sb, &sub, &["show"]);
        let text = succeeded(&out);
        assert!(text.contains("cuda-12.4 (pinned to 12.4 in "), "{text}");
        assert!(
            stderr(&out).contains(&format!("ignoring {}: it belongs to", name.display())),
            "{text}"
        );
    }
}

#[test]
fn a_site_stores_trust_is_not_the_users_even_through_its_own_view() {
    let sb = Sandbox::new();
    let store = sb.path("site");
    let root = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    let admin = |args: &[&str]| {
        let out = sb.gpuenv().env("GPUENV_HOME", &store).args(args).output();
        succeeded(&out.unwrap())
    };
    admin(&["link", "cuda-12.4", root.to_str().unwrap()]);
    let proj = sb.path("proj");
    let file = proj.join("gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\nhost-compiler = \"/bin/true\"\n",
    );
    // The site's admin trusts the file in the store's settings: not the user's word.
    admin(&["trust", file.to_str().unwrap()]);
    let store_str = store.to_str().unwrap();
    let view_nvcc = store.join("views/cuda-12.4/bin/nvcc");
    let out = run_in(
        &sb,
        &proj,
        &view_nvcc,
        &["-c", "k.cu"],
        &[("GPUENV_UPSTREAMS", store_str)],
    );
    succeeded(&out);
    assert!(stderr(&out).contains("sets host-compiler, which is not applied"));
    let log = fs::read_to_string(root.join("nvcc.log")).unwrap();
    assert_eq!(log.trim(), "-c k.cu", "the site's trust passed -ccbin");

    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("GPUENV_UPSTREAMS", store_str)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    assert!(!succeeded(&out).contains("CUDAHOSTCXX"));
}

#[test]
fn auto_install_does_not_act_on_an_untrusted_file_and_says_what_it_would_install() {
    let sb = Sandbox::new();
    let mirror = sb.path("mirror");
    fixtures::write_tree(&mirror, &fixtures::redist_tree(&["12.4.1"]));
    let proj = sb.path("cloned");
    let file = proj.join("gpuenv.toml");
    write(&file, "[toolchain]\ncuda = \"12.4\"\n");
    let mirror = mirror.to_str().unwrap();
    let vars = [("GPUENV_CUDA_MIRROR", mirror), ("GPUENV_AUTO_INSTALL", "1")];
    let installed = || sb.gpuenv_home().join("toolchains/cuda-12.4.1").exists();
    let hook = || {
        sb.gpuenv()
            .current_dir(&proj)
            .envs(vars)
            .args(["hook-env", "--shell", "bash"])
            .output()
            .unwrap()
    };

    // At the prompt: one line saying what it would install and how to allow it.
    let out = hook();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "cuda-12.4 is not installed (the pin at {}:2:8 asks for it); GPUENV_AUTO_INSTALL would install it, but {} is not trusted",
            file.display(),
            file.display()
        )),
        "{err}"
    );
    assert!(!installed());
    assert!(
        !sb.gpuenv_home().join("downloads").exists(),
        "it downloaded"
    );

    // Through a shim: the same, with the ways out.
    let proxy = assert_cmd::cargo::cargo_bin("gpuenv-shim");
    let out = run_in(&sb, &proj, &nvcc_named(&sb, &proxy), &["--version"], &vars);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "hint: `gpuenv trust {}` lets it install what the file pins (read the file first), or `gpuenv install cuda-12.4` installs it now",
            file.display()
        )),
        "{err}"
    );
    assert!(!installed());

    // Trusted, the prompt installs it.
    sb.ok(&["trust", file.to_str().unwrap()]);
    let out = hook();
    let err = stderr(&out);
    assert!(
        err.contains("installing it now because GPUENV_AUTO_INSTALL is set"),
        "{err}"
    );
    assert!(installed(), "{err}");
}

/// An `nvcc` that is the gpuenv proxy (as a shim is), for a home with no toolchain yet.
fn nvcc_named(sb: &Sandbox, proxy: &Path) -> PathBuf {
    let nvcc = sb.path("bin/nvcc");
    fs::create_dir_all(nvcc.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(proxy, &nvcc).unwrap();
    nvcc
}

#[test]
fn a_toolchain_file_cannot_name_the_shared_store_compiles_are_written_to() {
    // `[build] shared` belongs to the user's settings and the site config only: a cloned
    // project that named one would choose where the user's objects are written and read.
    let w = proxy_world::World::new("12.4");
    let store = w.sb.path("attackers-store");
    let file = w.proj.join("gpuenv.toml");
    write(
        &file,
        &format!(
            "[toolchain]\ncuda = \"12.4\"\n[build]\ncache = \"ccache\"\nshared = \"file://{}\"\n",
            store.display()
        ),
    );
    let out = w.run(
        &w.view_nvcc("cuda-12.4"),
        &["-c".to_string(), "k.cu".into()],
        &[],
    );
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("{}:5:1", file.display())) && err.contains("unknown field `shared`"),
        "{err}"
    );
    assert!(!store.exists());
}

#[test]
fn an_untrusted_archs_add_changes_no_compile_until_trusted() {
    let w = proxy_world::World::new("12.4");
    let file = w.proj.join("gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\", \"9.0\"]\n[build]\narchs = \"add\"\n",
    );
    let nvcc = w.view_nvcc("cuda-12.4");
    let own: Vec<String> = ["-gencode", "arch=compute_80,code=sm_80", "-c", "k.cu"]
        .map(String::from)
        .to_vec();
    let out = w.run(&nvcc, &own, &[]);
    succeeded(&out);
    let err = stderr(&out);
    assert!(
        err.contains("sets [build] archs, which is not applied until you trust the file"),
        "{err}"
    );
    // Told, not changed.
    assert!(err.contains("leave out sm_90"), "{err}");
    let log = w.log("cuda-12.4").unwrap();
    assert_eq!(log.lines().last(), Some(own.join(" ").as_str()));

    w.sb.ok(&["trust", file.to_str().unwrap()]);
    succeeded(&w.run(&nvcc, &own, &[]));
    let log = w.log("cuda-12.4").unwrap();
    assert!(
        log.lines()
            .last()
            .unwrap()
            .ends_with("-gencode arch=compute_90,code=sm_90"),
        "{log}"
    );
}

/// `GPUENV_PROJECT_DIR` lets torch's `load()`, which compiles in gpuenv's own
/// torch-extensions directory, find its project. Anywhere else it is not read, so a value
/// planted in an environment cannot give an ordinary build another project's settings; and
/// the file it names is trusted or not as any file found walking up.
#[test]
fn gpuenv_project_dir_is_read_only_inside_gpuenvs_own_torch_extensions_directory() {
    let w = proxy_world::World::new("12.4");
    let (cache_bin, marker) = noting_ccache(&w.sb);
    let file = w.proj.join("gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\n[build]\ncache = \"ccache\"\n",
    );
    w.sb.ok(&["trust", file.to_str().unwrap()]);
    let nvcc = w.view_nvcc("cuda-12.4");
    let compile = |dir: &Path, project: &Path| {
        let path = format!("{}:/usr/bin:/bin", cache_bin.display());
        let project = project.to_str().unwrap();
        let out = w
            .command(&nvcc, &["-c".into(), "k.cu".into()], &[("PATH", &path)])
            .env("GPUENV_PROJECT_DIR", project)
            .current_dir(dir)
            .output()
            .unwrap();
        succeeded(&out);
        stderr(&out)
    };

    // An ordinary build directory: the variable is not read.
    let elsewhere = w.sb.path("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    compile(&elsewhere, &w.proj);
    assert_eq!(
        times_run(&marker),
        0,
        "a planted variable redirected a build"
    );
    // Nor in a directory merely named like gpuenv's.
    let lookalike = w.sb.path("torch-extensions/cuda-12.4/ext");
    fs::create_dir_all(&lookalike).unwrap();
    compile(&lookalike, &w.proj);
    assert_eq!(times_run(&marker), 0);

    // Where torch's load() compiles: the project's trusted cache applies.
    let jit = w.sb.gpuenv_home().join("torch-extensions/cuda-12.4/ext");
    fs::create_dir_all(&jit).unwrap();
    compile(&jit, &w.proj);
    assert_eq!(times_run(&marker), 1);

    // A directory whose file is not trusted selects only, there as anywhere.
    let evil = w.sb.path("evil");
    write(
        &evil.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n[build]\ncache = \"ccache\"\n",
    );
    let err = compile(&jit, &evil);
    assert!(
        err.contains("not applied until you trust the file"),
        "{err}"
    );
    assert_eq!(times_run(&marker), 1);
}
