//! A real two-node SLURM on one machine (Debian's slurmctld and two `slurmd -N`, one munged)
//! on 127.0.0.1, ports 6917 (slurmctld), 6918 and 6919 (nodes `n1`, `n2`): apart from the
//! one-node cluster of common/slurm.rs. Started by the first test that needs it and shared by
//! every test after, in this run and the next; `.ci/cluster stop` stops it by PID.
//!
//! Each node's slurmd runs in its own UTS and mount namespaces (`unshare --uts --mount`): its
//! hostname is its node name, and [`Nodes::LOCAL`] (`<dir>/node`) is a bind mount of
//! `<dir>/nodes/<name>`, so the same path holds different files on each node, as a node's
//! local disk does. Everything else (`/tmp`, the test's HOME) is shared, as a cluster's
//! shared file system is. The TaskProlog runs `$GPUENV_TEST_BIN env --shell slurm` when a
//! job passes that variable.
#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fs_err as fs;

use crate::common::slurm::{
    chmod, client, daemons_alive, real_uid, run_ok, start_munge, stop_daemons, wait_idle,
    wait_ports_free, write_task_prolog,
};

pub const NODES: [(&str, u16); 2] = [("n1", 6918), ("n2", 6919)];
const CTLD_PORT: u16 = 6917;
const TOOLS: [&str; 6] = [
    "/usr/sbin/slurmctld",
    "/usr/sbin/slurmd",
    "/usr/sbin/munged",
    "/usr/sbin/mungekey",
    "/usr/bin/srun",
    "/usr/bin/unshare",
];

pub struct Nodes {
    pub dir: PathBuf,
    pub conf: PathBuf,
    /// How long bringing the cluster up took (zero when it was already up).
    pub started_in: Duration,
}

/// The shared cluster, or `None` (a SKIPPED note; a panic under CI=true) without SLURM.
pub fn nodes() -> Option<&'static Nodes> {
    static NODES_UP: OnceLock<Option<Nodes>> = OnceLock::new();
    NODES_UP
        .get_or_init(|| {
            if let Some(missing) = TOOLS.iter().find(|t| !Path::new(t).is_file()) {
                crate::common::cannot_run(format!(
                    "{missing} is not installed (.ci/run installs slurmctld slurmd slurm-client munge)"
                ));
                return None;
            }
            Some(Nodes::up())
        })
        .as_ref()
}

impl Nodes {
    /// The path whose contents differ per node (a bind mount of [`Nodes::node_dir`]).
    pub const LOCAL: &'static str = "node";

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

    fn up() -> Nodes {
        let dir = std::env::temp_dir().join(format!("gpuenv-test-slurm-nodes-{}", real_uid()));
        fs::create_dir_all(&dir).unwrap();
        let mut nodes = Nodes {
            conf: dir.join("slurm.conf"),
            dir,
            started_in: Duration::ZERO,
        };
        let lock = File::create(nodes.dir.join("lock")).unwrap();
        lock.lock().unwrap();
        if nodes.conf.is_file()
            && daemons_alive(&nodes.daemons())
            && nodes.wait_idle(Duration::from_secs(5))
        {
            return nodes;
        }
        let started = Instant::now();
        nodes.stop();
        let ports: Vec<u16> = std::iter::once(CTLD_PORT)
            .chain(NODES.iter().map(|(_, p)| *p))
            .collect();
        wait_ports_free(&ports, &nodes.dir);
        nodes.start();
        assert!(
            nodes.wait_idle(Duration::from_secs(30)),
            "the two-node test cluster did not become idle; see {}",
            nodes.dir.join("slurmctld.log").display()
        );
        nodes.started_in = started.elapsed();
        eprintln!(
            "two-node SLURM up in {:.2}s",
            nodes.started_in.as_secs_f64()
        );
        nodes
    }

    /// Stops the daemons this harness started (by their pid files), and only those.
    pub fn stop(&self) {
        stop_daemons(&self.daemons());
    }

    /// The host's path of a node's own files, seen on that node (only) at [`Nodes::local`].
    pub fn node_dir(&self, node: &str) -> PathBuf {
        self.dir.join("nodes").join(node)
    }

    /// The path that holds each node's own files (empty outside the nodes).
    pub fn local(&self) -> PathBuf {
        self.dir.join(Self::LOCAL)
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
        let socket = munge.join("munge.socket.2");
        let prolog = write_task_prolog(d);
        let p = |f: &str| d.join(f).display().to_string();
        let mut conf = format!(
            "ClusterName=gpuenvnodes\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={CTLD_PORT}\n\
             AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
             SlurmdParameters=config_overrides\nSchedulerParameters=batch_sched_delay=0,sched_min_interval=0\n\
             ReturnToService=2\nMailProg=/bin/true\nSlurmUser=root\nSlurmdUser=root\n\
             StateSaveLocation={}\nSlurmdSpoolDir={}\nSlurmctldPidFile={}\nSlurmdPidFile={}\nSlurmctldLogFile={}\nSlurmdLogFile={}\n\
             TaskProlog={}\n",
            socket.display(),
            p("state"),
            p("spool/%n"),
            p("slurmctld.pid"),
            p("slurmd-%n.pid"),
            p("slurmctld.log"),
            p("slurmd-%n.log"),
            prolog.display(),
        );
        for (name, port) in NODES {
            conf.push_str(&format!(
                "NodeName={name} NodeHostname={name} NodeAddr=127.0.0.1 Port={port} CPUs=1 RealMemory=1024 State=UNKNOWN\n"
            ));
        }
        conf.push_str("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n");
        fs::write(&self.conf, conf).unwrap();
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

    /// A SLURM client command (`srun`, `salloc`) with this cluster's config and a time limit.
    pub fn client(&self, program: &str) -> Command {
        client(&self.conf, program)
    }
}

/// A real second account for a test (`useradd -M`: its home is the directory given, which
/// the account may or may not have), named `gpuenv28b<pid>x<n>`; removed (`userdel`) when
/// dropped, also when the test fails. `None` (skipped; a panic under CI=true) when the tests
/// do not run as root or `useradd`/`setpriv` are missing.
pub struct Account {
    pub name: String,
}

impl Account {
    pub fn new(home: &Path) -> Option<Account> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let missing = ["/usr/sbin/useradd", "/usr/sbin/userdel", "/usr/bin/setpriv"]
            .into_iter()
            .find(|t| !Path::new(t).is_file());
        if real_uid() != 0 || missing.is_some() {
            let why = format!(
                "a second account needs root and useradd/userdel/setpriv ({})",
                missing.unwrap_or("not root")
            );
            if super::in_ci() {
                panic!("{why}; under CI this test must run");
            }
            eprintln!("SKIPPED: {why}");
            return None;
        }
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("gpuenv28b{}x{n}", std::process::id());
        run_ok(
            Command::new("/usr/sbin/useradd")
                .args(["-M", "-U", "-s", "/bin/sh", "-d"])
                .arg(home)
                .arg(&name),
        );
        Some(Account { name })
    }

    /// `program` run as this account (its own uid and group, no other groups).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("/usr/bin/setpriv");
        cmd.args([
            "--reuid",
            &self.name,
            "--regid",
            &self.name,
            "--clear-groups",
            "--",
        ])
        .arg(program);
        cmd
    }

    /// Gives `path` (not what is under it) to this account.
    pub fn owns(&self, path: &Path) {
        run_ok(
            Command::new("chown")
                .arg(format!("{0}:{0}", self.name))
                .arg(path),
        );
    }
}

impl Drop for Account {
    fn drop(&mut self) {
        let _ = Command::new("/usr/sbin/userdel").arg(&self.name).status();
    }
}
