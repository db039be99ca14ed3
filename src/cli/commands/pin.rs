//! `gpuenv pin SPEC...`: pins for this directory in gpuenv.toml, comments and order kept.

use crate::cli::support;
use std::path::Path;

use anyhow::{bail, Context as _, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::arch::{self, CudaArch, Problem, Verdict};
use gpuenv_core::facts::{release_name, Facts};
use gpuenv_core::guard;
use gpuenv_core::home::Home;
use gpuenv_core::install_hint;
use gpuenv_core::plan::native;
use gpuenv_core::project::{self, PinEdit, PinValue};
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::toolchain::{Kind, Spec, Version};
use gpuenv_core::trust;
use gpuenv_core::user_file::{self, UserFile};
use gpuenv_core::{fsutil, ui};

/// Pin toolchains for this directory in gpuenv.toml (comments and order are kept)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Specs such as cuda-12.4 or rocm-6.2 (at most one per kind), or `torch`: the toolkit
    /// made for the active Python's torch (`cuda = "torch"`, `rocm = "torch"` for a ROCm build)
    #[arg(required_unless_present = "arch")]
    specs: Vec<String>,
    /// Target architectures, comma-separated: 8.0,8.6,9.0+PTX (CUDA) or gfx90a,gfx942 (ROCm);
    /// `native` is this machine's GPUs
    #[arg(long, value_delimiter = ',')]
    arch: Option<Vec<String>>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let (home, layered, facts) = support::session(ctx)?.into_parts();
        let (registry, facts) = (layered.registry, facts.facts());
        let (torch, specs): (Vec<String>, Vec<String>) =
            self.specs.into_iter().partition(|s| s == "torch");
        let specs = support::parse_specs(&specs)?;
        let mut edit = PinEdit {
            specs: specs.clone(),
            ..Default::default()
        };
        if !torch.is_empty() {
            edit.torch = vec![torch_kind(ctx)];
            if specs.iter().any(|s| edit.torch.contains(&s.kind)) {
                bail!(
                    "pin either `torch` or a {} version, not both",
                    edit.torch[0]
                );
            }
        }
        let mut cuda_archs: Vec<CudaArch> = Vec::new();
        let mut rocm_archs: Vec<arch::RocmTarget> = Vec::new();
        if let Some(mut arch) = self.arch {
            if arch.iter().any(|a| a == "native") {
                arch.retain(|a| a != "native");
                arch.extend(native_archs(ctx)?);
            }
            let (rocm, cuda): (Vec<String>, Vec<String>) = arch
                .into_iter()
                .partition(|a| a.to_ascii_lowercase().starts_with("gfx"));
            let mut cuda = cuda
                .iter()
                .map(|a| arch::cuda_pin(a))
                .collect::<Result<Vec<_>, _>>()?;
            let mut rocm = rocm
                .iter()
                .map(|a| arch::rocm_pin(a))
                .collect::<Result<Vec<_>, _>>()?;
            arch::dedup(&mut cuda);
            arch::dedup(&mut rocm);
            let shown = |v: Vec<String>| (!v.is_empty()).then_some(v);
            edit.cuda_arch = shown(cuda.iter().map(CudaArch::to_string).collect());
            edit.rocm_arch = shown(rocm.iter().map(|t| t.to_string()).collect());
            cuda_archs = cuda;
            rocm_archs = rocm;
        }

        // Edit the file in this directory, whichever of the two names it has.
        let path = project::FILE_NAMES
            .iter()
            .map(|n| ctx.cwd.join(n))
            .find(|p| p.is_file())
            .unwrap_or_else(|| ctx.cwd.join(project::FILE_NAMES[0]));
        // The whole read, check and write runs under the file's lock (`user_file`), so a
        // concurrent `pin` sees this one's result and keeps it.
        let outcome = user_file::edit(
            UserFile {
                path: &path,
                within: &ctx.cwd,
                scope: "the project",
                kind: gpuenv_core::outside::Kind::ToolchainFile,
            },
            user_file::Check::TOML,
            |before: &str| -> Result<Option<String>> {
                // A broken file is reported, never overwritten.
                let existing = project::parse(&path, before)?;
                for spec in &specs {
                    check_known(facts, spec, &registry)?;
                }
                if !cuda_archs.is_empty() {
                    // The toolkit the arch list will go with: the one pinned now, else the file's.
                    let cuda = specs
                        .iter()
                        .find(|s| s.kind == Kind::Cuda)
                        .cloned()
                        .or_else(|| match &existing.pin(Kind::Cuda)?.value {
                            PinValue::Spec(s) => Some(s.clone()),
                            PinValue::Torch => None,
                        });
                    check_archs(facts, &cuda_archs, cuda.as_ref(), &registry)?;
                }
                if !rocm_archs.is_empty() {
                    let rocm = specs
                        .iter()
                        .find(|s| s.kind == Kind::Rocm)
                        .cloned()
                        .or_else(|| match &existing.pin(Kind::Rocm)?.value {
                            PinValue::Spec(s) => Some(s.clone()),
                            PinValue::Torch => None,
                        });
                    check_rocm_archs(&rocm_archs, rocm.as_ref(), &registry)?;
                }
                let after = project::edit(before, &edit)
                    .with_context(|| format!("cannot edit {}", path.display()))?;
                if let Err(e) = project::parse(&path, &after) {
                    bail!(
                        "editing {} would make it invalid ({e}); it was left unchanged",
                        path.display()
                    );
                }
                Ok(Some(after))
            },
        )?;
        let (before, after) = (outcome.before, outcome.after);
        let was_trusted =
            trust::is_trusted(&registry, &path, &fsutil::content_hash(before.as_bytes()));
        if was_trusted {
            keep_trusted(&home, &path, &before, &after)?;
        }

        for kind in &edit.torch {
            say_torch_pin(ctx, &registry, *kind, &path);
        }
        for spec in &specs {
            match registry.find(spec) {
                Some((name, _)) => ui::info(format!(
                    "pinned {} = {} in {} (now {name})",
                    spec.kind,
                    spec.version,
                    path.display()
                )),
                None => {
                    ui::warn_with_hints(
                        format!(
                            "pinned {spec} in {}, but no registered toolchain matches it yet",
                            path.display()
                        ),
                        [install_hint::install_command(spec)
                            .unwrap_or_else(|| install_hint::install_or_link(spec))],
                    );
                }
            }
        }
        for (kind, list) in [(Kind::Cuda, &edit.cuda_arch), (Kind::Rocm, &edit.rocm_arch)] {
            if let Some(list) = list {
                ui::info(format!(
                    "pinned {kind}-arch = {:?} in {}",
                    list,
                    path.display()
                ));
            }
        }
        // A file in HOME (or above it) governs every directory below without a file of its
        // own: what `gpuenv default` is for.
        if let Some(home_dir) = ctx.path_var(gpuenv_core::context::vars::HOME) {
            let above = home_dir == ctx.cwd || ctx.cwd == std::path::Path::new("/");
            if above && !specs.is_empty() {
                ui::warn_with_hints(
                    format!(
                        "{} is in {}: it pins every project below it that has no gpuenv.toml of its own",
                        path.display(),
                        if home_dir == ctx.cwd { "your home directory" } else { "the root directory" }
                    ),
                    [format!(
                        "for a default everywhere, `gpuenv default {}` (and remove {}); for a project, pin in its directory",
                        specs.iter().map(ToString::to_string).collect::<Vec<_>>().join(","),
                        path.display()
                    )],
                );
            }
        }
        if specs.iter().any(|s| s.kind == Kind::Cuda) || edit.torch.contains(&Kind::Cuda) {
            support::stale_trees::warn(ctx);
        }
        support::lock::refresh(ctx);
        // An index gpuenv wrote into pyproject.toml follows a CUDA pin that moved.
        if let Some(spec) = specs.iter().find(|s| s.kind == Kind::Cuda) {
            let mut session = support::session(ctx)?;
            // A pin nothing registered matches yet still moves the index, by its release.
            let active = support::resolve_here(&mut session, &[], None).unwrap_or_default();
            let release = match active.get(Kind::Cuda) {
                Some(t) => Some((
                    t.entry.version.major(),
                    t.entry.version.minor().unwrap_or(0),
                )),
                None => spec.version.minor().map(|m| (spec.version.major(), m)),
            };
            if let Some(release) = release {
                // A Jetson gpuenv knows no wheels for: the index stays, as for any refusal.
                if let Ok(platform) = session.platform() {
                    support::pyproject::follow_pin(
                        session.facts(),
                        &active,
                        &ctx.cwd,
                        release,
                        platform,
                    );
                }
            }
        }
        Ok(())
    }
}

/// gpuenv's own edit, asked for by the user, keeps a trusted file trusted: the record of
/// the bytes it had moves to the bytes it has now (an edit from outside still needs
/// `gpuenv trust`).
/// What a new `kind = "torch"` pin picks here: the registered toolkit, else why nothing
/// resolves it yet (no torch visible, a torch not built for `kind`, nothing installed for
/// it) and what would; a pin that resolves nothing is never written without a word.
fn say_torch_pin(ctx: &Context, registry: &Registry, kind: Kind, path: &Path) {
    let pinned = format!("pinned {kind} = \"torch\" in {}", path.display());
    let torch = match guard::locate_torch(ctx, None) {
        Ok(torch) => torch,
        Err(why) => {
            return ui::warn_with_hints(
                format!("{pinned}, but no torch is visible here, so nothing resolves it: {why}"),
                [format!(
                    "activate the Python environment that has torch (or set VIRTUAL_ENV) where you build; or pin the {kind} release instead (`gpuenv pin {kind}-<version>`)"
                )],
            )
        }
    };
    let Some(spec) = guard::matching::torch_spec(kind, &torch) else {
        return ui::warn_with_hints(
            format!(
                "{pinned}, but the torch at {} (torch {}) is not built for {kind}, so nothing resolves it",
                torch.dir.display(),
                torch.label()
            ),
            [format!("install a torch built for {kind}, or pin a {kind} release instead")],
        );
    };
    match guard::matching::registered(registry, kind, &torch, project::TorchCheck::Minor) {
        Some(m) => ui::info(format!(
            "{pinned}: the toolkit torch {} was built for (now {})",
            torch.label(),
            m.name
        )),
        None => ui::warn_with_hints(
            format!(
                "{pinned}: torch {} was built for {spec}, and no registered toolchain matches it yet",
                torch.label()
            ),
            [match kind {
                Kind::Cuda => install_hint::install_torch_command(&[]),
                Kind::Rocm => install_hint::installs_it(&spec),
            }],
        ),
    }
}

fn keep_trusted(home: &Home, path: &Path, before: &str, after: &str) -> Result<()> {
    let (old, new) = (
        fsutil::content_hash(before.as_bytes()),
        fsutil::content_hash(after.as_bytes()),
    );
    Registry::update(home, |r| {
        for t in r.trusted.iter_mut() {
            if t.path == path && t.sha256 == old {
                t.sha256.clone_from(&new);
            }
        }
        Ok::<_, anyhow::Error>(())
    })
    .with_context(|| format!("{} was edited but stays untrusted", path.display()))
}

/// This machine's GPUs as arch pins; an error naming what was asked when there are none.
fn native_archs(ctx: &Context) -> Result<Vec<String>> {
    let found = native::native_archs(ctx);
    if found.cuda.is_empty() && found.rocm.is_empty() {
        bail!(Hinted::new(format!(
            "--arch native: this machine shows no GPU ({})",
            found.asked.join("; ")
        ))
        .hint("name the targets instead, e.g. `gpuenv pin --arch 8.0,9.0+PTX` (NVIDIA) or `gpuenv pin --arch gfx90a` (AMD)"));
    }
    ui::info(format!(
        "--arch native: this machine's GPUs are {}",
        [found.cuda.clone(), found.rocm.clone()].concat().join(", ")
    ));
    Ok([found.cuda, found.rocm].concat())
}

/// A CUDA pin that matches nothing registered and no release gpuenv knows of is refused
/// (`cuda-99`); one that only is not installed yet is accepted with a warning later.
fn check_known(facts: &Facts, spec: &Spec, registry: &Registry) -> Result<()> {
    if spec.kind != Kind::Cuda || registry.find(spec).is_some() {
        return Ok(());
    }
    let majors = || facts.releases.iter().map(|r| r.release.0);
    let (lo, hi) = (majors().min().unwrap_or(0), majors().max().unwrap_or(0));
    if (lo..=hi).contains(&spec.version.major()) {
        return Ok(());
    }
    bail!(Hinted::new(format!(
        "{spec} matches no registered toolchain and no CUDA release (gpuenv knows {lo}.x to {hi}.x); gpuenv.toml was left unchanged"
    ))
    .hint("`gpuenv list --available cuda` shows the releases; a toolkit gpuenv does not know yet can be registered first with `gpuenv link <name> <path>`"));
}

/// Arch entries the pinned toolkit cannot target: refused when the toolkit is registered
/// (its version is known), a warning when it is only a spec or newer than the table.
fn check_archs(
    facts: &Facts,
    archs: &[CudaArch],
    cuda: Option<&Spec>,
    registry: &Registry,
) -> Result<()> {
    let (version, known): (Option<Version>, bool) = match cuda {
        Some(spec) => match registry.find(spec) {
            Some((_, e)) => (Some(e.version.clone()), true),
            None => (Some(spec.version.clone()), false),
        },
        None => (None, false),
    };
    for a in archs {
        let sm = a.sm_name();
        let Some(version) = &version else {
            if arch::releases_for(facts, a).is_none() {
                ui::warn(format!(
                    "no CUDA release gpuenv knows of can target {a} ({sm})"
                ));
            }
            continue;
        };
        let Verdict::Row {
            release,
            exact,
            targets,
            problem: Some(problem),
        } = arch::can_build(facts, version, a)
        else {
            continue;
        };
        let rel = release_name(release);
        let which = match arch::releases_for(facts, a) {
            Some((first, last)) => format!(
                "CUDA {} to {} can target {sm}",
                release_name(first),
                release_name(last)
            ),
            None => format!("no CUDA release gpuenv knows of targets {sm}"),
        };
        let why = match problem {
            Problem::NoSm => format!(
                "its nvcc has sm_{} to sm_{}",
                targets[0],
                targets[targets.len() - 1]
            ),
            Problem::SuffixTooNew { from } => format!(
                "{} targets need CUDA {} or newer",
                a.suffix.kind(),
                release_name(from)
            ),
        };
        let problem = format!("CUDA {version} cannot target {a} ({sm}): {why}; {which}");
        if known && exact {
            bail!(
                Hinted::new(format!("{problem}; gpuenv.toml was left unchanged")).hint(format!(
                    "pin archs CUDA {rel} supports, or a toolkit that targets {sm}"
                ))
            );
        }
        ui::warn(problem);
    }
    Ok(())
}

/// ROCm targets the pinned, registered ROCm has no device library for: hipcc cannot compile
/// for them, so they are refused. Nothing is said when the ROCm is not registered yet or
/// its device libraries are not where gpuenv looks.
fn check_rocm_archs(
    targets: &[arch::RocmTarget],
    rocm: Option<&Spec>,
    registry: &Registry,
) -> Result<()> {
    let Some((name, entry)) = rocm.and_then(|s| registry.find(s)) else {
        return Ok(());
    };
    // A tree of AMD's wheels compiles for every ISA, but its libraries' kernels are in one
    // device wheel per ISA: said, not refused.
    if let Some(carried) = arch::device_wheels(&entry.root) {
        let lacking: Vec<&str> = targets
            .iter()
            .map(|t| t.processor.as_str())
            .filter(|p| !carried.contains(*p))
            .collect();
        if !lacking.is_empty() {
            let has: Vec<&str> = carried.iter().map(String::as_str).collect();
            let add: Vec<String> = lacking
                .iter()
                .map(|p| format!("--component device-{p}"))
                .collect();
            ui::info(format!(
                "{name} carries the device code of rocBLAS, hipBLASLt, MIOpen… for {} only, not {}: hipcc compiles for them, those libraries have no kernels for them; `gpuenv install {name} {}` adds them",
                if has.is_empty() { "no GPU".to_string() } else { has.join(", ") },
                lacking.join(", "),
                add.join(" ")
            ));
        }
    }
    let Some(libs) = arch::device_libs(&entry.root) else {
        return Ok(());
    };
    let missing = libs.missing(targets);
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = missing.iter().map(|t| t.processor.clone()).collect();
    let has: Vec<&str> = libs.processors.iter().map(String::as_str).collect();
    bail!(Hinted::new(format!(
        "{name} (ROCm {}) has no device library for {} (no oclc_isa_version_*.bc for it in {}): hipcc cannot compile for it; gpuenv.toml was left unchanged",
        entry.version,
        names.join(", "),
        libs.dir.display()
    ))
    .hint(format!(
        "pin targets {name} has device libraries for ({}), or a newer ROCm",
        has.join(", ")
    )))
}

/// The kind a `torch` pin is for: ROCm for a ROCm build of the active Python's torch, else
/// CUDA (also when no torch is found yet: the pin resolves once one is).
fn torch_kind(ctx: &Context) -> Kind {
    match gpuenv_core::guard::locate_torch(ctx, None) {
        Ok(t) if t.hip.is_some() => Kind::Rocm,
        _ => Kind::Cuda,
    }
}
