//! The real SLURM every SLURM test runs its jobs on: Debian's slurmctld, two slurmd on one
//! machine (`slurmd -N n1`, `-N n2`; Debian's SLURM is built with multiple-slurmd support)
//! and one munged, on 127.0.0.1, ports 6917 (slurmctld), 6918 and 6919 (the nodes). Started
//! by the first test that needs it and shared by every test after, in this run and the next:
//! the daemons stay up (`.ci/cluster stop` stops them by PID; `.ci/run` does at its end).
//! No systemd, no cgroups.
//!
//! Each node's slurmd runs in its own UTS and mount namespaces (`unshare --uts --mount`): its
//! hostname is its node name, and [`Cluster::LOCAL`] (`<dir>/node`) is a bind mount of
//! `<dir>/nodes/<name>`, so the same path holds different files on each node, as a node's
//! local disk does. Everything else (`/tmp`, the test's HOME) is shared, as a cluster's
//! shared file system is.
//!
//! Everything lives in `$TMPDIR/gpuenv-test-slurm-nodes-<uid>/`: munge's key and socket, the
//! config, state, logs, pid files, and the TaskProlog, which runs `$GPUENV_TEST_BIN env
//! --shell slurm` when a job passes that variable (so any checkout's binary can be tested
//! against the same daemons).
#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fs_err as fs;

/// The nodes and their slurmd ports.
pub const NODES: [(&str, u16); 2] = [("n1", 6918), ("n2", 6919)];
const CTLD_PORT: u16 = 6917;
const TOOLS: [&str; 7] = [
    "/usr/sbin/slurmctld",
    "/usr/sbin/slurmd",
    "/usr/sbin/munged",
    "/usr/sbin/mungekey",
    "/usr/bin/srun",
    "/usr/bin/sinfo",
    "/usr/bin/unshare",
];

pub struct Cluster {
    pub dir: PathBuf,
    pub conf: PathBuf,
    /// How long bringing the cluster up took (zero when it was already up).
    pub started_in: Duration,
}

/// The shared cluster, or `None` (a SKIPPED note; a panic under CI=true) without SLURM.
pub fn cluster() -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Option<Cluster>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| {
            if let Some(missing) = TOOLS.iter().find(|t| !Path::new(t).is_file()) {
                super::cannot_run(format!(
                    "{missing} is not installed (.ci/run installs slurmctld slurmd slurm-client munge)"
                ));
                return None;
            }
            Some(Cluster::up())
        })
        .as_ref()
}

impl Cluster {
    /// The path whose contents differ per node (a bind mount of [`Cluster::node_dir`]).
    pub const LOCAL: &'static str = "node";

    fn up() -> Cluster {
        let dir = std::env::temp_dir().join(format!("gpuenv-test-slurm-nodes-{}", real_uid()));
        fs::create_dir_all(&dir).unwrap();
        let mut cluster = Cluster {
            conf: dir.join("slurm.conf"),
            dir,
            started_in: Duration::ZERO,
        };
        // One test process at a time starts or checks the daemons.
        let lock = File::create(cluster.dir.join("lock")).unwrap();
        lock.lock().unwrap();
        // Up, idle and started from this config (not an older harness's): reused.
        if fs::read_to_string(&cluster.conf).is_ok_and(|c| c == cluster.config())
            && daemons_alive(&cluster.daemons())
            && cluster.wait_idle(Duration::from_secs(5))
        {
            return cluster;
        }
        let started = Instant::now();
        cluster.stop();
        let ports: Vec<u16> = std::iter::once(CTLD_PORT)
            .chain(NODES.iter().map(|(_, p)| *p))
            .collect();
        wait_ports_free(&ports, &cluster.dir);
        cluster.start();
        assert!(
            cluster.wait_idle(Duration::from_secs(30)),
            "the test cluster did not become idle; see {}",
            cluster.dir.join("slurmctld.log").display()
        );
        cluster.started_in = started.elapsed();
        eprintln!("test SLURM up in {:.2}s", cluster.started_in.as_secs_f64());
        cluster
    }

    /// The daemons this harness starts, with their pid files.
    fn daemons(&self) -> Vec<(&'static str, PathBuf)> {
        let mut out = vec![
            ("munged", self.dir.join("munge/munged.pid")),
            ("slurmctld", self.dir.join("slurmctld.pid")),
        ];
        for (name, _) in NODES {
            out.push(("slurmd", self.dir.join(format!("slurmd-{name}.pid"))));
        }
        out
    }

    /// Stops the daemons this harness started (by their pid files), and only those.
    pub fn stop(&self) {
        stop_daemons(&self.daemons());
    }

    /// The host's path of a node's own files, seen on that node (only) at [`Cluster::local`].
    pub fn node_dir(&self, node: &str) -> PathBuf {
        self.dir.join("nodes").join(node)
    }

    /// The path that holds each node's own files (empty outside the nodes).
    pub fn local(&self) -> PathBuf {
        self.dir.join(Self::LOCAL)
    }

    /// slurm.conf. Each node has this machine's CPUs, so that jobs of tests running side by
    /// side (one holding a node with a sleeping job) do not wait for each other.
    fn config(&self) -> String {
        let d = &self.dir;
        let p = |f: &str| d.join(f).display().to_string();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut conf = format!(
            "ClusterName=gpuenvnodes\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={CTLD_PORT}\n\
             AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
             SlurmdParameters=config_overrides\nSchedulerParameters=batch_sched_delay=0,sched_min_interval=0\n\
             ReturnToService=2\nMailProg=/bin/true\nSlurmUser=root\nSlurmdUser=root\n\
             StateSaveLocation={}\nSlurmdSpoolDir={}\nSlurmctldPidFile={}\nSlurmdPidFile={}\nSlurmctldLogFile={}\nSlurmdLogFile={}\n\
             TaskProlog={}\n",
            p("munge/munge.socket.2"),
            p("state"),
            p("spool/%n"),
            p("slurmctld.pid"),
            p("slurmd-%n.pid"),
            p("slurmctld.log"),
            p("slurmd-%n.log"),
            p("taskprolog"),
        );
        for (name, port) in NODES {
            conf.push_str(&format!(
                "NodeName={name} NodeHostname={name} NodeAddr=127.0.0.1 Port={port} CPUs={cpus} RealMemory=1024 State=UNKNOWN\n"
            ));
        }
        conf.push_str("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n");
        conf
    }

    fn start(&self) {
        let d = &self.dir;
        let munge = d.join("munge");
        for sub in ["state", "spool"] {
            let _ = fs::remove_dir_all(d.join(sub));
            fs::create_dir_all(d.join(sub)).unwrap();
        }
        fs::create_dir_all(&munge).unwrap();
        fs::create_dir_all(self.local()).unwrap();
        for (name, _) in NODES {
            fs::create_dir_all(self.node_dir(name)).unwrap();
        }
        chmod(d, 0o755);
        chmod(&munge, 0o755);
        start_munge(&munge);
        write_task_prolog(d);
        fs::write(&self.conf, self.config()).unwrap();
        run_ok(
            Command::new("/usr/sbin/slurmctld")
                .arg("-f")
                .arg(&self.conf)
                .arg("-c"),
        );
        for (name, _) in NODES {
            // Its own hostname and its own `<dir>/node`, then slurmd (which daemonizes and
            // writes its pid file; the namespaces stay with it).
            run_ok(
                Command::new("/usr/bin/unshare")
                    .args(["--uts", "--mount", "--propagation", "private", "sh", "-ec"])
                    .arg("hostname \"$1\"; mount --bind \"$2\" \"$3\"; exec /usr/sbin/slurmd -f \"$4\" -N \"$1\"")
                    .arg("node")
                    .arg(name)
                    .arg(self.node_dir(name))
                    .arg(self.local())
                    .arg(&self.conf),
            );
        }
    }

    fn wait_idle(&self, limit: Duration) -> bool {
        wait_idle(&self.conf, NODES.len(), limit)
    }

    /// A SLURM client command (`srun`, `salloc`, `squeue`, …) with this cluster's config
    /// and a time limit.
    pub fn client(&self, program: &str) -> Command {
        let mut cmd = Command::new("timeout");
        cmd.args(["60", program]).env("SLURM_CONF", &self.conf);
        cmd
    }
}

/// Running, not a zombie, and still the program we started (pids get reused).
fn alive(pid: u32, name: &str) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let comm = stat.split(['(', ')']).nth(1).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|s| s.split_whitespace().next());
    comm == name && state != Some("Z")
}

/// Stops each daemon of `daemons` (name, pid file) that is still the program started,
/// last first, and waits until it is gone.
fn stop_daemons(daemons: &[(&str, PathBuf)]) {
    for (name, file) in daemons.iter().rev() {
        if let Some(pid) = pid_in(file).filter(|p| alive(*p, name)) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while alive(pid, name) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// The pid a daemon wrote to `file`.
fn pid_in(file: &Path) -> Option<u32> {
    fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// Whether every daemon of `daemons` (name, pid file) is running.
fn daemons_alive(daemons: &[(&str, PathBuf)]) -> bool {
    daemons
        .iter()
        .all(|(name, file)| pid_in(file).is_some_and(|p| alive(p, name)))
}

/// Waits until nothing listens on `ports`; a daemon this harness did not start (its pid
/// files are in `dir`) is a failure that says so.
fn wait_ports_free(ports: &[u16], dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let busy: Vec<u16> = ports
            .iter()
            .copied()
            .filter(|p| port_listening(*p))
            .collect();
        if busy.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "ports {busy:?} are held by a SLURM this harness did not start (its pid files are in {}); stop that daemon first",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts munged with its key, socket, pid, log and seed files in `munge`.
fn start_munge(munge: &Path) {
    let key = munge.join("munge.key");
    if !key.is_file() {
        run_ok(
            Command::new("/usr/sbin/mungekey")
                .arg("--create")
                .arg(format!("--keyfile={}", key.display())),
        );
    }
    chmod(&key, 0o400);
    let file = |name: &str| munge.join(name).display().to_string();
    run_ok(
        Command::new("/usr/sbin/munged")
            .arg("--force")
            .arg(format!("--socket={}", file("munge.socket.2")))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--pid-file={}", file("munged.pid")))
            .arg(format!("--log-file={}", file("munged.log")))
            .arg(format!("--seed-file={}", file("munged.seed"))),
    );
}

/// The TaskProlog a site runs, with the binary under test: `dir/taskprolog`.
fn write_task_prolog(dir: &Path) {
    let prolog = dir.join("taskprolog");
    fs::write(
        &prolog,
        "#!/bin/sh\n# What a site's TaskProlog runs, with the binary under test.\n[ -n \"$GPUENV_TEST_BIN\" ] || exit 0\nexec \"$GPUENV_TEST_BIN\" env --shell slurm\n",
    )
    .unwrap();
    chmod(&prolog, 0o755);
}

/// Whether all `nodes` of the cluster at `conf` are up (idle, mixed or allocated) within
/// `limit`.
fn wait_idle(conf: &Path, nodes: usize, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let out = Command::new("timeout")
            .args(["3", "/usr/bin/sinfo", "-h", "-N", "-o", "%T"])
            .env("SLURM_CONF", conf)
            .output();
        if let Ok(o) = out {
            let states = String::from_utf8_lossy(&o.stdout);
            let ready = states
                .lines()
                .filter(|s| ["idle", "mixed", "allocated"].contains(&s.trim()))
                .count();
            if ready == nodes {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// The real uid, from /proc (no libc call needed in tests).
fn real_uid() -> u32 {
    fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A TCP port in LISTEN state on any address (from /proc/net/tcp and tcp6).
fn port_listening(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        fs::read_to_string(f).is_ok_and(|text| {
            text.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3
                    && cols[3] == "0A"
                    && cols[1].rsplit(':').next() == Some(&format!("{port:04X}"))
            })
        })
    })
}
