//! `gpuenv trust`: let a toolchain file run what it names and set `[env]`, or accept another
//! user's files.

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::{project, trust, ui};

/// Let a toolchain file run what it names (host-compiler, [build] cache), relax the torch
/// guard and set [env] (again after each edit); or accept another user's files
#[derive(Debug, clap::Args)]
#[command(name = "trust")]
pub struct Args {
    /// The toolchain file; the nearest one from here up by default
    file: Option<PathBuf>,
    /// Apply the toolchain files in DIR though another user owns them or every user may
    /// write there (as git's safe.directory). They then select toolchains; what they run
    /// still needs `gpuenv trust FILE`
    #[arg(long, value_name = "DIR", conflicts_with = "file")]
    safe_directory: Option<PathBuf>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        if let Some(dir) = self.safe_directory {
            let dir = ctx.cwd.join(dir);
            let real = fs_err::canonicalize(&dir).context("gpuenv trust --safe-directory")?;
            if !real.is_dir() {
                bail!(Hinted::new(format!("{} is not a directory", dir.display()))
                    .hint("give the directory that holds the toolchain file"));
            }
            let added = Registry::update(&home, |r| {
                Ok::<_, anyhow::Error>(trust::accept_directory(r, real.clone()))
            })?;
            let already = if added { "" } else { " (it already was)" };
            ui::info(format!(
                "toolchain files in {} apply whoever owns them{already}; they select toolchains, and `gpuenv trust <file>` lets one do more",
                real.display()
            ));
            return Ok(());
        }
        let path = match self.file {
            Some(f) => ctx.cwd.join(f),
            // The nearest file whoever owns it: the one a notice told the user about.
            None => match project::locate(&ctx.cwd)? {
                Some(found) => found.path,
                None => bail!(Hinted::new(format!(
                    "no gpuenv.toml or .gpuenv.toml in {} or above",
                    ctx.cwd.display()
                ))
                .hint("give the file: gpuenv trust <file>")),
            },
        };
        // Only a valid file can be trusted, and what is trusted is the content parsed here.
        let file = project::load(&path)?;
        // Trusting someone else's file by name accepts where it is, too.
        let dir = path.parent().map(PathBuf::from).unwrap_or_default();
        let foreign = project::find(&dir, &[])?
            .passed_over
            .into_iter()
            .find(|f| f.path == path);
        let accepted = Registry::update(&home, |r| {
            trust::trust(r, &file);
            let accepted = match &foreign {
                Some(f) => trust::accept_directory(r, fs_err::canonicalize(&f.dir)?),
                None => false,
            };
            Ok::<_, anyhow::Error>(accepted)
        })?;
        ui::info(format!("trusted {}", path.display()));
        if accepted {
            ui::info(format!(
                "it is not yours, so toolchain files in {} now apply whoever owns them",
                dir.display()
            ));
        }
        Ok(())
    }
}
