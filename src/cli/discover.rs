use std::path::PathBuf;

use anyhow::Result;

use gpuenv_core::context::{vars, Context};
use gpuenv_core::toolchain::discover::{self, Places};
use gpuenv_core::toolchain::registry::{Entry, Registry, Source};
use gpuenv_core::toolchain::{view, Spec};
use gpuenv_core::{shims, ui};

/// Find toolchains in the standard places (and register them with --register)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Register what is found (names: <kind>-<version>, with -conda/-debian labels)
    #[arg(long)]
    register: bool,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let prefixes = match ctx.var(vars::GPUENV_DISCOVER_ROOTS) {
            Some(roots) => roots
                .split(':')
                .filter(|r| !r.is_empty())
                .map(PathBuf::from)
                .collect(),
            None => vec![PathBuf::from("/")],
        };
        let places = Places {
            prefixes,
            conda_envs_file: ctx.home_dir().map(|h| h.join(".conda/environments.txt")),
            conda_prefix: ctx.var_nonempty(vars::CONDA_PREFIX).map(PathBuf::from),
        };
        let found = discover::discover(&places);
        if found.is_empty() {
            ui::info("found no CUDA Toolkit or ROCm tree in the standard places");
            return Ok(());
        }
        let mut registry = Registry::load(&home)?;
        let mut to_register: Vec<(String, Entry)> = Vec::new();
        for f in &found {
            let d = match &f.result {
                Ok(d) => d,
                Err(why) => {
                    println!("  skipped  {}: {why}", f.root.display());
                    continue;
                }
            };
            let name = Spec {
                kind: d.kind,
                version: d.version.clone(),
                label: f.label().map(str::to_string),
            }
            .to_string();
            let already = registry
                .toolchains
                .iter()
                .find(|(_, e)| same_dir(&e.root, &f.root));
            let status = match already {
                Some((n, _)) => format!("registered as {n}"),
                None if registry.toolchains.contains_key(&name) => {
                    format!("not registered: the name {name} is taken by another root")
                }
                None => {
                    let entry = Entry::from_detected(d.clone(), f.root.clone(), Source::Discovered);
                    to_register.push((name.clone(), entry));
                    if self.register {
                        format!("registering as {name}")
                    } else {
                        format!("new: would be {name}")
                    }
                }
            };
            println!(
                "{} {:<8} {:<10} {}  ({status})",
                d.kind,
                "",
                d.version,
                f.root.display()
            );
        }
        if !self.register {
            if !to_register.is_empty() {
                ui::info("run `gpuenv discover --register` to register the new ones");
            }
            return Ok(());
        }
        registry = Registry::update(&home, |r| {
            let proxy = shims::install_proxy(&home)?;
            for (name, entry) in &to_register {
                if !r.toolchains.contains_key(name) {
                    view::create(&home, name, entry, &proxy)?;
                    r.toolchains.insert(name.clone(), entry.clone());
                }
            }
            shims::reshim(&home, r)?;
            Ok(r.clone())
        })?;
        ui::info(format!(
            "registered {} toolchain(s); {} in all",
            to_register.len(),
            registry.toolchains.len()
        ));
        Ok(())
    }
}

fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}
