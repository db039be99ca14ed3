//! The NVIDIA driver's version as the machine reports it: `/proc/driver/nvidia/version`
//! (proprietary and open kernel modules word it differently), or nvidia-smi's banner.

use std::path::Path;

use crate::diagnostic::Diagnostic;
use crate::facts::version::Version;
use crate::facts::{lookup, Facts};

/// Where the kernel module reports its version, relative to the system root.
pub const PROC_VERSION: &str = "/proc/driver/nvidia/version";

/// The `NVRM version:` line: `NVIDIA UNIX x86_64 Kernel Module  515.76 …` or
/// `NVIDIA UNIX Open Kernel Module for x86_64  575.57.08 …`: the first dotted number, as
/// the driver writes it (`575.57.08`; a `Version` would print `575.57.8`).
pub fn parse_proc_version(text: &str) -> Option<String> {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("NVRM version:"))?;
    line.split_whitespace()
        .find(|w| w.contains('.') && w.parse::<Version>().is_ok())
        .map(str::to_string)
}

/// nvidia-smi's banner: `Driver Version: 450.119.03   CUDA Version: 11.0`.
pub fn parse_nvidia_smi(text: &str) -> Option<(String, Option<Version>)> {
    let after = |label: &str| -> Option<&str> {
        let rest = &text[text.find(label)? + label.len()..];
        rest.split_whitespace().next()
    };
    let driver = after("Driver Version:").filter(|d| d.parse::<Version>().is_ok())?;
    Some((
        driver.to_string(),
        after("CUDA Version:").and_then(|c| c.parse().ok()),
    ))
}

/// The driver version under `system_root` (`/` on a real machine), if the module is loaded.
pub fn read_proc_version(system_root: &Path) -> Option<String> {
    let path = system_root.join(PROC_VERSION.trim_start_matches('/'));
    parse_proc_version(&crate::outside::read_text(&path, crate::outside::Kind::SystemFile).ok()?)
}

/// The driver cannot run programs built with a release at all: a warning, with its way out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CUDA {cuda} needs NVIDIA driver {need} or newer, and this machine has {driver}: programs built with it will fail with cudaErrorInsufficientDriver")]
pub struct DriverTooOld {
    pub cuda: Version,
    pub need: String,
    pub driver: String,
}

impl Diagnostic for DriverTooOld {
    fn hints(&self) -> Vec<String> {
        vec!["update the driver, or install a toolkit this driver supports".into()]
    }
}

/// A warning when `driver` cannot run programs built with `cuda` at all (below the minor
/// version compatibility floor of its release); `None` when it can or the release is unknown.
pub fn too_old_for(facts: &Facts, cuda: &Version, driver: &str) -> Option<DriverTooOld> {
    let need = lookup::driver_need(facts, cuda.release()).ok()??;
    let version: Version = driver.parse().ok()?;
    (!need.hard_met_by(&version)).then(|| DriverTooOld {
        cuda: cuda.clone(),
        need: need.hard.to_string(),
        driver: driver.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::captured;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn reads_the_proprietary_kernel_module_line() {
        let text = captured("proc-driver-nvidia-version-proprietary.txt");
        assert_eq!(parse_proc_version(&text).as_deref(), Some("515.76"));
    }

    #[test]
    fn reads_the_open_kernel_module_line_past_its_x86_64() {
        let text = captured("proc-driver-nvidia-version-open.txt");
        assert_eq!(parse_proc_version(&text).as_deref(), Some("575.57.08"));
    }

    #[test]
    fn reads_driver_and_cuda_version_from_the_nvidia_smi_banner() {
        let text = captured("nvidia-smi-header.txt");
        assert_eq!(
            parse_nvidia_smi(&text),
            Some(("450.119.03".to_string(), Some(v("11.0"))))
        );
        assert_eq!(
            parse_nvidia_smi(
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
            ),
            None
        );
    }

    #[test]
    fn a_file_without_the_nvrm_line_is_not_a_driver_version() {
        assert_eq!(parse_proc_version("GCC version:  gcc version 12.2.0"), None);
    }

    #[test]
    fn warns_only_when_the_driver_cannot_run_the_release_at_all() {
        assert!(too_old_for(Facts::embedded(), &v("13.0.2"), "575.57.08")
            .unwrap()
            .to_string()
            .contains("580.65.06"));
        assert_eq!(
            too_old_for(Facts::embedded(), &v("12.4.1"), "575.57.08"),
            None
        );
        assert!(too_old_for(Facts::embedded(), &v("12.4.1"), "515.76").is_some());
    }
}
