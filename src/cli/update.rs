//! `gpuenv update [NAME]`: the newest patch release of each installed toolkit's minor
//! (cuda-12.4.0 -> cuda-12.4.1) from its source, with the same components; the default is
//! re-pointed to it and the old one removed (unless `--keep`).

use std::collections::BTreeMap;
use std::io::IsTerminal;

use anyhow::Result;

use super::named_arg::named;

use gpuenv_core::context::Context;
use gpuenv_core::home::Home;
use gpuenv_core::toolchain::registry::{Entry, Registry, Source as Origin};
use gpuenv_core::toolchain::{Kind, Spec, Version};
use gpuenv_core::ui;
use gpuenv_install::record;
use gpuenv_install::source::{components, Choice};
use gpuenv_install::{Profile, Progress, Selection};

/// Install newer patch releases of installed toolkits (cuda-12.4.0 -> 12.4.1) and re-point
/// the default to them
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpuenv outdated              # what would change\n  gpuenv update                # every installed toolkit\n  gpuenv update cuda-12.4.0 --keep"
)]
pub struct Args {
    /// Installed toolkits to update (names or specs); default: all of them
    #[arg(value_name = "NAME")]
    names: Vec<String>,
    /// Keep the old release installed (by default it is uninstalled once the new one works)
    #[arg(long)]
    keep: bool,
    #[command(flatten)]
    from: From,
}

/// Where newer releases are looked up.
#[derive(Debug, Clone, clap::Args)]
pub struct From {
    /// Where from
    #[arg(long, value_parser = named::<Choice>(), default_value = "auto")]
    source: Choice,
    /// A gpuenv manifest (path or URL) listing the releases; implies --source manifest
    #[arg(long, value_name = "PATH|URL")]
    manifest: Option<String>,
}

/// An installed toolkit with a newer patch release at its source.
pub struct Outdated {
    pub name: String,
    pub entry: Entry,
    pub newer: Version,
    pub source: &'static str,
}

/// The installed toolkits `names` select (all when empty) that have a newer release of the
/// same major.minor. Kinds no source can list are reported and skipped.
pub fn outdated(
    ctx: &Context,
    home: &Home,
    names: &[String],
    from: &From,
) -> Result<Vec<Outdated>> {
    let registry = Registry::load(home)?;
    let specs = super::parse_specs_each(names)?;
    let fetcher = super::install_from::fetcher(ctx, home, false)?;
    let sources =
        super::install_from::sources(ctx, &fetcher, from.source, from.manifest.as_deref())?;
    let mut releases: BTreeMap<Kind, Option<(&'static str, Vec<Version>)>> = BTreeMap::new();
    let mut out = Vec::new();
    for (name, entry) in &registry.toolchains {
        let wanted = specs.is_empty()
            || specs.iter().any(|s| {
                s.to_string() == *name
                    || (s.kind == entry.kind && s.version.is_prefix_of(&entry.version))
            });
        if entry.source != Origin::Installed || !wanted {
            continue;
        }
        // Its release is the one torch's own wheels are: a plain newer toolkit would not
        // match torch, and replacing it would drop the links into the venv.
        if gpuenv_core::install_hint::by_install_torch(name) {
            let say = format!(
                "{name} follows the torch it was made for: after upgrading torch, `gpuenv install torch` makes the toolkit that matches it"
            );
            if specs.is_empty() {
                ui::verbose(say);
            } else {
                ui::info(say);
            }
            continue;
        }
        let listed = releases.entry(entry.kind).or_insert_with(|| {
            let mut reasons = Vec::new();
            for s in &sources {
                match s.available(entry.kind).map_err(anyhow::Error::from) {
                    Ok(v) => return Some((s.name(), v)),
                    Err(e) => reasons.push(format!("{}: {e:#}", s.name())),
                }
            }
            ui::warn(format!(
                "cannot look up newer {} releases ({})",
                entry.kind,
                reasons.join("; ")
            ));
            None
        });
        let Some((source, versions)) = listed else {
            continue;
        };
        let minor = entry.version.truncated(2);
        let newest = versions
            .iter()
            .filter(|v| minor.is_prefix_of(v) && **v > entry.version)
            .max();
        ui::verbose(format!(
            "{name}: {} {} has {}",
            source,
            minor,
            newest.map_or("nothing newer".to_string(), |v| format!("{v}"))
        ));
        if let Some(v) = newest {
            out.push(Outdated {
                name: name.clone(),
                entry: entry.clone(),
                newer: v.clone(),
                source,
            });
        }
    }
    Ok(out)
}

/// The components the old tree was installed with (its version.json lists them, under the
/// names of the source that installed it: `cuda_runtime` from a wheel), so the update brings
/// the same ones from whichever source has the release; the default profile when it does
/// not say. Names no source knows (`cuda`, the release itself) are left out.
fn selection_of(entry: &Entry) -> Selection {
    let text = gpuenv_core::outside::read_text(
        &entry.root.join("version.json"),
        gpuenv_core::outside::Kind::VersionFile,
    )
    .unwrap_or_default();
    let mut components: Vec<String> = Vec::new();
    let keys = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text)
        .map(|m| m.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    for c in keys.iter().filter_map(|k| components::lookup(k)) {
        if !components.iter().any(|have| have == c.redist) {
            components.push(c.redist.to_string());
        }
    }
    if components.is_empty() {
        return Selection::default();
    }
    Selection {
        profile: Profile::Minimal,
        components,
    }
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        // An install links the proxy (the store needs it): check before downloading anything.
        let store = super::store(ctx)?;
        let found = outdated(ctx, &home, &self.names, &self.from)?;
        if found.is_empty() {
            ui::info("every installed toolkit is on the newest patch release of its minor");
            return Ok(());
        }
        let fetcher = super::install_from::fetcher(ctx, &home, false)?;
        let sources = super::install_from::sources(
            ctx,
            &fetcher,
            self.from.source,
            self.from.manifest.as_deref(),
        )?;
        let progress =
            Progress::new(ui::level() >= ui::Level::Normal && std::io::stderr().is_terminal());
        for o in found {
            let spec = Spec {
                kind: o.entry.kind,
                version: o.newer.clone(),
                label: None,
            };
            ui::info(format!("updating {} to {spec} (from {})", o.name, o.source));
            // The old tree's record says its selection; older trees, their version.json.
            let sel = record::read(&o.entry.root)
                .map(|r| r.selection())
                .unwrap_or_else(|| selection_of(&o.entry));
            let plan = gpuenv_install::plan(&sources, &spec, &sel)?;
            let job = gpuenv_install::Job {
                store: &store,
                fetcher: &fetcher,
                progress: &progress,
            };
            let done = job.install(&plan, Some(&sel))?;
            let repointed = Registry::update(&home, |r| {
                let mut n = 0;
                for d in r.default.iter_mut().filter(|d| **d == o.name) {
                    *d = done.name.clone();
                    n += 1;
                }
                Ok::<_, anyhow::Error>(n)
            })?;
            if repointed > 0 {
                ui::info(format!("the default is now {} (was {})", done.name, o.name));
            }
            if self.keep {
                ui::info(format!(
                    "installed {}; kept {} (`gpuenv uninstall {}` removes it)",
                    done.name, o.name, o.name
                ));
            } else {
                super::uninstall::Args::named(&o.name).run(ctx)?;
                ui::info(format!("{} replaces {}", done.name, o.name));
            }
        }
        Ok(())
    }
}
