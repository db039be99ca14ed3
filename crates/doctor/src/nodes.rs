//! `gpuenv doctor --all-nodes`: every node of a SLURM allocation runs the doctor once and
//! reports a few facts (the toolchain that resolves, the driver, torch's CUDA, NCCL,
//! `/dev/shm`, whether the toolchains are what gpuenv.lock names) with its findings; the facts are compared across nodes, and every
//! difference is named (FM-11: works on one node, fails on another).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{driver, nccl, shm, Finding, Inputs, Status};
use gpuenv_core::toolchain::Kind;

/// The facts compared across nodes, in report order.
pub const FACTS: [&str; 6] = ["toolchain", "driver", "torch", "nccl", "/dev/shm", "lock"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeReport {
    pub node: String,
    /// One value per entry of [`FACTS`], in that order.
    pub facts: Vec<String>,
    pub errors: usize,
    pub warnings: usize,
    /// `<id> <status>: <summary>` of each finding that is not ok.
    pub problems: Vec<String>,
}

impl NodeReport {
    pub fn fact(&self, name: &str) -> &str {
        FACTS
            .iter()
            .position(|f| *f == name)
            .and_then(|i| self.facts.get(i))
            .map_or("", String::as_str)
    }
}

/// This node's report, from the inputs and findings the doctor already has, and `lock`:
/// the lock comparison in words (the CLI's, which owns gpuenv.lock).
pub fn report(node: &str, inputs: &Inputs, findings: &[Finding], lock: String) -> NodeReport {
    let toolchain = match (&inputs.resolve_error, inputs.active.toolchains.as_slice()) {
        (Some(e), _) => format!("error: {}", e.message.lines().next().unwrap_or_default()),
        (None, []) => "none".to_string(),
        (None, active) => active
            .iter()
            .map(|t| {
                // The registry may be shared while the trees are per node: a tree that is
                // not here is part of the fact, so the nodes differ on it.
                match gpuenv_core::store::tree_problem(&t.name, &t.entry) {
                    None => format!("{} ({})", t.name, t.entry.version),
                    Some(p) => format!("{} ({}), {}", t.name, t.entry.version, p.short()),
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    };
    let driver = match driver::read_driver(&inputs.machine) {
        Ok(d) => d.text,
        Err(_) => "none".to_string(),
    };
    let torch = match &inputs.torch {
        Ok(t) => {
            let built = match (t.built_for(Kind::Cuda), t.built_for(Kind::Rocm)) {
                (Some(c), _) => format!("CUDA {c}"),
                (None, Some(r)) => format!("ROCm {r}"),
                (None, None) => "CPU only".to_string(),
            };
            format!("{} ({built}) at {}", t.label(), t.dir.display())
        }
        Err(_) => "none".to_string(),
    };
    let summary_of = |id: &str| {
        findings
            .iter()
            .find(|f| f.id == id)
            .map_or_else(String::new, |f| {
                format!("{}: {}", f.status.as_str(), f.summary)
            })
    };
    let shm = match inputs
        .machine
        .read("/proc/mounts")
        .as_deref()
        .and_then(shm::shm_size)
    {
        None => "not mounted".to_string(),
        Some(None) => "mounted without a size limit".to_string(),
        Some(Some(bytes)) => format!("{} MiB", bytes / (1024 * 1024)),
    };
    NodeReport {
        node: node.to_string(),
        facts: vec![
            toolchain,
            driver,
            torch,
            summary_of(nccl::CHECK.id),
            shm,
            lock,
        ],
        errors: findings
            .iter()
            .filter(|f| f.status == Status::Error)
            .count(),
        warnings: findings.iter().filter(|f| f.status == Status::Warn).count(),
        problems: findings
            .iter()
            .filter(|f| f.status >= Status::Warn)
            .map(|f| format!("{} {}: {}", f.id, f.status.as_str(), f.summary))
            .collect(),
    }
}

/// One fact whose value is not the same on every node: each value with its nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub fact: String,
    pub values: Vec<(String, Vec<String>)>,
}

pub fn differences(reports: &[NodeReport]) -> Vec<Difference> {
    let mut out = Vec::new();
    for fact in FACTS {
        let mut values: Vec<(String, Vec<String>)> = Vec::new();
        for r in reports {
            let v = r.fact(fact).to_string();
            match values.iter_mut().find(|(x, _)| *x == v) {
                Some((_, nodes)) => nodes.push(r.node.clone()),
                None => values.push((v, vec![r.node.clone()])),
            }
        }
        if values.len() > 1 {
            out.push(Difference {
                fact: fact.to_string(),
                values,
            });
        }
    }
    out
}

/// The node reports in `srun`'s output: one JSON object per line; other lines are ignored.
pub fn parse_reports(stdout: &str) -> Vec<NodeReport> {
    let mut reports: Vec<NodeReport> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    reports.sort_by(|a, b| a.node.cmp(&b.node));
    reports
}

/// The comparison for people.
pub fn render_text(
    reports: &[NodeReport],
    diffs: &[Difference],
    expected: Option<usize>,
) -> String {
    let mut out = String::new();
    for r in reports {
        let _ = writeln!(
            out,
            "node {}: {} error(s), {} warning(s)",
            r.node, r.errors, r.warnings
        );
        for (name, value) in FACTS.iter().zip(&r.facts) {
            let _ = writeln!(out, "    {name:<10} {value}");
        }
        for p in &r.problems {
            let _ = writeln!(out, "    {p}");
        }
    }
    if let Some(n) = expected.filter(|n| *n != reports.len()) {
        let _ = writeln!(
            out,
            "error: {} of {n} nodes reported; the others could not run `gpuenv doctor` (is gpuenv at the same path on every node?)",
            reports.len()
        );
    }
    if diffs.is_empty() {
        let _ = writeln!(out, "all {} node(s) agree", reports.len());
    }
    for d in diffs {
        let _ = writeln!(out, "differs: {}", d.fact);
        for (value, nodes) in &d.values {
            let _ = writeln!(out, "    {value}  on {}", nodes.join(", "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, facts: [&str; 6]) -> NodeReport {
        NodeReport {
            node: name.into(),
            facts: facts.iter().map(|f| f.to_string()).collect(),
            errors: 0,
            warnings: 0,
            problems: Vec::new(),
        }
    }

    const SAME: [&str; 6] = [
        "cuda-12.4.1 (12.4.1)",
        "550.54.15",
        "2.4.1+cu124 (CUDA 12.4) at /v/torch",
        "ok: NCCL 2.21.5",
        "16384 MiB",
        "matches gpuenv.lock",
    ];

    #[test]
    fn nodes_that_agree_have_no_differences() {
        let r = vec![node("n1", SAME), node("n2", SAME), node("n3", SAME)];
        assert!(differences(&r).is_empty());
        assert!(render_text(&r, &[], Some(3)).contains("all 3 node(s) agree"));
    }

    #[test]
    fn every_differing_fact_names_its_values_and_nodes() {
        let mut old_driver = SAME;
        old_driver[1] = "535.104.05";
        old_driver[5] = "differs: /p/gpuenv.lock:4:1: cuda-12.4.1: version: the lock has 12.4.1, this is 12.4.0";
        let mut cpu_torch = SAME;
        cpu_torch[2] = "2.4.1+cpu (CPU only) at /v/torch";
        cpu_torch[4] = "64 MiB";
        let r = vec![
            node("n1", SAME),
            node("n2", old_driver),
            node("n3", cpu_torch),
            node("n4", SAME),
        ];
        let d = differences(&r);
        let facts: Vec<&str> = d.iter().map(|d| d.fact.as_str()).collect();
        assert_eq!(facts, ["driver", "torch", "/dev/shm", "lock"]);
        assert_eq!(
            d[0].values,
            [
                (
                    "550.54.15".to_string(),
                    vec!["n1".into(), "n3".into(), "n4".into()]
                ),
                ("535.104.05".to_string(), vec!["n2".into()])
            ]
        );
        let text = render_text(&r, &d, Some(5));
        assert!(text.contains("4 of 5 nodes reported"), "{text}");
        assert!(text.contains("64 MiB  on n3"), "{text}");
        assert!(text.contains("differs: lock\n    matches gpuenv.lock  on n1, n3, n4\n    differs: /p/gpuenv.lock:4:1: cuda-12.4.1: version: the lock has 12.4.1, this is 12.4.0  on n2"), "{text}");
    }

    #[test]
    fn reports_are_read_from_srun_output_between_other_lines() {
        let a = serde_json::to_string(&node("n2", SAME)).unwrap();
        let b = serde_json::to_string(&node("n1", SAME)).unwrap();
        let out = format!("{a}\nsrun: warning: something\n{b}\n{{not json\n");
        let r = parse_reports(&out);
        let names: Vec<&str> = r.iter().map(|r| r.node.as_str()).collect();
        assert_eq!(names, ["n1", "n2"]);
    }
}
