//! Retiring a toolchain while something uses it: `gpuenv uninstall` forgets it at once, but a
//! running process keeps its tree and view at the same paths (the real CUDA 13 from the
//! test cache's downloads, offline), its view's nvcc still compiles, no resolution picks
//! it, a new install of it is refused, and once the process ends the next command that
//! writes the home deletes it; `--now` deletes at once, `--reap` on request.

#[path = "common/archives.rs"]
mod archives;
mod common;
#[path = "common/install_fixtures.rs"]
mod fixtures;
#[path = "common/server.rs"]
mod server;

use std::path::Path;
use std::process::{Child, Command, Output};

use common::real::real_gpuenv;
use common::*;
use fixtures::{redist_tree, text, write_tree};

fn run(sb: &Sandbox, dir: &Path, args: &[&str]) -> Output {
    real_gpuenv(sb)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[track_caller]
fn ok(sb: &Sandbox, args: &[&str]) -> String {
    let out = run(sb, sb.dir.path(), args);
    assert!(out.status.success(), "gpuenv {args:?}:\n{}", text(&out));
    text(&out)
}

/// A real `sleep` whose working directory is `dir`: a job sitting in the toolkit's tree.
fn sleeper(dir: &Path) -> Child {
    let child = Command::new("sleep")
        .arg("600")
        .current_dir(dir)
        .spawn()
        .unwrap();
    // Its cwd is set before exec; wait until /proc shows it as `sleep`.
    let exe = format!("/proc/{}/exe", child.id());
    while !fs_err::read_link(&exe).is_ok_and(|e| e.ends_with("sleep")) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child
}

fn end(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

const INSTALL: &[&str] = &[
    "install",
    "cuda-13.0",
    "--source",
    "pypi",
    "--profile",
    "minimal",
    "--offline",
];

#[test]
fn a_running_process_keeps_the_retired_real_toolkit_until_it_ends() {
    if !have_tool("g++") {
        return;
    }
    let sb = Sandbox::new();
    let out = run(&sb, sb.dir.path(), INSTALL);
    if !out.status.success() {
        return cannot_run(format!(
            "CUDA 13.0 is not in the test cache's downloads (the install_real tests put it there): {}",
            text(&out)
        ));
    }
    let name = "cuda-13.0.3";
    let tree = sb.toolchain(name);
    let view = sb.gpuenv_home().join("views").join(name);
    let job = sleeper(&tree.join("bin"));

    let said = ok(&sb, &["uninstall", name]);
    assert!(
        said.contains(&format!("{name} is retired")) && said.contains(&format!("pid {}", job.id())),
        "{said}"
    );
    assert!(
        said.contains(&format!("`gpuenv uninstall --now {name}`")),
        "{said}"
    );
    assert!(
        tree.join("bin/nvcc").is_file(),
        "the tree stays at its path"
    );
    assert!(view.join("bin/nvcc").exists(), "the view stays at its path");
    let settings = sb.settings().unwrap();
    assert!(!settings.contains(name), "still registered:\n{settings}");

    // No new resolution picks it.
    let out = run(&sb, sb.dir.path(), &["run", "cuda-13.0", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let list = ok(&sb, &["list"]);
    assert!(
        list.contains(&format!(
            "{name}: retired, kept for 1 process (pid {})",
            job.id()
        )),
        "{list}"
    );

    // A running job's environment names the view: its nvcc (the proxy) still compiles with
    // the retired tree.
    let work = sb.path("work");
    write(
        &work.join("k.cu"),
        "__global__ void k(float *x) { x[0] = 1; }\n",
    );
    let out = Command::new(view.join("bin/nvcc"))
        .args(["-c", "k.cu", "-o", "k.o"])
        .current_dir(&work)
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(work.join("k.o").is_file());

    // Its path is taken while the job runs: a new install says so and how to go on.
    let out = run(&sb, sb.dir.path(), INSTALL);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("is still used by 1 process"), "{t}");
    assert!(
        t.contains(&format!("`gpuenv uninstall --now {name}`")),
        "{t}"
    );
    assert!(tree.join("bin/nvcc").is_file());

    // Reaping while it runs keeps it; once it ends, the next reap deletes the tree, the
    // view and the record. (No `cache prune` here: the download cache is the test cache's,
    // which other tests install from.)
    let kept = ok(&sb, &["uninstall", "--reap"]);
    assert!(
        kept.contains(&format!("kept the retired {name} for 1 process")),
        "{kept}"
    );
    end(job);
    let reaped = ok(&sb, &["uninstall", "--reap"]);
    assert!(
        reaped.contains(&format!("deleted the retired {name}")),
        "{reaped}"
    );
    assert!(!tree.exists() && !view.exists());
    let toolchains = sb.gpuenv_home().join("toolchains");
    assert!(!toolchains.join(format!(".{name}.retired.toml")).exists());
    let list = ok(&sb, &["list"]);
    assert!(!list.contains("retired"), "{list}");

    // And it installs again at the same path.
    ok(&sb, INSTALL);
    assert!(tree.join("bin/nvcc").is_file());
}

/// A fake CUDA 12.4.1 installed from a local mirror (fast), and the mirror variable.
fn installed_12_4(sb: &Sandbox) -> (String, std::path::PathBuf) {
    let dir = sb.path("mirror");
    write_tree(&dir, &redist_tree(&["12.4.1"]));
    let mirror = dir.display().to_string();
    let out = sb
        .gpuenv()
        .env("GPUENV_CUDA_MIRROR", &mirror)
        .args(["install", "cuda-12.4.1", "--profile", "minimal"])
        .output()
        .unwrap();
    succeeded(&out);
    (mirror, sb.toolchain("cuda-12.4.1"))
}

#[test]
fn cache_prune_deletes_a_retired_tree_once_its_process_ended() {
    // The sandbox's own download cache (under its GPUENV_HOME), never the test cache's.
    let sb = Sandbox::new();
    let (_mirror, tree) = installed_12_4(&sb);
    let job = sleeper(&tree.join("bin"));
    sb.ok(&["uninstall", "cuda-12.4.1"]);
    let out = sb.gpuenv().args(["cache", "prune"]).output().unwrap();
    assert!(
        !text(&out).contains("deleted the retired"),
        "{}",
        text(&out)
    );
    assert!(tree.is_dir());
    end(job);
    let out = sb.gpuenv().args(["cache", "prune"]).output().unwrap();
    let t = succeeded(&out) + &text(&out);
    assert!(t.contains("deleted the retired cuda-12.4.1"), "{t}");
    assert!(!tree.exists());
    assert!(!sb.gpuenv_home().join("views/cuda-12.4.1").exists());
}

#[test]
fn now_deletes_at_once_and_nothing_in_use_is_deleted_at_once() {
    let sb = Sandbox::new();
    let (mirror, tree) = installed_12_4(&sb);
    let job = sleeper(&tree);
    let out = sb.ok(&["uninstall", "--now", "cuda-12.4.1"]);
    assert!(!tree.exists(), "--now keeps today's behaviour: {out}");
    assert!(!sb.gpuenv_home().join("views/cuda-12.4.1").exists());
    end(job);

    // Nothing uses it: deleted at once, as before.
    let out = sb
        .gpuenv()
        .env("GPUENV_CUDA_MIRROR", &mirror)
        .args(["install", "cuda-12.4.1", "--profile", "minimal"])
        .output()
        .unwrap();
    succeeded(&out);
    let out = sb
        .gpuenv()
        .args(["uninstall", "cuda-12.4.1"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(t.contains("uninstalled cuda-12.4.1 (removed"), "{t}");
    assert!(!tree.exists());
}

#[test]
fn a_retired_tree_is_deleted_by_uninstall_now_of_its_name_and_its_environment_keeps_it() {
    let sb = Sandbox::new();
    let (_mirror, tree) = installed_12_4(&sb);
    // A job script between two compiles: nothing open in the tree, but its environment
    // names the view.
    let view = sb.gpuenv_home().join("views/cuda-12.4.1");
    let mut job = Command::new("sleep")
        .arg("600")
        .env("CUDA_HOME", &view)
        .spawn()
        .unwrap();
    let environ = format!("/proc/{}/exe", job.id());
    while !fs_err::read_link(&environ).is_ok_and(|e| e.ends_with("sleep")) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let t = sb.ok(&["uninstall", "cuda-12.4.1"]);
    let out = sb
        .gpuenv()
        .args(["uninstall", "cuda-12.4.1"])
        .output()
        .unwrap();
    let again = text(&out);
    assert!(tree.is_dir(), "{t}\n{again}");
    assert!(again.contains("cuda-12.4.1 is retired"), "{again}");
    // A second uninstall of the retired name with --now deletes it.
    let out = sb
        .gpuenv()
        .args(["uninstall", "--now", "cuda-12.4.1"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(t.contains("deleted the retired cuda-12.4.1"), "{t}");
    assert!(!tree.exists() && !view.exists());
    job.kill().unwrap();
    job.wait().unwrap();
}
