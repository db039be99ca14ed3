//! Resolution: which toolchain of each kind is active for a directory and an environment,
//! and why. Order, highest first: `+spec` / `gpuenv run`, `GPUENV_TOOLCHAIN`, the nearest
//! toolchain file, the default.

// Errors are returned once per command, never in a loop: their size does not matter.
#![allow(clippy::result_large_err)]

use std::fmt;
use std::path::{Path, PathBuf};

use crate::context::{vars, Context};
use crate::diagnostic::Diagnostic;
use crate::plan::guard::{matching, LocateError, TorchVersion};
use crate::plan::install_hint;
use crate::project::{Foreign, Location, PinValue, ProjectError, ProjectFile};
use crate::store::toolchain::registry::{Entry, Registry};
use crate::store::toolchain::{Kind, NameError, Spec};

/// What chose a toolchain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// `+cuda-11.8` on a shim, or `gpuenv run cuda-11.8 -- …`.
    Override(Spec),
    /// `GPUENV_TOOLCHAIN` (what `gpuenv use` sets).
    EnvVar(Spec),
    /// A pin in a toolchain file.
    File(Location, Spec),
    /// `gpuenv default`.
    Default(Spec),
    /// `cuda = "torch"`: the version the active Python's torch was built for.
    Torch(Location, Spec, PathBuf),
    /// The proxy was invoked as a view's `bin/<tool>`.
    View(PathBuf),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Override(s) => write!(f, "overridden by `{s}` on the command line"),
            Reason::EnvVar(s) => write!(f, "set by GPUENV_TOOLCHAIN ({s})"),
            Reason::File(at, s) => write!(f, "pinned to {} in {at}", s.version),
            Reason::Default(s) => write!(f, "the default ({s}, set by `gpuenv default`)"),
            Reason::Torch(at, s, torch) => write!(
                f,
                "pinned to torch in {at}: {} is built for {} {}",
                torch.display(),
                s.kind,
                s.version
            ),
            Reason::View(path) => write!(f, "invoked as {}", path.display()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    pub name: String,
    pub entry: Entry,
    pub reason: Reason,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ActiveSet {
    /// At most one per kind, CUDA first.
    pub toolchains: Vec<Active>,
    /// The toolchain file in effect, if any (its arch pins apply; what only a trusted file
    /// may do, once trusted).
    pub project: Option<ProjectFile>,
    /// Nearer toolchain files not applied because they may be someone else's.
    pub passed_over: Vec<Foreign>,
    /// The host compiler for the active CUDA toolchain, once the edge has probed PATH
    /// (`attach_host_compiler`).
    pub host_compiler: Option<crate::plan::host_compiler::Choice>,
}

impl ActiveSet {
    pub fn get(&self, kind: Kind) -> Option<&Active> {
        self.toolchains.iter().find(|t| t.entry.kind == kind)
    }

    /// Decides the host compiler of the active CUDA toolchain, if there is one.
    pub fn attach_host_compiler(
        &mut self,
        facts: &crate::facts::Facts,
        probe: &dyn crate::plan::host_compiler::Probe,
    ) {
        let Some(cuda) = self.get(Kind::Cuda) else {
            return;
        };
        // Only a trusted file's: an untrusted one never names what nvcc runs.
        let pin = self.project.as_ref().and_then(|p| p.host_compiler());
        let pin = pin.as_ref().map(|(cmd, at)| (cmd.as_str(), *at));
        let choice = crate::plan::host_compiler::choose_in(
            facts,
            &cuda.name,
            &cuda.entry.version,
            Some(&cuda.entry.include_dir),
            pin,
            probe,
        );
        self.host_compiler = Some(choice);
    }
}

/// Finds the torch of the active Python; called only for a `"torch"` pin.
pub type TorchLocator<'a> = &'a dyn Fn() -> Result<TorchVersion, LocateError>;

/// What resolution looks at besides the registry.
#[derive(Clone)]
pub struct Request<'a> {
    pub cwd: &'a Path,
    /// `+spec` or `gpuenv run` specs.
    pub overrides: &'a [Spec],
    /// The value of `GPUENV_TOOLCHAIN`.
    pub env_toolchain: Option<&'a str>,
    pub torch: TorchLocator<'a>,
}

impl<'a> Request<'a> {
    /// The request for the context's directory and `GPUENV_TOOLCHAIN`, with `overrides`
    /// on top.
    pub fn new(ctx: &'a Context, overrides: &'a [Spec], torch: TorchLocator<'a>) -> Self {
        Request {
            cwd: &ctx.cwd,
            overrides,
            env_toolchain: ctx.var_nonempty(vars::GPUENV_TOOLCHAIN),
            torch,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Project(#[from] ProjectError),
    // `reason` is not a `source`: its text is already in this message, once.
    #[error("{origin}: {reason}")]
    BadSpec { origin: String, reason: NameError },
    #[error("{origin} names two {kind} toolchains ({first} and {second}): name at most one of each kind")]
    TwoOfAKind {
        origin: String,
        kind: Kind,
        first: Spec,
        second: Spec,
    },
    #[error("{spec} is not installed: {origin} asks for it, and no registered toolchain matches")]
    NotRegistered {
        spec: Spec,
        origin: String,
        /// The toolchain file that pins it, when nobody trusted that file: an automatic
        /// install does not act on it.
        untrusted_file: Option<PathBuf>,
        /// What the site's store says about it (retired there; the release it has instead).
        store: Option<String>,
    },
    #[error("{at}: {kind} = \"torch\", but {source}")]
    TorchNotFound {
        at: Location,
        kind: Kind,
        source: LocateError,
    },
    #[error("{at}: {kind} = \"torch\", but the torch at {} (torch {}) is not built for {kind}", torch.dir.display(), torch.label())]
    TorchNotBuiltFor {
        at: Location,
        kind: Kind,
        torch: TorchVersion,
    },
}

impl Diagnostic for ResolveError {
    fn hints(&self) -> Vec<String> {
        match self {
            ResolveError::Project(e) => e.hints(),
            ResolveError::BadSpec { .. } | ResolveError::TwoOfAKind { .. } => Vec::new(),
            ResolveError::NotRegistered {
                store: Some(store), ..
            } => vec![store.clone()],
            ResolveError::NotRegistered { spec, .. } => vec![format!(
                "{} (`gpuenv list` shows what is registered)",
                install_hint::install_or_link(spec)
            )],
            ResolveError::TorchNotFound { .. } => vec![
                "activate the Python environment that has torch (or set VIRTUAL_ENV / CONDA_PREFIX), or pin a version instead".into(),
            ],
            ResolveError::TorchNotBuiltFor { kind, .. } => vec![format!(
                "install a torch built for {kind}, or pin a version instead"
            )],
        }
    }
}

/// Parses a comma-separated list of specs, at most one per kind, as in `GPUENV_TOOLCHAIN`;
/// `origin` names where it came from in messages.
pub fn parse_specs(origin: &str, text: &str) -> Result<Vec<Spec>, ResolveError> {
    let mut specs: Vec<Spec> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let spec: Spec = part.parse().map_err(|reason| ResolveError::BadSpec {
            origin: origin.to_string(),
            reason,
        })?;
        if let Some(first) = specs.iter().find(|s| s.kind == spec.kind) {
            return Err(ResolveError::TwoOfAKind {
                origin: origin.to_string(),
                kind: spec.kind,
                first: first.clone(),
                second: spec,
            });
        }
        specs.push(spec);
    }
    Ok(specs)
}

/// Resolves every kind for `req`.
pub fn resolve(req: &Request, registry: &Registry) -> Result<ActiveSet, ResolveError> {
    resolve_kinds(req, registry, &Kind::ALL)
}

/// Resolves only `kinds` (a proxy for nvcc need not resolve ROCm, nor fail on its pin).
pub fn resolve_kinds(
    req: &Request,
    registry: &Registry,
    kinds: &[Kind],
) -> Result<ActiveSet, ResolveError> {
    let env_specs = match req.env_toolchain {
        Some(v) => parse_specs(&format!("GPUENV_TOOLCHAIN={}", crate::ui::value(v)), v)?,
        None => Vec::new(),
    };
    let here = crate::project::trust::in_effect(req.cwd, registry)?;
    let project = here.file;
    let defaults = parse_specs("the default in settings.toml", &registry.default.join(","))?;

    let mut set = ActiveSet::default();
    for &kind in kinds {
        let of_kind = |specs: &[Spec]| specs.iter().find(|s| s.kind == kind).cloned();
        let mut from_file = None;
        let (spec, reason, origin) = if let Some(s) = of_kind(req.overrides) {
            (s.clone(), Reason::Override(s.clone()), format!("`+{s}`"))
        } else if let Some(s) = of_kind(&env_specs) {
            (
                s.clone(),
                Reason::EnvVar(s.clone()),
                format!(
                    "GPUENV_TOOLCHAIN={}",
                    crate::ui::value(req.env_toolchain.unwrap_or_default())
                ),
            )
        } else if let Some(pin) = project.as_ref().and_then(|p| p.pin(kind)) {
            from_file = project.as_ref();
            match &pin.value {
                PinValue::Spec(s) => (
                    s.clone(),
                    Reason::File(pin.at.clone(), s.clone()),
                    format!("the pin at {}", pin.at),
                ),
                PinValue::Torch => {
                    let at = pin.at.clone();
                    let torch = (req.torch)().map_err(|source| ResolveError::TorchNotFound {
                        at: at.clone(),
                        kind,
                        source,
                    })?;
                    let Some(spec) = matching::torch_spec(kind, &torch) else {
                        return Err(ResolveError::TorchNotBuiltFor { at, kind, torch });
                    };
                    let origin = format!(
                        "the pin {kind} = \"torch\" at {at} (torch {} in {})",
                        torch.label(),
                        torch.dir.display()
                    );
                    if let Some((name, entry)) = matching::for_torch(registry, &spec, &torch.dir) {
                        set.toolchains.push(Active {
                            name: name.to_string(),
                            entry: entry.clone(),
                            reason: Reason::Torch(at, spec, torch.dir),
                        });
                        continue;
                    }
                    (spec.clone(), Reason::Torch(at, spec, torch.dir), origin)
                }
            }
        } else if let Some(s) = of_kind(&defaults) {
            (
                s.clone(),
                Reason::Default(s.clone()),
                "the default (`gpuenv default`)".to_string(),
            )
        } else {
            continue;
        };
        let (name, entry) = registry
            .find(&spec)
            .ok_or_else(|| ResolveError::NotRegistered {
                spec: spec.clone(),
                origin,
                untrusted_file: from_file
                    .filter(|f| !crate::project::trust::trusted_as_is(registry, f))
                    .map(|f| f.path.clone()),
                store: install_hint::from_store(registry, &spec),
            })?;
        set.toolchains.push(Active {
            name: name.to_string(),
            entry: entry.clone(),
            reason,
        });
    }
    set.project = project;
    set.passed_over = here.passed_over;
    Ok(set)
}
