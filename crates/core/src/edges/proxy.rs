//! The gpuenv proxy. Installed as `$GPUENV_HOME/shims/<tool>` and as each view's
//! `bin/nvcc` / `bin/hipcc`: it finds the toolchain (the view it was invoked from, or the
//! active one for this directory), refuses a PyTorch extension build that does not match
//! torch, sets the toolchain's environment and execs the real tool in this process.

// Errors are returned once per call, never in a loop: their size does not matter.
#![allow(clippy::result_large_err)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::context::{vars, Context};
use crate::diagnostic::Diagnostic;
use crate::edges::session::{Door, Purpose, Session};
use crate::facts::InEffect;
use crate::plan::auto_install::{self, RunGpuenv};
use crate::plan::guard::PolicyError;
use crate::plan::resolve::ResolveError;
use crate::plan::resolve::{Active, ActiveSet, Reason};
use crate::plan::{build_cache, guard, host_compiler, stale};
use crate::project::{trust, ProjectError};
use crate::store::home::Home;
use crate::store::locate::NoHome;
use crate::store::toolchain::registry::Registry;
use crate::store::toolchain::registry::StateError;
use crate::store::toolchain::upstream;
use crate::store::toolchain::NameError;
use crate::store::toolchain::{Kind, Spec};
use crate::store::StoreError;
use crate::ui;

mod archs;
pub mod args;
mod audience;
mod check;
mod jit;
mod process;

pub use crate::plan::exec::Exec;
pub use process::main;

/// Guard against infinite proxy recursion: a toolchain whose real tool leads back here.
const MAX_DEPTH: u32 = 3;
const DEPTH_VAR: &str = crate::context::vars::GPUENV_SHIM_DEPTH;

/// The guard refused the build (exit 1, the refusal printed); every other error exits 2.
#[derive(Debug, thiserror::Error)]
#[error("the torch guard refused this build")]
pub struct Refused(pub Box<guard::Refusal>);

/// Why the proxy cannot run the tool, with the ways out.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// Exit status 1: `main` prints the refusal itself.
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
    /// The build directory was configured for another toolkit (exit 1, like the guard).
    #[error(transparent)]
    Stale(#[from] Box<stale::StaleBuild>),
    #[error(transparent)]
    StaleCheck(#[from] stale::BadVar),
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
    HostCompiler(#[from] crate::plan::host_compiler::HostCompilerProblem),
    /// The `gpuenv install` it ran did not install, or it found no gpuenv to run.
    #[error(transparent)]
    Installing(#[from] auto_install::InstallFailed),
    /// `GPUENV_AUTO_INSTALL` does not act on an untrusted file's pin.
    #[error(transparent)]
    AutoInstallNotAllowed(#[from] auto_install::NotAllowed),
    /// A yes/no variable (`GPUENV_AUTO_INSTALL`) set to something else.
    #[error(transparent)]
    BadFlag(#[from] crate::context::BadFlag),
    /// `looked` says what resolution found: no file, or a file without such a pin.
    #[error("no toolchain is active for {tool} here (no GPUENV_TOOLCHAIN, {looked}, no default)")]
    NoToolchain { tool: String, looked: String },
    #[error("{tool} is not in the active toolchain {active}")]
    NotInToolchain { tool: String, active: String },
    #[error(transparent)]
    BuildCache(#[from] build_cache::BadVar),
    /// Making a view (never from the proxy's purpose, which writes nothing).
    #[error(transparent)]
    Store(#[from] StoreError),
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
            ProxyError::Store(e) => return e.hints(),
            ProxyError::AutoInstallNotAllowed(e) => return e.hints(),
            ProxyError::BadFlag(e) => return e.hints(),
            ProxyError::Stale(e) => return e.hints(),
            ProxyError::StaleCheck(e) => return e.hints(),
            // Already printed in full by the guard.
            ProxyError::Refused(_) => return Vec::new(),
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
    // torch's `load()` compiles in gpuenv's torch-extensions dir: the project is named there.
    let moved = jit::from_project(ctx);
    let project_ctx = moved.as_ref().unwrap_or(ctx);
    let from_view = match invoked.as_deref().filter(|_| overrides.is_empty()) {
        Some(invoked) => match view_dir(invoked) {
            Some(dir) => Session::of_view(ctx, &dir, Door::Proxy)?,
            None => None,
        },
        None => None,
    };
    // The user's own registry when the view is an upstream's: trust is the user's to give.
    let mut own: Option<Registry> = None;
    let (session, active) = match from_view {
        Some((session, name)) => {
            // <home>/views/<name>/bin/<tool>: this view's toolchain, without resolving.
            let entry = session.registry().toolchains[&name].clone();
            let mut active = ActiveSet {
                toolchains: vec![Active {
                    name,
                    entry,
                    reason: Reason::View(invoked.clone().unwrap_or_default()),
                }],
                ..ActiveSet::default()
            };
            // The project's pins and settings still apply to a compile through a view; a
            // query needs the file only for its build cache, which the variable may decide.
            let cache_var = ctx
                .var(vars::GPUENV_BUILD_CACHE)
                .is_some_and(|v| !v.is_empty());
            if compiler_of.is_some() && !(args::is_query(&args) && cache_var) {
                own = own_registry(ctx, session.home());
                let mine = own.as_ref().unwrap_or(session.registry());
                match trust::in_effect(&project_ctx.cwd, mine) {
                    Ok(here) => {
                        active.project = here.file;
                        active.passed_over = here.passed_over;
                    }
                    Err(_) if args::is_query(&args) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            (session, active)
        }
        None => {
            // An upstream's toolchains resolve too; an unusable upstream is only a warning.
            let mut session = Session::open::<ProxyError>(project_ctx, Door::Proxy)?;
            // `+spec` names the one toolchain the tool may come from.
            let kinds: Vec<Kind> = match (overrides.first(), compiler_of) {
                (Some(spec), _) => vec![spec.kind],
                (None, Some(kind)) => vec![kind],
                (None, None) => Kind::ALL.to_vec(),
            };
            let installer = RunGpuenv::BesideProxy(self_exe);
            let active = session.resolve::<ProxyError>(&overrides, &kinds, Some(&installer))?;
            (session, active)
        }
    };
    let home = session.home();
    let registry = session.registry();

    let (toolchain, real) = match find_tool(&tool, &active, registry) {
        Some(Tool::Active(toolchain, real)) => (toolchain, real),
        Some(Tool::System { program, .. }) => {
            // The distribution's own program, as it was before gpuenv: nothing chose a
            // toolchain of its kind here, so its environment is not gpuenv's to set.
            return Ok(Exec {
                program,
                args,
                env: vec![(DEPTH_VAR.to_string(), Some((depth + 1).to_string().into()))],
            });
        }
        None => return Err(no_tool(&tool, &active, ctx)),
    };
    if same_file(&real, self_exe) {
        return Err(ProxyError::IsProxy { path: real, tool });
    }

    let mut active = active.clone();
    let kind = toolchain.entry.kind;
    let toolchain = toolchain.clone();
    let mine = own.as_ref().unwrap_or(registry);
    if tool == kind.compiler() {
        if !args::is_query(&args) {
            for notice in trust::notices(active.project.as_ref(), &active.passed_over) {
                ui::warn(notice);
            }
        }
        // About the directory, so before the guard, which is about this compile's torch.
        check::stale(ctx, &session, &toolchain, &active, &args)?;
        crate::edges::session::use_index_base(ctx, mine).map_err(StateError::from)?;
        let facts = session.facts_in_effect();
        check::guard(ctx, registry, facts, &toolchain, &active, &args)?;
        args = compiler_args(ctx, home, facts, kind, &mut active, args)?;
        args = archs::reach(ctx, &tool, kind, active.project.as_ref(), args);
    }

    let applied = session.applied(&active, Purpose::Proxy)?;
    let mut env: Vec<(String, Option<OsString>)> = applied.after.into_iter().collect();
    env.push((DEPTH_VAR.to_string(), Some((depth + 1).to_string().into())));
    let exec = Exec {
        program: real,
        args,
        env,
    };
    if tool == kind.compiler() {
        return through_cache(exec, ctx, mine, &active);
    }
    Ok(exec)
}

/// The user's own registry, when `home` (a view's) is not the user's home: an upstream's
/// settings never trust a file or accept a directory for the user. `None` when `home` is
/// the user's own; an empty registry (nothing trusted) when the user's cannot be read.
fn own_registry(ctx: &Context, home: &Home) -> Option<Registry> {
    let own = ctx.gpuenv_home().ok();
    // A view's home is canonical (`view_of`); the user's may be reached through a link.
    let same =
        |own: &Home| own.root == home.root || own.root.canonicalize().is_ok_and(|r| r == home.root);
    if own.as_ref().is_some_and(same) {
        return None;
    }
    Some(
        own.and_then(|own| Registry::load(&own).ok())
            .unwrap_or_default(),
    )
}

/// The compile, run through the build cache in effect if there is one (`mine`: the user's
/// own settings' default). A cache that is on but not installed is a warning, and the
/// compile runs uncached.
fn through_cache(
    exec: Exec,
    ctx: &Context,
    mine: &Registry,
    active: &ActiveSet,
) -> Result<Exec, ProxyError> {
    let var = ctx.var(vars::GPUENV_BUILD_CACHE).filter(|v| !v.is_empty());
    let choice = build_cache::choose(
        var,
        active.project.as_ref(),
        mine,
        &upstream::site_build(ctx),
    )?;
    match build_cache::locate(&choice, ctx.var_os(vars::PATH)) {
        Ok(Some(cache)) => Ok(build_cache::wrap(exec, &cache, &choice, |v| {
            ctx.var_os(v).is_some()
        })),
        Ok(None) => Ok(exec),
        Err(warning) => {
            ui::warn_with_hints(&warning, warning.hints());
            Ok(exec)
        }
    }
}

/// The compiler's command line with what the project and machine add (`args::add`): the
/// host compiler for nvcc, the project's arch pins.
fn compiler_args(
    ctx: &Context,
    home: &Home,
    facts: &InEffect,
    kind: Kind,
    active: &mut ActiveSet,
    args: Vec<OsString>,
) -> Result<Vec<OsString>, ProxyError> {
    if args::is_query(&args) {
        return Ok(args);
    }
    if kind == Kind::Cuda {
        // g++'s version, asked once per compiler file (host_compiler::cache).
        active.attach_host_compiler(
            facts.facts(),
            &host_compiler::cache::CachedProbe::new(ctx, home),
        );
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
    let file = active.project.as_ref();
    let additions = args::Additions {
        ccbin: choice.and_then(|c| c.compiler()),
        cuda_arch: file.map_or(&[], |f| &f.cuda_arch),
        rocm_arch: file.map_or(&[], |f| &f.rocm_arch),
    };
    Ok(args::add(kind, &args, &additions))
}

/// Where a tool comes from.
#[derive(Debug)]
pub enum Tool<'a> {
    /// The real program of an active toolchain.
    Active(&'a Active, PathBuf),
    /// A registered system toolchain's own program (Debian's `/usr/bin/rocminfo`), when
    /// no toolchain of its kind is active: run as it was before gpuenv.
    System { toolchain: String, program: PathBuf },
}

/// The program `tool` runs here: the first active toolchain's that has it, else a system
/// toolchain's own. The proxy runs it and `gpuenv which` names it: one lookup for both.
pub fn find_tool<'a>(tool: &str, active: &'a ActiveSet, registry: &Registry) -> Option<Tool<'a>> {
    if let Some((t, real)) = active
        .toolchains
        .iter()
        .find_map(|t| Some((t, t.entry.tool(tool)?)))
    {
        return Some(Tool::Active(t, real));
    }
    registry
        .toolchains
        .iter()
        .filter(|(_, e)| e.system.is_some() && active.get(e.kind).is_none())
        .find_map(|(name, e)| {
            Some(Tool::System {
                toolchain: name.clone(),
                program: e.tool(tool)?,
            })
        })
}

/// The path this proxy was started as: argv[0] if it has a `/`, else the first `tool` on
/// PATH, which is what the shell ran.
fn invoked_path(argv0: &Path, tool: &str, ctx: &Context) -> Option<PathBuf> {
    if argv0.as_os_str().to_string_lossy().contains('/') {
        Some(ctx.cwd.join(argv0))
    } else {
        guard::find_on_path(ctx.var_os(vars::PATH), tool)
    }
}

/// The directory `invoked` would be the view of, if it is `<home>/views/<name>/bin/<tool>`
/// (also through a link to the view); `Session::of_view` says whether it is one.
fn view_dir(invoked: &Path) -> Option<PathBuf> {
    invoked
        .parent()
        .and_then(|bin| bin.canonicalize().ok())
        .and_then(|bin| bin.parent().map(Path::to_path_buf))
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
        let looked = match &active.project {
            Some(f) => format!("{} pins no toolchain of this kind", f.path.display()),
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
