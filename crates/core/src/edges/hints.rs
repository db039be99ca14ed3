//! The hint registry: every error type of gpuenv-core that is a `Diagnostic`, so an edge
//! can find the hints in an error chain (`diagnostic` explains why it is a list). It names
//! types from every layer, so it sits at the top.

use std::error::Error;

use crate::diagnostic::{Diagnostic, Find, Hinted};
use crate::find_diagnostic;

/// gpuenv-core's diagnostics.
pub fn find<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a (dyn Diagnostic + 'static)> {
    use crate::edges::{proxy, shell};
    use crate::facts::driver;
    use crate::plan::{auto_install, build_cache, guard, resolve};
    use crate::store::toolchain::{registry, upstream};
    use crate::store::{locate, shims};
    use crate::{project, store};
    find_diagnostic!(
        err,
        Hinted,
        auto_install::InstallFailed,
        auto_install::NotAllowed,
        build_cache::BadVar,
        locate::NoHome,
        driver::DriverTooOld,
        shell::SlurmError,
        shims::ShimError,
        store::StoreError,
        store::NotOnThisNode,
        upstream::SystemConfigError,
        guard::Refusal,
        project::ProjectError,
        proxy::ProxyError,
        resolve::ResolveError,
        registry::StateError,
    )
}

/// The finder of gpuenv-core, for the edges that use core alone (the proxy).
pub const FIND: &[Find] = &[find];
