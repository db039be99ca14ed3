use std::path::{Component, PathBuf};

use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::guard;
use gpuenv_core::resolve::ActiveSet;
use gpuenv_doctor::{Inputs, Machine, Report};

use super::Exit;

/// Diagnose the GPU stack for a directory: one line per known failure mode, with the fix
/// (exit 1 if any check is an error)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Machine-readable findings on stdout
    #[arg(long)]
    json: bool,
    /// The directory whose active toolchains to check (default: the current one)
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let dir: PathBuf = match &self.dir {
            // `--dir .` reads as the directory itself in the report.
            Some(d) => ctx
                .cwd
                .join(d)
                .components()
                .filter(|c| *c != Component::CurDir)
                .collect(),
            None => ctx.cwd.clone(),
        };
        if !dir.is_dir() {
            bail!(
                "{} is not a directory\nhint: give --dir a project directory (one with gpuenv.toml, or below one)",
                dir.display()
            );
        }
        let ctx = Context {
            cwd: dir.clone(),
            vars: ctx.vars.clone(),
        };
        let (home, registry) = super::registry(&ctx)?;
        // A pin that resolves to nothing is reported as a finding; the other checks still run.
        let (active, resolve_error) = match super::resolve_here(&ctx, &registry, &[]) {
            Ok(a) => (a, None),
            Err(e) => (ActiveSet::default(), Some(e.to_string())),
        };
        let torch = guard::locate_torch(&ctx, None);
        let root = ctx.system_root();
        let inputs = Inputs {
            machine: Machine { root, ctx },
            home,
            registry,
            active,
            resolve_error,
            torch,
        };
        let report = Report {
            dir,
            findings: gpuenv_doctor::run_all(&inputs),
        };
        if self.json {
            print!("{}", gpuenv_doctor::render_json(&report));
        } else {
            anstream::print!("{}", gpuenv_doctor::render_text(&report));
        }
        if report.has_errors() {
            Err(Exit(1).into())
        } else {
            Ok(())
        }
    }
}
