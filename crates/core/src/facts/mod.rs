//! Facts: what holds for CUDA, ROCm and the machine whatever gpuenv's state is (versions,
//! arch forms, the release tables, layout rules, reserved names, the variables). Below
//! everything but the base utilities.
//!
//! The facts that change with every CUDA and PyTorch release (minimum drivers, the newest
//! GCC each nvcc accepts, the archs each nvcc can build, the nvcc build each release ships,
//! PyTorch's wheel indexes) are kept
//! as data: `cuda.toml` beside this file, embedded at build time (build.rs makes statics of
//! it), replaced by a newer checked copy in a gpuenv home ([`copies`]), and overruled for
//! one toolkit by what its own tree says ([`tree`]). A release newer than the data is
//! [`Unknown`], never guessed.

pub mod arch;
pub mod build_cache;
pub mod build_files;
pub mod build_jobs;
pub mod compat_note;
pub mod copies;
pub mod driver;
pub mod driver_dirs;
pub mod lookup;
pub mod nvidia_target;
pub mod pep440;
pub mod platform;
pub mod ptx;
pub mod python;
pub mod reserved;
pub mod schema;
pub mod sources;
pub mod tegra;
pub mod torch_choose;
pub mod torch_headers;
pub mod torch_index;
#[cfg(test)]
mod torch_table;
pub mod tree;
pub mod update;
pub mod update_index;
pub mod vars;
pub mod version;
pub mod wheel_base;

use std::fmt;

/// The system directories a login shell's PATH starts from (the `ENV_PATH` of Debian's and
/// Fedora's `/etc/login.defs`): what a SLURM task started with `--export=NONE`, which has
/// no PATH at all, keeps after the toolkit's directories.
pub const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

pub use copies::{InEffect, Loaded};
pub use lookup::{Coverage, DriverNeed};
pub use platform::Platform;

/// The host GCC majors a release accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GccRange {
    pub min: Option<u64>,
    pub max: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinorCompat {
    pub major: u64,
    pub driver: &'static str,
    pub source: &'static str,
}

/// One `[[release]]` row; a fact it does not give is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReleaseFacts {
    pub release: (u64, u64),
    pub driver: Option<&'static str>,
    pub gcc: Option<GccRange>,
    pub archs: Option<&'static [u32]>,
    pub source: &'static str,
}

/// One `[[nvcc-build]]` row: a release (13.0.2) and the nvcc build it ships (13.0.88), which
/// is what `nvcc --version` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvccBuild {
    pub release: [u64; 3],
    pub nvcc: [u64; 3],
    pub source: &'static str,
}

/// A torch release, `(major, minor)`.
pub type TorchRelease = (u64, u64);

/// One `[[torch-index]]` row: `https://download.pytorch.org/whl/<name>` (or a mirror's), or
/// another host's (NVIDIA's Jetson index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TorchIndex {
    pub name: &'static str,
    pub cuda: (u64, u64),
    /// Its own host, when it is not PyTorch's.
    pub host_url: Option<&'static str>,
    /// The platforms it has wheels for.
    pub platforms: &'static [Platform],
    /// `(compute capability × 10, carries PTX)` of its x86_64 and JetPack 6 wheels; `None`
    /// when not known.
    pub archs: Option<&'static [(u32, bool)]>,
    /// The same for its Linux aarch64 (SBSA) wheels, which JetPack 7 installs too.
    pub sbsa_archs: Option<&'static [(u32, bool)]>,
    /// The first and last torch release it carries: `None` not recorded (first), still
    /// built (last).
    pub torch: (Option<TorchRelease>, Option<TorchRelease>),
    pub source: &'static str,
}

impl TorchIndex {
    pub fn url(&self) -> String {
        match self.host_url {
            Some(u) => u.to_string(),
            None => format!("{}/{}", wheel_base::base(), self.name),
        }
    }

    /// Whether it has wheels for `p` (JetPack 7 installs the SBSA ones).
    pub fn has(&self, p: Platform) -> bool {
        self.platforms.contains(&p)
            || (p == Platform::JetPack7 && self.platforms.contains(&Platform::LinuxSbsa))
    }

    /// The archs its wheels for `p` carry, `None` when not known.
    pub fn archs_on(&self, p: Platform) -> Option<&'static [(u32, bool)]> {
        match p.wheels() {
            Platform::LinuxSbsa => self.sbsa_archs,
            _ => self.archs,
        }
    }
}

/// One `[[torch-rocm-index]]` row: `https://download.pytorch.org/whl/rocmX.Y`, Linux x86_64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RocmTorchIndex {
    pub name: &'static str,
    pub rocm: (u64, u64),
    /// The gfx targets its wheels carry; `None` when not known.
    pub gfx: Option<&'static [&'static str]>,
    pub torch: (Option<TorchRelease>, Option<TorchRelease>),
    pub source: &'static str,
}

impl RocmTorchIndex {
    pub fn url(&self) -> String {
        format!("{}/{}", wheel_base::base(), self.name)
    }
}

/// One copy of the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// When the data was last checked (`YYYY-MM-DD`).
    pub date: &'static str,
    pub minor_compat: &'static [MinorCompat],
    pub releases: &'static [ReleaseFacts],
    pub nvcc_builds: &'static [NvccBuild],
    pub torch: &'static [TorchIndex],
    pub rocm_torch: &'static [RocmTorchIndex],
}

mod embedded {
    use super::*;
    include!(concat!(env!("OUT_DIR"), "/facts.rs"));
}

/// The data this gpuenv was built with, where no home is involved.
impl Default for Facts {
    fn default() -> Self {
        *Facts::embedded()
    }
}

impl Facts {
    /// The data this gpuenv was built with.
    pub fn embedded() -> &'static Facts {
        &embedded::EMBEDDED
    }

    /// A checked copy made `'static`: read once per process, so leaking it costs nothing.
    pub fn from_checked(c: schema::Checked) -> Facts {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let minor: Vec<MinorCompat> = c
            .minor_compat
            .into_iter()
            .map(|(major, driver, source)| MinorCompat {
                major,
                driver: leak(driver),
                source: leak(source),
            })
            .collect();
        let releases: Vec<ReleaseFacts> = c
            .releases
            .into_iter()
            .map(|r| ReleaseFacts {
                release: r.release,
                driver: r.driver.map(leak),
                gcc: r.gcc.map(|(min, max)| GccRange { min, max }),
                archs: r.archs.map(|a| &*Vec::leak(a)),
                source: leak(r.source),
            })
            .collect();
        let nvcc_builds: Vec<NvccBuild> = c
            .nvcc_builds
            .into_iter()
            .map(|b| NvccBuild {
                release: b.release,
                nvcc: b.nvcc,
                source: leak(b.source),
            })
            .collect();
        let torch: Vec<TorchIndex> = c
            .torch
            .into_iter()
            .map(|t| TorchIndex {
                name: leak(t.name),
                cuda: t.cuda,
                host_url: t.url.map(leak),
                platforms: Vec::leak(
                    t.platforms
                        .iter()
                        .filter_map(|k| Platform::from_key(k))
                        .collect(),
                ),
                archs: t.archs.map(|a| &*Vec::leak(a)),
                sbsa_archs: t.sbsa_archs.map(|a| &*Vec::leak(a)),
                torch: t.torch,
                source: leak(t.source),
            })
            .collect();
        let rocm_torch: Vec<RocmTorchIndex> = c
            .rocm_torch
            .into_iter()
            .map(|t| RocmTorchIndex {
                name: leak(t.name),
                rocm: t.rocm,
                gfx: t
                    .gfx
                    .map(|g| &*Vec::leak(g.into_iter().map(leak).collect())),
                torch: t.torch,
                source: leak(t.source),
            })
            .collect();
        Facts {
            date: leak(c.date),
            minor_compat: Vec::leak(minor),
            releases: Vec::leak(releases),
            nvcc_builds: Vec::leak(nvcc_builds),
            torch: Vec::leak(torch),
            rocm_torch: Vec::leak(rocm_torch),
        }
    }
}

pub fn release_name(rel: (u64, u64)) -> String {
    format!("{}.{}", rel.0, rel.1)
}

/// Which fact a question was about, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fact {
    Driver,
    Gcc,
    Archs,
    TorchIndex,
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fact::Driver => "its minimum driver",
            Fact::Gcc => "the host GCC it accepts",
            Fact::Archs => "the GPU archs it can build",
            Fact::TorchIndex => "PyTorch's wheel indexes for it",
        })
    }
}

/// A release newer than every row of a fact: said, not guessed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CUDA {release} is newer than gpuenv's data on {fact} (rows up to {last}, data from {date}): not known to this gpuenv")]
pub struct Unknown {
    pub release: String,
    pub fact: Fact,
    pub last: String,
    pub date: &'static str,
}

/// The command that refreshes the data.
pub const REFRESH: &str = "gpuenv self update-data";

impl crate::diagnostic::Diagnostic for Unknown {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "run `{REFRESH}` to refresh it from NVIDIA's redist manifests and the toolkits installed here"
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_data_reaches_the_releases_the_package_index_carries() {
        let f = Facts::embedded();
        let last = |pick: fn(&ReleaseFacts) -> bool| {
            f.releases
                .iter()
                .filter(|r| pick(r))
                .map(|r| r.release)
                .max()
        };
        assert_eq!(last(|r| r.gcc.is_some()), Some((13, 5)));
        assert_eq!(last(|r| r.archs.is_some()), Some((13, 5)));
        assert_eq!(last(|r| r.driver.is_some()), Some((13, 5)));
        assert!(f.releases.iter().all(|r| !r.source.is_empty()));
        assert!(f.torch.iter().any(|t| t.name == "cu130"));
    }

    #[test]
    fn the_repository_file_passes_the_run_time_checks_too() {
        let text = include_str!("cuda.toml");
        let checked = schema::check(text).unwrap();
        assert_eq!(Facts::from_checked(checked), *Facts::embedded());
    }
}
