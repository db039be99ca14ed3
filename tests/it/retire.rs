//! Retiring a toolchain while something uses it: `gpuenv uninstall` forgets it at once, but a
//! running process keeps its tree and view at the same paths (the real CUDA 13 from the
//! test cache's downloads, offline), its view's nvcc still compiles, no resolution picks
//! it, a new install of it is refused, and once the process ends the next command that
//! writes the home deletes it; `--now` deletes at once, `--reap` on request. On the real
//! two-node SLURM (common/slurm.rs), a second account's job that started before root
//! retired a site store's toolkit keeps it through `squeue` alone (its process names nothing
//! of the tree), a job that started later does not, and the reap after the first ends
//! deletes it.

use crate::common::accounts;
use crate::common::install_fixtures as fixtures;
use crate::common::slurm;

use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use crate::common::real::real_gpuenv;
use crate::common::*;
use accounts::{Account, Site};
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

/// The release the offline install took (the newest 13.0.x the test cache holds), from
/// what it said: `installed cuda-13.0.3 …`.
fn installed_name(said: &str) -> String {
    said.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .find(|w| w.starts_with("cuda-13.0."))
        .unwrap_or_else(|| panic!("no cuda-13.0.x in: {said}"))
        .to_string()
}

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
    let name = &installed_name(&text(&out));
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

/// A batch job of the two-node test cluster, cancelled when dropped (also when the test
/// fails), so that it never holds a node for the tests after.
struct Job<'a> {
    nodes: &'a slurm::Cluster,
    id: String,
}

impl<'a> Job<'a> {
    /// `sbatch --wrap script` as `who` from `dir` with `vars`; the job once `script` has
    /// written its shell's pid to `<dir>/<tag>.pid` and exec'd `sleep` (its output is in
    /// `<dir>/<tag>.out`).
    fn sleeping(
        nodes: &'a slurm::Cluster,
        who: &Account,
        dir: &Path,
        tag: &str,
        vars: &[(&str, &Path)],
        script: &str,
    ) -> Job<'a> {
        let out = Command::new("timeout")
            .args(["60", "setpriv", "--reuid", &who.name, "--regid", &who.name])
            .args([
                "--init-groups",
                "--",
                "/usr/bin/sbatch",
                "--parsable",
                "-t",
                "5",
            ])
            .arg(format!("--output={tag}.out"))
            .arg("--wrap")
            .arg(format!(
                "{script}\necho $$ >{tag}.pid; cd /; exec env -i /bin/sleep 600"
            ))
            .env_clear()
            .env("SLURM_CONF", &nodes.conf)
            .env("HOME", &who.home)
            .env("USER", &who.name)
            .env("PATH", "/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .envs(vars.iter().copied())
            .current_dir(dir)
            .output()
            .unwrap();
        // `--parsable`: "<id>" or "<id>;<cluster>".
        let id = succeeded(&out);
        let id = id.trim().split(';').next().unwrap_or_default().to_string();
        assert!(!id.is_empty(), "sbatch said no job id: {}", text(&out));
        let job = Job { nodes, id };
        let said = || fs_err::read_to_string(dir.join(format!("{tag}.out"))).unwrap_or_default();
        wait_for(
            || format!("job {} never slept; it said:\n{}", job.id, said()),
            || {
                let pid =
                    fs_err::read_to_string(dir.join(format!("{tag}.pid"))).unwrap_or_default();
                fs_err::read_link(format!("/proc/{}/exe", pid.trim()))
                    .is_ok_and(|e| e.ends_with("sleep"))
            },
        );
        job
    }

    /// `squeue` of the states gpuenv asks about: whether this job is still among them.
    fn listed(&self) -> bool {
        self.in_squeue().expect("squeue answers")
    }

    /// [`Job::listed`], `None` when `squeue` fails.
    fn in_squeue(&self) -> Option<bool> {
        let out = self
            .nodes
            .client("squeue")
            .args(["-h", "-t", "R,S,CG", "-o", "%i"])
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        Some(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == self.id),
        )
    }

    /// Cancels it and waits until it has left `squeue` (a completing job still counts).
    fn end(&self) {
        let _ = self.nodes.client("scancel").arg(&self.id).status();
        wait_for(
            || format!("job {} never left squeue", self.id),
            || !self.listed(),
        );
    }
}

impl Drop for Job<'_> {
    /// Also after a failed assertion: cancelled and gone before its account is removed
    /// (`userdel` refuses an account whose processes run), never a second panic.
    fn drop(&mut self) {
        let _ = self.nodes.client("scancel").arg(&self.id).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && self.in_squeue() == Some(true) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Waits up to 30 s for `done`; `what` says what did not happen.
#[track_caller]
fn wait_for(what: impl Fn() -> String, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{}", what());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_users_slurm_job_that_started_before_keeps_the_retired_site_toolkit_until_it_ends() {
    let Some(nodes) = slurm::cluster() else {
        return;
    };
    if !accounts::can_make_accounts() {
        return;
    }
    // The site as docs/clusters.md sets it up, on the file system both nodes share: both
    // binaries system-wide, root's store (the real CUDA 13, offline), the site config
    // naming it as the users' upstream.
    let site = Site::new();
    let bin = site.install_binaries();
    let store = site.path("shared/gpuenv");
    let config = site.dir("etc/gpuenv").join("config.toml");
    write(&config, &format!("upstreams = [\"{}\"]\n", store.display()));
    let admin = Sandbox::new();
    let gpuenv = |args: &[&str]| {
        let out = real_gpuenv(&admin)
            .env("GPUENV_HOME", &store)
            .env("SLURM_CONF", &nodes.conf)
            .args(args)
            .output()
            .unwrap();
        (out.status.success(), text(&out))
    };
    let (installed, t) = gpuenv(INSTALL);
    if !installed {
        return cannot_run(format!(
            "CUDA 13.0 is not in the test cache's downloads (the install_real tests put it there): {t}"
        ));
    }
    let name = &installed_name(&t);
    let tree = store.join("toolchains").join(name);
    let view = store.join("views").join(name);

    // A user's job in a project of theirs: the site's TaskProlog gives it the toolkit's
    // environment and it runs the toolkit's nvcc; then it sleeps with nothing of the
    // toolkit (cwd `/`, an empty environment, no file of the tree open), as a job on
    // another node does whose processes this node's /proc cannot see: only `squeue` can
    // tell that it may use the tree.
    let alice = Account::create(&site, "rt");
    let proj = alice.home.join("proj");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"13.0\"\n");
    for p in [&proj, &proj.join("gpuenv.toml")] {
        std::os::unix::fs::chown(p, Some(alice.uid), Some(alice.gid)).unwrap();
    }
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let gpuenv_bin = bin.join("gpuenv");
    let before = Job::sleeping(
        nodes,
        &alice,
        &proj,
        "before",
        &[
            ("PATH", Path::new(&path)),
            ("GPUENV_SYSTEM_CONFIG", &config),
            ("GPUENV_TEST_BIN", &gpuenv_bin),
        ],
        "echo \"CUDA_HOME=$CUDA_HOME\"; nvcc --version",
    );
    let job_out = fs_err::read_to_string(proj.join("before.out")).unwrap();
    assert!(
        job_out.contains(&format!("CUDA_HOME={}\n", view.display()))
            && job_out.contains("Cuda compilation tools, release 13.0"),
        "the job had the store's toolkit:\n{job_out}"
    );

    // The admin retires it while the job runs, as the doc says: kept, for that job and
    // nothing else.
    let uninstall = |args: &[&str]| {
        let (ok, t) = gpuenv(&[&["uninstall"], args].concat());
        assert!(ok, "gpuenv uninstall {args:?}:\n{t}");
        t
    };
    let t = uninstall(&[name]);
    // The retirement's time is before this.
    let retired = Instant::now();
    assert!(
        t.contains(&format!("{name} is retired"))
            && t.contains(&format!("(now 1 SLURM job ({}))", before.id)),
        "kept for the job alone, found through squeue:\n{t}"
    );
    assert!(tree.join("bin/nvcc").is_file() && view.join("bin/nvcc").exists());

    // A job that starts later (past the allowance for the controller's clock) resolves
    // without it and does not count: squeue's start times are read as this SLURM prints
    // them (an unreadable one would count). Rather than wait out the allowance, the record
    // is dated back by it: a job that started up to the retirement still counts, and one
    // that starts two seconds after it is past the allowance.
    let record = store.join(format!("toolchains/.{name}.retired.toml"));
    let text = fs_err::read_to_string(&record).unwrap();
    let since: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("since = "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `since` in the record:\n{text}"));
    let back = since - gpuenv_install::retire::CLOCK_SLACK;
    let dated_back = text.replace(&format!("since = {since}\n"), &format!("since = {back}\n"));
    assert_ne!(
        dated_back, text,
        "the record's `since` line was not replaced"
    );
    write(&record, &dated_back);
    std::thread::sleep(Duration::from_secs(2).saturating_sub(retired.elapsed()));
    let later = Job::sleeping(nodes, &alice, &alice.home, "later", &[], "true");
    let t = uninstall(&["--reap"]);
    assert!(
        t.contains(&format!(
            "kept the retired {name} for 1 SLURM job ({})",
            before.id
        )),
        "kept for the job that started before, not job {}:\n{t}",
        later.id
    );
    assert!(tree.join("bin/nvcc").is_file());

    // Once that job has ended, the next reap deletes it, while the later job runs on.
    before.end();
    let t = uninstall(&["--reap"]);
    assert!(t.contains(&format!("deleted the retired {name}")), "{t}");
    assert!(!tree.exists() && !view.exists(), "{t}");
    assert!(!store
        .join(format!("toolchains/.{name}.retired.toml"))
        .exists());
    assert!(later.listed());
}

/// `uninstall --reap` of a retired release leaves nothing of it: its tree, view, kept record
/// (`.NAME.uninstalled.toml`) and lock file (`.NAME.lock`) go, and so do its archives in the
/// download cache (kept archives, unpacked trees and their objects); another installed
/// release keeps all of its own.
#[test]
fn reap_removes_the_retired_releases_archives_lock_and_kept_record_and_nothing_else() {
    let sb = Sandbox::new();
    let dir = sb.path("mirror");
    write_tree(&dir, &redist_tree(&["12.4.1", "12.6.3"]));
    let install = |name: &str| {
        succeeded(
            &sb.gpuenv()
                .env("GPUENV_CUDA_MIRROR", dir.display().to_string())
                .env("GPUENV_KEEP_ARCHIVES", "1")
                .args(["install", name, "--profile", "minimal"])
                .output()
                .unwrap(),
        );
        let record =
            fs_err::read_to_string(sb.toolchain(name).join(".gpuenv-install.toml")).unwrap();
        let record: toml::Value = toml::from_str(&record).unwrap();
        record["archive"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["sha256"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let old = install("cuda-12.4.1");
    let kept = install("cuda-12.6.3");
    assert!(!old.is_empty() && old.iter().all(|a| !kept.contains(a)));
    let downloads = sb.gpuenv_home().join("downloads");
    let toolchains = sb.gpuenv_home().join("toolchains");
    let has = |part: &str, sha: &str| downloads.join(part).join(sha).exists();
    for sha in old.iter().chain(&kept) {
        assert!(has("unpacked", sha) && has("archives", sha), "{sha}");
    }

    let tree = sb.toolchain("cuda-12.4.1");
    let job = sleeper(&tree.join("bin"));
    sb.ok(&["uninstall", "cuda-12.4.1"]);
    assert!(tree.is_dir(), "retired, kept for the running process");
    assert!(toolchains.join(".cuda-12.4.1.uninstalled.toml").is_file());
    end(job);
    let out = sb.gpuenv().args(["uninstall", "--reap"]).output().unwrap();
    let said = succeeded(&out) + &text(&out);
    assert!(said.contains("deleted the retired cuda-12.4.1"), "{said}");
    assert!(
        said.contains("removed their archives from the download cache"),
        "{said}"
    );
    assert!(!tree.exists());
    for leftover in [".cuda-12.4.1.uninstalled.toml", ".cuda-12.4.1.lock"] {
        assert!(!toolchains.join(leftover).exists(), "{leftover} is left");
    }
    for sha in &old {
        for part in ["unpacked", "archives", "partial"] {
            assert!(
                !has(part, sha),
                "{part}/{sha} of the reaped release is left"
            );
        }
        assert!(!downloads.join(format!("unpacked/{sha}.seal")).exists());
    }
    for sha in &kept {
        assert!(has("unpacked", sha) && has("archives", sha), "{sha}");
    }
    // The installed release still works: its files were never the reaped one's.
    let nvcc = sb.toolchain("cuda-12.6.3").join("bin/nvcc");
    assert!(nvcc.is_file());
    assert!(toolchains.join(".cuda-12.6.3.lock").exists());
}

/// A user whose project pins a toolkit the site's store retired is told so, and which
/// release the store has instead with the pin that uses it: not "not installed, `gpuenv
/// install`" (a whole toolkit into their own home). After the reap, when no record is left,
/// the store's release of the same major.minor is still named.
#[test]
fn a_pin_of_a_toolkit_the_site_retired_names_the_retirement_and_the_stores_release() {
    let sb = Sandbox::new();
    let dir = sb.path("mirror");
    write_tree(&dir, &redist_tree(&["12.4.1", "12.4.2"]));
    let store = sb.path("site/gpuenv");
    let as_site = |args: &[&str]| {
        let out = sb
            .gpuenv()
            .env("GPUENV_HOME", &store)
            .env("GPUENV_CUDA_MIRROR", dir.display().to_string())
            .args(args)
            .output()
            .unwrap();
        succeeded(&out) + &text(&out)
    };
    as_site(&["install", "cuda-12.4.1", "--profile", "minimal"]);
    as_site(&["install", "cuda-12.4.2", "--profile", "minimal"]);
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"cuda-12.4.1\"\n",
    );
    let user = || {
        sb.gpuenv()
            .env("GPUENV_UPSTREAMS", &store)
            .current_dir(&proj)
            .args(["show"])
            .output()
            .unwrap()
    };
    assert!(user().status.success(), "{}", text(&user()));

    // Retired under a running job, then reaped once it ended.
    let job = sleeper(&store.join("toolchains/cuda-12.4.1/bin"));
    as_site(&["uninstall", "cuda-12.4.1"]);
    let out = user();
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "cuda-12.4.1 was retired by the site (the store at {})",
            store.display()
        )) && said.contains("the store has cuda-12.4.2: `gpuenv pin cuda-12.4`"),
        "{said}"
    );
    assert!(!said.contains("gpuenv install"), "{said}");
    end(job);
    as_site(&["uninstall", "--reap"]);
    let said = text(&user());
    assert!(
        said.contains(&format!(
            "the site's store at {} does not have cuda-12.4.1 (retired, or never installed there); the store has cuda-12.4.2",
            store.display()
        )),
        "{said}"
    );
    assert!(!said.contains("gpuenv install"), "{said}");
}
