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
use crate::edges::installer::RunGpuenv;
use crate::edges::session::{Door, Purpose, Session};
use crate::plan::auto_install;
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
mod call;
mod check;
mod jit;
mod process;
mod tool;

pub use tool::{find_tool, Tool};

pub use crate::plan::exec::Exec;
use call::Call;
pub use process::main;
pub(crate) use process::{exec_raw, start_up};

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
/// started from, else `+spec`, else resolution for `ctx`), the checks of a compile, and
/// the toolchain's environment. `self_exe` is the proxy binary, never a real tool.
pub fn plan(argv: Vec<OsString>, ctx: &Context, self_exe: &Path) -> Result<Exec, ProxyError> {
    let mut call = Call::parse(argv, ctx)?;
    // torch's `load()` compiles in gpuenv's torch-extensions dir: the project is named there.
    let moved = jit::from_project(ctx);
    let here = moved.as_ref().unwrap_or(ctx);
    let (session, mut found) = match through_view(&call, ctx, here)? {
        Some(view) => view,
        None => resolved(&call, here, self_exe)?,
    };
    let (toolchain, real) = match find_tool(&call.tool, &found.active, session.registry()) {
        Some(Tool::Active(toolchain, real)) => (toolchain.clone(), real),
        // The distribution's own program, as it was before gpuenv: nothing chose a
        // toolchain of its kind here, so its environment is not gpuenv's to set.
        Some(Tool::System { program, .. }) => {
            let program = program.clone();
            keep(session, found);
            return Ok(call.exec(program, []));
        }
        None => return Err(no_tool(&call.tool, &found.active, ctx)),
    };
    if same_file(&real, self_exe) {
        return Err(ProxyError::IsProxy {
            path: real,
            tool: call.tool,
        });
    }
    let compiling = call.tool == toolchain.entry.kind.compiler();
    if compiling {
        before_compiling(&mut call, ctx, &session, &toolchain, &mut found)?;
    }
    let applied = session.applied(&found.active, Purpose::Proxy)?;
    let exec = call.exec(real, applied.after);
    let exec = match compiling {
        true => through_cache(exec, ctx, found.mine(&session), &found.active)?,
        false => exec,
    };
    keep(session, found);
    Ok(exec)
}

/// The tool replaces this process next: what was read for it is not freed one allocation at
/// a time (with a site store's hundreds of toolchains that cost about a tenth of a call).
fn keep(session: Session, found: Found) {
    std::mem::forget((session, found));
}

/// The active set a call runs with, and whose settings and trust apply to it.
struct Found {
    active: ActiveSet,
    /// The user's own registry, when the view's home is an upstream's: trust is the user's
    /// to give.
    own: Option<Registry>,
}

impl Found {
    /// The registry whose settings and trust are the user's: their own.
    fn mine<'a>(&'a self, session: &'a Session) -> &'a Registry {
        self.own.as_ref().unwrap_or(session.registry())
    }
}

/// Started as `<home>/views/<name>/bin/<tool>` (and no `+spec`): that home's session and
/// the view's toolchain, without resolving. The project's pins and settings still apply to
/// a compile through a view; a query needs the file only for its build cache, which the
/// variable may decide. `None` when it was not started from a view.
fn through_view<'c>(
    call: &Call,
    ctx: &'c Context,
    here: &Context,
) -> Result<Option<(Session<'c>, Found)>, ProxyError> {
    let Some(invoked) = call.invoked.as_deref().filter(|_| call.spec.is_none()) else {
        return Ok(None);
    };
    let Some(dir) = view_dir(invoked) else {
        return Ok(None);
    };
    let Some((session, name)) = Session::of_view(ctx, &dir, Door::Proxy)? else {
        return Ok(None);
    };
    let entry = session.registry().toolchains[&name].clone();
    let mut found = Found {
        active: ActiveSet {
            toolchains: vec![Active {
                name,
                entry,
                reason: Reason::View(invoked.to_path_buf()),
            }],
            ..ActiveSet::default()
        },
        own: None,
    };
    let cache_var = ctx
        .var(vars::GPUENV_BUILD_CACHE)
        .is_some_and(|v| !v.is_empty());
    if call.compiler_of.is_some() && !(call.is_query() && cache_var) {
        found.own = own_registry(ctx, session.home());
        match trust::in_effect(&here.cwd, found.mine(&session)) {
            Ok(file) => {
                found.active.project = file.file;
                found.active.passed_over = file.passed_over;
            }
            Err(_) if call.is_query() => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Some((session, found)))
}

/// The user's session and the active set resolved here (an upstream's toolchains resolve
/// too; an unusable upstream is only a warning), for the kinds the call may run: a missing
/// pin is installed by the gpuenv beside the proxy under `GPUENV_AUTO_INSTALL`.
fn resolved<'c>(
    call: &Call,
    here: &'c Context,
    self_exe: &Path,
) -> Result<(Session<'c>, Found), ProxyError> {
    let mut session = Session::open::<ProxyError>(here, Door::Proxy)?;
    let installer = RunGpuenv::BesideProxy(self_exe);
    let active =
        session.resolve::<ProxyError>(call.spec.as_slice(), &call.kinds(), Some(&installer))?;
    Ok((session, Found { active, own: None }))
}

/// What a compile gets before it runs: the toolchain file's notices, the stale-build and
/// torch checks, then the host compiler and the arch pins on its command line.
fn before_compiling(
    call: &mut Call,
    ctx: &Context,
    session: &Session,
    toolchain: &Active,
    found: &mut Found,
) -> Result<(), ProxyError> {
    let active = &found.active;
    if !call.is_query() {
        for notice in trust::notices(active.project.as_ref(), &active.passed_over) {
            ui::warn(notice);
        }
    }
    let compile = check::Compile::new(ctx, session.registry(), toolchain);
    // About the directory, so before the guard, which is about this compile's torch.
    check::stale(ctx, session, &compile, active, &call.args)?;
    crate::edges::session::use_index_base(ctx, found.mine(session)).map_err(StateError::from)?;
    check::guard(
        ctx,
        session.registry(),
        session.facts_in_effect(),
        &compile,
        active,
        &call.args,
    )?;
    let kind = toolchain.entry.kind;
    let args = std::mem::take(&mut call.args);
    let args = compiler_args(ctx, session, kind, &mut found.active, args)?;
    let file = found.active.project.as_ref();
    let args = archs::reach(ctx, &call.tool, kind, file, args);
    call.args = match kind {
        Kind::Cuda => with_threads(ctx, found, session, args),
        Kind::Rocm => args,
    };
    Ok(())
}

/// nvcc's `--threads` for a compile of several target archs (its arch flags final), unless
/// the user gave one (`build_jobs::threads` has the order).
fn with_threads(
    ctx: &Context,
    found: &Found,
    session: &Session,
    mut args: Vec<OsString>,
) -> Vec<OsString> {
    use crate::plan::build_jobs::{self, ThreadInputs, Threads};
    let several = build_jobs::call_targets(&args).is_some_and(|n| n > 1);
    if !several || !crate::facts::arch::compiles_device_code(true, &args) {
        return args;
    }
    let site = upstream::site_build(ctx);
    let inputs = ThreadInputs {
        nvcc_flags: [
            ctx.var(vars::NVCC_PREPEND_FLAGS),
            ctx.var(vars::NVCC_APPEND_FLAGS),
        ],
        nvcc_threads: ctx.var_nonempty(vars::NVCC_THREADS),
        max_jobs: ctx.var_nonempty(vars::MAX_JOBS),
        file: found.active.project.as_ref(),
        mine: &found.mine(session).build,
        site: &site,
    };
    if let Threads::Add(chosen) =
        build_jobs::threads(&args, &inputs, || crate::edges::session::machine(ctx))
    {
        ui::verbose(format!(
            "nvcc: --threads {} ({})",
            chosen.value, chosen.from
        ));
        args.insert(0, chosen.value.to_string().into());
        args.insert(0, "--threads".into());
    }
    args
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
    session: &Session,
    kind: Kind,
    active: &mut ActiveSet,
    args: Vec<OsString>,
) -> Result<Vec<OsString>, ProxyError> {
    if args::is_query(&args) {
        return Ok(args);
    }
    if kind == Kind::Cuda {
        session.attach_host_compiler(active);
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
