use std::os::unix::process::CommandExt;
use std::process::Command;

use anyhow::{Context as _, Result};

use gpuenv_core::context::Context;

/// Run a command with the environment of the given toolchains (or of those active here)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Specs such as cuda-11.8 rocm-6.2 (at most one per kind); they win over
    /// GPUENV_TOOLCHAIN and the toolchain file
    specs: Vec<String>,
    /// The command and its arguments, after `--`
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let (home, registry) = super::registry(ctx)?;
        let overrides = super::parse_specs(&self.specs)?;
        let active = super::resolve_here(ctx, &registry, &overrides)?;
        let applied = super::environment(ctx, &home, &registry, &active)?;
        let mut cmd = Command::new(&self.command[0]);
        cmd.args(&self.command[1..]);
        for (k, v) in &applied.after {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        // exec: the command's exit status and signals are its own.
        let err = cmd.exec();
        Err(err).with_context(|| format!("cannot run `{}`", self.command[0]))
    }
}
