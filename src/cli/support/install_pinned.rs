//! `gpuenv install` with no spec: the pins of the nearest toolchain file that nothing
//! registered matches yet (like `mise install` in a project). An upstream's toolchain (a
//! site store) matches too: what the site provides is never downloaded again.

use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::guard;
use gpuenv_core::project::{self, PinValue};
use gpuenv_core::toolchain::registry::{Entry, Source};
use gpuenv_core::toolchain::upstream::Layered;
use gpuenv_core::toolchain::{Kind, Spec};
use gpuenv_core::ui;

/// The specs to install for the project here; empty when every pin is satisfied by a
/// toolchain of the user's own or of an upstream.
pub fn missing_pins(ctx: &Context, layered: &Layered) -> Result<Vec<Spec>> {
    let registry = &layered.registry;
    let here = project::find(&ctx.cwd, &registry.safe_directories)?;
    for foreign in &here.passed_over {
        ui::warn(foreign);
    }
    let Some(path) = here.path else {
        bail!(Hinted::new(format!(
            "nothing to install: no SPEC given and no gpuenv.toml from {} up",
            ctx.cwd.display()
        ))
        .hint("`gpuenv install cuda-13.0` installs a release; `gpuenv pin cuda-13.0` pins one here first"));
    };
    let file = project::load(&path)?;
    ui::verbose(format!("toolchain file: {}", path.display()));
    if file.pins.is_empty() {
        bail!(Hinted::new(format!(
            "nothing to install: {} pins no toolchain",
            path.display()
        ))
        .hint("`gpuenv pin cuda-13.0` adds a pin, or give the SPEC: `gpuenv install cuda-13.0`"));
    }
    let mut missing = Vec::new();
    for pin in &file.pins {
        let spec = match &pin.value {
            PinValue::Spec(s) => s.clone(),
            PinValue::Torch => {
                let torch = guard::locate_torch(ctx, None).map_err(|why| {
                    Hinted::new(format!("{}: {} = \"torch\", but {why}", pin.at, pin.kind))
                        .hint("activate the Python environment that has torch, or give the SPEC: `gpuenv install cuda-12.4`")
                })?;
                let Some(version) = torch.built_for(pin.kind) else {
                    bail!(Hinted::new(format!(
                        "{}: {} = \"torch\", but the torch at {} (torch {}) is not built for {}",
                        pin.at,
                        pin.kind,
                        torch.dir.display(),
                        torch.label(),
                        pin.kind,
                    ))
                    .hint(format!(
                        "install a torch built for {}, or pin a version",
                        pin.kind
                    )));
                };
                Spec {
                    kind: pin.kind,
                    version,
                    label: None,
                }
            }
        };
        match registry.find(&spec) {
            Some((name, _)) => {
                let from = layered
                    .upstream_of(name)
                    .map(|root| format!(" from the upstream {}", root.display()))
                    .unwrap_or_default();
                ui::info(format!(
                    "{}: {spec} is satisfied by {name}{from}; nothing to install",
                    pin.at
                ))
            }
            None => missing.push(spec),
        }
    }
    Ok(missing)
}

/// The `rocm-arch` pins of the nearest toolchain file, as the ROCm wheels' device
/// components (`device-gfx942`): what a ROCm install here fetches device code for. Empty
/// when there is no file, or it cannot be read (its own command says why).
pub fn pinned_rocm_devices(ctx: &Context) -> Vec<String> {
    let Ok(safe) = super::registry(ctx).map(|(_, r)| r.safe_directories) else {
        return Vec::new();
    };
    let Some(path) = project::find(&ctx.cwd, &safe).ok().and_then(|h| h.path) else {
        return Vec::new();
    };
    let Ok(file) = project::load(&path) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for t in &file.rocm_arch {
        let c = format!("device-{}", t.processor);
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// The ROCm of AMD's wheels the nearest toolchain file pins, installed here, and the
/// device wheels (`device-gfx942`) of its `rocm-arch` pins it lacks: what `gpuenv install`
/// with no spec adds to it in place. None when there is nothing to add.
pub fn lacking_devices(ctx: &Context, layered: &Layered) -> Option<(String, Entry, Vec<String>)> {
    let registry = &layered.registry;
    let path = project::find(&ctx.cwd, &registry.safe_directories)
        .ok()?
        .path?;
    let file = project::load(&path).ok()?;
    let spec = file.pins.iter().find_map(|p| match &p.value {
        PinValue::Spec(s) if s.kind == Kind::Rocm => Some(s.clone()),
        _ => None,
    })?;
    let (name, entry) = registry.find(&spec)?;
    if entry.source != Source::Installed || layered.upstream_of(name).is_some() {
        return None;
    }
    let carried = gpuenv_core::facts::arch::device_wheels(&entry.root)?;
    let mut lacking: Vec<String> = Vec::new();
    for t in &file.rocm_arch {
        let c = format!("device-{}", t.processor);
        if !carried.contains(&t.processor) && !lacking.contains(&c) {
            lacking.push(c);
        }
    }
    (!lacking.is_empty()).then(|| (name.to_string(), entry.clone(), lacking))
}
