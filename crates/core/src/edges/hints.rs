//! The hint registry: every error type of gpuenv-core that is a `Diagnostic`, so an edge
//! can find the hints in an error chain (`diagnostic` explains why it is a list). It names
//! types from every layer, so it sits at the top; a type missing here cannot implement
//! `Diagnostic` at all.

use crate::diagnostic::{Find, Hinted};
use crate::edges::{proxy, shell};
use crate::facts::{copies, driver, tegra, torch_choose, wheel_base, Unknown};
use crate::plan::{auto_install, build_cache, guard, host_compiler, resolve, stale};
use crate::store::toolchain::{registry, upstream};
use crate::store::{locate, shims};
use crate::{ask, context, outside, project, store, user_file};

crate::diagnostics!(
    /// gpuenv-core's diagnostics.
    pub fn find:
    Hinted,
    context::BadFlag,
    ask::AskError,
    outside::ReadError,
    auto_install::InstallFailed,
    auto_install::NotAllowed,
    build_cache::BadVar,
    build_cache::NotInstalled,
    locate::NoHome,
    locate::RelativeDir,
    driver::DriverTooOld,
    copies::Refused,
    torch_choose::NoIndex,
    tegra::UnknownJetson,
    wheel_base::BadIndexUrl,
    Unknown,
    host_compiler::HostCompilerProblem,
    shell::SlurmError,
    shell::ci::CiError,
    shell::by_proxy::NoGpuenv,
    shims::ShimError,
    shims::TooManyTools,
    store::StoreError,
    store::NotOnThisNode,
    store::retired::RetiredError,
    upstream::SystemConfigError,
    guard::Refusal,
    stale::StaleBuild,
    stale::BadVar,
    project::ProjectError,
    proxy::ProxyError,
    resolve::ResolveError,
    registry::StateError,
    registry::StateNotice,
    user_file::EditError,
);

/// The finder of gpuenv-core, for the edges that use core alone (the proxy).
pub const FIND: &[Find] = &[find];
