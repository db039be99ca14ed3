//! `gpuenv install --locked`: install exactly what gpuenv.lock names, or fail naming the
//! difference. URLs in the lock are never fetched (a lock from a clone is not trusted): each
//! release is planned again from the configured source it came from, and every archive's
//! sha256 must be the locked one. The download cache is tried first, without the network.

use std::io::IsTerminal;

use anyhow::Result;

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::home::Home;
use gpuenv_core::store::Store;
use gpuenv_core::toolchain::registry::{Registry, Source as Origin};
use gpuenv_core::toolchain::Spec;
use gpuenv_core::ui;
use gpuenv_install::lock::{archive_differences, inspect, Found, Locked};
use gpuenv_install::record::{self, Record};
use gpuenv_install::Choice;
use gpuenv_install::Progress;

use super::lock::load_here;
use super::Exit;

pub fn run(ctx: &Context, choice: Choice, manifest: Option<&str>, offline: bool) -> Result<()> {
    let lock = load_here(ctx)?;
    let (home, registry) = super::registry(ctx)?;
    let mut problems = Vec::new();
    for l in &lock.toolchains {
        problems.extend(one(ctx, &home, &registry, l, choice, manifest, offline)?);
    }
    if problems.is_empty() {
        return Ok(());
    }
    let mut err = Hinted::new(format!(
        "cannot install exactly what {} names:\n  {}",
        lock.path.display(),
        problems.join("\n  ")
    ));
    for hint in super::lock::install_torch_hints(&lock, &registry) {
        err = err.hint(hint);
    }
    let err = err.hint("`gpuenv uninstall <name>` a toolchain that differs and run this again, or `gpuenv lock` to record what is here now");
    super::print_error(&err.into());
    Err(Exit(1).into())
}

/// `install --locked` for one locked toolchain: nothing when it is registered as locked,
/// an install when it is not registered. Each way it is not what the lock says, after
/// where the lock says it.
pub fn one(
    ctx: &Context,
    home: &Home,
    registry: &Registry,
    l: &Locked,
    choice: Choice,
    manifest: Option<&str>,
    offline: bool,
) -> Result<Vec<String>> {
    let diffs = if let Some(entry) = registry.toolchains.get(&l.name) {
        let (files, rec) = inspect(entry)?;
        let diffs = l.differences(&Found {
            name: &l.name,
            entry,
            files: &files,
            record: rec.as_ref(),
        });
        if diffs.is_empty() {
            ui::info(format!("{} is registered as locked", l.name));
        }
        diffs
    } else {
        match (&l.source, &l.record) {
            (Origin::Linked | Origin::Discovered, _) => vec![format!(
                "{} at {} in the lock, not registered here (`gpuenv link {} <root>` registers a tree you have checked)",
                l.source.as_str(),
                l.root.as_deref().map(|r| ui::printable(&r.to_string_lossy()).into_owned()).unwrap_or_default(),
                l.name
            )],
            // Made of a venv's wheels, which no lock can bring.
            (Origin::Installed, _) if l.install_torch_command().is_some() => vec![
                "made by `gpuenv install torch` from a Python environment's wheels, which no lock can bring; not registered here".into(),
            ],
            (Origin::Installed, None) => vec![
                "the lock does not say which archives made it (no `from`): `gpuenv install` it, then `gpuenv lock` again".to_string(),
            ],
            (Origin::Installed, Some(rec)) => install_one(ctx, home, l, rec, choice, manifest, offline)?,
        }
    };
    Ok(diffs
        .into_iter()
        .map(|d| format!("{}: {}: {d}", l.at, l.name))
        .collect())
}

/// Plans the locked release again from its source; installs it when every archive is the
/// locked one. The differences, if any.
fn install_one(
    ctx: &Context,
    home: &Home,
    l: &Locked,
    rec: &Record,
    choice: Choice,
    manifest: Option<&str>,
    offline: bool,
) -> Result<Vec<String>> {
    let choice = match (choice, manifest, rec.from.as_str()) {
        (Choice::Auto, None, "nvidia") => Choice::Nvidia,
        (Choice::Auto, None, "pypi") => Choice::Pypi,
        (Choice::Auto, None, "amd") => Choice::Amd,
        (Choice::Auto, None, _) => {
            return Ok(vec![format!(
                "it came from a gpuenv manifest: give it with `gpuenv install --locked --manifest <path|url>`"
            )])
        }
        (c, ..) => c,
    };
    let spec: Spec = l.name.parse()?;
    let sel = rec.selection();
    let store: Store = super::store(ctx)?;
    gpuenv_install::writable_home(home)?;
    let progress =
        Progress::new(ui::level() >= ui::Level::Normal && std::io::stderr().is_terminal());
    let user_offline = offline;
    let attempt = |offline: bool| -> Result<Vec<String>> {
        let fetcher = super::install_from::fetcher(ctx, home, offline)?;
        let sources = super::install_from::sources(ctx, &fetcher, choice, manifest)?;
        let plan = gpuenv_install::plan(&sources, &spec, &sel)?;
        if plan.name != l.name {
            return Ok(vec![format!(
                "the {} source has {}, not the locked {}",
                plan.source, plan.name, l.name
            )]);
        }
        let diffs = archive_differences(&rec.archives, &Record::of(&plan, &sel).archives);
        if !diffs.is_empty() {
            return Ok(diffs
                .into_iter()
                .map(|d| format!("the {} source: {d}", plan.source))
                .collect());
        }
        let cached = plan.archives.iter().all(|a| fetcher.cache.holds(&a.sha256));
        if offline && !cached && !user_offline {
            // Only a try of the cache first, and it lacks some: the network is next.
            anyhow::bail!("not every archive is in the download cache");
        }
        ui::info(format!(
            "installing {} from {} as locked ({} archives{})",
            l.name,
            plan.source,
            plan.archives.len(),
            if cached { ", from the cache" } else { "" }
        ));
        let job = gpuenv_install::Job {
            store: &store,
            fetcher: &fetcher,
            progress: &progress,
        };
        job.install(&plan, Some(&sel))?;
        super::interrupt::installed_one();
        Ok(Vec::new())
    };
    let diffs = if offline {
        attempt(true)?
    } else {
        attempt(true).or_else(|e| {
            ui::verbose(format!("{}: not from the cache alone ({e:#})", l.name));
            attempt(false)
        })?
    };
    if !diffs.is_empty() {
        return Ok(diffs);
    }
    let root = home.toolchains().join(&l.name);
    let files = record::files_digest(&root)?;
    if l.files.as_str() != files {
        return Ok(vec![format!(
            "installed from the locked archives, but its file list differs from the locked one (a different gpuenv assembled it?)"
        )]);
    }
    ui::info(format!("installed {} as locked", l.name));
    Ok(Vec::new())
}
