//! The per-toolchain lock that serialises installs and uninstalls of one toolchain, and the
//! check that a name is a toolchain's before it names anything on disk.

use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::home::Home;
use gpuenv_core::toolchain::Spec;
use gpuenv_core::ui;

use crate::error::Result;
use crate::{cache, pathpart};

/// `name` as the name of a toolchain, checked before it names anything on disk.
pub fn checked_name(name: &str) -> Result<Spec> {
    let bad = |e: &dyn std::fmt::Display| {
        Hinted::new(e.to_string()).hint("`gpuenv list` shows the registered names")
    };
    pathpart::part("toolchain name", name).map_err(|e| bad(&e))?;
    Ok(name.parse().map_err(|e| bad(&e))?)
}

/// The lock that serialises installs and uninstalls of one toolchain.
pub fn lock_toolchain(home: &Home, name: &str) -> Result<cache::FileLock> {
    checked_name(name)?;
    let lock = cache::lock(&home.toolchains().join(format!(".{name}.lock")), || {
        ui::info(format!("waiting for another gpuenv working on {name}"))
    })?;
    Ok(lock)
}
