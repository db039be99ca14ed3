//! The shell hook's side of `GPUENV_AUTO_INSTALL`: resolve, and when a pin is only
//! missing, install it through this same gpuenv binary and resolve again.

use anyhow::Result;

use gpuenv_core::auto_install;
use gpuenv_core::context::Context;
use gpuenv_core::resolve::{ActiveSet, ResolveError};
use gpuenv_core::toolchain::registry::Registry;

/// Resolves with the registry `load` gives; when a pin is only missing, installs it and
/// loads again.
pub fn resolve_installing(
    ctx: &Context,
    load: &mut dyn FnMut() -> Result<Registry>,
) -> Result<(Registry, ActiveSet)> {
    let mut installs = 0;
    loop {
        let registry = load()?;
        let err = match super::resolve_active(ctx, &registry, &[]) {
            Ok(active) => return Ok((registry, active)),
            Err(e) => e,
        };
        let missing = err
            .downcast_ref::<ResolveError>()
            .and_then(auto_install::missing)
            .filter(|_| auto_install::enabled(ctx) && installs < auto_install::MAX_INSTALLS);
        let Some((spec, origin)) = missing else {
            let refused = err
                .downcast_ref::<ResolveError>()
                .and_then(auto_install::not_allowed)
                .filter(|_| auto_install::enabled(ctx));
            return Err(refused.map_or(err, Into::into));
        };
        let gpuenv = std::env::current_exe()?;
        auto_install::install(ctx, &gpuenv, spec, origin)?;
        installs += 1;
    }
}
