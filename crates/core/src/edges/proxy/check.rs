//! The checks the proxy applies before compiling: the build directory was configured for
//! the active toolkit, and the torch guard (only for a PyTorch extension build).

use std::ffi::OsString;
use std::path::Path;

use crate::context::vars;
use crate::context::Context;
use crate::edges::session::Session;
use crate::facts::InEffect;
use crate::plan::guard::{self, Policy, Side};
use crate::plan::resolve::{self, Active, ActiveSet, Reason, Request};
use crate::plan::stale;
use crate::project::TorchCheck;
use crate::store::toolchain::registry::Registry;
use crate::store::toolchain::Kind;
use crate::ui;

use super::{ProxyError, Refused};

/// Refuses a CUDA compile in a build directory configured for another toolkit than the
/// one active here. A view's proxy compiles with its own toolchain, so for it "active" is
/// what resolution picks here (the pin, `GPUENV_TOOLCHAIN`), when anything is picked.
pub fn stale(
    ctx: &Context,
    session: &Session,
    toolchain: &Active,
    active: &ActiveSet,
    args: &[OsString],
) -> Result<(), ProxyError> {
    if toolchain.entry.kind != Kind::Cuda || super::args::is_query(args) {
        return Ok(());
    }
    if !stale::enabled(ctx.var(vars::GPUENV_STALE_CHECK))? {
        return Ok(());
    }
    // The walk stops at the project's root or the home directory, whichever comes first.
    let project = active.project.as_ref().and_then(|f| f.path.parent());
    let home = ctx.var_os(vars::HOME).map(std::path::PathBuf::from);
    let stops: Vec<&Path> = project.into_iter().chain(home.as_deref()).collect();
    let Some(recorded) = stale::find::recorded(&ctx.cwd, &stops) else {
        return Ok(());
    };
    let registry = session.registry();
    let known = stale::Toolchains {
        home: session.home(),
        registry,
    };
    let chosen = match toolchain.reason {
        Reason::View(_) => chosen_here(ctx, registry, toolchain.entry.kind),
        _ => None,
    };
    let (against, why) = match &chosen {
        Some(c) => (c, c.reason.to_string()),
        None => (toolchain, why_active(ctx, registry, toolchain)),
    };
    match stale::compare(&recorded, against, &why, &known) {
        Some(mut refusal) => {
            if refusal.cmake {
                refusal.source_dir = stale::find::source_dir(&refusal.dir);
            }
            Err(ProxyError::Stale(Box::new(refusal)))
        }
        None => Ok(()),
    }
}

/// What resolution picks for `kind` in this directory and environment, if anything.
fn chosen_here(ctx: &Context, registry: &Registry, kind: Kind) -> Option<Active> {
    let torch = || guard::locate_torch(ctx, None);
    let req = Request::new(ctx, &[], &torch);
    resolve::resolve_kinds(&req, registry, &[kind])
        .ok()?
        .get(kind)
        .cloned()
}

pub fn guard(
    ctx: &Context,
    registry: &Registry,
    facts: &InEffect,
    toolchain: &Active,
    active: &ActiveSet,
    args: &[OsString],
) -> Result<(), ProxyError> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let Some(include) = guard::torch_extension_build(&args) else {
        return Ok(());
    };
    // A relaxation (`off`, `major`) counts only from a trusted file (`ProjectFile::torch_check`).
    let policy = Policy::for_project(ctx.var(vars::GPUENV_TORCH_CHECK), active.project.as_ref())?;
    if policy.check == TorchCheck::Off {
        return Ok(());
    }
    let torch: Result<_, Box<dyn std::error::Error + Send + Sync>> =
        match include.as_deref().and_then(guard::torch_dir_of_include) {
            Some(dir) => guard::read_torch(&dir).map_err(Into::into),
            None => guard::locate_torch(ctx, None).map_err(Into::into),
        };
    let torch = match torch {
        Ok(t) => t,
        Err(why) => {
            ui::warn(format!(
                "this looks like a PyTorch extension build, but gpuenv cannot check it: {why}"
            ));
            return Ok(());
        }
    };
    let entry = &toolchain.entry;
    let verdict = guard::compare(entry.kind, &entry.version, &torch, policy.check);
    let side = Side {
        name: &toolchain.name,
        kind: entry.kind,
        version: &entry.version,
        root: Path::new(&entry.root),
        reason: why_active(ctx, registry, toolchain),
    };
    match guard::refusal(
        facts.facts(),
        registry,
        &side,
        &torch,
        &verdict,
        &policy,
        guard::Occasion::Building,
    ) {
        Some(refusal) => Err(Refused(Box::new(refusal)).into()),
        None => Ok(()),
    }
}

/// Why the toolchain is in use. A view's proxy did not resolve, so this asks what chose the
/// view (the pin or variable): only on the refusal path, where the message needs it.
fn why_active(ctx: &Context, registry: &Registry, toolchain: &Active) -> String {
    let Reason::View(_) = &toolchain.reason else {
        return toolchain.reason.to_string();
    };
    let torch = || guard::locate_torch(ctx, None);
    let req = Request::new(ctx, &[], &torch);
    let chosen = resolve::resolve_kinds(&req, registry, &[toolchain.entry.kind])
        .ok()
        .and_then(|set| set.get(toolchain.entry.kind).cloned())
        .filter(|a| a.name == toolchain.name);
    match chosen {
        Some(a) => format!("{}; {}", toolchain.reason, a.reason),
        None => toolchain.reason.to_string(),
    }
}
