//! A real one-node SLURM (Debian's slurmctld, slurmd, munge) on 127.0.0.1, started by the
//! first test that needs it and shared by every test after, in this run and the next: the
//! daemons stay up (`.ci/run` stops them by PID at the end). No systemd, no cgroups.
//!
//! Everything lives in `$TMPDIR/gpuenv-test-slurm-<uid>/`: munge's key and socket, the
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

pub struct Cluster {
    pub dir: PathBuf,
    pub conf: PathBuf,
}

const DAEMONS: [(&str, &str); 3] = [
    ("munged", "munge/munged.pid"),
    ("slurmctld", "slurmctld.pid"),
    ("slurmd", "slurmd.pid"),
];
const PORTS: [u16; 2] = [6817, 6818];
const TOOLS: [&str; 7] = [
    "/usr/sbin/slurmctld",
    "/usr/sbin/slurmd",
    "/usr/sbin/munged",
    "/usr/sbin/mungekey",
    "/usr/bin/srun",
    "/usr/bin/salloc",
    "/usr/bin/sinfo",
];

/// The shared cluster, or `None` (a SKIPPED note; a panic under CI) without SLURM.
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
    fn up() -> Cluster {
        let uid = real_uid();
        let dir = std::env::temp_dir().join(format!("gpuenv-test-slurm-{uid}"));
        fs::create_dir_all(&dir).unwrap();
        let cluster = Cluster {
            conf: dir.join("slurm.conf"),
            dir,
        };
        // One test binary at a time starts or checks the daemons.
        let lock = File::create(cluster.dir.join("lock")).unwrap();
        lock.lock().unwrap();
        if cluster.conf.is_file()
            && daemons_alive(&cluster.daemons())
            && cluster.wait_idle(Duration::from_secs(5))
        {
            return cluster;
        }
        cluster.stop();
        wait_ports_free(&PORTS, &cluster.dir);
        cluster.start();
        assert!(
            cluster.wait_idle(Duration::from_secs(30)),
            "the test cluster did not become idle; see {}",
            cluster.dir.join("slurmctld.log").display()
        );
        cluster
    }

    /// Running, not a zombie, and still the program we started (pids get reused).
    pub fn alive(pid: u32, name: &str) -> bool {
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

    /// The daemons this harness starts, with their pid files.
    fn daemons(&self) -> Vec<(&'static str, PathBuf)> {
        DAEMONS
            .iter()
            .map(|(name, file)| (*name, self.dir.join(file)))
            .collect()
    }

    /// Stops the daemons this harness started (by their pid files), and only those.
    pub fn stop(&self) {
        stop_daemons(&self.daemons());
    }

    fn start(&self) {
        let d = &self.dir;
        let munge = d.join("munge");
        for sub in ["state", "spool"] {
            let _ = fs::remove_dir_all(d.join(sub));
            fs::create_dir_all(d.join(sub)).unwrap();
        }
        fs::create_dir_all(&munge).unwrap();
        chmod(d, 0o755);
        chmod(&munge, 0o755);
        start_munge(&munge);
        let prolog = write_task_prolog(d);
        let mem_mb = fs::read_to_string("/proc/meminfo")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(2 * 1024 * 1024)
            / 1024
            / 2;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let p = |f: &str| d.join(f).display().to_string();
        let conf = format!(
            "ClusterName=gpuenvtest\nSlurmctldHost=localhost(127.0.0.1)\nAuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
             SlurmdParameters=config_overrides\nSchedulerParameters=batch_sched_delay=0,sched_min_interval=0\n\
             ReturnToService=2\nMailProg=/bin/true\nSlurmUser=root\nSlurmdUser=root\n\
             StateSaveLocation={}\nSlurmdSpoolDir={}\nSlurmctldPidFile={}\nSlurmdPidFile={}\nSlurmctldLogFile={}\nSlurmdLogFile={}\n\
             TaskProlog={}\n\
             NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mb} State=UNKNOWN\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            munge.join("munge.socket.2").display(),
            p("state"),
            p("spool"),
            p("slurmctld.pid"),
            p("slurmd.pid"),
            p("slurmctld.log"),
            p("slurmd.log"),
            prolog.display(),
        );
        fs::write(&self.conf, conf).unwrap();
        run_ok(
            Command::new("/usr/sbin/slurmctld")
                .arg("-f")
                .arg(&self.conf)
                .arg("-c"),
        );
        run_ok(
            Command::new("/usr/sbin/slurmd")
                .arg("-f")
                .arg(&self.conf)
                .args(["-N", "localhost"]),
        );
    }

    fn wait_idle(&self, limit: Duration) -> bool {
        wait_idle(&self.conf, 1, limit)
    }

    /// A SLURM client command (`srun`, `salloc`) with this cluster's config and a time limit.
    pub fn client(&self, program: &str) -> Command {
        client(&self.conf, program)
    }
}

// What both harnesses (this one and `slurm_nodes`) do the same way.

/// Stops each daemon of `daemons` (name, pid file) that is still the program started,
/// last first, and waits until it is gone.
pub fn stop_daemons(daemons: &[(&str, PathBuf)]) {
    for (name, file) in daemons.iter().rev() {
        if let Some(pid) = pid_in(file).filter(|p| Cluster::alive(*p, name)) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Cluster::alive(pid, name) && Instant::now() < deadline {
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
pub fn daemons_alive(daemons: &[(&str, PathBuf)]) -> bool {
    daemons
        .iter()
        .all(|(name, file)| pid_in(file).is_some_and(|p| Cluster::alive(p, name)))
}

/// Waits until nothing listens on `ports`; a daemon this harness did not start (its pid
/// files are in `dir`) is a failure that says so.
pub fn wait_ports_free(ports: &[u16], dir: &Path) {
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
pub fn start_munge(munge: &Path) {
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
pub fn write_task_prolog(dir: &Path) -> PathBuf {
    let prolog = dir.join("taskprolog");
    fs::write(
        &prolog,
        "#!/bin/sh\n# What a site's TaskProlog runs, with the binary under test.\n[ -n \"$GPUENV_TEST_BIN\" ] || exit 0\nexec \"$GPUENV_TEST_BIN\" env --shell slurm\n",
    )
    .unwrap();
    chmod(&prolog, 0o755);
    prolog
}

/// Whether all `nodes` of the cluster at `conf` are up (idle, mixed or allocated) within
/// `limit`.
pub fn wait_idle(conf: &Path, nodes: usize, limit: Duration) -> bool {
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

/// A SLURM client command (`srun`, `salloc`) with the config `conf` and a time limit.
pub fn client(conf: &Path, program: &str) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.args(["60", program]).env("SLURM_CONF", conf);
    cmd
}

/// The real uid, from /proc (no libc call needed in tests).
pub fn real_uid() -> u32 {
    fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

pub fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A TCP port in LISTEN state on any address (from /proc/net/tcp and tcp6).
pub fn port_listening(port: u16) -> bool {
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
