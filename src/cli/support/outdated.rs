//! Which installed toolkits have a newer patch release at their source (`outdated`, and
//! `update`, which installs it with the same components).

use anyhow::Result;

use crate::cli::support;
use support::named_arg::named;

use std::collections::BTreeMap;

use gpuenv_core::context::Context;
use gpuenv_core::home::Home;
use gpuenv_core::toolchain::registry::{Entry, Registry, Source as Origin};
use gpuenv_core::toolchain::{Kind, Version};
use gpuenv_core::ui;
use gpuenv_install::Choice;
use gpuenv_install::{Profile, Selection};

/// Where newer releases are looked up.
#[derive(Debug, Clone, clap::Args)]
pub struct From {
    /// Where from
    #[arg(long, value_parser = named::<Choice>(), default_value = "auto")]
    pub source: Choice,
    /// A gpuenv manifest (path or URL) listing the releases; implies --source manifest
    #[arg(long, value_name = "PATH|URL")]
    pub manifest: Option<String>,
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
    let specs = support::parse_specs_each(names)?;
    let fetcher = support::install_from::fetcher(ctx, home, false)?;
    let sources =
        support::install_from::sources(ctx, &fetcher, from.source, from.manifest.as_deref())?;
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
                name: name.to_string(),
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
pub fn selection_of(entry: &Entry) -> Selection {
    let text = gpuenv_core::outside::read_text(
        &entry.root.join("version.json"),
        gpuenv_core::outside::Kind::VersionFile,
    )
    .unwrap_or_default();
    let mut components: Vec<String> = Vec::new();
    let keys = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text)
        .map(|m| m.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    for c in keys.iter().filter_map(|k| gpuenv_install::component(k)) {
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
