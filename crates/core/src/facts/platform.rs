//! The platform a torch wheel and a CUDA toolkit are built for: the chooser's platform input.
//! PyTorch's wheels differ per platform (Linux aarch64 wheels carry other archs than x86_64's),
//! and a Jetson on JetPack 6 cannot load the SBSA stack at all (PyTorch's RELEASE.md; NVIDIA's
//! JetPack release notes). Only the CPU arch is read here; which Jetson a board is, is the
//! machine probe's business, which then names [`Platform::JetPack6`] or [`Platform::JetPack7`].

use std::fmt;

/// Where wheels and toolkits must run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Platform {
    /// Linux on x86_64 (`manylinux_*_x86_64` wheels, `targets/x86_64-linux`).
    LinuxX86_64,
    /// Linux on an Arm server (Grace, GH200, GB200): `manylinux_*_aarch64` wheels built for
    /// SBSA, `targets/sbsa-linux`.
    LinuxSbsa,
    /// A Jetson on JetPack 6 (Orin; L4T R36): CUDA 12.6 in `targets/aarch64-linux`, its own
    /// wheel index (NVIDIA's `jp6/cu126`); PyPI's SBSA CUDA 13 wheels do not load there.
    JetPack6,
    /// A Jetson on JetPack 7 (Thor, and Orin from 7.2): the SBSA stack, CUDA 13.0 and newer.
    JetPack7,
}

/// The platforms in the order the data lists them.
pub const ALL: [Platform; 4] = [
    Platform::LinuxX86_64,
    Platform::LinuxSbsa,
    Platform::JetPack6,
    Platform::JetPack7,
];

impl Platform {
    /// The platform a CPU arch (a `std::env::consts::ARCH` value) implies when nothing else is
    /// known about the board: aarch64 is taken for an SBSA server. `None` for archs PyTorch
    /// publishes no Linux CUDA wheels for.
    pub fn for_arch(arch: &str) -> Option<Platform> {
        match arch {
            "x86_64" => Some(Platform::LinuxX86_64),
            "aarch64" => Some(Platform::LinuxSbsa),
            _ => None,
        }
    }

    /// This host's platform from its CPU arch alone (no board detection), x86_64 for archs
    /// PyTorch has no wheels for (the data then simply has no row for it).
    pub fn for_host() -> Platform {
        Platform::for_arch(std::env::consts::ARCH).unwrap_or(Platform::LinuxX86_64)
    }

    /// The key the data (`facts/cuda.toml`) and `--platform` use.
    pub fn key(self) -> &'static str {
        match self {
            Platform::LinuxX86_64 => "linux-x86_64",
            Platform::LinuxSbsa => "linux-sbsa",
            Platform::JetPack6 => "jetpack6",
            Platform::JetPack7 => "jetpack7",
        }
    }

    /// The platform of a key, `None` for any other text.
    pub fn from_key(key: &str) -> Option<Platform> {
        ALL.into_iter().find(|p| p.key() == key)
    }

    /// Which platform's wheels it installs: JetPack 7 installs the SBSA wheels.
    pub fn wheels(self) -> Platform {
        match self {
            Platform::JetPack7 => Platform::LinuxSbsa,
            p => p,
        }
    }

    /// `platform_machine` of its wheels (PEP 508).
    pub fn machine(self) -> &'static str {
        match self {
            Platform::LinuxX86_64 => "x86_64",
            _ => "aarch64",
        }
    }

    /// The toolkit's `targets/<dir>` for this platform.
    pub fn target_dir(self) -> &'static str {
        match self {
            Platform::LinuxX86_64 => "targets/x86_64-linux",
            Platform::LinuxSbsa | Platform::JetPack7 => "targets/sbsa-linux",
            Platform::JetPack6 => "targets/aarch64-linux",
        }
    }

    /// Whether it is a Jetson board (integrated GPU, the driver comes with L4T).
    pub fn is_jetson(self) -> bool {
        matches!(self, Platform::JetPack6 | Platform::JetPack7)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Platform::LinuxX86_64 => "Linux x86_64",
            Platform::LinuxSbsa => "Linux aarch64 (SBSA)",
            Platform::JetPack6 => "Jetson JetPack 6 (L4T R36, CUDA 12.6)",
            Platform::JetPack7 => "Jetson JetPack 7",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_arch_alone_gives_a_server_platform() {
        assert_eq!(Platform::for_arch("x86_64"), Some(Platform::LinuxX86_64));
        assert_eq!(Platform::for_arch("aarch64"), Some(Platform::LinuxSbsa));
        assert_eq!(Platform::for_arch("riscv64"), None);
        assert!(!Platform::for_host().is_jetson());
    }

    #[test]
    fn keys_round_trip_and_jetpack7_uses_the_sbsa_stack() {
        for p in ALL {
            assert_eq!(Platform::from_key(p.key()), Some(p));
        }
        assert_eq!(Platform::JetPack7.wheels(), Platform::LinuxSbsa);
        assert_eq!(Platform::JetPack7.target_dir(), "targets/sbsa-linux");
        assert_eq!(Platform::JetPack6.target_dir(), "targets/aarch64-linux");
        assert_eq!(Platform::JetPack6.machine(), "aarch64");
    }
}
