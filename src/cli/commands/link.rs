//! `gpuenv link NAME PATH`: register a toolchain already on disk, used in place.

use crate::cli::support;
use std::path::PathBuf;

use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::toolchain::registry::Source;
use gpuenv_core::toolchain::{detect, Spec};
use gpuenv_core::ui;

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
        let store = support::store(ctx)?;
        let spec: Spec = self.name.parse()?;
        let root = ctx.cwd.join(&self.path);
        store.admissible(&root, Source::Linked)?;
        let detected = detect::detect(&root, Source::Linked).map_err(|e| {
            Hinted::new(format!("cannot link {}", self.name))
                .hint("give the directory that holds bin/nvcc (CUDA) or bin/hipcc (ROCm), e.g. /usr/local/cuda-12.4")
                .caused_by(e)
        })?;
        // Naming a tree asks the data (which release ships its nvcc): a newer copy counts.
        let release = detected.release(
            store
                .home()
                .facts_in_effect()
                .saying_refused(gpuenv_core::session::warn_refused)
                .facts(),
        );
        if detected.kind != spec.kind || !spec.version.is_prefix_of(&release) {
            // One name per release: nvcc's build number (V13.0.88) is not one.
            let build = if release != detected.version {
                format!(
                    " ({} {} from {} is a build number; the release it is part of is {release})",
                    detected.kind, detected.version, detected.version_from
                )
            } else {
                String::new()
            };
            bail!(Hinted::new(format!(
                "{} is {} {release}{build}, which the name {} does not describe",
                root.display(),
                detected.kind,
                self.name
            ))
            .hint(format!(
                "name it {}-{release} (the version is read from the tree, never from the name: a release as NVIDIA numbers it, from version.json)",
                detected.kind
            )));
        }
        let (kind, version) = (detected.kind, detected.version.clone());
        let changed = store.register(vec![(self.name.clone(), detected)])?;
        support::notice(&changed.registry);
        support::warn_unshimmed(&changed.shims);
        ui::info(format!(
            "linked {} ({kind} {version}) at {}",
            self.name,
            root.display()
        ));
        Ok(())
    }
}
