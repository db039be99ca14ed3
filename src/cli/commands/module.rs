//! `gpuenv module`: module files for Lmod or Environment Modules.

use crate::cli::support;
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

use support::named_arg::named;
use support::Exit;

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
        let (home, registry) = support::registry(ctx)?;
        let dir = ctx.cwd.join(&self.dir);
        for name in &self.names {
            if !registry.toolchains.contains_key(name) {
                bail!(
                    Hinted::new(format!("no toolchain named {name} is registered"))
                        .hint("`gpuenv list` shows the registered names")
                );
            }
        }
        let names: Vec<&str> = if self.names.is_empty() {
            registry.toolchains.keys().collect()
        } else {
            self.names.iter().map(String::as_str).collect()
        };
        if names.is_empty() {
            ui::info_with_hints(
                "no toolchains registered, so there is nothing to export",
                ["`gpuenv install <spec>`, `gpuenv link <name> <path>` or `gpuenv discover --register` first"],
            );
        }
        session::ensure_views(&home, &registry, names.iter().copied())?;
        module_dir(&dir)?;
        let mut refused = 0;
        let mut written = Vec::new();
        for name in names {
            let text = module_text(&home, &registry, name, self.format);
            let entry = &registry.toolchains[name];
            let path = export::file_path(&dir, name, entry.kind, self.format)?;
            kind_dir(&dir, path.parent().expect("a module file has a directory"))?;
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
            remove_stale(&dir, &written, self.format, &home.root)?;
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
    let change = session::change_for(&active, registry, home, None, None);
    export::render(name, &entry, &change, format, &home.root)
}

enum Wrote {
    New,
    Replaced,
    Same,
    NotOurs,
}

/// A module file's text, if it is a regular file gpuenv can read (never a FIFO or device).
fn read_module_file(path: &Path) -> Option<std::result::Result<String, ()>> {
    match outside::read_text(path, outside::Kind::ModuleFile) {
        Ok(text) => Some(Ok(text)),
        Err(e) if e.is_missing() => None,
        Err(_) => Some(Err(())),
    }
}

/// `--dir`, made when missing; a link there must lead to a directory (a dangling one is
/// named, not "File exists").
fn module_dir(dir: &Path) -> Result<()> {
    match fs_err::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() && !dir.is_dir() => bail!(Hinted::new(format!(
            "--dir {} is a link to {}, which is not a directory",
            dir.display(),
            fs_err::read_link(dir).unwrap_or_default().display()
        ))
        .hint("make the directory it points to, or give another --dir")),
        Ok(_) if !dir.is_dir() => bail!(Hinted::new(format!(
            "--dir {} is not a directory",
            dir.display()
        ))
        .hint("give a directory for the module files")),
        Ok(_) => Ok(()),
        Err(_) => Ok(fs_err::create_dir_all(dir)?),
    }
}

/// `DIR/<kind>`, made when missing; a link or anything else there is refused: gpuenv
/// writes module files only inside `--dir`.
fn kind_dir(dir: &Path, kind: &Path) -> Result<()> {
    match fs_err::symlink_metadata(kind) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) => bail!(Hinted::new(format!(
            "{} is {}, not a directory: gpuenv writes module files only inside {}",
            kind.display(),
            if m.file_type().is_symlink() {
                "a link"
            } else {
                "not a directory"
            },
            dir.display()
        ))
        .hint(format!(
            "remove {} or export to another --dir",
            kind.display()
        ))),
        Err(_) => {
            fs_err::create_dir(kind)?;
            Ok(())
        }
    }
}

/// Writes `text` unless the file is someone else's; an unchanged file is not touched.
/// (`fsutil::write_atomic` makes it readable by every user of the module tree.)
fn write_ours(path: &Path, text: &str) -> Result<Wrote> {
    let wrote = match read_module_file(path) {
        Some(Ok(old)) if old == text => return Ok(Wrote::Same),
        Some(Ok(old)) if !export::is_ours(&old) => return Ok(Wrote::NotOurs),
        Some(Ok(_)) => Wrote::Replaced,
        None => Wrote::New,
        // Unreadable (or not text): not provably ours.
        Some(Err(())) => return Ok(Wrote::NotOurs),
    };
    fsutil::write_atomic(path, text.as_bytes())?;
    Ok(wrote)
}

/// The module files this home exported for toolchains it no longer has (another home's
/// files in the same directory are left alone).
fn remove_stale(dir: &Path, keep: &[PathBuf], format: Format, home: &Path) -> Result<()> {
    for kind in gpuenv_core::toolchain::Kind::ALL {
        let kind_dir = dir.join(kind.as_str());
        if !fs_err::symlink_metadata(&kind_dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let Ok(rd) = fs_err::read_dir(&kind_dir) else {
            continue;
        };
        for f in rd.flatten() {
            let path = f.path();
            let lua = path.extension().is_some_and(|e| e == "lua");
            if keep.contains(&path) || lua != (format == Format::Lmod) {
                continue;
            }
            if !f.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            if read_module_file(&path)
                .is_some_and(|t| t.is_ok_and(|t| export::is_from_home(&t, home)))
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
