use super::named_arg::named;
use anyhow::Result;

use gpuenv_core::context::Context;
use gpuenv_core::shell::{self, Format};
use gpuenv_core::ui;

/// Print the environment of the active toolchains (or of the given specs)
#[derive(Debug, clap::Args)]
#[command(name = "env")]
pub struct Args {
    /// Specs to use instead of what is active here, e.g. cuda-11.8
    specs: Vec<String>,
    /// Output format
    #[arg(long, value_parser = named::<Format>(), default_value = "bash")]
    shell: Format,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let (home, registry) = super::registry(ctx)?;
        let overrides = super::parse_specs(&self.specs)?;
        let active = super::resolve_here(ctx, &registry, &overrides)?;
        if active.toolchains.is_empty() {
            ui::info("no toolchain is active here, so there is nothing to set\nhint: `gpuenv pin <spec>` or `gpuenv default <spec>`");
        }
        let applied = super::environment(ctx, &home, &registry, &active)?;
        let vars: Vec<(&str, Option<&str>)> = applied
            .after
            .iter()
            // A path list that was unset and stays unset is not worth a line.
            .filter(|(k, v)| v.is_some() || applied.before.get(*k).is_some_and(Option::is_some))
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        print!("{}", shell::render(&vars, self.shell));
        Ok(())
    }
}
