//! The gpuenv proxy. Installed as `$GPUENV_HOME/shims/<tool>` and as each view's
//! `bin/nvcc` / `bin/hipcc`: it finds the toolchain (the view it was invoked from, or the
//! active one for this directory), refuses a PyTorch extension build that does not match
//! torch, sets the toolchain's environment and execs the real tool in this process.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context as _, Result};

use crate::context::vars;
use crate::context::Context;
use crate::resolve::{self, Active, ActiveSet, Reason, Request};
use crate::toolchain::registry::{Home, Registry};
use crate::toolchain::{view, Kind, Spec};
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

    let invoked = invoked_path(&argv0, &tool, ctx);
    let from_view = invoked
        .as_deref()
        .filter(|_| overrides.is_empty())
        .and_then(view_of);
    let (home, registry, active) = match from_view {
        Some((view_dir, meta)) => {
            // <home>/views/<name>/bin/<tool>: this view's toolchain, without resolving.
            let home = Home::new(
                view_dir
                    .parent()
                    .and_then(Path::parent)
                    .unwrap_or(Path::new("/")),
            );
            let registry = Registry::load(&home)?;
            let active = ActiveSet {
                toolchains: vec![Active {
                    name: meta.name,
                    entry: meta.entry,
                    reason: Reason::View(invoked.clone().unwrap_or_default()),
                }],
                project: None,
            };
            (home, registry, active)
        }
        None => {
            let home = ctx.gpuenv_home()?;
            let registry = Registry::load(&home)?;
            let kinds: &[Kind] = match tool.as_str() {
                "nvcc" => &[Kind::Cuda],
                "hipcc" => &[Kind::Rocm],
                _ => &Kind::ALL,
            };
            let torch = || guard::locate_torch(ctx, None);
            let req = Request::new(ctx, &overrides, &torch);
            let active = resolve::resolve_kinds(&req, &registry, kinds)?;
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
    let change = env::plan(&active, &registry, &home, trusted);
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

/// If `invoked` is `<view>/bin/<tool>` (also through a link to the view), the view and
/// its metadata.
fn view_of(invoked: &Path) -> Option<(PathBuf, view::ViewMeta)> {
    let bin = invoked.parent()?.canonicalize().ok()?;
    let view_dir = bin.parent()?;
    if !view_dir.join(view::META_FILE).is_file() {
        return None;
    }
    let meta = view::read_meta(view_dir).ok()?;
    Some((view_dir.to_path_buf(), meta))
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
