//! The checks the proxy applies before compiling: the build directory was configured for
//! the active toolkit, and the torch guard (only for a PyTorch extension build).

use std::cell::OnceCell;
use std::ffi::OsString;
use std::path::Path;

use crate::context::vars;
use crate::context::Context;
use crate::edges::session::Session;
use crate::facts::tegra;
use crate::facts::{InEffect, Platform};
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
    compile: &Compile,
    active: &ActiveSet,
    args: &[OsString],
) -> Result<(), ProxyError> {
    let toolchain = compile.toolchain;
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
    let known = stale::Toolchains {
        home: session.home(),
        registry: session.registry(),
    };
    let (against, why) = match compile.chosen_here() {
        Some(c) => (c, c.reason.to_string()),
        None => (toolchain, compile.why()),
    };
    match stale::compare(&recorded, against, &why, &known) {
        Some(mut refusal) => {
            if refusal.cmake {
                refusal.source_dir = stale::find::source_dir(&refusal.dir);
                refusal.generator = stale::find::generator(&refusal.dir);
            }
            Err(ProxyError::Stale(Box::new(refusal)))
        }
        None => Ok(()),
    }
}

/// The toolchain a compile runs with. A view's proxy compiles with the view's own toolchain
/// without resolving; what resolution picks in this directory (the pin, `GPUENV_TOOLCHAIN`)
/// is asked only where a check needs it, and then once for both checks.
pub struct Compile<'a> {
    pub toolchain: &'a Active,
    ctx: &'a Context,
    registry: &'a Registry,
    here: OnceCell<Option<Active>>,
}

impl<'a> Compile<'a> {
    pub fn new(ctx: &'a Context, registry: &'a Registry, toolchain: &'a Active) -> Self {
        Compile {
            toolchain,
            ctx,
            registry,
            here: OnceCell::new(),
        }
    }

    /// For a view's toolchain, what resolution picks for its kind here, if anything.
    fn chosen_here(&self) -> Option<&Active> {
        let Reason::View(_) = self.toolchain.reason else {
            return None;
        };
        self.here
            .get_or_init(|| {
                let kind = self.toolchain.entry.kind;
                let torch = || guard::locate_torch(self.ctx, None);
                let req = Request::new(self.ctx, &[], &torch);
                resolve::resolve_kinds(&req, self.registry, &[kind])
                    .ok()?
                    .get(kind)
                    .cloned()
            })
            .as_ref()
    }

    /// Why the toolchain is in use: for a view's, also what chose the view (the pin or
    /// variable) when resolution here picks the same toolchain.
    fn why(&self) -> String {
        let reason = &self.toolchain.reason;
        match self.chosen_here().filter(|a| a.name == self.toolchain.name) {
            Some(a) => format!("{reason}; {}", a.reason),
            None => reason.to_string(),
        }
    }
}

/// Refuses a PyTorch extension build whose torch was built for another toolkit release
/// than the compile's, under the policy in effect.
pub fn guard(
    ctx: &Context,
    registry: &Registry,
    facts: &InEffect,
    compile: &Compile,
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
    let toolchain = compile.toolchain;
    let entry = &toolchain.entry;
    let verdict = guard::compare(entry.kind, &entry.version, &torch, policy.check);
    let side = Side {
        name: &toolchain.name,
        kind: entry.kind,
        version: &entry.version,
        root: Path::new(&entry.root),
        reason: compile.why(),
        gpus: crate::plan::torch_pick::declared_gpus(active),
        // A Jetson gpuenv knows no wheels for: what its CPU implies (`gpuenv torch index`
        // says why nothing fits it).
        platform: tegra::platform(&ctx.system_root(), std::env::consts::ARCH)
            .unwrap_or_else(|_| Platform::for_host()),
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
