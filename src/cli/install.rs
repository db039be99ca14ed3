use super::named_arg::named;
use std::io::IsTerminal;

use anyhow::{bail, Result};
use indicatif::HumanBytes;

use gpuenv_core::context::{vars, Context};
use gpuenv_core::diagnostic::{Diagnostic, Hinted};
use gpuenv_core::driver;
use gpuenv_core::facts::sources;
use gpuenv_core::home::Home;
use gpuenv_core::toolchain::registry::{Entry, Registry, Source as Origin};
use gpuenv_core::toolchain::{Kind, Spec};
use gpuenv_core::ui;
use gpuenv_install::cache::Cache;
use gpuenv_install::fetch::{Fetcher, Net};
use gpuenv_install::hooks::Hooks;
use gpuenv_install::record;
use gpuenv_install::source::manifest::ManifestSource;
use gpuenv_install::source::nvidia::{self, Nvidia};
use gpuenv_install::source::pypi::{self, Pypi};
use gpuenv_install::source::{Choice, Source};
use gpuenv_install::{Profile, Progress, Selection};

/// Install toolchains: CUDA from NVIDIA's redist archives or wheels, anything from a gpuenv
/// manifest; with no SPEC, what the nearest gpuenv.toml pins
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpuenv install cuda-13.0         # the highest 13.0.x\n  gpuenv install                   # what this project's gpuenv.toml pins, if missing\n  gpuenv install cuda-12.4.1 --profile minimal --component libcublas\n  gpuenv install cuda-12.4.1 --component cuda_profiler_api   # add one to the installed toolkit"
)]
pub struct Args {
    /// What to install: cuda-13.0 (the highest 13.0.x), cuda-12.4.1, rocm-6.2 (with --manifest),
    /// or `torch` (a toolkit for the active Python's torch, reusing its CUDA wheels); none:
    /// the pins of the nearest gpuenv.toml that nothing registered matches
    #[arg(value_name = "SPEC")]
    specs: Vec<String>,
    /// Where from
    #[arg(long, value_parser = named::<Choice>(), default_value = "auto")]
    source: Choice,
    /// A gpuenv manifest (path or URL) describing the toolchains; implies --source manifest
    #[arg(long, value_name = "PATH|URL")]
    manifest: Option<String>,
    /// Install from the download cache only, without the network
    #[arg(long)]
    offline: bool,
    /// Exactly what gpuenv.lock names (each archive's sha256 checked), or fail naming the
    /// difference
    #[arg(long, conflicts_with_all = ["specs", "profile", "components"])]
    locked: bool,
    /// Which components of a CUDA release [default: default, or what the toolchain had
    /// when it was uninstalled]
    #[arg(long, value_parser = named::<Profile>())]
    profile: Option<Profile>,
    /// Add a component (libcublas, cuda_nvrtc, cupti, cuda_profiler_api, …); may be
    /// repeated. To an installed toolchain, only the component is added
    #[arg(long = "component", value_name = "NAME")]
    components: Vec<String>,
}

/// The download cache: `GPUENV_DOWNLOAD_CACHE`, else `$GPUENV_HOME/downloads`.
pub(super) fn cache(ctx: &Context, home: &Home) -> Result<Cache> {
    Ok(match ctx.absolute_dir(vars::GPUENV_DOWNLOAD_CACHE)? {
        Some(dir) => Cache::new(dir),
        None => Cache::new(home.downloads()),
    })
}

pub(super) fn fetcher(ctx: &Context, home: &Home, offline: bool) -> Result<Fetcher> {
    let mut fetcher = Fetcher::new(
        Net::from_ctx(ctx),
        cache(ctx, home)?,
        offline,
        Hooks::from_ctx(ctx),
    );
    fetcher.keep_archives = ctx.flag(vars::GPUENV_KEEP_ARCHIVES)?;
    Ok(fetcher)
}

/// The sources `choice` and `--manifest` select, in the order `auto` tries them.
pub(super) fn sources<'a>(
    ctx: &Context,
    fetcher: &'a Fetcher,
    choice: Choice,
    manifest: Option<&str>,
) -> Result<Vec<Box<dyn Source + 'a>>> {
    if let Some(m) = manifest {
        if !matches!(choice, Choice::Auto | Choice::Manifest) {
            bail!(Hinted::new(format!(
                "--manifest goes with --source manifest, not --source {choice:?}"
            ))
            .hint("drop one of them"));
        }
        let url = gpuenv_install::location(&ctx.cwd, m, false)?;
        return Ok(vec![Box::new(ManifestSource { fetcher, url })]);
    }
    let mirror = ctx
        .var_nonempty(vars::GPUENV_CUDA_MIRROR)
        .unwrap_or(nvidia::DEFAULT_MIRROR);
    let index = ctx
        .var_nonempty(vars::GPUENV_PYPI_URL)
        .or_else(|| ctx.var_nonempty(vars::PIP_INDEX_URL))
        .unwrap_or(pypi::DEFAULT_INDEX);
    let nvidia = || -> Result<Box<dyn Source + 'a>> {
        Ok(Box::new(Nvidia {
            fetcher,
            root: gpuenv_install::location(&ctx.cwd, mirror, true)?,
        }))
    };
    let pypi = || -> Result<Box<dyn Source + 'a>> {
        Ok(Box::new(Pypi {
            fetcher,
            index: gpuenv_install::location(&ctx.cwd, index, true)?,
        }))
    };
    Ok(match choice {
        Choice::Auto => sources::AUTO
            .iter()
            .map(|s| match s {
                sources::Source::Nvidia => nvidia(),
                sources::Source::Pypi => pypi(),
            })
            .collect::<Result<_>>()?,
        Choice::Nvidia => vec![nvidia()?],
        Choice::Pypi => vec![pypi()?],
        Choice::Manifest => {
            bail!(Hinted::new("--source manifest needs --manifest <path|url>")
                .hint("gpuenv install rocm-6.2 --manifest ./toolchains.toml"))
        }
    })
}

/// A spec's toolchain as it is registered now.
enum Existing {
    /// Not there (or a broken install): install it.
    Install,
    /// Installed, nothing asked to add: said so.
    Done,
    /// Components to add to it.
    AddTo(Box<Entry>),
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        if self.locked {
            return super::install_locked::run(
                ctx,
                self.source,
                self.manifest.as_deref(),
                self.offline,
            );
        }
        let home = ctx.gpuenv_home()?;
        if self.specs == ["torch"] {
            let store = super::store(ctx)?;
            gpuenv_install::writable_home(&home)?;
            let fetcher = fetcher(ctx, &home, self.offline)?;
            let progress =
                Progress::new(ui::level() >= ui::Level::Normal && std::io::stderr().is_terminal());
            return super::install_torch::run(ctx, &store, &fetcher, &progress);
        }
        let specs: Vec<Spec> = if self.specs.is_empty() {
            super::install_pinned::missing_pins(ctx, &Registry::load(&home)?)?
        } else {
            self.specs
                .iter()
                .map(|s| s.parse())
                .collect::<Result<_, _>>()?
        };
        if specs.is_empty() {
            return Ok(());
        }
        // Every install ends in linking the proxy (the store needs it): a missing one must
        // stop us before anything is downloaded, not after.
        let store = super::store(ctx)?;
        gpuenv_install::writable_home(&home)?;
        let fetcher = fetcher(ctx, &home, self.offline)?;
        let cache_was_new = !fetcher.cache.root.exists();
        let progress =
            Progress::new(ui::level() >= ui::Level::Normal && std::io::stderr().is_terminal());
        let ask = super::install_component::Ask {
            components: &self.components,
            choice: self.source,
            manifest: self.manifest.as_deref(),
        };
        let mut installed_any = false;
        for spec in &specs {
            if spec.label.is_some() && self.manifest.is_none() {
                bail!(Hinted::new(format!(
                    "{spec}: installed toolchains are named by their version alone (labels are for linked ones and manifests)"
                ))
                .hint(format!("gpuenv install {}-{}", spec.kind, spec.version)));
            }
            // An exact name that is installed needs no source at all, unless components
            // are to be added to it. Components go to the toolchain the spec selects here
            // (as a build would get it), not to a newer release a source has.
            let name = if self.components.is_empty() {
                spec.to_string()
            } else {
                selected(&home, spec)?
            };
            match self.existing(&home, &name)? {
                Existing::Done => continue,
                Existing::AddTo(entry) => {
                    installed_any |= super::install_component::run(
                        ctx, &store, &fetcher, &progress, &name, &entry, &ask,
                    )?;
                    continue;
                }
                Existing::Install => {}
            }
            let (sel, from) = self.selection(&home, spec);
            let mut sources = sources(ctx, &fetcher, self.source, self.manifest.as_deref())?;
            // Where it came from first: an offline reinstall needs no other source.
            if let Some(from) = from {
                sources.sort_by_key(|s| s.name() != from);
            }
            let plan = gpuenv_install::plan(&sources, spec, &sel)?;
            ui::verbose(format!(
                "{spec}: the {} source has {} ({})",
                plan.source,
                plan.name,
                plan.archives
                    .iter()
                    .map(|a| a.file_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            match self.existing(&home, &plan.name)? {
                Existing::Done => continue,
                Existing::AddTo(entry) => {
                    installed_any |= super::install_component::run(
                        ctx, &store, &fetcher, &progress, &plan.name, &entry, &ask,
                    )?;
                    continue;
                }
                Existing::Install => {}
            }
            let size: u64 = plan.archives.iter().filter_map(|a| a.size).sum();
            ui::info(format!(
                "installing {} from {} ({} archives{})",
                plan.name,
                plan.source,
                plan.archives.len(),
                if size > 0 {
                    format!(", {}", HumanBytes(size))
                } else {
                    String::new()
                }
            ));
            let started = std::time::Instant::now();
            let done =
                gpuenv_install::install_recorded(&store, &fetcher, &plan, Some(&sel), &progress)?;
            if done.already {
                self.already(&done.name, &done.root);
                continue;
            }
            installed_any = true;
            ui::info(format!(
                "installed {} ({} {}) in {} ({} downloaded, {:.1}s)",
                done.name,
                done.kind,
                done.version,
                done.root.display(),
                HumanBytes(done.fetched_bytes),
                started.elapsed().as_secs_f64()
            ));
            if done.kind == Kind::Cuda {
                if let Some(warning) = driver::read_proc_version(&ctx.system_root())
                    .and_then(|d| driver::too_old_for(&done.version, &d))
                {
                    ui::warn_with_hints(&warning, warning.hints());
                }
            }
            ui::info(format!(
                "use it in this project with `gpuenv pin {n}`, in this shell with `gpuenv use {n}`, or everywhere else with `gpuenv default {n}`",
                n = done.name
            ));
        }
        if installed_any {
            super::lock::refresh(ctx);
        }
        if installed_any && cache_was_new {
            ui::info(format!(
                "the download cache {} keeps each archive and its unpacked tree, so reinstalls need no network; `gpuenv cache size` shows how much that is, `gpuenv cache prune` frees it",
                fetcher.cache.root.display()
            ));
        }
        Ok(())
    }

    /// What to do with `name`, which may be registered already.
    fn existing(&self, home: &Home, name: &str) -> Result<Existing> {
        let registry = Registry::load(home)?;
        Ok(match registry.toolchains.get(name) {
            Some(e) if e.source == Origin::Installed && e.root.join("bin").is_dir() => {
                if self.components.is_empty() {
                    self.already(name, &e.root);
                    Existing::Done
                } else {
                    Existing::AddTo(Box::new(e.clone()))
                }
            }
            // Refused there, with what to do.
            Some(e) if !self.components.is_empty() && e.source != Origin::Installed => {
                Existing::AddTo(Box::new(e.clone()))
            }
            _ => Existing::Install,
        })
    }

    fn already(&self, name: &str, root: &std::path::Path) {
        ui::info(format!("{name} is already installed at {}", root.display()))
    }

    /// What to install of `spec`: what the command line says; else what the toolchain had
    /// when it was uninstalled (its kept record), with the source it came from; else the
    /// default profile.
    fn selection(&self, home: &Home, spec: &Spec) -> (Selection, Option<&'static str>) {
        if self.profile.is_some() || !self.components.is_empty() {
            let sel = Selection {
                profile: self.profile.unwrap_or_default(),
                components: self.components.clone(),
            };
            return (sel, None);
        }
        let Some((name, rec)) = record::kept_matching(&home.toolchains(), spec)
            .into_iter()
            .next()
        else {
            return (Selection::default(), None);
        };
        let sel = rec.selection();
        let with = if sel.components.is_empty() {
            String::new()
        } else {
            format!(" and {}", sel.components.join(", "))
        };
        ui::info(format!(
            "{spec}: the profile {}{with} that {name} had when it was uninstalled (`--profile` chooses otherwise)",
            rec.profile
        ));
        let from = ["nvidia", "pypi"].into_iter().find(|f| *f == rec.from);
        (sel, from)
    }
}

/// The registered toolchain `spec` selects, picked as resolution picks it (the highest
/// match), and said when it is not `spec` itself; `spec` as written when none matches.
fn selected(home: &Home, spec: &Spec) -> Result<String> {
    let registry = Registry::load(home)?;
    let Some((name, _)) = registry.find(spec) else {
        return Ok(spec.to_string());
    };
    if name != spec.to_string() {
        let matching: Vec<&str> = registry
            .toolchains
            .keys()
            .filter(|n| n.parse::<Spec>().is_ok_and(|n| spec.matches(&n)))
            .map(String::as_str)
            .collect();
        let of = if matching.len() > 1 {
            format!(", the highest of {}", matching.join(", "))
        } else {
            String::new()
        };
        ui::info(format!(
            "{spec} selects {name}{of}: the components go to it (name another to choose it)"
        ));
    }
    Ok(name.to_string())
}

/// `gpuenv list --available <kind>`: the releases the first working source has.
pub(super) fn list_available(
    ctx: &Context,
    kind: Kind,
    choice: Choice,
    manifest: Option<&str>,
    json: bool,
) -> Result<()> {
    let home = ctx.gpuenv_home()?;
    let fetcher = fetcher(ctx, &home, false)?;
    if kind == Kind::Rocm && manifest.is_none() {
        bail!(Hinted::new("ROCm releases come from a gpuenv manifest")
            .hint("gpuenv list --available rocm --manifest <path|url>"));
    }
    let sources = sources(ctx, &fetcher, choice, manifest)?;
    let mut reasons = Vec::new();
    let mut found = None;
    for s in &sources {
        match s.available(kind) {
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
