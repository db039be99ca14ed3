//! `gpuenv which TOOL`: the path of the real tool the active toolchain provides.

use crate::cli::support;
use anyhow::{bail, Result};
use serde_json::json;

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::proxy::{self, Tool};

use support::Exit;

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
        let mut session = support::session(ctx)?;
        let active = support::resolve_here(&mut session, &[], None)?;
        let home = session.home();
        // As the proxy finds it: an active toolchain's, else a system toolchain's own.
        let found = proxy::find_tool(&self.tool, &active, session.registry());
        let (path, out) = match found {
            Some(Tool::Active(t, path)) => {
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
                (path, out)
            }
            Some(Tool::System { toolchain, program }) => {
                let out = json!({
                    "tool": self.tool,
                    "path": program,
                    "toolchain": toolchain,
                    "reason": "a system toolchain's own program, run as it is: no toolchain of its kind is active here",
                });
                (program, out)
            }
            None if active.toolchains.is_empty() => {
                support::print_error(
                    &Hinted::new(format!(
                        "no toolchain is active in {} (no GPUENV_TOOLCHAIN, no gpuenv.toml from here up, no default)",
                        ctx.cwd.display()
                    ))
                    .hint("`gpuenv pin <spec>` pins one here, `gpuenv default <spec>` sets one everywhere")
                    .into(),
                );
                return Err(Exit(1).into());
            }
            None => {
                let names: Vec<String> = active
                    .toolchains
                    .iter()
                    .map(|t| format!("{} ({})", t.name, t.reason))
                    .collect();
                support::print_error(&anyhow::anyhow!(
                    "{} is not in the active toolchain(s): {}",
                    self.tool,
                    names.join(", ")
                ));
                return Err(Exit(1).into());
            }
        };
        if self.json {
            println!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            println!("{}", path.display());
        }
        Ok(())
    }
}
