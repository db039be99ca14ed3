use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::home::Home;
use gpuenv_core::module_export::{self as export, Format};
use gpuenv_core::resolve::{Active, ActiveSet, Reason};
use gpuenv_core::session;
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::toolchain::Spec;
use gpuenv_core::{fsutil, outside, ui};

use super::named_arg::named;
use super::Exit;

/// Module files for Lmod or Environment Modules
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    Export(ExportArgs),
}

/// Write one module file per registered toolchain (all, or those named): DIR/cuda/12.4.1.lua
/// for Lmod, DIR/cuda/12.4.1 for Tcl; `module load cuda/12.4.1` then sets what
/// `gpuenv env cuda-12.4.1` sets
#[derive(Debug, clap::Args)]
struct ExportArgs {
    #[arg(long, value_parser = named::<Format>())]
    format: Format,
    /// The module directory (put it on MODULEPATH, or `module use DIR`)
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Toolchain names, as `gpuenv list` shows them
    names: Vec<String>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        match self.command {
            Command::Export(a) => a.run(ctx),
        }
    }
}

impl ExportArgs {
    fn run(self, ctx: &Context) -> Result<()> {
        let (home, registry) = super::registry(ctx)?;
        let dir = ctx.cwd.join(&self.dir);
        for name in &self.names {
            if !registry.toolchains.contains_key(name) {
                bail!(
                    Hinted::new(format!("no toolchain named {name} is registered"))
                        .hint("`gpuenv list` shows the registered names")
                );
            }
        }
        let names: Vec<&String> = if self.names.is_empty() {
            registry.toolchains.keys().collect()
        } else {
            self.names.iter().collect()
        };
        if names.is_empty() {
            ui::info_with_hints(
                "no toolchains registered, so there is nothing to export",
                ["`gpuenv install <spec>`, `gpuenv link <name> <path>` or `gpuenv discover --register` first"],
            );
        }
        session::ensure_views(&home, &registry, names.iter().map(|n| n.as_str()))?;
        let mut refused = 0;
        let mut written = Vec::new();
        for name in names {
            let text = module_text(&home, &registry, name, self.format);
            let entry = &registry.toolchains[name];
            let path = export::file_path(&dir, name, entry.kind, self.format)?;
            written.push(path.clone());
            match write_ours(&path, &text)? {
                Wrote::New => ui::info(format!("wrote {}", path.display())),
                Wrote::Replaced => ui::info(format!("updated {}", path.display())),
                Wrote::Same => {}
                Wrote::NotOurs => {
                    refused += 1;
                    ui::warn(format!(
                        "{} exists and was not written by gpuenv, so it is left alone; remove it or export to another --dir",
                        path.display()
                    ));
                }
            }
        }
        if self.names.is_empty() {
            remove_stale(&dir, &written, self.format)?;
        }
        if refused > 0 {
            return Err(Exit(1).into());
        }
        ui::info(format!(
            "module files in {}: `module use {}` then `module load <kind>/<version>`",
            dir.display(),
            dir.display()
        ));
        Ok(())
    }
}

/// The module file of one toolchain: the change `gpuenv env <name>` makes, as the module
/// system's commands.
fn module_text(home: &Home, registry: &Registry, name: &str, format: Format) -> String {
    let entry = registry.toolchains[name].clone();
    let spec: Spec = name.parse().unwrap_or(Spec {
        kind: entry.kind,
        version: entry.version.clone(),
        label: None,
    });
    let active = ActiveSet {
        toolchains: vec![Active {
            name: name.to_string(),
            entry: entry.clone(),
            reason: Reason::Override(spec),
        }],
        // A module file is read on other nodes: no host compiler probed on this one.
        ..ActiveSet::default()
    };
    // Read by other shells on other nodes: no `[env]`, nothing of this shell's modules.
    let change = session::change_for(&active, registry, home, false, None);
    export::render(name, &entry, &change, format)
}

enum Wrote {
    New,
    Replaced,
    Same,
    NotOurs,
}

/// Writes `text` unless the file is someone else's; an unchanged file is not touched.
fn write_ours(path: &Path, text: &str) -> Result<Wrote> {
    let wrote = match outside::read_text(path, outside::Kind::ModuleFile) {
        Ok(old) if old == text => return Ok(Wrote::Same),
        Ok(old) if !export::is_ours(&old) => return Ok(Wrote::NotOurs),
        Ok(_) => Wrote::Replaced,
        Err(e) if e.is_missing() => Wrote::New,
        // Unreadable (or not text): not provably ours.
        Err(_) => return Ok(Wrote::NotOurs),
    };
    fsutil::write_atomic(path, text.as_bytes())?;
    // Module files are read by every user of the module tree.
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o644))?;
    Ok(wrote)
}

/// gpuenv's own module files for toolchains no longer registered.
fn remove_stale(dir: &Path, keep: &[PathBuf], format: Format) -> Result<()> {
    for kind in gpuenv_core::toolchain::Kind::ALL {
        let Ok(rd) = fs_err::read_dir(dir.join(kind.as_str())) else {
            continue;
        };
        for f in rd.flatten() {
            let path = f.path();
            let lua = path.extension().is_some_and(|e| e == "lua");
            if keep.contains(&path) || !path.is_file() || lua != (format == Format::Lmod) {
                continue;
            }
            if outside::read_text(&path, outside::Kind::ModuleFile)
                .is_ok_and(|t| export::is_ours(&t))
            {
                fs_err::remove_file(&path)?;
                ui::info(format!(
                    "removed {} (its toolchain is no longer registered)",
                    path.display()
                ));
            }
        }
    }
    Ok(())
}
