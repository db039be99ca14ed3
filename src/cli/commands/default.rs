//! `gpuenv default SPEC...`: the toolchains used where nothing else picks one.

use crate::cli::support;
use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::install_hint;
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::ui;

/// Set the toolchain used where nothing else picks one (`none` clears it)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Specs such as cuda-12.4 or rocm-6 (at most one per kind), or `none`; without one,
    /// print the current default
    specs: Vec<String>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        if self.specs.is_empty() {
            let registry = Registry::load(&home)?;
            if registry.default.is_empty() {
                ui::info("no default toolchain; set one with `gpuenv default <spec>`");
            }
            for d in &registry.default {
                println!("{d}");
            }
            return Ok(());
        }
        if self.specs == ["none"] {
            Registry::update(&home, |r| {
                r.default.clear();
                Ok::<_, anyhow::Error>(())
            })?;
            ui::info("cleared the default toolchain");
            return Ok(());
        }
        let specs = support::parse_specs(&self.specs)?;
        // An upstream's toolchain may be the default too.
        let (_, layered) = support::layered(ctx)?;
        Registry::update(&home, |registry| {
            for spec in &specs {
                if registry.find(spec).is_none() && layered.registry.find(spec).is_none() {
                    bail!(
                        Hinted::new(format!("{spec} matches no registered toolchain"))
                            .hint(install_hint::install_or_link(spec))
                    );
                }
            }
            for spec in &specs {
                registry.default.retain(|d| {
                    d.parse::<gpuenv_core::toolchain::Spec>().map(|s| s.kind) != Ok(spec.kind)
                });
                registry.default.push(spec.to_string());
            }
            registry.default.sort();
            Ok(())
        })?;
        for spec in &specs {
            ui::info(format!("default {} toolchain: {spec}", spec.kind));
        }
        Ok(())
    }
}
