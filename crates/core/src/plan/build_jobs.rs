//! How many compile jobs a build runs at once (`MAX_JOBS`, `CMAKE_BUILD_PARALLEL_LEVEL`) and
//! how many target archs each nvcc compiles at once (`--threads`): from the cores, the
//! memory and the archs, by the rule and figures in `facts::build_jobs`, unless the user's
//! variables, the toolchain file or the settings say.

use std::path::Path;

use crate::facts::arch::{nvcc_archs, CudaArch, NvccArch};
use crate::facts::build_jobs::{DEVICE_BUDGET_MB, HOST_BUDGET_MB, MAX_PARALLEL, MEMORY_SHARE};
use crate::project::ProjectFile;
use crate::store::toolchain::registry::BuildSettings;

/// What a build may use of this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// The CPUs this process may run on (affinity and a cgroup's CPU quota counted).
    pub cores: u32,
    /// Bytes of memory: the machine's, or less where this process's cgroup is limited.
    pub memory: u64,
    /// Where `memory` was read.
    pub memory_from: String,
}

const MB: u64 = 1 << 20;

impl Machine {
    /// Reads `<root>/proc/meminfo` and the cgroup (v2) limits of this process and its
    /// ancestors under `<root>/sys/fs/cgroup`; `root` is `/` on a real machine. `None`
    /// when the memory cannot be read.
    pub fn read(root: &Path, cores: u32) -> Option<Machine> {
        let meminfo = system_file(&root.join("proc/meminfo"))?;
        let total = meminfo.lines().find_map(|l| {
            let kb = l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?;
            kb.trim().parse::<u64>().ok()?.checked_mul(1024)
        })?;
        let mut machine = Machine {
            cores: cores.clamp(1, MAX_PARALLEL),
            memory: total,
            memory_from: "MemTotal in /proc/meminfo".into(),
        };
        if let Some((limit, at)) = cgroup_limit(root).filter(|(l, _)| *l < total) {
            machine.memory = limit;
            machine.memory_from = at;
        }
        Some(machine)
    }

    /// What a build may take of the memory, in MB.
    fn budget_mb(&self) -> u64 {
        self.memory / MB * MEMORY_SHARE.0 / MEMORY_SHARE.1
    }
}

/// A kernel file's text, read to `outside`'s cap for system files.
fn system_file(path: &Path) -> Option<String> {
    let bytes = crate::outside::read(path, crate::outside::Kind::SystemFile).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The lowest `memory.max` on this process's cgroup v2 path, and the file it is in.
fn cgroup_limit(root: &Path) -> Option<(u64, String)> {
    let own = system_file(&root.join("proc/self/cgroup"))?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let base = root.join("sys/fs/cgroup");
    let mut dir = base.join(path.trim_start_matches('/'));
    let mut lowest: Option<(u64, String)> = None;
    // Never above the cgroup mount, whatever `..` the file holds.
    while dir.starts_with(&base) && !path.split('/').any(|c| c == "..") {
        let file = dir.join("memory.max");
        if let Some(limit) = system_file(&file).and_then(|t| t.trim().parse::<u64>().ok()) {
            if lowest.as_ref().is_none_or(|(l, _)| limit < *l) {
                lowest = Some((limit, file.display().to_string()));
            }
        }
        if !dir.pop() {
            break;
        }
    }
    lowest
}

/// A number gpuenv chose or was given, and what chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub value: u32,
    pub from: String,
}

/// The device targets one nvcc compiles for `archs` (pinned): one per machine-code arch, the
/// PTX of an arch that also has machine code counted with it (nvcc runs `cicc` once for both).
pub fn pinned_targets(archs: &[CudaArch]) -> u32 {
    let mut seen: Vec<(u8, u8, crate::facts::arch::Suffix)> = Vec::new();
    for a in archs {
        let key = (a.major, a.minor, a.suffix);
        if !seen.contains(&key) {
            seen.push(key);
        }
    }
    seen.len() as u32
}

/// The device targets on an nvcc command line; `None` for `-arch=native|all|all-major` and
/// names nvcc alone knows (their count is nvcc's), and when it names none.
pub fn call_targets(args: &[std::ffi::OsString]) -> Option<u32> {
    let archs = nvcc_archs(args)?;
    let mut pinned = Vec::new();
    for a in archs {
        match a {
            NvccArch::Target(a) => pinned.push(a),
            _ => return None,
        }
    }
    Some(pinned_targets(&pinned))
}

/// Threads a job of `targets` archs gets: one per target, at most one per core.
fn threads_for(machine: &Machine, targets: u32) -> u32 {
    targets.clamp(1, machine.cores)
}

/// Jobs that fit: as many as cores, fewer where `threads` targets per job would not fit in
/// the memory a build may take.
fn jobs_that_fit(machine: &Machine, threads: u32) -> u32 {
    let fit = machine.budget_mb() / per_job_mb(threads);
    (fit.min(u64::from(machine.cores)) as u32).max(1)
}

/// The memory budgeted to a job compiling `threads` targets at once.
fn per_job_mb(threads: u32) -> u64 {
    u64::from(HOST_BUDGET_MB) + u64::from(threads) * u64::from(DEVICE_BUDGET_MB)
}

/// `mb` megabytes as `12.3 GiB`.
fn gib(mb: u64) -> String {
    format!("{:.1} GiB", mb as f64 / 1024.0)
}

/// Where the settings' and the site config's `[build]` values are said to come from.
const SETTINGS: &str = "[build] in gpuenv's settings.toml";
const SITE: &str = "[build] in the site config";

/// The job count gpuenv sets in `MAX_JOBS` and `CMAKE_BUILD_PARALLEL_LEVEL`: the toolchain
/// file's `[build] jobs`, else the settings', else the site config's, else what fits this
/// machine for `targets` archs compiled `--threads` at once (`None` when nothing sets it
/// and the machine could not be read).
pub fn jobs(
    machine: Option<&Machine>,
    targets: u32,
    file: Option<&ProjectFile>,
    mine: &BuildSettings,
    site: &BuildSettings,
) -> Option<Chosen> {
    if let Some((value, at)) = file.and_then(|f| f.build_jobs.as_ref()) {
        return Some(Chosen {
            value: *value,
            from: at.to_string(),
        });
    }
    if let Some(chosen) = from_settings(mine.jobs, site.jobs) {
        return Some(chosen);
    }
    let machine = machine?;
    let threads = threads_for(machine, targets);
    let value = jobs_that_fit(machine, threads);
    Some(Chosen {
        value,
        from: format!(
            "{} cores; {} of {} ({}) for jobs of {threads} target{} at once, {} each",
            machine.cores,
            gib(machine.budget_mb()),
            gib(machine.memory / MB),
            machine.memory_from,
            if threads == 1 { "" } else { "s" },
            gib(per_job_mb(threads)),
        ),
    })
}

fn from_settings(mine: Option<u32>, site: Option<u32>) -> Option<Chosen> {
    match (mine, site) {
        (Some(v), _) => Some(Chosen {
            value: v,
            from: SETTINGS.into(),
        }),
        (None, Some(v)) => Some(Chosen {
            value: v,
            from: SITE.into(),
        }),
        (None, None) => None,
    }
}

/// What the proxy does about `--threads` for one nvcc compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Threads {
    /// The command line or `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS` already says.
    Given(String),
    /// One target or fewer (or a count only nvcc knows): nothing to run side by side.
    One,
    /// Add `--threads N`.
    Add(Chosen),
}

/// Whether `args` hold nvcc's `--threads`/`-t` in any spelling (`-t 4`, `-t4`, `-t=4`,
/// `--threads=4`).
pub fn has_threads(args: impl IntoIterator<Item = impl AsRef<str>>) -> bool {
    args.into_iter().any(|a| {
        let a = a.as_ref();
        a == "-t"
            || a == "--threads"
            || a.starts_with("--threads=")
            || a.starts_with("-t=")
            || a.strip_prefix("-t")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The settings the proxy reads for `--threads`, in order.
pub struct ThreadInputs<'a> {
    /// `NVCC_PREPEND_FLAGS`, `NVCC_APPEND_FLAGS`.
    pub nvcc_flags: [Option<&'a str>; 2],
    /// `NVCC_THREADS`.
    pub nvcc_threads: Option<&'a str>,
    /// `MAX_JOBS` (the user's or gpuenv's): jobs that may run beside this one.
    pub max_jobs: Option<&'a str>,
    pub file: Option<&'a ProjectFile>,
    pub mine: &'a BuildSettings,
    pub site: &'a BuildSettings,
}

/// `--threads` for an nvcc compile with `args` (its arch flags final): the user's own
/// choice on the command line or in nvcc's flag variables wins, then `NVCC_THREADS`, the
/// toolchain file's `[build] nvcc-threads`, the settings', the site config's, else one per
/// target, at most one per core and as many as fit in memory beside `MAX_JOBS` jobs.
/// `machine` is read only when it is needed.
pub fn threads(
    args: &[std::ffi::OsString],
    inputs: &ThreadInputs,
    machine: impl FnOnce() -> Option<Machine>,
) -> Threads {
    let words = args.iter().filter_map(|a| a.to_str());
    if has_threads(words) {
        return Threads::Given("the command line".into());
    }
    for (flags, name) in inputs.nvcc_flags.iter().zip([
        crate::facts::vars::NVCC_PREPEND_FLAGS,
        crate::facts::vars::NVCC_APPEND_FLAGS,
    ]) {
        if flags.is_some_and(|f| has_threads(f.split_whitespace())) {
            return Threads::Given(name.into());
        }
    }
    let Some(targets) = call_targets(args).filter(|t| *t > 1) else {
        return Threads::One;
    };
    if let Some(n) = inputs
        .nvcc_threads
        .and_then(|v| v.trim().parse::<u32>().ok())
    {
        return Threads::Add(Chosen {
            value: n.min(MAX_PARALLEL),
            from: crate::facts::vars::NVCC_THREADS.into(),
        });
    }
    if let Some((value, at)) = inputs.file.and_then(|f| f.nvcc_threads.as_ref()) {
        return Threads::Add(Chosen {
            value: *value,
            from: at.to_string(),
        });
    }
    if let Some(chosen) = from_settings(inputs.mine.nvcc_threads, inputs.site.nvcc_threads) {
        return Threads::Add(chosen);
    }
    let Some(machine) = machine() else {
        return Threads::One;
    };
    let threads = threads_for(&machine, targets);
    let jobs = inputs
        .max_jobs
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|j| *j > 0)
        .unwrap_or_else(|| jobs_that_fit(&machine, threads));
    // Memory left to each of `jobs` jobs, after its host side, in targets.
    let per_job = machine.budget_mb() / u64::from(jobs);
    let fit = per_job.saturating_sub(u64::from(HOST_BUDGET_MB)) / u64::from(DEVICE_BUDGET_MB);
    let value = threads.min(fit.min(u64::from(MAX_PARALLEL)) as u32).max(1);
    if value == 1 {
        return Threads::One;
    }
    Threads::Add(Chosen {
        value,
        from: format!(
            "{targets} targets, {} cores, {} for {jobs} job{} at once",
            machine.cores,
            gib(machine.budget_mb()),
            if jobs == 1 { "" } else { "s" },
        ),
    })
}

#[cfg(test)]
mod tests;
