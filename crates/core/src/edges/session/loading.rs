//! How a session reads its home: the own registry with the upstreams' layered on it (a
//! new user's home made on first use), and the data in effect, each said as its door says.

use super::{use_index_base, warn_refused, Door};
use crate::context::Context;
use crate::diagnostic::Diagnostic;
use crate::facts::InEffect;
use crate::store::home::Home;
use crate::store::shims;
use crate::store::toolchain::registry::{Registry, StateError};
use crate::store::toolchain::upstream::{self, Layered};
use crate::ui;

/// The data in effect for `home`: a newer copy in it or its upstreams (read only if a fact
/// is asked: one lstat per home). A copy refused on the way is said where the door speaks
/// (the proxy says nothing of it).
pub(super) fn facts_of(home: &Home, door: Door) -> InEffect {
    let in_effect = home.facts_in_effect();
    if door == Door::Proxy {
        return in_effect;
    }
    in_effect.saying_refused(warn_refused)
}

/// Reads the own registry and layers the upstreams' on it, saying what `door` says.
pub(super) fn load(ctx: &Context, home: &mut Home, door: Door) -> Result<Layered, StateError> {
    if door == Door::Command {
        ui::verbose(format!("reading {}", home.settings().display()));
    }
    let own = Registry::load_cached(home, home)?;
    if door == Door::Command {
        if let Some(n) = &own.notice {
            ui::warn_with_hints(n, n.hints());
        }
    }
    use_index_base(ctx, &own)?;
    let mut layered = upstream::layered(home, own);
    if door != Door::Proxy && make_fresh_home(home, &layered) {
        layered = upstream::layered(home, Registry::load_cached(home, home)?);
    }
    if door == Door::Command {
        if let Some(e) = upstream::from_context(ctx).1 {
            ui::warn_with_hints(&e, e.hints());
        }
    }
    for w in &layered.warnings {
        match door {
            Door::Hook => ui::hook_note(w),
            Door::Command | Door::Proxy => ui::warn(w),
        }
    }
    Ok(layered)
}

/// A home gpuenv has not made yet (no settings, no shims: a site's new user, whose
/// toolchains are all an upstream's) is made on first use, quietly: the proxy, the
/// shims and the views of the upstreams' toolchains, as `gpuenv reshim` would. True when
/// it was made; a home that cannot be made now is left for the warnings that name it.
fn make_fresh_home(home: &Home, layered: &Layered) -> bool {
    if layered.registry.toolchains.is_empty()
        || home.shims().is_dir()
        || fs_err::symlink_metadata(home.settings()).is_ok()
    {
        return false;
    }
    let Ok(proxy) = shims::proxy_source() else {
        return false;
    };
    crate::store::Store::new(home.clone(), proxy)
        .repair()
        .is_ok_and(|r| r.broken.is_empty())
}
