//! `gpuenv check`: the active Python's torch against the active toolchain, without building
//! (and `check --locked`, the lock against the active set).

use crate::cli::support;
use std::path::PathBuf;

use anyhow::Result;
use serde_json::json;

use gpuenv_core::context::vars;
use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::Platform;
use gpuenv_core::guard::{self, Policy, Side, Verdict};
use gpuenv_core::toolchain::Kind;
use gpuenv_core::ui::{self, Report};

use support::Exit;

/// Compare the active Python's torch with the active toolchain, without building
/// (exit 0 match, 1 mismatch, 2 cannot tell)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Python whose torch to check (default: $VIRTUAL_ENV, $CONDA_PREFIX, the project's
    /// .venv, python3 on PATH)
    #[arg(long)]
    python: Option<PathBuf>,
    /// Machine-readable output on stdout
    #[arg(long)]
    json: bool,
    /// Compare the active toolchains with gpuenv.lock instead (exit 1 naming each difference)
    #[arg(long, conflicts_with_all = ["python", "json"])]
    locked: bool,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        if self.locked {
            return support::lock::check(ctx);
        }
        let mut session = support::session(ctx)?;
        let active = support::resolve_here(&mut session, &[], None)?;
        let file = active.project.as_ref();
        let policy = Policy::for_project(ctx.var(vars::GPUENV_TORCH_CHECK), file)?;
        // A Jetson gpuenv knows no wheels for: what its CPU implies (`torch index` says why).
        let platform = session.platform().unwrap_or_else(|_| Platform::for_host());

        // A uv project's environment is its `.venv`, also when it is not activated (`uv run`
        // uses it): looked at before the python on PATH.
        let project_venv = (self.python.is_none()
            && ctx.var_nonempty(vars::VIRTUAL_ENV).is_none()
            && ctx.var_nonempty(vars::CONDA_PREFIX).is_none())
        .then(|| {
            file.and_then(|f| f.path.parent())
                .unwrap_or(&ctx.cwd)
                .join(".venv/bin/python")
        })
        .filter(|p| p.is_file());
        let python = self.python.as_deref().or(project_venv.as_deref());
        let torch = guard::locate_torch(ctx, python);
        // The kind torch was built for decides which toolchain to compare; a CPU-only torch
        // is compared with whatever toolchain is active (it can build for none).
        let toolchain = match &torch {
            Ok(t) if t.hip.is_some() => active.get(Kind::Rocm),
            Ok(t) if t.cuda.is_some() => active.get(Kind::Cuda),
            _ => active.toolchains.first(),
        };
        let outcome = match (&torch, toolchain) {
            // Nothing pinned says more than where torch is not.
            (_, None) if active.toolchains.is_empty() => Err(Hinted::new(format!(
                "cannot tell: nothing is pinned or active in {} (no gpuenv.toml from here up, no GPUENV_TOOLCHAIN, no default)",
                ctx.cwd.display()
            ))
            .hint("`gpuenv pin <spec>` in the project, or `gpuenv default <spec>`")),
            (Err(why), _) => Err(Hinted::new(format!("cannot tell: {why}"))),
            (Ok(_), None) => Err(Hinted::new(format!(
                "cannot tell: no toolchain is active in {}",
                ctx.cwd.display()
            ))
            .hint("`gpuenv pin <spec>` or `gpuenv default <spec>`")),
            (Ok(t), Some(tc)) => {
                let verdict = guard::compare(tc.entry.kind, &tc.entry.version, t, policy.check);
                let side = Side {
                    name: &tc.name,
                    kind: tc.entry.kind,
                    version: &tc.entry.version,
                    root: &tc.entry.root,
                    reason: tc.reason.to_string(),
                    gpus: gpuenv_core::plan::torch_pick::declared_gpus(&active),
                    platform,
                };
                Ok((
                    verdict.clone(),
                    guard::refusal(
                        session.facts(),
                        session.registry(),
                        &side,
                        t,
                        &verdict,
                        &policy,
                        guard::Occasion::Checking,
                    ),
                ))
            }
        };

        let (status, mut code, problem): (_, _, Option<anyhow::Error>) = match outcome {
            Err(why) => ("unknown", 2, Some(why.into())),
            Ok((Verdict::Match, _)) => ("match", 0, None),
            Ok((Verdict::Off, _)) => ("off", 0, None),
            Ok((_, refusal)) => ("mismatch", 1, refusal.map(Into::into)),
        };
        // `uv lock` follows pyproject.toml's sources over gpuenv's UV_INDEX: a file that sends
        // torch elsewhere than the pin installs a torch the guard then refuses.
        let pyproject =
            match support::pyproject::check(session.facts(), &active, &ctx.cwd, platform) {
                Ok(lines) => lines,
                Err(e) => {
                    // Cannot tell what uv will install.
                    support::print_error(&e);
                    code = code.max(2);
                    Vec::new()
                }
            };
        if !pyproject.is_empty() && code == 0 {
            code = 1;
        }
        let report = problem
            .as_ref()
            .map(|e| Report::of(e.as_ref(), support::FIND))
            .unwrap_or_default();
        if self.json {
            let torch_json = torch.as_ref().ok().map(
                |t| json!({"path": t.dir, "version": t.version, "cuda": t.cuda, "hip": t.hip}),
            );
            let tc_json = toolchain.map(|t| {
                json!({"name": t.name, "kind": t.entry.kind, "version": t.entry.version, "reason": t.reason.to_string()})
            });
            let out = json!({
                "schema": gpuenv_core::report_schema::VERSION,
                "command": "check",
                "status": status,
                "toolchain": tc_json,
                "torch": torch_json,
                "policy": policy.check.to_string(),
                "message": report.inline(),
                "hints": report.hints,
                "pyproject": pyproject,
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            match (&problem, toolchain, torch.as_ref().ok()) {
                (None, Some(tc), Some(t)) if code == 0 => ui::info(format!(
                    "torch {} ({}) matches {} {} ({}; policy {})",
                    t.label(),
                    t.dir.display(),
                    tc.name,
                    tc.entry.version,
                    tc.reason,
                    policy.check
                )),
                (Some(e), ..) => support::print_error(e),
                _ => {}
            }
            for line in &pyproject {
                ui::warn_with_hints(
                    format!("pyproject.toml: {line}"),
                    ["`gpuenv torch index --write-pyproject` points it at the pinned toolkit's index"],
                );
            }
        }
        if code == 0 {
            Ok(())
        } else {
            Err(Exit(code).into())
        }
    }
}
