//! Jetson boards (NVIDIA Tegra): which board this is, from what it says of itself under a
//! system root (`/` on a real board, a fixture tree in tests) — `/etc/nv_tegra_release`
//! (the L4T release) and the device tree's `compatible` (`nvidia,tegra234`) and `model` —
//! and what follows from it as data: the GPU's compute capability, the JetPack major and
//! the CUDA release it ships, and the [`Platform`] that names its wheels and toolkit layout.
//! JetPack 6 and older put their CUDA in `targets/aarch64-linux` (an integrated-GPU stack
//! that cannot load the SBSA builds of PyPI's CUDA wheels); JetPack 7 moved Jetson to the
//! SBSA stack (`targets/sbsa-linux`, CUDA 13).

use std::path::Path;

use super::platform::Platform;
use crate::outside;

/// A Tegra SoC: its device-tree name and its integrated GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Soc {
    /// The device tree's `nvidia,<name>`.
    pub name: &'static str,
    pub family: &'static str,
    /// Compute capability × 10 (`87` for 8.7).
    pub cc: u32,
}

/// Source: NVIDIA, "CUDA GPU Compute Capability" (developer.nvidia.com/cuda-gpus), Jetson
/// rows; Thor is 11.0 from CUDA 13.0 (it was 10.1 in CUDA 12.8/12.9).
pub const SOCS: &[Soc] = &[
    Soc {
        name: "tegra210",
        family: "Jetson Nano / TX1",
        cc: 53,
    },
    Soc {
        name: "tegra186",
        family: "Jetson TX2",
        cc: 62,
    },
    Soc {
        name: "tegra194",
        family: "Jetson Xavier",
        cc: 72,
    },
    Soc {
        name: "tegra234",
        family: "Jetson Orin",
        cc: 87,
    },
    Soc {
        name: "tegra264",
        family: "Jetson Thor",
        cc: 110,
    },
];

/// One JetPack major: the L4T (Jetson Linux) major it is built on, the CUDA it ships, and
/// its platform (`None` for those older than any wheels gpuenv knows: `targets/
/// aarch64-linux` as JetPack 6's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JetPack {
    pub major: u64,
    pub l4t_major: u64,
    /// The CUDA release of its newest minor (JetPack 6.0 shipped 12.2; 6.1 and 6.2, 12.6).
    pub cuda: (u64, u64),
    pub platform: Option<Platform>,
}

/// Source: NVIDIA's JetPack archive and Jetson Linux release notes
/// (developer.nvidia.com/embedded/jetpack-archive): R32 is JetPack 4, R35 is 5, R36 is 6,
/// R38 is 7 (Thor; the SBSA stack).
pub const JETPACKS: &[JetPack] = &[
    JetPack {
        major: 4,
        l4t_major: 32,
        cuda: (10, 2),
        platform: None,
    },
    JetPack {
        major: 5,
        l4t_major: 35,
        cuda: (11, 4),
        platform: None,
    },
    JetPack {
        major: 6,
        l4t_major: 36,
        cuda: (12, 6),
        platform: Some(Platform::JetPack6),
    },
    JetPack {
        major: 7,
        l4t_major: 38,
        cuda: (13, 0),
        platform: Some(Platform::JetPack7),
    },
];

/// A Jetson board, as far as it says what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    /// The device tree's `model` (`NVIDIA Jetson AGX Orin Developer Kit`).
    pub model: Option<String>,
    /// The `nvidia,tegra…` name from `compatible`, known or not.
    pub soc_name: Option<String>,
    pub soc: Option<&'static Soc>,
    /// The L4T release from `/etc/nv_tegra_release` (`(36, 4, 3)`).
    pub l4t: Option<(u64, u64, u64)>,
    pub jetpack: Option<&'static JetPack>,
}

pub const NV_TEGRA_RELEASE: &str = "/etc/nv_tegra_release";
/// The device tree, as `/proc` links it and as `/sys` has it.
const DEVICE_TREE: &[&str] = &["/proc/device-tree", "/sys/firmware/devicetree/base"];

fn read(root: &Path, abs: &str) -> Option<String> {
    outside::read_text(
        &root.join(abs.trim_start_matches('/')),
        outside::Kind::SystemFile,
    )
    .ok()
}

/// `# R36 (release), REVISION: 4.3, GCID: …` → `(36, 4, 3)`.
pub fn parse_l4t(text: &str) -> Option<(u64, u64, u64)> {
    let line = text.lines().find(|l| l.trim_start().starts_with("# R"))?;
    let major = line.trim_start().strip_prefix("# R")?;
    let major: u64 = major
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    let rev = line.split("REVISION:").nth(1)?.split(',').next()?.trim();
    let mut parts = rev.split('.').map(|p| p.parse::<u64>().ok());
    let minor = parts.next()??;
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// The `nvidia,tegra…` entry of a device tree's `compatible` (NUL-separated strings).
pub fn soc_of_compatible(compatible: &str) -> Option<String> {
    compatible
        .split(['\0', '\n'])
        .filter_map(|c| c.trim().strip_prefix("nvidia,"))
        .find(|c| c.starts_with("tegra") && c.len() > 5)
        .map(str::to_string)
}

/// The JetPack an L4T major belongs to.
pub fn jetpack_of_l4t(l4t_major: u64) -> Option<&'static JetPack> {
    JETPACKS.iter().find(|j| j.l4t_major == l4t_major)
}

/// The Jetson board under `root`, or `None` when nothing there says Tegra.
pub fn detect(root: &Path) -> Option<Board> {
    let l4t = read(root, NV_TEGRA_RELEASE).and_then(|t| parse_l4t(&t));
    let tree = |file: &str| {
        DEVICE_TREE
            .iter()
            .find_map(|d| read(root, &format!("{d}/{file}")))
    };
    let soc_name = tree("compatible").and_then(|c| soc_of_compatible(&c));
    if l4t.is_none() && soc_name.is_none() {
        return None;
    }
    let model = tree("model")
        .map(|m| m.trim_end_matches(['\0', '\n']).trim().to_string())
        .filter(|m| !m.is_empty());
    let soc = soc_name
        .as_deref()
        .and_then(|n| SOCS.iter().find(|s| s.name == n));
    let jetpack = l4t.and_then(|(major, _, _)| jetpack_of_l4t(major));
    Some(Board {
        model,
        soc_name,
        soc,
        l4t,
        jetpack,
    })
}

/// Why a Jetson board has no platform gpuenv knows wheels for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{board}: gpuenv knows PyTorch and CUDA wheels for JetPack 6 and 7 only")]
pub struct UnknownJetson {
    pub board: String,
}

impl crate::diagnostic::Diagnostic for UnknownJetson {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "a Jetson on JetPack 5 or older takes NVIDIA's own builds (JetPack's CUDA in /usr/local/cuda, PyTorch from NVIDIA's Jetson downloads); {NV_TEGRA_RELEASE} names the L4T release"
        )]
    }
}

/// The platform of the machine under `root`: a Jetson board's JetPack (Thor without a
/// release file known by its SoC: only JetPack 7 runs on it), else what the CPU arch
/// implies (`arch`, a `std::env::consts::ARCH` value; x86_64 for archs without wheels).
pub fn platform(root: &Path, arch: &str) -> Result<Platform, UnknownJetson> {
    let Some(board) = (arch == "aarch64").then(|| detect(root)).flatten() else {
        return Ok(Platform::for_arch(arch).unwrap_or(Platform::LinuxX86_64));
    };
    board.platform()
}

impl Board {
    /// Its platform: by the JetPack its L4T release belongs to.
    pub fn platform(&self) -> Result<Platform, UnknownJetson> {
        let by_soc = self
            .soc
            .filter(|s| s.name == "tegra264")
            .map(|_| Platform::JetPack7);
        self.jetpack
            .and_then(|j| j.platform)
            .or(if self.jetpack.is_none() { by_soc } else { None })
            .ok_or_else(|| UnknownJetson {
                board: self.describe(),
            })
    }

    /// One line: `NVIDIA Jetson AGX Orin (tegra234, GPU 8.7), L4T R36.4.3 (JetPack 6)`.
    pub fn describe(&self) -> String {
        let mut s = self
            .model
            .clone()
            .or_else(|| self.soc.map(|s| s.family.to_string()))
            .unwrap_or_else(|| "a Jetson board".into());
        match (&self.soc_name, self.soc) {
            (Some(n), Some(soc)) => s += &format!(" ({n}, GPU {}.{})", soc.cc / 10, soc.cc % 10),
            (Some(n), None) => s += &format!(" ({n}, a Tegra gpuenv's data does not know)"),
            _ => {}
        }
        match (self.l4t, self.jetpack) {
            (Some((a, b, c)), Some(j)) => s += &format!(", L4T R{a}.{b}.{c} (JetPack {})", j.major),
            (Some((a, b, c)), None) => {
                s += &format!(", L4T R{a}.{b}.{c} (a JetPack gpuenv's data does not know)")
            }
            (None, _) => s += &format!(", L4T release unknown (no readable {NV_TEGRA_RELEASE})"),
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JP62: &str = "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\n";

    #[test]
    fn l4t_release_lines_parse_and_name_their_jetpack() {
        assert_eq!(parse_l4t(JP62), Some((36, 4, 3)));
        assert_eq!(
            parse_l4t("# R38 (release), REVISION: 2.0, GCID: 1, BOARD: generic"),
            Some((38, 2, 0))
        );
        assert_eq!(
            parse_l4t("# R35 (release), REVISION: 4.1"),
            Some((35, 4, 1))
        );
        assert_eq!(parse_l4t("garbage\n# R (release)"), None);
        assert_eq!(parse_l4t(""), None);
        assert_eq!(jetpack_of_l4t(36).unwrap().major, 6);
        assert_eq!(
            jetpack_of_l4t(38).unwrap().platform,
            Some(Platform::JetPack7)
        );
        assert_eq!(
            jetpack_of_l4t(36).unwrap().platform,
            Some(Platform::JetPack6)
        );
        assert_eq!(jetpack_of_l4t(35).unwrap().platform, None);
        assert_eq!(jetpack_of_l4t(99), None);
    }

    /// A board's files under a test root, as the doctor's tests fake /proc and /sys.
    fn board(
        release: Option<&str>,
        compatible: Option<&str>,
        model: Option<&str>,
    ) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| {
            let p = root.path().join(rel);
            fs_err::create_dir_all(p.parent().unwrap()).unwrap();
            fs_err::write(p, text).unwrap();
        };
        if let Some(r) = release {
            put("etc/nv_tegra_release", r);
        }
        if let Some(c) = compatible {
            put("sys/firmware/devicetree/base/compatible", c);
        }
        if let Some(m) = model {
            put("proc/device-tree/model", m);
        }
        root
    }

    #[test]
    fn an_orin_on_jetpack_6_and_a_thor_on_jetpack_7_are_told_apart() {
        let orin = board(
            Some(JP62),
            Some("nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0"),
            Some("NVIDIA Jetson AGX Orin Developer Kit\0"),
        );
        let b = detect(orin.path()).unwrap();
        assert_eq!(b.soc.unwrap().cc, 87);
        assert_eq!(b.l4t, Some((36, 4, 3)));
        assert_eq!(b.platform(), Ok(Platform::JetPack6));
        assert_eq!(
            b.describe(),
            "NVIDIA Jetson AGX Orin Developer Kit (tegra234, GPU 8.7), L4T R36.4.3 (JetPack 6)"
        );
        assert_eq!(platform(orin.path(), "aarch64"), Ok(Platform::JetPack6));
        // The same files on an x86_64 machine are not a board gpuenv runs on.
        assert_eq!(platform(orin.path(), "x86_64"), Ok(Platform::LinuxX86_64));

        let thor = board(
            Some("# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64\n"),
            Some("nvidia,p3971-0080+p3834-0008\0nvidia,tegra264\0"),
            None,
        );
        assert_eq!(platform(thor.path(), "aarch64"), Ok(Platform::JetPack7));
        // Thor without a release file: only JetPack 7 runs on it.
        let bare_thor = board(None, Some("nvidia,tegra264\0"), None);
        assert_eq!(
            platform(bare_thor.path(), "aarch64"),
            Ok(Platform::JetPack7)
        );
    }

    #[test]
    fn a_grace_server_an_old_jetpack_and_garbage() {
        let grace = board(None, None, None);
        assert_eq!(detect(grace.path()), None);
        assert_eq!(platform(grace.path(), "aarch64"), Ok(Platform::LinuxSbsa));
        let xavier = board(
            Some("# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref\n"),
            Some("nvidia,tegra194\0"),
            None,
        );
        let err = platform(xavier.path(), "aarch64").unwrap_err();
        assert!(err.board.contains("L4T R35.4.1"), "{err}");
        assert!(err.to_string().contains("JetPack 6 and 7 only"), "{err}");
        // An Orin whose release file is unreadable garbage: a board, but no platform.
        let orin = board(Some("\u{1}\u{2}nonsense"), Some("nvidia,tegra234\0"), None);
        let b = detect(orin.path()).unwrap();
        assert_eq!(b.l4t, None);
        assert!(b.platform().is_err());
        assert!(
            b.describe().contains("no readable /etc/nv_tegra_release"),
            "{}",
            b.describe()
        );
    }

    #[test]
    fn the_soc_comes_from_the_tegra_entry_of_compatible() {
        let c = "nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0";
        assert_eq!(soc_of_compatible(c).as_deref(), Some("tegra234"));
        assert_eq!(
            soc_of_compatible("raspberrypi,4-model-b\0brcm,bcm2711\0"),
            None
        );
        assert_eq!(soc_of_compatible("nvidia,tegra\0"), None);
    }
}
