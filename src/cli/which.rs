use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::ui;

use super::Exit;

/// Print the path of the real tool the active toolchain provides
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A tool name such as nvcc, ptxas or hipcc
    tool: String,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        if self.tool.contains('/') {
            bail!("`{}` is a path; give a tool name such as nvcc", self.tool);
        }
        let (_home, registry) = super::registry(ctx)?;
        let active = super::resolve_here(ctx, &registry, &[])?;
        if active.toolchains.is_empty() {
            ui::error(&anyhow::anyhow!(
                "no toolchain is active in {} (no GPUENV_TOOLCHAIN, no gpuenv.toml from here up, no default)\nhint: `gpuenv pin <spec>` pins one here, `gpuenv default <spec>` sets one everywhere",
                ctx.cwd.display()
            ));
            return Err(Exit(1).into());
        }
        for t in &active.toolchains {
            let path = t.entry.root.join("bin").join(&self.tool);
            if path.is_file() {
                println!("{}", path.display());
                return Ok(());
            }
        }
        let names: Vec<String> = active
            .toolchains
            .iter()
            .map(|t| format!("{} ({})", t.name, t.reason))
            .collect();
        ui::error(&anyhow::anyhow!(
            "{} is not in the active toolchain(s): {}",
            self.tool,
            names.join(", ")
        ));
        Err(Exit(1).into())
    }
}
