//! How NVIDIA names this machine's architecture: the toolkit's `targets/<dir>-linux` and the
//! redist manifests' platform keys. Arm servers (Grace, and Jetson from JetPack 7) are
//! `sbsa` in both, not `aarch64`; JetPack 6 and older keep their toolkit in
//! `targets/aarch64-linux` ([`super::tegra`]).

/// `targets/<dir>-linux` for `arch` (a `std::env::consts::ARCH` value).
pub fn target_dir_for(arch: &str) -> String {
    let dir = match arch {
        "aarch64" => "sbsa",
        "powerpc64" => "ppc64le",
        a => a,
    };
    format!("targets/{dir}-linux")
}

/// Every `targets/` directory a toolkit for `arch` may have, NVIDIA's server name first:
/// on aarch64 also JetPack 6's `targets/aarch64-linux`.
pub fn target_dirs_for(arch: &str) -> Vec<String> {
    let mut dirs = vec![target_dir_for(arch)];
    if arch == "aarch64" {
        dirs.push(super::platform::Platform::JetPack6.target_dir().into());
    }
    dirs
}

/// `targets/<dir>-linux` of this machine.
pub fn target_dir() -> String {
    target_dir_for(std::env::consts::ARCH)
}

/// The platform key of this machine in NVIDIA's `redistrib_*.json`.
pub fn redist_platform() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "linux-sbsa",
        "powerpc64" => "linux-ppc64le",
        _ => "linux-x86_64",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_servers_are_sbsa_as_nvidia_names_them() {
        assert_eq!(target_dir_for("aarch64"), "targets/sbsa-linux");
        assert_eq!(target_dir_for("x86_64"), "targets/x86_64-linux");
        assert_eq!(
            target_dirs_for("aarch64"),
            ["targets/sbsa-linux", "targets/aarch64-linux"]
        );
        assert_eq!(target_dirs_for("x86_64"), ["targets/x86_64-linux"]);
    }
}
