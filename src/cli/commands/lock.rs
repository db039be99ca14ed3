//! `gpuenv lock`: write gpuenv.lock beside gpuenv.toml (the lock itself is
//! `support::lock`).

use anyhow::Result;

use gpuenv_core::context::Context;

use crate::cli::support;

/// Write gpuenv.lock beside gpuenv.toml: the exact toolchains its pins resolve to here
/// (version, source, file-list digest, and each installed one's archives and sha256)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpuenv lock                  # write gpuenv.lock\n  gpuenv check --locked        # does the active set still match it?\n  gpuenv install --locked      # on another machine: install exactly that"
)]
pub struct Args {}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        support::lock::write(ctx)
    }
}
