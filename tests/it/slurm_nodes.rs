//! Two real SLURM nodes on one machine (the test cluster, common/slurm.rs): `n1` and `n2`
//! share the user's home and gpuenv's registry, but each has its own node-local directory,
//! as a cluster's nodes share a file system and keep their own disks. A toolkit installed on one
//! node's disk only, and another driver on each: `gpuenv doctor --all-nodes` names the node
//! and the difference, and the TaskProlog refuses the task on the node without the tree. A
//! toolkit on the shared file system gives the same `nvcc --version` on both. A site config's
//! `[build]` makes nvcc compile through ccache with a shared store: what node 1 compiled,
//! node 2 gets from the store; another nvcc never does. A project's gpuenv.lock holds on
//! every node: doctor names the node whose tree is not the locked one and the TaskProlog
//! refuses its tasks; told to (`GPUENV_PROLOG_INSTALL=locked`), the prolog installs a locked
//! toolkit a node lacks from the site's download cache, for a trusted project only. The
//! prolog never blocks gpuenv's own fixes (`srun gpuenv install --locked`, the doctor's node
//! report); a second, non-root account's job runs on both nodes with it, also with
//! `--export=NONE`-style steps (no PATH, no HOME), and an account whose home is missing on
//! the nodes gets a message, nothing written.

use crate::common::accounts::Account;
use crate::common::install_fixtures as fixtures;
use crate::common::slurm;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::real::{another_nvcc, ccache_stat, real_cuda13, SCALE_KERNEL};
use crate::common::*;
use fixtures::{redist_mirror, NVIDIA_12_4_1_MINIMAL};
use slurm::Cluster;

const PIN_12_4: &str = "[toolchain]\ncuda = \"12.4\"\n";
const PIN_13_0: &str = "[toolchain]\ncuda = \"13.0\"\n";

fn gpuenv_bin() -> PathBuf {
    proxy_bin().with_file_name("gpuenv")
}

/// A user whose files (home, projects) are on the shared file system, and whose node-local
/// files are `<node dir>/<id>` (`id` is unique to the test).
struct User {
    sb: Sandbox,
    id: String,
}

impl User {
    fn new() -> User {
        let sb = Sandbox::new();
        let id = sb
            .dir
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        User { sb, id }
    }

    /// This test's directory on `node`'s own disk, as the host sees it.
    fn on_node(&self, nodes: &Cluster, node: &str) -> PathBuf {
        nodes.node_dir(node).join(&self.id)
    }

    /// The same directory as every node sees it (its own).
    fn node_local(&self, nodes: &Cluster) -> PathBuf {
        nodes.local().join(&self.id)
    }

    /// `srun`/`salloc` from `dir` with this user's environment: HOME, and PATH with gpuenv
    /// and the node-local `bin`.
    fn client(&self, nodes: &Cluster, program: &str, dir: &Path) -> Command {
        let mut cmd = nodes.client(program);
        cmd.env_clear()
            .env("SLURM_CONF", &nodes.conf)
            .env("HOME", self.sb.home())
            .env(
                "PATH",
                format!(
                    "{}:{}/bin:/usr/bin:/bin",
                    gpuenv_bin().parent().unwrap().display(),
                    self.node_local(nodes).display()
                ),
            )
            .env("LANG", "C.UTF-8")
            .current_dir(dir);
        cmd
    }

    /// `srun -w <node> <args>` from `dir`, which must succeed.
    fn srun_on(&self, nodes: &Cluster, node: &str, dir: &Path, args: &[&str]) {
        let out = self
            .client(nodes, "srun", dir)
            .args(["-Q", "-w", node])
            .args(args)
            .output()
            .unwrap();
        succeeded(&out);
    }

    /// `gpuenv doctor --all-nodes` in an allocation of both nodes, which finds that they
    /// differ (exit 1); its report.
    fn doctor_finds_the_nodes_differ(&self, nodes: &Cluster, proj: &Path) -> String {
        let out = self
            .client(nodes, "salloc", proj)
            .args(["-Q", "-N2", "gpuenv", "doctor", "--all-nodes"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(!out.status.success(), "nodes differ: exit 1\n{text}");
        text
    }

    /// A CUDA 12.4 tree of `version` at `cuda-12.4` on `node`'s own disk; its path as the
    /// nodes see it.
    fn cuda_12_4_on(&self, nodes: &Cluster, node: &str, version: &str) -> PathBuf {
        cuda_runfile(&self.on_node(nodes, node).join("cuda-12.4"), version);
        self.node_local(nodes).join("cuda-12.4")
    }

    fn project(&self, name: &str, text: &str) -> PathBuf {
        let dir = self.sb.path(name);
        write(&dir.join("gpuenv.toml"), text);
        dir
    }
}

/// Lines of `srun -l` output by task: `(task, text)`, sorted.
fn by_task(out: &Output) -> Vec<(String, String)> {
    let mut lines: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(t, s)| (t.trim().to_string(), s.to_string()))
        .collect();
    lines.sort();
    lines
}

/// `srun -N2`, one task per node, with the TaskProlog and `vars`: each task says where it
/// ran and its `CUDA_HOME`.
fn task_on_both(u: &User, nodes: &Cluster, proj: &Path, vars: &[(&str, &Path)]) -> Output {
    let mut cmd = u.client(nodes, "srun", proj);
    cmd.env("GPUENV_TEST_BIN", gpuenv_bin());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.args(["-Q", "-N2", "--ntasks-per-node=1", "-l", "sh", "-c"])
        .arg("echo \"ran on $SLURMD_NODENAME with $CUDA_HOME\"")
        .output()
        .unwrap()
}

/// Asserts that the task of [`task_on_both`] ran on n1 with `view` as its CUDA_HOME, and
/// that the one on n2 failed; what the tasks printed.
#[track_caller]
fn ran_on_n1_only(out: &Output, view: &Path) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!("ran on n1 with {}", view.display())),
        "{stdout}"
    );
    assert!(!stdout.contains("ran on n2"), "{stdout}");
    stdout
}

fn nvidia_smi(dir: &Path, driver: &str, cuda: &str) {
    write_exe(
        &dir.join("bin/nvidia-smi"),
        &format!("#!/bin/sh\necho '| NVIDIA-SMI {driver}   Driver Version: {driver}   CUDA Version: {cuda}     |'\n"),
    );
}

#[test]
fn a_toolkit_on_one_nodes_disk_only_is_named_by_doctor_and_refused_by_the_task_prolog() {
    let Some(nodes) = slurm::cluster() else {
        return;
    };
    let u = User::new();
    // The admin installed 12.4 on n1's disk only; each node has its own driver.
    let root = u.cuda_12_4_on(nodes, "n1", "12.4.131");
    nvidia_smi(&u.on_node(nodes, "n1"), "550.54.15", "12.4");
    nvidia_smi(&u.on_node(nodes, "n2"), "535.104.05", "12.2");
    let proj = u.project("proj", PIN_12_4);
    // Linked on n1, where the tree is; the registry is in the shared home.
    u.srun_on(
        nodes,
        "n1",
        &proj,
        &["gpuenv", "link", "cuda-12.4", root.to_str().unwrap()],
    );

    let text = u.doctor_finds_the_nodes_differ(nodes, &proj);
    assert!(text.contains("differs: toolchain"), "{text}");
    assert!(text.contains("cuda-12.4 (12.4.131)  on n1"), "{text}");
    assert!(
        text.contains("cuda-12.4 (12.4.131), root missing  on n2"),
        "{text}"
    );
    assert!(text.contains("differs: driver"), "{text}");
    assert!(text.contains("550.54.15  on n1"), "{text}");
    assert!(text.contains("535.104.05  on n2"), "{text}");

    // The TaskProlog sets up the task on n1 and fails it on n2, saying why.
    let out = task_on_both(&u, nodes, &proj, &[]);
    let view = u.sb.gpuenv_home().join("views/cuda-12.4");
    let stdout = ran_on_n1_only(&out, &view);
    assert!(
        stdout.contains(&format!(
            "gpuenv: cuda-12.4 cannot be used on node n2: the root of cuda-12.4, {}, is gone",
            root.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("gpuenv: a toolkit must be at the same path on every node"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("TaskProlog failed"));

    // The prolog lets `gpuenv run` through on n2 (it is gpuenv's own step), and gpuenv run
    // refuses there itself: nothing runs against a tree that is not on the node.
    let out = u
        .client(nodes, "srun", &proj)
        .env("GPUENV_TEST_BIN", gpuenv_bin())
        .args(["-Q", "-w", "n2", "gpuenv", "run", "--", "echo", "ran on n2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}");
    assert!(!stdout.contains("ran on n2"), "{stdout}");
    assert!(
        stderr.contains("cuda-12.4 cannot be used on node n2: the root of cuda-12.4"),
        "{stderr}"
    );
}

#[test]
fn a_toolkit_on_the_shared_file_system_is_the_same_nvcc_on_both_nodes() {
    let Some(nodes) = slurm::cluster() else {
        return;
    };
    let Some(cuda13) = real_cuda13() else {
        return;
    };
    let u = User::new();
    u.sb.ok(&["link", "cuda-13.0", cuda13.to_str().unwrap()]);
    let proj = u.project("proj", PIN_13_0);
    let out = u
        .client(nodes, "srun", &proj)
        .args(["-Q", "-N2", "--ntasks-per-node=1", "-l"])
        .args(["gpuenv", "run", "--", "nvcc", "--version"])
        .output()
        .unwrap();
    succeeded(&out);
    let lines = by_task(&out);
    let release = |task: &str| -> Vec<&str> {
        lines
            .iter()
            .filter(|(t, l)| t == task && l.starts_with("Cuda compilation tools"))
            .map(|(_, l)| l.as_str())
            .collect()
    };
    assert_eq!(release("0").len(), 1, "{lines:?}");
    assert!(release("0")[0].contains("release 13.0"), "{lines:?}");
    assert_eq!(release("0"), release("1"), "{lines:?}");
}

#[test]
fn a_site_shared_build_cache_serves_node_2_what_node_1_compiled_and_never_another_nvcc() {
    let Some(nodes) = slurm::cluster() else {
        return;
    };
    if !have_tool("ccache") || !have_tool("g++") {
        return;
    }
    let Some(cuda13) = real_cuda13() else {
        return;
    };
    let u = User::new();
    u.sb.ok(&["link", "cuda-13.0", cuda13.to_str().unwrap()]);
    let other = u.sb.path("cuda-13.0-other");
    another_nvcc(&cuda13, &other);
    u.sb.ok(&["link", "cuda-13.0-other", other.to_str().unwrap()]);

    // The admin's site config: ccache for everyone, with a store all nodes mount.
    let store = u.sb.path("shared-ccache");
    let site = u.sb.path("etc/gpuenv/config.toml");
    write(
        &site,
        &format!(
            "[build]\ncache = \"ccache\"\nshared = \"file://{}\"\n",
            store.display()
        ),
    );
    let proj = u.project("proj", PIN_13_0);
    write(&proj.join("k.cu"), SCALE_KERNEL);
    let show =
        u.sb.gpuenv()
            .current_dir(&proj)
            .env("GPUENV_SYSTEM_CONFIG", &site)
            .arg("show")
            .output()
            .unwrap();
    let show = succeeded(&show);
    assert!(
        show.contains(&format!(
            "shared build cache: file://{} ([build] in the site config)",
            store.display()
        )),
        "{show}"
    );

    // Each node's own ccache directory is on its own disk.
    let compile = |node: &str, spec: &str| {
        let out = u
            .client(nodes, "srun", &proj)
            .env("GPUENV_SYSTEM_CONFIG", &site)
            .env("CCACHE_DIR", u.node_local(nodes).join("ccache"))
            .args(["-Q", "-w", node, "gpuenv", "run", spec, "--"])
            .args(["nvcc", "-c", "k.cu", "-o"])
            .arg(format!("k-{node}.o"))
            .output()
            .unwrap();
        succeeded(&out);
        assert!(proj.join(format!("k-{node}.o")).is_file());
    };
    let stat = |node: &str, key: &str| ccache_stat(&u.on_node(nodes, node).join("ccache"), key);

    compile("n1", "cuda-13.0");
    assert_eq!(stat("n1", "cache_miss"), 1, "node 1 compiles");
    // Its result and (direct mode) its manifest.
    assert!(
        stat("n1", "remote_storage_write") > 0,
        "and fills the shared store"
    );
    assert!(store.is_dir());

    compile("n2", "cuda-13.0");
    assert_eq!(stat("n2", "cache_miss"), 0, "node 2 compiles nothing");
    assert_eq!(
        stat("n2", "remote_storage_hit"),
        1,
        "it is served from the store"
    );

    compile("n2", "cuda-13.0-other");
    assert_eq!(stat("n2", "cache_miss"), 1, "another nvcc misses");
    assert_eq!(
        stat("n2", "remote_storage_hit"),
        1,
        "the store has nothing for it"
    );
}

#[test]
fn a_node_whose_tree_is_not_the_locked_one_is_named_by_doctor_and_refused_by_the_task_prolog() {
    let Some(nodes) = slurm::cluster() else {
        return;
    };
    let u = User::new();
    // The same path on each node's disk, another build on n2.
    let root = u.cuda_12_4_on(nodes, "n1", "12.4.131");
    u.cuda_12_4_on(nodes, "n2", "12.4.99");
    let proj = u.project("proj", PIN_12_4);
    u.srun_on(
        nodes,
        "n1",
        &proj,
        &["gpuenv", "link", "cuda-12.4", root.to_str().unwrap()],
    );
    u.srun_on(nodes, "n1", &proj, &["gpuenv", "lock"]);
    let lock = proj.join("gpuenv.lock");
    let differs = format!(
        "{}:6:1: cuda-12.4: files: the tree's file list differs from the locked one",
        lock.display()
    );

    let text = u.doctor_finds_the_nodes_differ(nodes, &proj);
    assert!(text.contains("differs: lock\n"), "{text}");
    assert!(text.contains("matches gpuenv.lock  on n1"), "{text}");
    let n2 = text
        .lines()
        .find(|l| l.ends_with("  on n2") && l.contains(&differs))
        .unwrap_or_else(|| panic!("no lock difference on n2 in\n{text}"));
    assert!(n2.trim_start().starts_with("differs: "), "{n2}");

    // The prolog sets up the task on n1 and fails it on n2, naming what differs and the fix;
    // told to install, it still never replaces a tree that is there.
    let view = u.sb.gpuenv_home().join("views/cuda-12.4");
    for opt_in in [None, Some("locked")] {
        let vars: Vec<(&str, &Path)> = opt_in
            .map(|v| ("GPUENV_PROLOG_INSTALL", Path::new(v)))
            .into_iter()
            .collect();
        let out = task_on_both(&u, nodes, &proj, &vars);
        let stdout = ran_on_n1_only(&out, &view);
        for want in [
            format!(
                "gpuenv: node n2 does not have the toolchains {} names:",
                lock.display()
            ),
            differs.clone(),
            format!(
                "gpuenv: cuda-12.4 is a linked tree: the admin puts the locked one at {} on node n2, as on the other nodes",
                root.display()
            ),
        ] {
            assert!(stdout.contains(&want), "{opt_in:?}: no {want} in\n{stdout}");
        }
        assert!(String::from_utf8_lossy(&out.stderr).contains("TaskProlog failed"));
    }
}

#[test]
fn told_to_the_task_prolog_installs_the_locked_toolkit_a_node_lacks_from_the_site_cache_for_a_trusted_project(
) {
    let Some(nodes) = slurm::cluster() else {
        return;
    };
    let (server, mirror) = redist_mirror(&["12.4.1"]);
    let u = User::new();
    // Each node keeps its toolchains on its own disk; the site's download cache is shared.
    let home = u.node_local(nodes).join("gpuenv");
    let cache = u.sb.path("site-cache");
    let proj = u.project("proj", PIN_12_4);
    let on = |node: &str, dir: &Path, args: &[&str]| {
        let out = u
            .client(nodes, "srun", dir)
            .env("GPUENV_HOME", &home)
            .env("GPUENV_CUDA_MIRROR", &mirror)
            .env("GPUENV_DOWNLOAD_CACHE", &cache)
            .args(["-Q", "-w", node, "gpuenv"])
            .args(args)
            .output()
            .unwrap();
        succeeded(&out)
    };
    on("n1", u.sb.dir.path(), NVIDIA_12_4_1_MINIMAL);
    on("n1", &proj, &["lock"]);
    let downloads = server.hits(".tar.xz").len();
    let installed_on_n2 = u.on_node(nodes, "n2").join("gpuenv/toolchains/cuda-12.4.1");
    let view = home.join("views/cuda-12.4.1");
    let vars = [
        ("GPUENV_HOME", home.as_path()),
        ("GPUENV_CUDA_MIRROR", Path::new(&mirror)),
        ("GPUENV_DOWNLOAD_CACHE", cache.as_path()),
    ];
    let told = [&vars[..], &[("GPUENV_PROLOG_INSTALL", Path::new("locked"))]].concat();

    // Not told: n2 has no cuda-12.4.1, and the task there fails.
    let out = task_on_both(&u, nodes, &proj, &vars);
    let stdout = ran_on_n1_only(&out, &view);
    // In check --locked's words, with the node.
    assert!(
        stdout.contains("gpuenv: node n2 does not have the toolchains"),
        "{stdout}"
    );
    assert!(
        stdout.contains("cuda-12.4.1 is locked but not installed here"),
        "{stdout}"
    );
    assert!(!installed_on_n2.exists());

    // Told, but the project is a clone nobody trusted on n2: nothing is installed.
    let out = task_on_both(&u, nodes, &proj, &told);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(!stdout.contains("ran on n2"), "{stdout}");
    assert!(
        stdout.contains("gpuenv: cuda-12.4.1 is not installed on node n2; GPUENV_PROLOG_INSTALL=locked would install it"),
        "{stdout}"
    );
    assert!(stdout.contains("is not trusted"), "{stdout}");
    assert!(
        !installed_on_n2.exists(),
        "an untrusted lock installs nothing"
    );

    // Trusted on n2: its prolog installs what the lock names, from the cache n1 filled.
    on("n2", &proj, &["trust"]);
    let out = task_on_both(&u, nodes, &proj, &told);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for node in ["n1", "n2"] {
        assert!(
            stdout.contains(&format!("ran on {node} with {}", view.display())),
            "{stdout}"
        );
    }
    assert!(installed_on_n2.join("bin/nvcc").is_file());
    assert_eq!(
        server.hits(".tar.xz").len(),
        downloads,
        "n2 downloaded nothing: the archives came from the site cache"
    );
    on("n2", &proj, &["check", "--locked"]);
}

/// `sh -c <script>` as `account` through `srun` from `dir`, with only `vars` (no HOME, no
/// PATH unless given), as a job of that account.
fn srun_as(
    account: &Account,
    nodes: &Cluster,
    dir: &Path,
    vars: &[(&str, &Path)],
    srun_args: &[&str],
) -> Output {
    let mut cmd = account.command("/usr/bin/srun");
    cmd.env_clear()
        .env("SLURM_CONF", &nodes.conf)
        .env("LANG", "C.UTF-8")
        .current_dir(dir);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.args(["-Q"]).args(srun_args).output().unwrap()
}

#[test]
fn a_non_root_users_job_runs_on_both_nodes_with_the_task_prolog_also_without_path_or_home() {
    let Some(nodes) = slurm::cluster() else {
        return;
    };
    let u = User::new();
    let home = u.sb.path("alice");
    fs_err::create_dir_all(&home).unwrap();
    let Some(alice) = Account::at_home("sa", &home, "/bin/sh") else {
        return;
    };
    // The shared file system: others may enter the test's directory; the toolkit is root's.
    std::fs::set_permissions(
        u.sb.dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let root = u.sb.path("shared/cuda-12.4");
    cuda_runfile(&root, "12.4.131");
    alice.owns(&home);
    let proj = home.join("proj");
    fs_err::create_dir_all(&proj).unwrap();
    write(&proj.join("gpuenv.toml"), PIN_12_4);
    alice.owns(&proj);
    alice.owns(&proj.join("gpuenv.toml"));

    let bin_dir = gpuenv_bin().parent().unwrap().to_path_buf();
    let path = format!("{}:/usr/bin:/bin", bin_dir.display());
    let path = Path::new(&path);
    let out = alice
        .command(gpuenv_bin())
        .args(["link", "cuda-12.4", root.to_str().unwrap()])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", path)
        .current_dir(&proj)
        .output()
        .unwrap();
    succeeded(&out);

    // The account's job, with its environment: the prolog gives each task the toolchain.
    let view = home.join(".local/share/gpuenv/views/cuda-12.4");
    let out = srun_as(
        &alice,
        nodes,
        &proj,
        &[
            ("HOME", &home),
            ("PATH", path),
            ("GPUENV_TEST_BIN", &gpuenv_bin()),
        ],
        &[
            "-N2",
            "--ntasks-per-node=1",
            "-l",
            "sh",
            "-c",
            "echo \"ran on $SLURMD_NODENAME as $(id -un) with $CUDA_HOME\"",
        ],
    );
    let stdout = succeeded(&out);
    for node in ["n1", "n2"] {
        let want = format!("ran on {node} as {} with {}", alice.name, view.display());
        assert!(stdout.contains(&want), "no {want} in\n{stdout}");
    }

    // `--export=<list>` as `--export=NONE` passes no PATH and no HOME: the prolog finds the
    // account's home in the password database, and the task keeps the system directories.
    let out = srun_as(
        &alice,
        nodes,
        &proj,
        &[("GPUENV_TEST_BIN", &gpuenv_bin())],
        &[
            "--export=GPUENV_TEST_BIN",
            "-N2",
            "--ntasks-per-node=1",
            "-l",
            "hostname",
        ],
    );
    let stdout = succeeded(&out);
    assert_eq!(
        by_task(&out),
        [("0".into(), "n1".into()), ("1".into(), "n2".into())],
        "{stdout}"
    );
    let out = srun_as(
        &alice,
        nodes,
        &proj,
        &[("GPUENV_TEST_BIN", &gpuenv_bin())],
        &[
            "--export=GPUENV_TEST_BIN",
            "-w",
            "n2",
            "printenv",
            "PATH",
            "CUDA_HOME",
        ],
    );
    let stdout = succeeded(&out);
    assert_eq!(
        stdout,
        format!(
            "{}:/usr/local/bin:/usr/bin:/bin\n{}\n",
            view.join("bin").display(),
            view.display()
        )
    );
}

#[test]
fn an_account_whose_home_is_missing_on_the_nodes_gets_a_message_and_nothing_is_written() {
    let Some(nodes) = slurm::cluster() else {
        return;
    };
    let u = User::new();
    let missing = u.sb.path("no-such-home");
    let Some(bob) = Account::at_home("sb", &missing.join("bob"), "/bin/sh") else {
        return;
    };
    std::fs::set_permissions(
        u.sb.dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let proj = u.sb.path("bob-proj");
    fs_err::create_dir_all(&proj).unwrap();
    write(&proj.join("gpuenv.toml"), PIN_12_4);
    bob.owns(&proj);
    bob.owns(&proj.join("gpuenv.toml"));
    let vars = [("GPUENV_TEST_BIN", gpuenv_bin())];
    let vars: Vec<(&str, &Path)> = vars.iter().map(|(k, v)| (*k, v.as_path())).collect();

    // In a pinned project, the task is refused with what is wrong and what to do.
    let out = srun_as(
        &bob,
        nodes,
        &proj,
        &vars,
        &["--export=GPUENV_TEST_BIN", "-w", "n1", "hostname"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "gpuenv: the account's home {} (from the password database; HOME is unset) does not exist here",
            missing.join("bob").display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("gpuenv: set GPUENV_HOME to a directory that exists on every node"),
        "{stdout}"
    );
    assert!(!stdout.contains("n1\n"), "{stdout}");

    // Outside a project the prolog is none of its business: the task runs, with the
    // environment SLURM gives it (no PATH: SLURM 22.05 itself then finds no `hostname`).
    let out = srun_as(
        &bob,
        nodes,
        u.sb.dir.path(),
        &vars,
        &["--export=GPUENV_TEST_BIN", "-w", "n1", "/bin/hostname"],
    );
    assert_eq!(succeeded(&out), "n1\n");
    assert!(
        !missing.exists(),
        "nothing was written under the missing home"
    );
}

#[test]
fn srun_gpuenv_install_locked_repairs_the_node_the_task_prolog_refuses_and_doctor_names_it() {
    let Some(nodes) = slurm::cluster() else {
        return;
    };
    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    let u = User::new();
    // Each node keeps its toolchains on its own disk; the site's download cache is shared.
    let home = u.node_local(nodes).join("gpuenv");
    let cache = u.sb.path("site-cache");
    let proj = u.project("proj", PIN_12_4);
    let vars = [
        ("GPUENV_HOME", home.as_path()),
        ("GPUENV_CUDA_MIRROR", Path::new(&mirror)),
        ("GPUENV_DOWNLOAD_CACHE", cache.as_path()),
    ];
    // Every step below runs with the site's TaskProlog.
    let prolog = gpuenv_bin();
    let with_prolog = [&vars[..], &[("GPUENV_TEST_BIN", prolog.as_path())]].concat();
    let on = |node: &str, dir: &Path, args: &[&str]| {
        let mut cmd = u.client(nodes, "srun", dir);
        cmd.envs(with_prolog.iter().copied())
            .args(["-Q", "-w", node, "gpuenv"])
            .args(args);
        cmd.output().unwrap()
    };
    succeeded(&on("n1", u.sb.dir.path(), NVIDIA_12_4_1_MINIMAL));
    succeeded(&on("n1", &proj, &["lock"]));
    let installed_on_n2 = u.on_node(nodes, "n2").join("gpuenv/toolchains/cuda-12.4.1");

    // The doctor's own step runs on n2 under the prolog, and names the node and the
    // difference, not a riddle about gpuenv's path.
    let out = u
        .client(nodes, "salloc", &proj)
        .envs(with_prolog.iter().copied())
        .args(["-Q", "-N2", "gpuenv", "doctor", "--all-nodes"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(!text.contains("nodes reported"), "{text}");
    assert!(text.contains("differs: lock\n"), "{text}");
    assert!(text.contains("matches gpuenv.lock  on n1"), "{text}");
    let n2 = text
        .lines()
        .find(|l| {
            l.ends_with("  on n2") && l.contains("cuda-12.4.1 is locked but not installed here")
        })
        .unwrap_or_else(|| panic!("n2's lock difference is not named in\n{text}"));
    assert!(n2.trim_start().starts_with("differs: "), "{n2}");

    // Tasks on n2 are refused...
    let out = task_on_both(&u, nodes, &proj, &vars);
    let view = home.join("views/cuda-12.4.1");
    ran_on_n1_only(&out, &view);

    // ...but the fix the refusal names, docs/clusters.md's `srun -w n2 gpuenv install
    // --locked` then `srun … gpuenv check --locked`, copied from the document, runs there.
    let block = doc_block_after("With the TaskProlog in place, from the project:");
    assert!(
        block.contains("srun -w n2 gpuenv install --locked"),
        "{block}"
    );
    let mut bash = u.client(nodes, "bash", &proj);
    let out = bash
        .envs(with_prolog.iter().copied())
        .args(["-euc", &block])
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(
        stdout.contains("the step runs gpuenv itself, so the TaskProlog lets it run"),
        "{stdout}"
    );
    assert!(installed_on_n2.join("bin/nvcc").is_file());
    let out = task_on_both(&u, nodes, &proj, &vars);
    let stdout = succeeded(&out);
    for node in ["n1", "n2"] {
        assert!(
            stdout.contains(&format!("ran on {node} with {}", view.display())),
            "{stdout}"
        );
    }
}

/// The first `sh` block of docs/clusters.md after the line that contains `marker`.
fn doc_block_after(marker: &str) -> String {
    let doc =
        fs_err::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/clusters.md")).unwrap();
    let at = doc
        .find(marker)
        .unwrap_or_else(|| panic!("docs/clusters.md has no {marker:?}"));
    let rest = &doc[at..];
    let start = rest.find("```sh\n").expect("a sh block after it") + "```sh\n".len();
    rest[start..start + rest[start..].find("```").expect("a closed block")].to_string()
}

#[test]
fn the_clusters_doc_task_prolog_block_copy_pasted_gives_every_task_its_toolchain() {
    let Some(nodes) = slurm::cluster() else {
        return;
    };
    let u = User::new();
    let root = u.sb.path("shared/cuda-12.4");
    cuda_runfile(&root, "12.4.131");
    u.sb.ok(&["link", "cuda-12.4", root.to_str().unwrap()]);
    let proj = u.project("proj", PIN_12_4);

    // The admin's block, as written, with the site's paths moved into the test's directory:
    // /etc/slurm, /usr/local/bin/gpuenv (the binary under test) and `scontrol reconfigure`
    // (the test cluster is shared by the other tests; the prolog is passed per job below).
    let block = doc_block_after("**2. A TaskProlog on every node,**");
    let etc = u.sb.path("etc/slurm");
    fs_err::create_dir_all(&etc).unwrap();
    write(&etc.join("slurm.conf"), "ClusterName=site\n");
    let script = block
        .replace("/etc/slurm/", &format!("{}/", etc.display()))
        .replace("/usr/local/bin/gpuenv", gpuenv_bin().to_str().unwrap());
    let admin = format!(
        "scontrol() {{ echo \"scontrol $*\" >>{0}/scontrol.log; }}\n{script}{script}",
        etc.display()
    );
    let out = Command::new("bash")
        .args(["-euc", &admin])
        .output()
        .unwrap();
    succeeded(&out);
    assert_eq!(
        fs_err::read_to_string(etc.join("slurm.conf")).unwrap(),
        format!(
            "ClusterName=site\nTaskProlog={}/gpuenv-prolog\n",
            etc.display()
        ),
        "one TaskProlog line, also when the block runs twice"
    );
    assert_eq!(
        fs_err::read_to_string(etc.join("scontrol.log")).unwrap(),
        "scontrol reconfigure\nscontrol reconfigure\n"
    );

    // That prolog, run by slurmd before each task on both nodes.
    let prolog = etc.join("gpuenv-prolog");
    let out = task_on_both(&u, nodes, &proj, &[("GPUENV_TEST_BIN", &prolog)]);
    let stdout = succeeded(&out);
    let view = u.sb.gpuenv_home().join("views/cuda-12.4");
    for node in ["n1", "n2"] {
        assert!(
            stdout.contains(&format!("ran on {node} with {}", view.display())),
            "{stdout}"
        );
    }
}

/// The admin's TaskProlog block of docs/clusters.md on a site whose slurm.conf already names
/// a TaskProlog of its own: slurm.conf is left as it was, and the block says so (SLURM runs
/// one TaskProlog; the doc says how to call gpuenv's from the site's).
#[test]
fn the_clusters_doc_task_prolog_block_leaves_a_sites_own_task_prolog_and_says_so() {
    let sb = Sandbox::new();
    let etc = sb.path("etc/slurm");
    fs_err::create_dir_all(&etc).unwrap();
    let conf = "ClusterName=site\nTaskProlog=/etc/slurm/site-prolog\n";
    write(&etc.join("slurm.conf"), conf);
    let script = doc_block_after("**2. A TaskProlog on every node,**")
        .replace("/etc/slurm/", &format!("{}/", etc.display()))
        .replace("/usr/local/bin/gpuenv", gpuenv_bin().to_str().unwrap());
    let out = Command::new("bash")
        .args(["-euc", &format!("scontrol() {{ :; }}\n{script}")])
        .output()
        .unwrap();
    succeeded(&out);
    assert_eq!(
        fs_err::read_to_string(etc.join("slurm.conf")).unwrap(),
        conf
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("slurm.conf already names a TaskProlog: call")
            && said.contains("gpuenv-prolog from it"),
        "{said}"
    );
    let chain = doc_block_after("SLURM runs one TaskProlog.");
    assert!(
        chain.contains("/etc/slurm/gpuenv-prolog || exit $?"),
        "{chain}"
    );
}
