//! How NVIDIA names this machine's architecture: the toolkit's `targets/<dir>-linux` and the
//! redist manifests' platform keys. Arm servers are `sbsa` in both, not `aarch64`.

/// `targets/<dir>-linux` for `arch` (a `std::env::consts::ARCH` value).
pub fn target_dir_for(arch: &str) -> String {
    let dir = match arch {
        "aarch64" => "sbsa",
        "powerpc64" => "ppc64le",
        a => a,
    };
    format!("targets/{dir}-linux")
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
    }
}
