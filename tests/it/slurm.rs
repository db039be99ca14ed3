//! Jobs on the real test SLURM (common/slurm.rs): `srun` in and outside a pinned project,
//! the TaskProlog an admin sets (`gpuenv env --shell slurm`), a step started with
//! `--export=NONE` (no HOME), and `gpuenv doctor --all-nodes` in an `salloc` of one node.

use crate::common::slurm;

use std::path::{Path, PathBuf};

use crate::common::*;
use fs_err as fs;

fn gpuenv_bin() -> PathBuf {
    proxy_bin().with_file_name("gpuenv")
}

/// A user with cuda-12.4 linked and a project pinned to it.
struct User {
    sb: Sandbox,
    proj: PathBuf,
}

fn user() -> User {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let proj = sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n");
    User { sb, proj }
}

impl User {
    /// `srun`/`salloc` from `dir` with this user's environment (HOME, PATH with gpuenv).
    fn client(&self, cluster: &slurm::Cluster, program: &str, dir: &Path) -> std::process::Command {
        let mut cmd = cluster.client(program);
        cmd.env_clear()
            .env("SLURM_CONF", &cluster.conf)
            .env("HOME", self.sb.home())
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", gpuenv_bin().parent().unwrap().display()),
            )
            .env("LANG", "C.UTF-8")
            .current_dir(dir);
        cmd
    }

    fn view(&self) -> String {
        self.sb
            .gpuenv_home()
            .join("views/cuda-12.4")
            .display()
            .to_string()
    }
}

#[test]
fn srun_gpuenv_run_uses_the_project_toolchain_on_the_node() {
    let Some(cluster) = slurm::cluster() else {
        return;
    };
    let u = user();
    let out = u
        .client(cluster, "srun", &u.proj)
        .args([
            "gpuenv",
            "run",
            "--",
            "sh",
            "-c",
            "echo \"$CUDA_HOME\"; nvcc --version",
        ])
        .output()
        .unwrap();
    let out = succeeded(&out);
    assert!(out.starts_with(&u.view()), "{out}");
    assert!(out.contains("release 12.4, V12.4.131"), "{out}");
}

#[test]
fn the_task_prolog_gives_tasks_in_a_pinned_project_its_toolchain_and_nothing_elsewhere() {
    let Some(cluster) = slurm::cluster() else {
        return;
    };
    let u = user();
    let show = "echo \"${CUDA_HOME-unset} ${GPUENV_ACTIVE-unset}\"; command -v nvcc || true";
    let inside = u
        .client(cluster, "srun", &u.proj)
        .env("GPUENV_TEST_BIN", gpuenv_bin())
        .args(["sh", "-c", show])
        .output()
        .unwrap();
    let inside = succeeded(&inside);
    assert!(
        inside.starts_with(&format!("{} cuda-12.4\n", u.view())),
        "{inside}"
    );
    assert!(
        inside.contains(&format!("{}/bin/nvcc", u.view())),
        "{inside}"
    );

    // A pin that does not resolve fails the task, and says why in the task's output.
    let broken = u.sb.path("broken");
    write(
        &broken.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"99.1\"\n",
    );
    let failed = u
        .client(cluster, "srun", &broken)
        .env("GPUENV_TEST_BIN", gpuenv_bin())
        .args(["sh", "-c", "echo the task ran"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&failed.stdout);
    assert!(!failed.status.success());
    assert!(!stdout.contains("the task ran"), "{stdout}");
    assert!(
        stdout.contains("gpuenv: cuda-99.1 is not installed"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&failed.stderr).contains("TaskProlog failed"));

    let outside = u
        .client(cluster, "srun", &u.sb.home())
        .env("GPUENV_TEST_BIN", gpuenv_bin())
        .args(["sh", "-c", show])
        .output()
        .unwrap();
    assert_eq!(succeeded(&outside), "unset unset\n");
}

#[test]
fn task_prolog_lines_are_exports_and_a_newline_in_a_value_is_an_error() {
    let u = user();
    let out =
        u.sb.gpuenv()
            .current_dir(&u.proj)
            .args(["env", "--shell", "slurm"])
            .output()
            .unwrap();
    let lines = succeeded(&out);
    assert!(
        lines.contains(&format!("export CUDA_HOME={}\n", u.view())),
        "{lines}"
    );
    assert!(
        lines
            .lines()
            .all(|l| l.starts_with("export ") || l.starts_with("unset ")),
        "{lines}"
    );
    // Outside a project: nothing, even with a default.
    u.sb.ok(&["default", "cuda-12.4"]);
    assert_eq!(u.sb.ok(&["env", "--shell", "slurm"]), "");

    write(
        &u.proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n[env]\nBANNER = \"two\\nlines\"\n",
    );
    u.sb.gpuenv()
        .current_dir(&u.proj)
        .arg("trust")
        .assert()
        .success();
    let out =
        u.sb.gpuenv()
            .current_dir(&u.proj)
            .args(["env", "--shell", "slurm"])
            .output()
            .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("BANNER's value has a newline"), "{err}");
    // Nothing is exported; the reason goes to the task's output as TaskProlog `print` lines.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().all(|l| l.starts_with("print gpuenv: ")),
        "{stdout}"
    );
    assert!(stdout.contains("BANNER's value has a newline"), "{stdout}");
}

/// A site store named by a system config, with a toolchain whose name no real home has.
fn site(sb: &Sandbox) -> PathBuf {
    let store = sb.path("site/gpuenv");
    let root = cuda_runfile(&sb.path("site/sw/cuda-12.4"), "12.4.131");
    sb.gpuenv()
        .env("GPUENV_HOME", &store)
        .args(["link", "cuda-12.4-sitetest", root.to_str().unwrap()])
        .assert()
        .success();
    let config = sb.path("etc/gpuenv/config.toml");
    write(&config, &format!("upstreams = [\"{}\"]\n", store.display()));
    config
}

#[test]
fn a_step_started_with_export_none_finds_home_in_the_password_database() {
    let sb = Sandbox::new();
    let config = site(&sb);
    let store_view = sb.path("site/gpuenv/views/cuda-12.4-sitetest");
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"cuda-12.4-sitetest\"\n",
    );

    // No HOME at all: the account's home comes from the password database.
    let out = std::process::Command::new(gpuenv_bin())
        .args(["env", "--shell", "slurm"])
        .env_clear()
        .env("GPUENV_SYSTEM_CONFIG", &config)
        .current_dir(&proj)
        .output()
        .unwrap();
    assert!(succeeded(&out).contains(&format!("export CUDA_HOME={}\n", store_view.display())));

    let Some(cluster) = slurm::cluster() else {
        return;
    };
    // --export=<list> passes only those variables (and SLURM's): no HOME, no PATH.
    let step = |export: &str, args: &[&str]| {
        let out = cluster
            .client("srun")
            .arg(format!("--export={export}"))
            .args(args)
            .env("GPUENV_SYSTEM_CONFIG", &config)
            .env("GPUENV_TEST_BIN", gpuenv_bin())
            .env("HOME", sb.home())
            .current_dir(&proj)
            .output()
            .unwrap();
        succeeded(&out)
    };
    let bin = gpuenv_bin();
    let lines = step(
        "GPUENV_SYSTEM_CONFIG",
        &[
            "/bin/sh",
            "-c",
            "echo \"HOME=${HOME-unset}\"; \"$0\" env --shell slurm",
            bin.to_str().unwrap(),
        ],
    );
    assert!(lines.starts_with("HOME=unset\n"), "{lines}");
    assert!(
        lines.contains(&format!("export CUDA_HOME={}\n", store_view.display())),
        "{lines}"
    );

    // --export=NONE itself: nothing but SLURM's variables, and gpuenv still finds a home.
    let none = step(
        "NONE",
        &[
            "/bin/sh",
            "-c",
            "echo \"HOME=${HOME-unset}\"; \"$0\" list --json",
            bin.to_str().unwrap(),
        ],
    );
    assert!(none.starts_with("HOME=unset\n["), "{none}");

    // The admin's TaskProlog does the same for the task itself.
    let task = step(
        "GPUENV_SYSTEM_CONFIG,GPUENV_TEST_BIN",
        &["/bin/sh", "-c", "echo \"${HOME-unset} $CUDA_HOME\""],
    );
    assert_eq!(task, format!("unset {}\n", store_view.display()));
}

#[test]
fn doctor_all_nodes_in_an_allocation_reports_each_node_and_their_differences() {
    let Some(cluster) = slurm::cluster() else {
        return;
    };
    let u = user();
    let out = u
        .client(cluster, "salloc", &u.proj)
        .args(["-N1", "-w", "n1"])
        .args(["gpuenv", "doctor", "--all-nodes", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let start = stdout.find('{').unwrap_or_else(|| {
        panic!(
            "no JSON: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let report: serde_json::Value = serde_json::from_str(&stdout[start..]).unwrap();
    let nodes = report["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{report}");
    assert_eq!(nodes[0]["node"], "n1");
    let facts = nodes[0]["facts"].as_array().unwrap();
    assert_eq!(facts[0], "cuda-12.4 (12.4.131)", "{report}");
    // The sandbox hides the host's driver (an empty machine root, no nvidia-smi on PATH).
    assert_eq!(facts[1], "none", "{report}");
    assert_eq!(facts[4], this_machines_shm(), "{report}");
    assert_eq!(report["differences"], serde_json::json!([]));
    assert_eq!(report["expected_nodes"], 1);

    // Outside an allocation it says how to get one.
    let out =
        u.sb.gpuenv()
            .current_dir(&u.proj)
            .args(["doctor", "--all-nodes"])
            .output()
            .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("salloc -N <nodes> gpuenv doctor --all-nodes"),
        "{err}"
    );
}

/// `/dev/shm` as the node report words it, read here from `/proc/mounts` (tmpfs prints
/// its size in KiB): the node is this machine.
fn this_machines_shm() -> String {
    let mounts = fs::read_to_string("/proc/mounts").unwrap();
    let Some(options) = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(1) == Some(&"/dev/shm")).then(|| f.get(3).copied().unwrap_or("").to_string())
    }) else {
        return "not mounted".into();
    };
    match options.split(',').find_map(|o| {
        o.strip_prefix("size=")?
            .strip_suffix('k')?
            .parse::<u64>()
            .ok()
    }) {
        Some(kib) => format!("{} MiB", kib / 1024),
        None => "mounted without a size limit".into(),
    }
}
