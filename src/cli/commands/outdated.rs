//! `gpuenv outdated`: installed toolkits with a newer patch release at their source.

use crate::cli::support;
use anyhow::Result;
use serde_json::json;

use gpuenv_core::context::Context;
use gpuenv_core::ui;

use support::outdated::{outdated, From};

/// List installed toolkits with a newer patch release at their source (cuda-12.4.0 -> 12.4.1)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Installed toolkits to check (names or specs); default: all of them
    #[arg(value_name = "NAME")]
    names: Vec<String>,
    /// Machine-readable output on stdout
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    from: From,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let found = outdated(ctx, &home, &self.names, &self.from)?;
        if self.json {
            let rows: Vec<_> = found
                .iter()
                .map(|o| json!({"name": o.name, "version": o.entry.version, "newer": o.newer, "source": o.source}))
                .collect();
            println!("{}", serde_json::to_string_pretty(&rows)?);
            return Ok(());
        }
        if found.is_empty() {
            ui::info("every installed toolkit is on the newest patch release of its minor");
            return Ok(());
        }
        let width = found.iter().map(|o| o.name.len()).max().unwrap_or(0);
        for o in &found {
            println!(
                "{:width$}  {} -> {}  ({})",
                o.name, o.entry.version, o.newer, o.source
            );
        }
        ui::info("`gpuenv update` installs them (`gpuenv update <name>` one of them)");
        Ok(())
    }
}
