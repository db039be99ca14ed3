//! `gpuenv doctor`: one check per failure mode (docs/failure-modes.md). Every check reads the
//! machine through [`Machine`] (a file-system root, the environment, PATH) and returns one
//! typed [`Finding`]; the text and JSON reports are two renderings of the same findings.

pub mod arch;
pub mod broken_toolchain;
pub mod cmake_cache;
pub mod compat;
pub mod cpu_torch;
pub mod driver;
pub mod host_compiler;
pub mod machine;
pub mod nccl;
pub mod nodes;
pub mod nvidia_wheels;
pub mod python;
pub mod rocm;
pub mod shadowed;
pub mod shared_cache;
pub mod shell_hook;
pub mod shm;
pub mod slurm;
pub mod stale_path;
pub mod torch_kernels;
pub mod torch_match;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use gpuenv_core::guard::{LocateError, TorchVersion};
use gpuenv_core::home::Home;
use gpuenv_core::resolve::{Active, ActiveSet};
use gpuenv_core::store;
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::toolchain::{view, Kind};
use gpuenv_core::ui::{self, printable};

pub use machine::{Machine, RunError};

use gpuenv_core::finding::Counts;
pub use gpuenv_core::finding::{Finding, Status};

/// A check's stable identity: the failure mode (docs/failure-modes.md) it diagnoses.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    pub id: &'static str,
    pub name: &'static str,
}

impl Check {
    /// The section of the docs that explains this check, as a path in gpuenv's repository
    /// (`docs/failure-modes.md#fm-10-host-compiler`, the anchor of the heading
    /// `FM-10 host-compiler`): the docs of the release in hand, not of another version.
    pub fn docs(&self) -> String {
        match self.id.strip_prefix("FM-") {
            Some(n) => format!("docs/failure-modes.md#fm-{n}-{}", self.name),
            None if self.id == shared_cache::CHECK.id => {
                "docs/clusters.md#the-shared-compiler-cache".to_string()
            }
            None if self.id == shell_hook::CHECK.id => {
                "docs/failure-modes.md#the-shell-hook-missing".to_string()
            }
            None => "docs/design.md#resolution".to_string(),
        }
    }
}

/// Collects what a check saw and turns it into one finding: the worst problem sets the
/// status and the summary.
#[derive(Debug, Default)]
pub struct Notes {
    problems: Vec<(Status, String)>,
    seen: Vec<String>,
    hints: Vec<String>,
}

impl Notes {
    pub fn problem(&mut self, status: Status, text: impl Into<String>) {
        self.problems.push((status, text.into()));
    }
    pub fn seen(&mut self, text: impl Into<String>) {
        self.seen.push(text.into());
    }
    pub fn hint(&mut self, text: impl Into<String>) {
        let text = text.into();
        if !self.hints.contains(&text) {
            self.hints.push(text);
        }
    }
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
    pub fn problem_count(&self) -> usize {
        self.problems.len()
    }

    /// The finding: `ok_summary` when nothing is wrong, else the worst problem (the first
    /// of equals) with the count of the others.
    pub fn finish(self, check: Check, ok_summary: impl Into<String>) -> Finding {
        let worst = self.problems.iter().map(|(s, _)| *s).max();
        let (status, summary) = match worst {
            None => (Status::Ok, ok_summary.into()),
            Some(status) => {
                let first = &self.problems.iter().find(|(s, _)| *s == status).unwrap().1;
                let more = self.problems.len() - 1;
                let summary = match more {
                    0 => first.clone(),
                    1 => format!("{first} (and 1 more problem)"),
                    n => format!("{first} (and {n} more problems)"),
                };
                (status, summary)
            }
        };
        let mut details: Vec<String> = if self.problems.len() > 1 {
            self.problems.into_iter().map(|(_, p)| p).collect()
        } else {
            Vec::new()
        };
        details.extend(self.seen);
        Finding {
            id: check.id,
            name: check.name,
            status,
            summary,
            details,
            hint: (status > Status::Skip && !self.hints.is_empty()).then(|| self.hints.join("\n")),
            docs: Some(check.docs()),
        }
    }
}

impl Check {
    /// The finding of a check that cannot decide here, and why.
    pub fn skip(self, why: impl Into<String>) -> Finding {
        let mut f = Finding::new(self.id, Status::Skip, why);
        f.name = self.name;
        f.docs = Some(self.docs());
        f
    }
}

/// What every check looks at, gathered once.
pub struct Inputs {
    pub machine: Machine,
    /// The compatibility data in effect (the home's or an upstream's newer copy, or the
    /// embedded data).
    pub facts: gpuenv_core::facts::Facts,
    pub home: Home,
    pub registry: Registry,
    /// Empty when resolution failed (the `active-set` finding says why).
    pub active: ActiveSet,
    pub resolve_error: Option<ui::Report>,
    /// The torch of the active Python, found without importing it.
    pub torch: Result<TorchVersion, LocateError>,
    /// `$GPUENV_HOME/bin/gpuenv-shim` when it is not the proxy beside the running gpuenv
    /// (an older build's, as after an upgrade).
    pub old_proxy: Option<PathBuf>,
}

impl Inputs {
    pub fn active(&self, kind: Kind) -> Option<&Active> {
        self.active.get(kind)
    }

    /// The directories of an active toolchain as gpuenv exports them (its view) and as they
    /// are on disk (its root): either counts as "the active toolchain".
    pub fn owned_by(&self, t: &Active, path: &Path) -> bool {
        let view = self.home.view(&t.name);
        path.starts_with(&view) || path.starts_with(&t.entry.root)
    }

    /// The view paths of an active toolchain.
    pub fn view(&self, t: &Active) -> view::ViewPaths {
        view::paths(&self.home, &t.name, &t.entry)
    }

    /// The registered toolchain a path belongs to (view or root), if any.
    pub fn owner_of(&self, path: &Path) -> Option<&str> {
        self.registry
            .toolchains
            .iter()
            .find(|(name, e)| path.starts_with(self.home.view(name)) || path.starts_with(&e.root))
            .map(|(name, _)| name)
    }

    pub fn shims_dir(&self) -> PathBuf {
        self.home.shims()
    }
}

/// The checks, in report order.
pub fn run_all(inputs: &Inputs) -> Vec<Finding> {
    vec![
        active_set(inputs),
        shell_hook::run(inputs),
        torch_match::run(inputs),
        stale_path::run(inputs),
        cpu_torch::run(inputs),
        driver::run(inputs),
        nccl::run(inputs),
        cmake_cache::run(inputs),
        rocm::run(inputs),
        python::run(inputs),
        shm::run(inputs),
        host_compiler::run(inputs),
        slurm::run(inputs),
        arch::run(inputs),
        broken_toolchain::run(inputs),
        shadowed::run(inputs),
        compat::run(inputs),
        torch_kernels::run(inputs),
        nvidia_wheels::run(inputs),
        shared_cache::run(inputs),
    ]
}

pub const ACTIVE_SET: Check = Check {
    id: "active-set",
    name: "toolchains",
};

/// Which toolchains the other checks compare against, and why; a pin that resolves to
/// nothing is itself an error. A missing view or shims dir (what gpuenv exports) is a
/// warning; a tree that is gone or broken is FM-13's.
fn active_set(inputs: &Inputs) -> Finding {
    let mut notes = Notes::default();
    for p in store::health(&inputs.home, &inputs.registry) {
        if !broken_toolchain::is_about_the_tree(&p) {
            notes.problem(Status::Warn, p.to_string());
            notes.hint(p.hint());
        }
    }
    if let Some(proxy) = &inputs.old_proxy {
        notes.problem(
            Status::Warn,
            format!(
                "the proxy {} is an older gpuenv's, not this one's: every shim and view's compiler still runs it",
                proxy.display()
            ),
        );
        notes.hint("run `gpuenv reshim` (any gpuenv command but doctor replaces it too)");
    }
    if let Some(err) = &inputs.resolve_error {
        notes.problem(
            Status::Error,
            err.inline().lines().collect::<Vec<_>>().join(" "),
        );
        for h in &err.hints {
            notes.hint(h.as_str());
        }
        return notes.finish(ACTIVE_SET, "");
    }
    if inputs.active.toolchains.is_empty() && notes.is_clean() {
        return ACTIVE_SET.skip("no toolchain is active here (no GPUENV_TOOLCHAIN, no gpuenv.toml from here up, no default)",
        );
    }
    let names: Vec<String> = inputs
        .active
        .toolchains
        .iter()
        .map(|t| format!("{} ({})", t.name, t.reason))
        .collect();
    for t in &inputs.active.toolchains {
        notes.seen(format!(
            "{}: {} {} at {}",
            t.name,
            t.entry.kind,
            t.entry.version,
            t.entry.root.display()
        ));
    }
    notes.finish(ACTIVE_SET, names.join("; "))
}

/// The whole report, as both renderings see it.
#[derive(Debug, Serialize)]
pub struct Report {
    pub dir: PathBuf,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn count(&self, status: Status) -> usize {
        self.findings.iter().filter(|f| f.status == status).count()
    }
    pub fn has_errors(&self) -> bool {
        self.count(Status::Error) > 0
    }
}

/// The report for people: one line per check, details and hints under anything not ok.
/// Styled; the caller's stream strips the styles where colour is off.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    // Findings quote PATH entries, file contents and tool output: shown without raw
    // control characters.
    let dir = printable(&report.dir.to_string_lossy()).into_owned();
    let _ = writeln!(out, "gpuenv doctor: {dir}");
    gpuenv_core::finding::render_text(&mut out, &report.findings);
    out
}

/// The report for machines: the same findings as typed data, fields in a stable order.
pub fn render_json(report: &Report) -> String {
    #[derive(Serialize)]
    struct Json<'a> {
        schema: &'static str,
        command: &'static str,
        dir: &'a Path,
        findings: &'a [Finding],
        summary: Counts,
    }
    let json = Json {
        schema: gpuenv_core::report_schema::VERSION,
        command: "doctor",
        dir: &report.dir,
        findings: &report.findings,
        summary: Counts::of(&report.findings),
    };
    let mut out = serde_json::to_string_pretty(&json).expect("findings always serialize");
    out.push('\n');
    out
}
