use std::path::PathBuf;

use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::toolchain::registry::{Entry, Registry, Source};
use gpuenv_core::toolchain::{detect, view, Spec};
use gpuenv_core::{shims, ui};

/// Register a toolchain already on disk under a name, used in place
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `<kind>-<version>[-<label>]`, e.g. cuda-12.4 or cuda-11.3-conda
    name: String,
    /// The toolchain root (the directory holding bin/nvcc or bin/hipcc)
    path: PathBuf,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let spec: Spec = self.name.parse()?;
        let root = ctx.cwd.join(&self.path);
        let detected = detect::detect(&root).map_err(|e| {
            Hinted::new(format!("cannot link {}", self.name))
                .hint("give the directory that holds bin/nvcc (CUDA) or bin/hipcc (ROCm), e.g. /usr/local/cuda-12.4")
                .caused_by(e)
        })?;
        if detected.kind != spec.kind || !spec.version.is_prefix_of(&detected.version) {
            bail!(Hinted::new(format!(
                "{} is {} {}, which the name {} does not describe",
                root.display(),
                detected.kind,
                detected.version,
                self.name
            ))
            .hint(format!(
                "name it {}-{} (the version is read from the tree, never from the name)",
                detected.kind, detected.version
            )));
        }
        let (kind, version) = (detected.kind, detected.version.clone());
        let entry = Entry::from_detected(detected, root.clone(), Source::Linked);
        Registry::update(&home, |registry| {
            if let Some(existing) = registry.toolchains.get(&self.name) {
                bail!(Hinted::new(format!(
                    "{} is already registered (at {})",
                    self.name,
                    existing.root.display()
                ))
                .hint(format!(
                    "`gpuenv unlink {}` first, or choose another name such as {}-local",
                    self.name, self.name
                )));
            }
            let proxy = shims::install_proxy(&home)?;
            view::create(&home, &self.name, &entry, &proxy)?;
            registry.toolchains.insert(self.name.clone(), entry);
            shims::reshim(&home, registry)?;
            Ok(())
        })?;
        ui::info(format!(
            "linked {} ({kind} {version}) at {}",
            self.name,
            root.display()
        ));
        Ok(())
    }
}
