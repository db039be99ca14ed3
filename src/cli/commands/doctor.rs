//! `gpuenv doctor`: one line per known failure mode for a directory, with the fix.

use crate::cli::support;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};

use gpuenv_core::context::{vars, Context};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::outside;
use gpuenv_core::resolve::ActiveSet;
use gpuenv_core::session::Session;
use gpuenv_core::shims;
use gpuenv_core::{guard, ui};
use gpuenv_doctor::{nodes, Inputs, Machine, Report};

use support::Exit;

/// How long `--all-nodes` waits for srun's doctors: each node's own probes have their
/// deadlines, but srun may wait for the allocation's nodes first.
const ALL_NODES_LIMIT: Duration = Duration::from_secs(300);

/// Diagnose the GPU stack for a directory: one line per known failure mode, with the fix
/// (exit 1 if any check is an error)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Machine-readable findings on stdout
    #[arg(long)]
    json: bool,
    /// The directory whose active toolchains to check (default: the current one)
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Inside a SLURM allocation: run the doctor once per node (srun) and compare the nodes
    #[arg(long)]
    all_nodes: bool,
    /// Internal: print this node's report as one line of JSON (what --all-nodes collects)
    #[arg(long, hide = true)]
    node_report: bool,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let dir: PathBuf = match &self.dir {
            // `--dir .` reads as the directory itself in the report.
            Some(d) => ctx
                .cwd
                .join(d)
                .components()
                .filter(|c| *c != Component::CurDir)
                .collect(),
            None => ctx.cwd.clone(),
        };
        if !dir.is_dir() {
            bail!(Hinted::new(format!("{} is not a directory", dir.display()))
                .hint("give --dir a project directory (one with gpuenv.toml, or below one)"));
        }
        let ctx = Context {
            cwd: dir.clone(),
            vars: ctx.vars.clone(),
        };
        let mut session = support::session(&ctx)?;
        // A pin that resolves to nothing is reported as a finding; the other checks still run.
        let (active, resolve_error) = match support::resolve_here(&mut session, &[], None) {
            Ok(a) => (a, None),
            Err(e) => (
                ActiveSet::default(),
                Some(ui::Report::of(e.as_ref(), support::FIND)),
            ),
        };
        // Only a node's report has the lock fact: listing every locked tree costs a walk.
        let lock = self
            .node_report
            .then(|| lock_fact(&session, &active, &resolve_error));
        let (home, layered, facts) = session.into_parts();
        let registry = layered.registry;
        let torch = guard::locate_torch(&ctx, None);
        let old_proxy = shims::proxy_source().ok().and_then(|source| {
            let installed = home.proxy();
            let current = shims::is_current(&installed, &source);
            (installed.exists() && !current.unwrap_or(true)).then_some(installed)
        });
        let root = ctx.system_root();
        let inputs = Inputs {
            machine: Machine { root, ctx },
            facts: *facts.facts(),
            home,
            registry,
            active,
            resolve_error,
            torch,
            old_proxy,
        };
        if self.all_nodes {
            return all_nodes(&inputs.machine.ctx, &dir, self.json);
        }
        let report = Report {
            dir,
            findings: gpuenv_doctor::run_all(&inputs),
        };
        if self.node_report {
            let node = node_name(&inputs.machine.ctx);
            let r = nodes::report(&node, &inputs, &report.findings, lock.unwrap_or_default());
            println!("{}", serde_json::to_string(&r)?);
            return Ok(());
        }
        if self.json {
            print!("{}", gpuenv_doctor::render_json(&report));
        } else {
            anstream::print!("{}", gpuenv_doctor::render_text(&report));
        }
        if report.has_errors() {
            Err(Exit(1).into())
        } else {
            Ok(())
        }
    }
}

/// The `lock` fact: whether the active toolchains are what the project's gpuenv.lock names
/// (`check --locked`'s comparison), or how they differ.
fn lock_fact(session: &Session, active: &ActiveSet, resolve_error: &Option<ui::Report>) -> String {
    if resolve_error.is_some() {
        // A locked toolchain not installed on this node is a difference, named as
        // `check --locked` names it; any other failure to resolve leaves nothing to compare.
        return match support::lock::compared_here(session.ctx()) {
            Ok(None) => "no gpuenv.lock".to_string(),
            Ok(Some(c)) if !c.problems.is_empty() => format!("differs: {}", c.problems.join("; ")),
            _ => "not compared: the toolchains did not resolve".to_string(),
        };
    }
    match support::lock::differences_here(session, active) {
        Ok(None) => "no gpuenv.lock".to_string(),
        Ok(Some(c)) if c.problems.is_empty() => "matches gpuenv.lock".to_string(),
        Ok(Some(c)) => format!("differs: {}", c.problems.join("; ")),
        Err(e) => format!("error: {}", ui::error_one_line(e.as_ref(), support::FIND)),
    }
}

/// This node's name: SLURM's, else the host name.
fn node_name(ctx: &Context) -> String {
    ctx.var_nonempty(vars::SLURMD_NODENAME)
        .map(str::to_string)
        .or_else(|| {
            outside::read_text(
                Path::new("/proc/sys/kernel/hostname"),
                outside::Kind::SystemFile,
            )
            .ok()
            .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "this node".to_string())
}

/// One doctor per node of this allocation, through `srun`, compared.
fn all_nodes(ctx: &Context, dir: &std::path::Path, json: bool) -> Result<()> {
    let Some(job) = ctx.var_nonempty(vars::SLURM_JOB_ID) else {
        bail!(Hinted::new("--all-nodes runs the doctor on every node of a SLURM allocation, and this is not inside one (SLURM_JOB_ID is unset)")
            .hint("salloc -N <nodes> gpuenv doctor --all-nodes (or put the line in an sbatch script)"));
    };
    let exe = std::env::current_exe().context("cannot find the running gpuenv binary")?;
    let mut cmd = Command::new("srun");
    cmd.args([
        "--ntasks-per-node=1",
        "--export=ALL",
        "--kill-on-bad-exit=0",
    ]);
    let expected: Option<usize> = ctx
        .var_nonempty(vars::SLURM_JOB_NUM_NODES)
        .and_then(|n| n.parse().ok());
    if let Some(n) = expected {
        cmd.arg(format!("--nodes={n}")).arg(format!("--ntasks={n}"));
    }
    cmd.arg(&exe)
        .args(["doctor", "--node-report", "--dir"])
        .arg(dir)
        .current_dir(dir);
    let out = gpuenv_core::ask::output_within(&mut cmd, ALL_NODES_LIMIT).map_err(|e| {
        Hinted::new(format!("cannot run srun for SLURM job {job}"))
            .hint("run this where srun is on PATH (a login or compute node of the cluster)")
            .caused_by(e)
    })?;
    // What the nodes' doctors said on stderr, after they are done (it was captured).
    let _ = std::io::Write::write_all(&mut std::io::stderr(), &out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reports = nodes::parse_reports(&stdout);
    if reports.is_empty() {
        bail!(Hinted::new(format!(
            "srun ran no doctor in SLURM job {job} ({}); nothing to compare",
            out.status
        ))
        .hint(format!(
            "check that gpuenv is at {} on every node",
            exe.display()
        )));
    }
    let diffs = nodes::differences(&reports);
    if json {
        let value = serde_json::json!({
            "job": job,
            "nodes": reports,
            "differences": diffs,
            "expected_nodes": expected,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        anstream::print!("{}", nodes::render_text(&reports, &diffs, expected));
    }
    let missing = expected.is_some_and(|n| n != reports.len());
    if missing && !json {
        // What the silent nodes printed instead (a TaskProlog's refusal, a shell's "not
        // found") says why they sent no report.
        let said: Vec<&str> = stdout
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('{'))
            .collect();
        if !said.is_empty() {
            println!("what the nodes printed instead of a report:");
            for line in said {
                println!("    {}", ui::printable(line));
            }
        }
    }
    if !diffs.is_empty() || missing || reports.iter().any(|r| r.errors > 0) {
        return Err(Exit(1).into());
    }
    Ok(())
}
