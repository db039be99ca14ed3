//! What to do with a toolchain just installed, for where the install ran: a project that
//! already pins it needs nothing, a project that pins another release is told how to move
//! its pin, and a site store's admin is told who sees it.

use gpuenv_core::context::Context;
use gpuenv_core::home::Home;
use gpuenv_core::project::{self, PinValue};
use gpuenv_core::toolchain::{upstream, Spec};

/// The line said after `name` was installed into `home`, run in `ctx.cwd`.
pub fn after(ctx: &Context, home: &Home, name: &str) -> String {
    if is_a_site_store(ctx, home) {
        return format!(
            "{} is an upstream this machine's users search (GPUENV_UPSTREAMS or the system config): they can `gpuenv pin {name}` or `gpuenv use {name}` now",
            home.root.display()
        );
    }
    let anywhere = format!(
        "use it in this project with `gpuenv pin {name}`, in this shell with `gpuenv use {name}`, or everywhere else with `gpuenv default {name}`"
    );
    let Ok(spec) = name.parse::<Spec>() else {
        return anywhere;
    };
    // A project that cannot be read here gets the general advice; its error is another
    // command's to say.
    let file = project::find(&ctx.cwd, &[])
        .ok()
        .and_then(|here| here.path)
        .and_then(|path| project::load(&path).ok());
    let Some(pin) = file.as_ref().and_then(|f| f.pin(spec.kind)) else {
        return anywhere;
    };
    match &pin.value {
        PinValue::Spec(pinned) if pinned.matches(&spec) => format!(
            "the pin at {} ({} = \"{}\") selects it here when it is the highest match; `gpuenv show` says what is active",
            pin.at, pin.kind, pinned.version
        ),
        PinValue::Spec(pinned) => format!(
            "this project pins {pinned} ({}): `gpuenv pin {name}` moves the pin to it; `gpuenv use {name}` uses it in this shell only",
            pin.at
        ),
        PinValue::Torch => format!(
            "this project pins {} to its torch's ({}): `gpuenv use {name}` uses it in this shell only",
            pin.kind, pin.at
        ),
    }
}

/// Whether `home` is itself an upstream the environment or the system config names: a
/// site's store, filled by its admin.
fn is_a_site_store(ctx: &Context, home: &Home) -> bool {
    let real = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let me = real(&home.root);
    upstream::from_context(ctx)
        .0
        .iter()
        .any(|root| real(root) == me)
}
