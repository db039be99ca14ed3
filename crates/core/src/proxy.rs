//! The gpuenv proxy. Installed as `$GPUENV_HOME/shims/<tool>` and as each view's
//! `bin/nvcc` / `bin/hipcc`: it finds the toolchain (the view it was invoked from, or the
//! active one for this directory), refuses a PyTorch extension build that does not match
//! torch, sets the toolchain's environment and execs the real tool in this process.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context as _, Result};

use crate::context::{vars, Context};
use crate::home::Home;
use crate::resolve::{self, Active, ActiveSet, Reason, Request};
use crate::toolchain::registry::Registry;
use crate::toolchain::{upstream, Kind, Spec};
use crate::{build_cache, env, guard, project, trust, ui};

mod check;

/// Guard against infinite proxy recursion: a toolchain whose real tool leads back here.
const MAX_DEPTH: u32 = 3;
const DEPTH_VAR: &str = crate::context::vars::GPUENV_SHIM_DEPTH;

/// The guard refused the build (exit 1); every other error exits 2.
#[derive(Debug, thiserror::Error)]
#[error("the torch guard refused this build")]
pub struct Refused;

/// What the proxy runs in its own place: the real tool, its arguments, and the
/// environment changes (`None` removes the variable), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(String, Option<String>)>,
}

/// The proxy's entry point: plan from the process's own argv and environment, then exec.
pub fn main() -> ExitCode {
    let planned = Context::from_process().and_then(|ctx| {
        let self_exe = std::env::current_exe().unwrap_or_default();
        plan(std::env::args_os().collect(), &ctx, &self_exe)
    });
    let result = planned.and_then(|exec| {
        let mut cmd = Command::new(&exec.program);
        cmd.args(&exec.args);
        for (k, v) in &exec.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let err = cmd.exec();
        Err(err).with_context(|| format!("cannot run {}", exec.program.display()))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<Refused>() => ExitCode::from(1),
        Err(e) => {
            ui::error(&e);
            ExitCode::from(2)
        }
    }
}

/// Decides what `argv` (argv[0] included) runs: the toolchain (the view the proxy was
/// started from, else `+spec`, else resolution for `ctx`), the torch guard's verdict, and
/// the toolchain's environment. `self_exe` is the proxy binary, never a real tool.
pub fn plan(argv: Vec<OsString>, ctx: &Context, self_exe: &Path) -> Result<Exec> {
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
        bail!(
            "gpuenv's {tool} proxy was started {depth} times in a row: the toolchain's bin/{tool} leads back to a gpuenv proxy\nhint: a toolchain must be linked at its real root, not at a gpuenv view or shims dir; check `gpuenv list` and `gpuenv which {tool}`"
        );
    }

    // `nvcc +cuda-11.8 …` picks the toolchain for this call.
    let mut overrides = Vec::new();
    if let Some(spec) = args
        .first()
        .and_then(|a| a.to_str())
        .and_then(|a| a.strip_prefix('+'))
    {
        let spec: Spec = spec
            .parse()
            .with_context(|| format!("in `{tool} +{spec}`"))?;
        overrides.push(spec);
        args.remove(0);
    }
    // The compiler driver of one kind never runs from a toolchain of another.
    let compiler_of = Kind::ALL.into_iter().find(|k| k.compiler() == tool);
    if let (Some(spec), Some(kind)) = (overrides.first(), compiler_of) {
        if spec.kind != kind {
            bail!(
                "`{tool} +{spec}` names a {} toolchain, but {tool} is the {kind} compiler\nhint: `{} +{spec} …` runs the {} compiler; `{tool} +{kind}-<version> …` picks another {kind} toolchain",
                spec.kind,
                spec.kind.compiler(),
                spec.kind
            );
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
            let active = resolve::resolve_kinds(&req, &registry, &kinds)?;
            (home, registry, active)
        }
    };

    let Some((toolchain, real)) = active.toolchains.iter().find_map(|t| {
        let real = t.entry.root.join("bin").join(&tool);
        real.is_file().then_some((t, real))
    }) else {
        return Err(no_tool(&tool, &active, ctx));
    };
    if same_file(&real, self_exe) {
        bail!(
            "{} is the gpuenv proxy itself, not a real {tool}\nhint: link the toolchain at its real root (`gpuenv list` shows the roots)",
            real.display()
        );
    }

    if tool == toolchain.entry.kind.compiler() {
        check::guard(ctx, &registry, toolchain, &active, &args)?;
    }

    let trusted = trust::env_allowed(&registry, active.project.as_ref())?;
    let mut change = env::plan(&active, &registry, &home, trusted);
    crate::module::count_loaded_as_foreign(&mut change, ctx.var(vars::LMFILES));
    let applied = change.apply(&|k| ctx.var(k).map(str::to_string));
    let mut env: Vec<(String, Option<String>)> = applied.after.into_iter().collect();
    env.push((DEPTH_VAR.to_string(), Some((depth + 1).to_string())));
    let exec = Exec {
        program: real,
        args,
        env,
    };
    if tool == toolchain.entry.kind.compiler() {
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
) -> Result<Exec> {
    // A view's proxy does not resolve, but the project's setting still applies.
    let found;
    let file = match &active.project {
        Some(p) => Some(p),
        None => {
            found = project::find(&ctx.cwd)
                .ok()
                .flatten()
                .and_then(|p| project::load(&p).ok());
            found.as_ref()
        }
    };
    let choice = build_cache::choose(ctx.var(vars::GPUENV_BUILD_CACHE), file, registry)?;
    match build_cache::locate(&choice, ctx.var("PATH")) {
        Ok(Some(cache)) => Ok(build_cache::wrap(exec, &cache)),
        Ok(None) => Ok(exec),
        Err(warning) => {
            ui::warn(warning);
            Ok(exec)
        }
    }
}

/// The path this proxy was started as: argv[0] if it has a `/`, else the first `tool` on
/// PATH, which is what the shell ran.
fn invoked_path(argv0: &Path, tool: &str, ctx: &Context) -> Option<PathBuf> {
    if argv0.as_os_str().to_string_lossy().contains('/') {
        Some(ctx.cwd.join(argv0))
    } else {
        guard::find_on_path(ctx.var("PATH"), tool)
    }
}

/// If `invoked` is `<home>/views/<name>/bin/<tool>` (also through a link to the view) and
/// `<name>` is registered there: that home, its registry and the name.
fn view_of(invoked: &Path, ctx: &Context) -> Result<Option<(Home, Registry, String)>> {
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

fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

fn no_tool(tool: &str, active: &ActiveSet, ctx: &Context) -> anyhow::Error {
    if active.toolchains.is_empty() {
        let file = project::find(&ctx.cwd).ok().flatten();
        let looked = match file {
            Some(f) => format!("{} pins no toolchain of this kind", f.display()),
            None => format!("no gpuenv.toml from {} up", ctx.cwd.display()),
        };
        return anyhow::anyhow!(
            "no toolchain is active for {tool} here (no GPUENV_TOOLCHAIN, {looked}, no default)\nhint: `gpuenv pin <spec>` pins one for this directory, `gpuenv default <spec>` sets one everywhere, `{tool} +<spec> …` picks one for this call"
        );
    }
    let names: Vec<String> = active
        .toolchains
        .iter()
        .map(|t| format!("{} ({})", t.name, t.reason))
        .collect();
    anyhow::anyhow!(
        "{tool} is not in the active toolchain {}\nhint: `gpuenv list` shows the registered toolchains; `{tool} +<spec> …` runs it from another one",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests;
