//! `gpuenv list`: the registered toolchains, marking the active and default ones; with
//! `--available`, the releases a source has.

use crate::cli::support;
use std::io::IsTerminal;
use support::named_arg::named;

use anyhow::{bail, Result};
use serde::Serialize;

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::{Diagnostic, Hinted};
use gpuenv_core::home::Home;
use gpuenv_core::named::Named as _;
use gpuenv_core::store::{self, retired, Problem};
use gpuenv_core::toolchain::entry::Source;
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::toolchain::{Kind, Spec};
use gpuenv_core::ui;
use gpuenv_install::retire::Census;
use gpuenv_install::Choice;

/// List registered toolchains, marking the active and default ones
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Machine-readable output on stdout
    #[arg(long)]
    json: bool,
    /// List the releases a source offers instead: cuda (or rocm, with --manifest)
    #[arg(long, value_name = "KIND")]
    available: Option<Kind>,
    /// The source to ask, with --available
    #[arg(long, value_parser = named::<Choice>(), default_value = "auto", requires = "available")]
    source: Choice,
    /// A gpuenv manifest (path or URL), with --available
    #[arg(long, value_name = "PATH|URL", requires = "available")]
    manifest: Option<String>,
    /// Only the names, one a line, nothing else said: what shell completion offers
    #[arg(long, conflicts_with_all = ["json", "available"])]
    names: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    name: &'a str,
    kind: &'a str,
    version: String,
    root: String,
    view: String,
    source: &'a str,
    /// The upstream store it comes from, if it is not the user's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    upstream: Option<String>,
    active: bool,
    default: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    broken: Option<String>,
    /// What an installed tree is made of, by its install record (archives, linked wheels).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    components: Vec<String>,
    /// What is wrong: "root missing", "broken", "view missing".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<&'static str>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        if let Some(kind) = self.available {
            return list_available(ctx, kind, self.source, self.manifest.as_deref(), self.json);
        }
        let mut session = support::session(ctx)?;
        if self.names {
            // Completion runs this at every Tab: the registry read, nothing resolved or said.
            for name in session.layered().registry.toolchains.keys() {
                println!("{name}");
            }
            return Ok(());
        }
        // `list` stays useful in a directory whose toolchain file is broken.
        let active = match support::resolve_here(&mut session, &[], None) {
            Ok(a) => Some(a),
            Err(e) => {
                ui::warn(format!("cannot tell which toolchain is active here: {e:#}"));
                None
            }
        };
        let (home, layered) = (session.home(), session.layered());
        let registry = &layered.registry;
        let defaults: Vec<Spec> = registry.default_specs().unwrap_or_default();
        // An upstream is the admin's to repair; its missing views are made here on use.
        let mut problems = store::health(home, registry);
        problems.retain(|p| p.name().is_none_or(|n| layered.upstream_of(n).is_none()));
        let rows: Vec<Row> = registry
            .toolchains
            .iter()
            .map(|(name, e)| {
                let active_here = active
                    .as_ref()
                    .and_then(|a| a.toolchains.iter().find(|t| t.name == name));
                Row {
                    name,
                    kind: e.kind.as_str(),
                    version: e.version.to_string(),
                    root: e.root.display().to_string(),
                    view: home.view(name).display().to_string(),
                    source: e.source.as_str(),
                    upstream: layered.upstream_of(name).map(|p| p.display().to_string()),
                    active: active_here.is_some(),
                    default: defaults
                        .iter()
                        .any(|d| registry.find(d).is_some_and(|(n, _)| n == name)),
                    reason: active_here.map(|t| t.reason.to_string()),
                    broken: e.broken().map(|b| b.to_string()),
                    components: support::made_of(e),
                    problems: problems
                        .iter()
                        .filter(|p| p.name() == Some(name))
                        .map(Problem::short)
                        .collect(),
                }
            })
            .collect();
        if self.json {
            println!("{}", serde_json::to_string_pretty(&rows)?);
            return Ok(());
        }
        if rows.is_empty() {
            ui::info_with_hints(
                "no toolchains registered",
                ["`gpuenv discover --register` finds the ones on this machine; `gpuenv link <name> <path>` adds one"],
            );
            show_retired(home);
            return Ok(());
        }
        let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).max(4);
        // A header for people; scripts reading a pipe get the rows alone.
        if std::io::stdout().is_terminal() {
            println!(
                "  {:width$}  {:<10}  {:<10}  ROOT",
                "NAME", "VERSION", "SOURCE"
            );
        }
        for r in &rows {
            let mark = if r.active { "*" } else { " " };
            let default = if r.default { " (default)" } else { "" };
            let problems = match r.problems.as_slice() {
                [] => String::new(),
                p => format!("  [{}]", p.join(", ")),
            };
            let source = if r.upstream.is_some() {
                "upstream"
            } else {
                r.source
            };
            let from = r
                .upstream
                .as_ref()
                .map(|u| format!(" (from {u})"))
                .unwrap_or_default();
            println!(
                "{mark} {:width$}  {:<10}  {:<10}  {}{default}{from}{problems}",
                r.name, r.version, source, r.root
            );
        }
        show_retired(home);
        support::warn_problems(&problems);
        // Naming a tree asks the data (which release ships its nvcc): a newer copy counts.
        let in_effect = home
            .facts_in_effect()
            .saying_refused(gpuenv_core::session::warn_refused);
        let facts = in_effect.facts();
        for (name, e) in &registry.toolchains {
            if let Some((new, why)) = renamed(name, e, facts) {
                let fix = match layered.upstream_of(name) {
                    Some(u) => format!("the admin of {} renames it there", u.display()),
                    None => format!(
                        "`gpuenv unlink {name} && gpuenv link {new} {}` renames it (pins of {} or {name} keep matching)",
                        ui::shell_word(&e.root),
                        Spec { kind: e.kind, version: e.release(facts), label: None }
                    ),
                };
                ui::info_with_hints(
                    format!("{name} is named after {why}, not the release it is part of: gpuenv names it {new} now (the old name still resolves)"),
                    [fix],
                );
            }
        }
        Ok(())
    }
}

/// The retired toolchains of this home, each on a line of its own with what keeps it.
fn show_retired(home: &Home) {
    let census = Census::default();
    for name in retired::names(home) {
        match retired::read(home, &name) {
            Ok(Some(r)) => {
                let users = census.users(home, &name, r.since);
                if let Some(why) = census.jobs_unknown_unsaid() {
                    ui::warn(format!("cannot ask SLURM which jobs run ({why})"));
                }
                ui::info(if users.none() {
                    format!("{name}: retired, nothing uses it any more; the next install or uninstall, or `gpuenv uninstall --reap`, deletes it")
                } else {
                    format!("{name}: retired, kept for {users}; `gpuenv uninstall --now {name}` deletes it at once")
                });
            }
            Ok(None) => {}
            Err(e) => ui::warn_with_hints(&e, e.hints()),
        }
    }
}

/// The name gpuenv gives `entry` now, and what the old one carried, when `name` has more
/// than the release (an older gpuenv named linked and discovered trees after nvcc's build
/// number: `cuda-13.0.88` for release 13.0), or when a discovered tree's name (gpuenv's own,
/// not one the user chose) carries less than the release the data now knows (`cuda-13.2`
/// for the 13.2.2 that nvcc 13.2.86 ships).
fn renamed(
    name: &str,
    entry: &gpuenv_core::toolchain::entry::Entry,
    facts: &gpuenv_core::facts::Facts,
) -> Option<(String, String)> {
    let spec: Spec = name.parse().ok()?;
    let release = entry.release(facts);
    let fits = spec.version.is_prefix_of(&release);
    if fits && (entry.source != Source::Discovered || spec.version == release) {
        return None;
    }
    let why = if fits {
        format!(
            "{} alone ({} {} from {})",
            spec.version, entry.kind, entry.version, entry.version_from
        )
    } else {
        format!("{} {} ({})", entry.kind, entry.version, entry.version_from)
    };
    let new = Spec {
        kind: entry.kind,
        version: release,
        label: spec.label,
    };
    Some((new.to_string(), why))
}

/// `gpuenv list --available <kind>`: the releases the first working source has.
fn list_available(
    ctx: &Context,
    kind: Kind,
    choice: Choice,
    manifest: Option<&str>,
    json: bool,
) -> Result<()> {
    let home = ctx.gpuenv_home()?;
    let fetcher = support::install_from::fetcher(ctx, &home, false)?;
    let sources: Vec<_> = support::install_from::sources(ctx, &fetcher, choice, manifest)?
        .into_iter()
        .filter(|s| s.serves(kind))
        .collect();
    if sources.is_empty() {
        bail!(
            Hinted::new(format!("--source {} has no {kind} releases", choice.name()))
                .hint(format!("gpuenv list --available {kind}"))
        );
    }
    let mut reasons = Vec::new();
    let mut found = None;
    for s in &sources {
        match s.available(kind).map_err(anyhow::Error::from) {
            Ok(v) => {
                found = Some((s.name(), v));
                break;
            }
            Err(e) => reasons.push(format!("  {}: {e:#}", s.name())),
        }
    }
    let Some((source, versions)) = found else {
        bail!(
            "no source could list the {kind} releases:\n{}",
            reasons.join("\n")
        );
    };
    let registry = Registry::load(&home)?;
    let installed = |v: &gpuenv_core::toolchain::Version| {
        registry.toolchains.contains_key(&format!("{kind}-{v}"))
    };
    if json {
        let rows: Vec<serde_json::Value> = versions
            .iter()
            .map(|v| serde_json::json!({"name": format!("{kind}-{v}"), "version": v.to_string(), "source": source, "installed": installed(v)}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    ui::info(format!("{kind} releases from the {source} source:"));
    for v in &versions {
        let mark = if installed(v) { "  (installed)" } else { "" };
        println!("{kind}-{v}{mark}");
    }
    Ok(())
}
