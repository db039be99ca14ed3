//! `gpuenv install`: toolchains from NVIDIA's archives or wheels or a manifest; with no spec,
//! what the nearest gpuenv.toml pins (the steps are `support::install_*`).

use crate::cli::support;
use std::io::IsTerminal;
use support::named_arg::named;

use anyhow::{bail, Result};
use indicatif::HumanBytes;

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::{Diagnostic, Hinted};
use gpuenv_core::driver;
use gpuenv_core::home::Home;
use gpuenv_core::toolchain::registry::{Entry, Registry, Source as Origin};
use gpuenv_core::toolchain::{Kind, Spec};
use gpuenv_core::ui;
use gpuenv_install::record;
use gpuenv_install::retire::Census;
use gpuenv_install::Choice;
use gpuenv_install::{Job, Profile, Progress, Selection};

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
        let installed = self.install(ctx);
        // An install writes the home: retired trees nothing uses any more go now.
        if let (Ok(()), Ok(home)) = (&installed, ctx.gpuenv_home()) {
            support::uninstall::reap(ctx, &home, &Census::default(), false);
        }
        installed
    }

    fn install(self, ctx: &Context) -> Result<()> {
        support::interrupt::say_what_is_left();
        if self.locked {
            return support::install_locked::run(
                ctx,
                self.source,
                self.manifest.as_deref(),
                self.offline,
            );
        }
        let home = ctx.gpuenv_home()?;
        if self.specs == ["torch"] {
            let store = support::store(ctx)?;
            gpuenv_install::writable_home(&home)?;
            let fetcher = support::install_from::fetcher(ctx, &home, self.offline)?;
            let progress =
                Progress::new(ui::level() >= ui::Level::Normal && std::io::stderr().is_terminal());
            let job = Job {
                store: &store,
                fetcher: &fetcher,
                progress: &progress,
            };
            return support::install_torch::run(ctx, &job, &self.components);
        }
        let mut lacking = None;
        let specs: Vec<Spec> = if self.specs.is_empty() {
            let layered = support::layered(ctx)?.1;
            lacking = support::install_pinned::lacking_devices(ctx, &layered);
            support::install_pinned::missing_pins(ctx, &layered)?
        } else {
            support::parse_specs_each(&self.specs)?
        };
        if let Some((name, entry, components)) = lacking {
            // A GPU pinned since the ROCm was installed: its device wheel, in place.
            ui::info(format!(
                "{name} lacks the device wheels of this project's rocm-arch pins: adding {}",
                components.join(", ")
            ));
            let store = support::store(ctx)?;
            let fetcher = support::install_from::fetcher(ctx, &home, self.offline)?;
            let progress =
                Progress::new(ui::level() >= ui::Level::Normal && std::io::stderr().is_terminal());
            let ask = support::install_component::Ask {
                components: &components,
                choice: self.source,
                manifest: self.manifest.as_deref(),
            };
            let job = Job {
                store: &store,
                fetcher: &fetcher,
                progress: &progress,
            };
            support::install_component::run(ctx, &job, &name, &entry, &ask)?;
        }
        if specs.is_empty() {
            return Ok(());
        }
        // Every install ends in linking the proxy (the store needs it): a missing one must
        // stop us before anything is downloaded, not after.
        let store = support::store(ctx)?;
        gpuenv_install::writable_home(&home)?;
        let fetcher = support::install_from::fetcher(ctx, &home, self.offline)?;
        let cache_was_new = !fetcher.cache.root.exists();
        let progress =
            Progress::new(ui::level() >= ui::Level::Normal && std::io::stderr().is_terminal());
        let job = Job {
            store: &store,
            fetcher: &fetcher,
            progress: &progress,
        };
        let ask = support::install_component::Ask {
            components: &self.components,
            choice: self.source,
            manifest: self.manifest.as_deref(),
        };
        let mut installed_any = false;
        let mut failed = Vec::new();
        for spec in &specs {
            match self.install_one(ctx, &home, &job, &ask, spec) {
                Ok(installed) => installed_any |= installed,
                Err(e) if specs.len() == 1 => return Err(e),
                // The others are installed all the same; each failure is said as it happens.
                Err(e) => {
                    let e = e.context(format!("cannot install {spec}"));
                    support::print_error(&e);
                    failed.push((
                        spec.to_string(),
                        gpuenv_install::is_network_failure(e.as_ref()),
                    ));
                }
            }
        }
        if installed_any {
            support::lock::refresh(ctx);
        }
        // Only after a download: archives read from a local mirror (`file://`, a directory)
        // never needed the network in the first place.
        let downloaded = fetcher.fetched.load(std::sync::atomic::Ordering::Relaxed) > 0;
        if installed_any && cache_was_new && downloaded {
            ui::info(format!(
                "the download cache {} keeps each archive and its unpacked tree, so reinstalls need no network; `gpuenv cache size` shows how much that is, `gpuenv cache prune` frees it",
                fetcher.cache.root.display()
            ));
        }
        if failed.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = failed.iter().map(|(n, _)| n.as_str()).collect();
        support::print_error(&anyhow::anyhow!(
            "{} of {} could not be installed: {} (each said why above)",
            failed.len(),
            specs.len(),
            names.join(", ")
        ));
        // The network's own status only when it is the one cause.
        let code = if failed.iter().all(|(_, network)| *network) {
            support::status::NETWORK
        } else {
            2
        };
        Err(support::Exit(code).into())
    }

    /// Installs one spec (or adds components to it). True when something was installed.
    fn install_one(
        &self,
        ctx: &Context,
        home: &Home,
        job: &Job,
        ask: &support::install_component::Ask,
        spec: &Spec,
    ) -> Result<bool> {
        let prerelease = spec.kind == Kind::Rocm
            && spec
                .label
                .as_deref()
                .is_some_and(gpuenv_install::prerelease_label);
        if spec.label.is_some() && self.manifest.is_none() && !prerelease {
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
            selected(home, spec)?
        };
        match self.existing(home, &name)? {
            Existing::Done => return Ok(false),
            Existing::AddTo(entry) => {
                return support::install_component::run(ctx, job, &name, &entry, ask);
            }
            Existing::Install => {}
        }
        let (mut sel, from) = self.selection(home, spec);
        if spec.kind == Kind::Rocm {
            // Device code only for the GPUs pinned here: a full set is many GB.
            for c in support::install_pinned::pinned_rocm_devices(ctx) {
                if !sel.components.contains(&c) {
                    ui::verbose(format!("{spec}: {c} for this project's rocm-arch pin"));
                    sel.components.push(c);
                }
            }
        }
        let mut sources = support::install_from::sources(
            ctx,
            job.fetcher,
            self.source,
            self.manifest.as_deref(),
        )?;
        // Where it came from first: an offline reinstall needs no other source.
        if let Some(from) = from {
            sources.sort_by_key(|s| s.name() != from);
        }
        let plan = match gpuenv_install::plan(&sources, spec, &sel) {
            Ok(plan) => plan,
            Err(e) => return self.installed_instead(home, spec, e.into()),
        };
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
        match self.existing(home, &plan.name)? {
            Existing::Done => return Ok(false),
            Existing::AddTo(entry) => {
                return support::install_component::run(ctx, job, &plan.name, &entry, ask);
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
        let done = job.install(&plan, Some(&sel))?;
        if done.already {
            self.already(&done.name, &done.root);
            return Ok(false);
        }
        support::interrupt::installed_one();
        let fetched = match done.fetched_bytes {
            0 => {
                "nothing downloaded: every archive was in the cache or on this machine".to_string()
            }
            n => format!("{} downloaded", HumanBytes(n)),
        };
        ui::info(format!(
            "installed {} ({} {}) in {} ({fetched}, {:.1}s)",
            done.name,
            done.kind,
            done.version,
            done.root.display(),
            started.elapsed().as_secs_f64()
        ));
        if done.kind == Kind::Cuda {
            let facts = home
                .facts_in_effect()
                .saying_refused(gpuenv_core::session::warn_refused);
            if let Some(warning) = driver::read_proc_version(&ctx.system_root())
                .and_then(|d| driver::too_old_for(facts.facts(), &done.version, &d))
            {
                ui::warn_with_hints(&warning, warning.hints());
            }
        }
        ui::info(support::install_advice::after(ctx, home, &done.name));
        Ok(true)
    }

    /// No source could plan `spec`, but offline a registered toolchain it selects is what
    /// the user has: said, and nothing to do. Otherwise the error.
    fn installed_instead(&self, home: &Home, spec: &Spec, err: anyhow::Error) -> Result<bool> {
        let registry = Registry::load(home)?;
        match registry.find(spec) {
            Some((name, entry)) if self.offline && self.components.is_empty() => {
                ui::info(format!(
                    "{spec}: {name} is installed at {} and selects it; offline, no newer release was looked for",
                    entry.root.display()
                ));
                Ok(false)
            }
            _ => Err(err),
        }
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
        let from = ["nvidia", "pypi", "amd"]
            .into_iter()
            .find(|f| *f == rec.from);
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
