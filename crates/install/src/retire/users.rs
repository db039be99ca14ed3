//! Who on this node uses a retired tree: a process whose executable, working directory,
//! mapped files, open files or environment name the tree or its view (the environment
//! covers a job script between two `nvcc` runs). Only what `/proc` lets this user read:
//! root sees every process, another user their own. Each file is read with a cap, and the
//! whole scan runs on a thread with a deadline: a process stuck in the kernel can hold a
//! read of its `maps`, and an uninstall must not hang on it.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use gpuenv_core::outside;

/// The processes found, and why the answer may be short.
#[derive(Debug, Default)]
pub struct Scan {
    pub pids: Vec<u32>,
    /// Set when the scan did not finish in time: the tree is kept as if used.
    pub unfinished: Option<String>,
}

/// The processes (other than this one) that use anything under `dirs`, reading `proc`
/// (`/proc`, or a copy in tests) for at most `limit`.
pub fn processes_using(proc: &Path, dirs: &[PathBuf], limit: Duration) -> Scan {
    // Both the paths as gpuenv names them and as the kernel shows them (links resolved).
    let mut all: Vec<PathBuf> = dirs.to_vec();
    all.extend(dirs.iter().filter_map(|d| fs_err::canonicalize(d).ok()));
    all.dedup();
    let (tx, rx) = mpsc::channel();
    let shown = proc.display().to_string();
    let proc = proc.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(scan(&proc, &all));
    });
    match rx.recv_timeout(limit) {
        Ok(pids) => Scan {
            pids,
            unfinished: None,
        },
        Err(_) => Scan {
            pids: Vec::new(),
            unfinished: Some(format!(
                "reading {shown} took longer than {} s",
                limit.as_secs_f64()
            )),
        },
    }
}

fn scan(proc: &Path, dirs: &[PathBuf]) -> Vec<u32> {
    let me = std::process::id();
    let Ok(rd) = fs_err::read_dir(proc) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me && uses(&proc.join(pid.to_string()), dirs))
        .collect();
    pids.sort_unstable();
    pids
}

/// Whether the process at `/proc/<pid>` uses anything under `dirs`, as far as this user
/// may read it (what cannot be read says nothing).
fn uses(process: &Path, dirs: &[PathBuf]) -> bool {
    let under = |p: &Path| dirs.iter().any(|d| p.starts_with(d));
    let link_under = |p: &Path| fs_err::read_link(p).is_ok_and(|t| under(&t));
    if link_under(&process.join("exe")) || link_under(&process.join("cwd")) {
        return true;
    }
    if let Ok(fds) = fs_err::read_dir(process.join("fd")) {
        if fds.flatten().any(|fd| link_under(&fd.path())) {
            return true;
        }
    }
    let read = |name: &str| outside::read(&process.join(name), outside::Kind::ProcessFile);
    // A map's path is the rest of its line from the first `/`.
    if let Ok(maps) = read("maps") {
        let mapped = maps.split(|b| *b == b'\n').filter_map(|line| {
            let at = line.iter().position(|b| *b == b'/')?;
            Some(Path::new(OsStr::from_bytes(&line[at..])))
        });
        if mapped.into_iter().any(under) {
            return true;
        }
    }
    if let Ok(environ) = read("environ") {
        return environ
            .split(|b| *b == 0)
            .filter_map(|var| var.iter().position(|b| *b == b'=').map(|at| &var[at + 1..]))
            .flat_map(|value| value.split(|b| *b == b':'))
            .any(|part| under(Path::new(OsStr::from_bytes(part))));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_found_by_its_cwd_maps_fds_or_environment_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("home/toolchains/cuda-13.0.2");
        let view = dir.path().join("home/views/cuda-13.0.2");
        let proc = dir.path().join("proc");
        let process = |pid: &str| {
            let p = proc.join(pid);
            fs_err::create_dir_all(p.join("fd")).unwrap();
            p
        };
        let cwd = process("10");
        std::os::unix::fs::symlink(tree.join("bin"), cwd.join("cwd")).unwrap();
        let maps = process("11");
        let line = format!(
            "7f00-7f01 r-xp 00000000 08:01 42   {}/lib/libcudart.so.13\n",
            tree.display()
        );
        fs_err::write(maps.join("maps"), line).unwrap();
        let fd = process("12");
        std::os::unix::fs::symlink(view.join("include/cuda.h"), fd.join("fd/3")).unwrap();
        let env = process("13");
        let environ = format!("HOME=/root\0PATH={}/bin:/usr/bin\0", view.display());
        fs_err::write(env.join("environ"), environ).unwrap();
        let other = process("14");
        let elsewhere = format!("CUDA_HOME={}-old\0X=/usr/local/cuda\0", view.display());
        fs_err::write(other.join("environ"), elsewhere).unwrap();
        fs_err::write(other.join("maps"), "7f00-7f01 r-xp 0 0:0 0  [vdso]\n").unwrap();
        fs_err::create_dir_all(proc.join("self-like")).unwrap();

        let scan = processes_using(&proc, &[tree, view], Duration::from_secs(30));
        assert_eq!(scan.pids, [10, 11, 12, 13]);
        assert!(scan.unfinished.is_none());
    }
}
