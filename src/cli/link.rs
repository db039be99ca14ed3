use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};

use gpuenv_core::context::Context;
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
        let detected = detect::detect(&root).with_context(|| {
            format!("cannot link {}\nhint: give the directory that holds bin/nvcc (CUDA) or bin/hipcc (ROCm), e.g. /usr/local/cuda-12.4", self.name)
        })?;
        if detected.kind != spec.kind || !spec.version.is_prefix_of(&detected.version) {
            bail!(
                "{} is {} {}, which the name {} does not describe\nhint: name it {}-{} (the version is read from the tree, never from the name)",
                root.display(),
                detected.kind,
                detected.version,
                self.name,
                detected.kind,
                detected.version
            );
        }
        let (kind, version) = (detected.kind, detected.version.clone());
        let entry = Entry::from_detected(detected, root.clone(), Source::Linked);
        Registry::update(&home, |registry| {
            if let Some(existing) = registry.toolchains.get(&self.name) {
                bail!(
                    "{} is already registered (at {})\nhint: `gpuenv unlink {}` first, or choose another name such as {}-{}",
                    self.name,
                    existing.root.display(),
                    self.name,
                    self.name,
                    "local"
                );
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
