//! Which SLURM jobs may use a retired tree. gpuenv cannot see into other nodes, so every
//! job still running (or suspended, or completing) that started before the tree was
//! retired counts, whoever's it is: its environment may name the tree. Jobs that start
//! later resolve without it. `squeue` answers once per command, with start times in
//! seconds since the epoch (`SLURM_TIME_FORMAT=%s`); where it runs but fails or hangs
//! (bounded by gpuenv's probe deadline), every tree is kept as if a job used it.

use std::process::Command;

use gpuenv_core::ask::{self, AskError};
use gpuenv_core::facts::vars;

/// A job that starts within this many seconds after a retirement still counts: the
/// controller's clock and this node's may differ a little.
pub const CLOCK_SLACK: u64 = 60;

/// What SLURM said about the jobs that run now.
#[derive(Debug, Clone)]
pub enum Jobs {
    /// No `squeue` here, or no cluster configured for it: nothing to keep for.
    NoCluster,
    /// Each running job's id and start time (`None`: not a time gpuenv can read).
    Running(Vec<(String, Option<u64>)>),
    /// `squeue` failed or hung: why.
    Unknown(String),
}

impl Jobs {
    /// Asks `squeue`.
    pub fn ask() -> Jobs {
        let mut cmd = Command::new("squeue");
        cmd.args(["-h", "-t", "R,S,CG", "-o", "%i %S"])
            .env(vars::SLURM_TIME_FORMAT, "%s");
        match ask::output(&mut cmd) {
            Err(AskError::Start { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Jobs::NoCluster
            }
            Err(e) => Jobs::Unknown(e.to_string()),
            Ok(a) if a.status.success() => {
                Jobs::Running(parse(&String::from_utf8_lossy(&a.stdout)))
            }
            Ok(a) => {
                let said = String::from_utf8_lossy(&a.stderr);
                // The client's own words for "no slurm.conf, no DNS record": not a cluster.
                if said.contains("Could not establish a configuration source") {
                    Jobs::NoCluster
                } else {
                    let last = said.lines().rev().find(|l| !l.trim().is_empty());
                    Jobs::Unknown(format!(
                        "`squeue` failed ({}): {}",
                        a.status,
                        last.unwrap_or("it said nothing").trim()
                    ))
                }
            }
        }
    }

    /// The ids of the jobs that may use a tree retired at `since`; `None` when unknown.
    pub fn started_before(&self, since: u64) -> Option<Vec<String>> {
        match self {
            Jobs::NoCluster => Some(Vec::new()),
            Jobs::Unknown(_) => None,
            Jobs::Running(jobs) => Some(
                jobs.iter()
                    .filter(|(_, start)| start.is_none_or(|s| s <= since + CLOCK_SLACK))
                    .map(|(id, _)| id.clone())
                    .collect(),
            ),
        }
    }
}

/// `squeue -o '%i %S'` lines: a job id and its start time.
fn parse(out: &str) -> Vec<(String, Option<u64>)> {
    out.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let id = words.next()?;
            Some((id.to_string(), words.next().and_then(|s| s.parse().ok())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_that_started_before_count_and_an_unreadable_start_counts_too() {
        let jobs = Jobs::Running(parse(
            "101 1700000000\n102_3 1700000050\n103 1700000100\n104 N/A\n\n",
        ));
        assert_eq!(
            jobs.started_before(1_700_000_000).unwrap(),
            ["101", "102_3", "104"]
        );
        assert_eq!(jobs.started_before(1_600_000_000).unwrap(), ["104"]);
        assert!(Jobs::Unknown("x".into()).started_before(0).is_none());
        assert!(Jobs::NoCluster.started_before(0).unwrap().is_empty());
    }
}
