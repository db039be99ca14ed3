use anyhow::{bail, Result};
use serde_json::json;

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;

use super::Exit;

/// Print the path of the real tool the active toolchain provides
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A tool name such as nvcc, ptxas or hipcc
    tool: String,
    /// Machine-readable output on stdout: the path, the toolchain and why it is active
    #[arg(long)]
    json: bool,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        if self.tool.contains('/') {
            bail!(Hinted::new(format!(
                "`{}` is a path; give a tool name such as nvcc",
                self.tool
            ))
            .hint("gpuenv which nvcc"));
        }
        let mut session = super::session(ctx)?;
        let active = super::resolve_here(&mut session, &[], None)?;
        let home = session.home();
        if active.toolchains.is_empty() {
            super::print_error(
                &Hinted::new(format!(
                    "no toolchain is active in {} (no GPUENV_TOOLCHAIN, no gpuenv.toml from here up, no default)",
                    ctx.cwd.display()
                ))
                .hint("`gpuenv pin <spec>` pins one here, `gpuenv default <spec>` sets one everywhere")
                .into(),
            );
            return Err(Exit(1).into());
        }
        for t in &active.toolchains {
            let Some(path) = t.entry.tool(&self.tool) else {
                continue;
            };
            if self.json {
                let out = json!({
                    "tool": self.tool,
                    "path": path,
                    "toolchain": t.name,
                    "kind": t.entry.kind,
                    "version": t.entry.version,
                    "root": t.entry.root,
                    "view": home.view(&t.name),
                    "reason": t.reason.to_string(),
                });
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                println!("{}", path.display());
            }
            return Ok(());
        }
        let names: Vec<String> = active
            .toolchains
            .iter()
            .map(|t| format!("{} ({})", t.name, t.reason))
            .collect();
        super::print_error(&anyhow::anyhow!(
            "{} is not in the active toolchain(s): {}",
            self.tool,
            names.join(", ")
        ));
        Err(Exit(1).into())
    }
}
