//! The gpuenv proxy. Installed as `$GPUENV_HOME/shims/<tool>` and as each view's
//! `bin/nvcc` / `bin/hipcc`: it finds the toolchain (the view it was invoked from, or the
//! active one for this directory), refuses a PyTorch extension build that does not match
//! torch, sets the toolchain's environment and execs the real tool in this process.

// Errors are returned once per call, never in a loop: their size does not matter.
#![allow(clippy::result_large_err)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::context::{vars, Context, NoHome};
use crate::diagnostic::Diagnostic;
use crate::guard::PolicyError;
use crate::home::Home;
use crate::project::ProjectError;
use crate::resolve::ResolveError;
use crate::resolve::{self, Active, ActiveSet, Reason, Request};
use crate::toolchain::registry::Registry;
use crate::toolchain::registry::StateError;
use crate::toolchain::NameError;
use crate::toolchain::{upstream, Kind, Spec};
use crate::{auto_install, build_cache, env, guard, host_compiler, project, trust, ui};

pub mod args;
mod check;
mod process;

pub use process::main;

/// Guard against infinite proxy recursion: a toolchain whose real tool leads back here.
const MAX_DEPTH: u32 = 3;
const DEPTH_VAR: &str = crate::context::vars::GPUENV_SHIM_DEPTH;

/// The guard refused the build (exit 1); every other error exits 2.
#[derive(Debug, thiserror::Error)]
#[error("the torch guard refused this build")]
pub struct Refused;

/// Why the proxy cannot run the tool, with the ways out.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// Exit status 1: the refusal is already printed.
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error("in `{tool} +{spec}`")]
    BadOverride {
        tool: String,
        spec: String,
        source: NameError,
    },
    #[error(transparent)]
    Home(#[from] NoHome),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Project(#[from] ProjectError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error("cannot run {}", program.display())]
    Exec {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("`{tool} +{spec}` names a {} toolchain, but {tool} is the {kind} compiler", spec.kind)]
    WrongKind {
        tool: String,
        spec: Spec,
        kind: Kind,
    },
    #[error("gpuenv's {tool} proxy was started {depth} times in a row: the toolchain's bin/{tool} leads back to a gpuenv proxy")]
    Loop { tool: String, depth: u32 },
    #[error("{} is the gpuenv proxy itself, not a real {tool}", path.display())]
    IsProxy { path: PathBuf, tool: String },
    /// No host compiler the toolkit accepts (it names the limit and the package).
    #[error(transparent)]
    HostCompiler(#[from] crate::host_compiler::HostCompilerProblem),
    /// `GPUENV_AUTO_INSTALL` found no gpuenv to install a missing pin with (`beside` is the
    /// directory it looked in first, the proxy's own).
    #[error("{spec} is not installed ({origin} asks for it), and GPUENV_AUTO_INSTALL found no gpuenv to install it with: none in {} or on PATH", beside.display())]
    NoInstaller {
        spec: Spec,
        origin: String,
        beside: PathBuf,
    },
    /// The `gpuenv install` it ran did not install.
    #[error(transparent)]
    Installing(#[from] auto_install::InstallFailed),
    /// `looked` says what resolution found: no file, or a file without such a pin.
    #[error("no toolchain is active for {tool} here (no GPUENV_TOOLCHAIN, {looked}, no default)")]
    NoToolchain { tool: String, looked: String },
    #[error("{tool} is not in the active toolchain {active}")]
    NotInToolchain { tool: String, active: String },
    #[error(transparent)]
    BuildCache(#[from] build_cache::BadVar),
}

impl Diagnostic for ProxyError {
    fn hints(&self) -> Vec<String> {
        vec![match self {
            ProxyError::Home(e) => return e.hints(),
            ProxyError::State(e) => return e.hints(),
            ProxyError::Project(e) => return e.hints(),
            ProxyError::Resolve(e) => return e.hints(),
            ProxyError::HostCompiler(e) => return e.hints(),
            ProxyError::BuildCache(e) => return e.hints(),
            ProxyError::Installing(e) => return e.hints(),
            // Already printed in full by the guard.
            ProxyError::Refused(_) => return Vec::new(),
            ProxyError::NoInstaller { spec, beside, .. } => {
                return vec![
                    format!(
                        "put gpuenv on PATH, or link it beside the proxy as {}",
                        beside.join("gpuenv").display()
                    ),
                    format!("or install it yourself: `gpuenv install {spec}`"),
                ]
            }
            ProxyError::BadOverride { tool, .. } => format!(
                "name a toolchain as <kind>-<version>[-<label>]: `{tool} +cuda-12.4 …` (`gpuenv list` shows what is registered)"
            ),
            ProxyError::Policy(_) => "set GPUENV_TORCH_CHECK to minor, major or off, or unset it to use the toolchain file's `[torch] check` (default minor)".into(),
            ProxyError::Exec { .. } => "the toolchain's files may have moved or gone: `gpuenv list` shows each toolchain's root, `gpuenv doctor` checks the active ones".into(),
            ProxyError::WrongKind { tool, spec, kind } => format!(
                "`{} +{spec} …` runs the {} compiler; `{tool} +{kind}-<version> …` picks another {kind} toolchain",
                spec.kind.compiler(),
                spec.kind
            ),
            ProxyError::Loop { tool, .. } => format!("a toolchain must be linked at its real root, not at a gpuenv view or shims dir; check `gpuenv list` and `gpuenv which {tool}`"),
            ProxyError::IsProxy { .. } => "link the toolchain at its real root (`gpuenv list` shows the roots)".into(),
            ProxyError::NoToolchain { tool, .. } => format!("`gpuenv pin <spec>` pins one for this directory, `gpuenv default <spec>` sets one everywhere, `{tool} +<spec> …` picks one for this call"),
            ProxyError::NotInToolchain { tool, .. } => format!("`gpuenv list` shows the registered toolchains; `{tool} +<spec> …` runs it from another one"),
        }]
    }
}

/// What the proxy runs in its own place: the real tool, its arguments, and the
/// environment changes (`None` removes the variable), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// What changes in the environment (`None` = unset); values are bytes, passed on as they are.
    pub env: Vec<(String, Option<OsString>)>,
}

/// Decides what `argv` (argv[0] included) runs: the toolchain (the view the proxy was
/// started from, else `+spec`, else resolution for `ctx`), the torch guard's verdict, and
/// the toolchain's environment. `self_exe` is the proxy binary, never a real tool.
pub fn plan(argv: Vec<OsString>, ctx: &Context, self_exe: &Path) -> Result<Exec, ProxyError> {
    let mut args = argv;
    let argv0 = PathBuf::from(if args.is_empty() {
        OsString::new()
    } else {
        args.remove(0)
    });
    let tool = argv0
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();

    let depth: u32 = ctx.var(DEPTH_VAR).and_then(|d| d.parse().ok()).unwrap_or(0);
    if depth >= MAX_DEPTH {
        return Err(ProxyError::Loop { tool, depth });
    }

    // `nvcc +cuda-11.8 …` picks the toolchain for this call.
    let mut overrides = Vec::new();
    if let Some(spec) = args
        .first()
        .and_then(|a| a.to_str())
        .and_then(|a| a.strip_prefix('+'))
    {
        let spec: Spec = spec.parse().map_err(|source| ProxyError::BadOverride {
            tool: tool.clone(),
            spec: spec.to_string(),
            source,
        })?;
        overrides.push(spec);
        args.remove(0);
    }
    // The compiler driver of one kind never runs from a toolchain of another.
    let compiler_of = Kind::ALL.into_iter().find(|k| k.compiler() == tool);
    if let (Some(spec), Some(kind)) = (overrides.first(), compiler_of) {
        if spec.kind != kind {
            return Err(ProxyError::WrongKind {
                tool,
                spec: spec.clone(),
                kind,
            });
        }
    }

    let invoked = invoked_path(&argv0, &tool, ctx);
    let from_view = match invoked.as_deref().filter(|_| overrides.is_empty()) {
        Some(invoked) => view_of(invoked, ctx)?,
        None => None,
    };
    let (home, registry, active) = match from_view {
        Some((home, registry, name)) => {
            // <home>/views/<name>/bin/<tool>: this view's toolchain, without resolving.
            let entry = registry.toolchains[&name].clone();
            let active = ActiveSet {
                toolchains: vec![Active {
                    name,
                    entry,
                    reason: Reason::View(invoked.clone().unwrap_or_default()),
                }],
                project: None,
                host_compiler: None,
            };
            (home, registry, active)
        }
        None => {
            let mut home = ctx.gpuenv_home()?;
            let own = Registry::load(&home)?;
            // An upstream's toolchains resolve too; an unusable upstream is only a warning.
            let layered = upstream::layered(&mut home, own);
            for w in &layered.warnings {
                ui::warn(w);
            }
            let registry = layered.registry;
            // `+spec` names the one toolchain the tool may come from.
            let kinds: Vec<Kind> = match (overrides.first(), compiler_of) {
                (Some(spec), _) => vec![spec.kind],
                (None, Some(kind)) => vec![kind],
                (None, None) => Kind::ALL.to_vec(),
            };
            let torch = || guard::locate_torch(ctx, None);
            let req = Request::new(ctx, &overrides, &torch);
            let mut registry = registry;
            let mut installs = 0;
            let active = loop {
                match resolve::resolve_kinds(&req, &registry, &kinds) {
                    Ok(active) => break active,
                    Err(e) => {
                        let Some((spec, origin)) = auto_install::missing(&e)
                            .filter(|_| auto_install::enabled(ctx))
                            .filter(|_| installs < auto_install::MAX_INSTALLS)
                        else {
                            return Err(e.into());
                        };
                        let Some(gpuenv) = auto_install::find_gpuenv(ctx, self_exe) else {
                            return Err(ProxyError::NoInstaller {
                                spec: spec.clone(),
                                origin: origin.to_string(),
                                beside: self_exe.parent().unwrap_or(Path::new("/")).to_path_buf(),
                            });
                        };
                        auto_install::install(ctx, &gpuenv, spec, origin)?;
                        installs += 1;
                        registry = Registry::load(&home)?;
                    }
                }
            };
            (home, registry, active)
        }
    };
    // A newer copy of the data is looked for (one lstat per home) only if a fact is asked.
    crate::facts::set_candidates(std::iter::once(home.root.clone()).chain(home.upstreams.clone()));

    let Some((toolchain, real)) = active
        .toolchains
        .iter()
        .find_map(|t| Some((t, t.entry.tool(&tool)?)))
    else {
        if let Some(program) = system_program(&tool, &active, &registry) {
            // The distribution's own program, as it was before gpuenv: nothing chose a
            // toolchain of its kind here, so its environment is not gpuenv's to set.
            return Ok(Exec {
                program,
                args,
                env: vec![(DEPTH_VAR.to_string(), Some((depth + 1).to_string().into()))],
            });
        }
        return Err(no_tool(&tool, &active, ctx));
    };
    if same_file(&real, self_exe) {
        return Err(ProxyError::IsProxy { path: real, tool });
    }

    let mut active = active.clone();
    let kind = toolchain.entry.kind;
    let toolchain = toolchain.clone();
    if tool == kind.compiler() {
        check::guard(ctx, &registry, &toolchain, &active, &args)?;
        args = compiler_args(ctx, &home, kind, &mut active, args)?;
    }

    let trusted = trust::env_allowed(&registry, active.project.as_ref());
    let mut change = env::plan(&active, &registry, &home, trusted);
    crate::module::count_loaded_as_foreign(&mut change, ctx.var(vars::LMFILES));
    let applied = change.apply(&|k| ctx.var_os(k).map(ToOwned::to_owned));
    let mut env: Vec<(String, Option<OsString>)> = applied.after.into_iter().collect();
    env.push((DEPTH_VAR.to_string(), Some((depth + 1).to_string().into())));
    let exec = Exec {
        program: real,
        args,
        env,
    };
    if tool == kind.compiler() {
        return through_cache(exec, ctx, &registry, &active);
    }
    Ok(exec)
}

/// The compile, run through the build cache in effect if there is one. A cache that is on
/// but not installed is a warning, and the compile runs uncached.
fn through_cache(
    exec: Exec,
    ctx: &Context,
    registry: &Registry,
    active: &ActiveSet,
) -> Result<Exec, ProxyError> {
    // A view's proxy does not resolve, but the project's setting still applies (unless
    // the variable, which wins over it, is set).
    let var = ctx.var(vars::GPUENV_BUILD_CACHE).filter(|v| !v.is_empty());
    let found;
    let file = match &active.project {
        Some(p) => Some(p),
        None if var.is_some() => None,
        None => {
            found = project::find(&ctx.cwd)
                .ok()
                .flatten()
                .and_then(|p| project::load(&p).ok());
            found.as_ref()
        }
    };
    let choice = build_cache::choose(var, file, registry)?;
    match build_cache::locate(&choice, ctx.var_os("PATH")) {
        Ok(Some(cache)) => Ok(build_cache::wrap(exec, &cache)),
        Ok(None) => Ok(exec),
        Err(warning) => {
            ui::warn_with_hints(&warning, warning.hints());
            Ok(exec)
        }
    }
}

/// The compiler's command line with what the project and machine add (`args::add`): the
/// host compiler for nvcc, the project's arch pins. A view's proxy did not resolve, but the
/// project's pins still apply to it.
fn compiler_args(
    ctx: &Context,
    home: &Home,
    kind: Kind,
    active: &mut ActiveSet,
    args: Vec<OsString>,
) -> Result<Vec<OsString>, ProxyError> {
    if args::is_query(&args) {
        return Ok(args);
    }
    if active.project.is_none() {
        active.project = project::find(&ctx.cwd)?
            .map(|p| project::load(&p))
            .transpose()?;
    }
    if kind == Kind::Cuda {
        // g++'s version, asked once per compiler file (host_compiler::cache).
        active.attach_host_compiler(&host_compiler::cache::CachedProbe::new(ctx, home));
    }
    let user_ccbin = host_compiler::user_choice(|k| ctx.var_nonempty(k)).is_some();
    let choice = active.host_compiler.as_ref().filter(|_| !user_ccbin);
    let own_ccbin = args
        .iter()
        .filter_map(|a| a.to_str())
        .any(|a| a.starts_with("-ccbin") || a.starts_with("--compiler-bindir"));
    let allowed = args
        .iter()
        .any(|a| a == "-allow-unsupported-compiler" || a == "--allow-unsupported-compiler");
    if let Some(problem) = choice
        .filter(|_| !own_ccbin && !allowed)
        .and_then(|c| c.problem())
    {
        return Err(ProxyError::HostCompiler(problem));
    }
    let no_arch = Vec::new();
    let file = active.project.as_ref();
    let additions = args::Additions {
        ccbin: choice.and_then(|c| c.compiler()),
        cuda_arch: file.map_or(&no_arch, |f| &f.cuda_arch),
        rocm_arch: file.map_or(&no_arch, |f| &f.rocm_arch),
    };
    Ok(args::add(kind, &args, &additions))
}

/// A registered system toolchain's own program `tool` (Debian's `/usr/bin/rocminfo`),
/// when no toolchain of its kind is active.
fn system_program(tool: &str, active: &ActiveSet, registry: &Registry) -> Option<PathBuf> {
    registry
        .toolchains
        .values()
        .filter(|e| e.system.is_some() && active.get(e.kind).is_none())
        .find_map(|e| e.tool(tool))
}

/// The path this proxy was started as: argv[0] if it has a `/`, else the first `tool` on
/// PATH, which is what the shell ran.
fn invoked_path(argv0: &Path, tool: &str, ctx: &Context) -> Option<PathBuf> {
    if argv0.as_os_str().to_string_lossy().contains('/') {
        Some(ctx.cwd.join(argv0))
    } else {
        guard::find_on_path(ctx.var_os("PATH"), tool)
    }
}

/// If `invoked` is `<home>/views/<name>/bin/<tool>` (also through a link to the view) and
/// `<name>` is registered there: that home, its registry and the name.
fn view_of(invoked: &Path, ctx: &Context) -> Result<Option<(Home, Registry, String)>, StateError> {
    let Some(view_dir) = invoked
        .parent()
        .and_then(|bin| bin.canonicalize().ok())
        .and_then(|bin| bin.parent().map(Path::to_path_buf))
    else {
        return Ok(None);
    };
    let Some((mut home, name)) = Home::of_view(&view_dir) else {
        return Ok(None);
    };
    if !home.settings().is_file() {
        return Ok(None);
    }
    let mut registry = Registry::load(&home)?;
    if !registry.toolchains.contains_key(&name) {
        // The user's own view of an upstream's toolchain.
        home.upstreams = upstream::from_context(ctx).0;
        registry = upstream::layered(&mut home, registry).registry;
    }
    Ok(registry
        .toolchains
        .contains_key(&name)
        .then_some((home, registry, name)))
}

/// Whether `a` and `b` are one file (links followed): two `stat`s, where comparing their
/// canonical paths costs a `readlink` per path component.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs_err::metadata(a), fs_err::metadata(b)) {
        (Ok(x), Ok(y)) => (x.dev(), x.ino()) == (y.dev(), y.ino()),
        _ => false,
    }
}

fn no_tool(tool: &str, active: &ActiveSet, ctx: &Context) -> ProxyError {
    if active.toolchains.is_empty() {
        let file = project::find(&ctx.cwd).ok().flatten();
        let looked = match file {
            Some(f) => format!("{} pins no toolchain of this kind", f.display()),
            None => format!("no gpuenv.toml from {} up", ctx.cwd.display()),
        };
        return ProxyError::NoToolchain {
            tool: tool.to_string(),
            looked,
        };
    }
    let names: Vec<String> = active
        .toolchains
        .iter()
        .map(|t| format!("{} ({})", t.name, t.reason))
        .collect();
    ProxyError::NotInToolchain {
        tool: tool.to_string(),
        active: names.join(", "),
    }
}

#[cfg(test)]
mod tests;
