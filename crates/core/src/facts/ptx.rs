//! PTX ISA versions and the driver that can compile them. The driver JIT-compiles PTX only
//! up to the ISA of its own CUDA release: PTX from a newer nvcc fails at launch with error
//! 222 ("the provided PTX was compiled with an unsupported toolchain"), while SASS of the
//! same build runs (minor version compatibility). The drivers come from `cuda.toml`'s
//! release rows; this table gives each ISA's release.

use crate::facts::{lookup::driver_key, release_name, Facts};

/// PTX ISA (major, minor) -> the CUDA release that introduced it. Source: the PTX ISA
/// documentation's "PTX release history" (docs.nvidia.com/cuda/parallel-thread-execution,
/// as cuda-python's `get_minimal_required_cuda_ver_from_ptx_ver` maps it, through 9.1);
/// 9.2–9.5 measured: `nvcc -ptx -arch=compute_90` of the nvidia-cuda-nvcc 13.2.86, 13.3.73,
/// 13.4.92 and 13.5.37 wheels writes `.version 9.2`, `9.3`, `9.4` and `9.5`.
/// A PTX ISA and a CUDA release, each (major, minor).
type IsaRelease = ((u16, u16), (u64, u64));

const ISA_RELEASE: &[IsaRelease] = &[
    ((6, 0), (9, 0)),
    ((6, 1), (9, 1)),
    ((6, 2), (9, 2)),
    ((6, 3), (10, 0)),
    ((6, 4), (10, 1)),
    ((6, 5), (10, 2)),
    ((7, 0), (11, 0)),
    ((7, 1), (11, 1)),
    ((7, 2), (11, 2)),
    ((7, 3), (11, 3)),
    ((7, 4), (11, 4)),
    ((7, 5), (11, 5)),
    ((7, 6), (11, 6)),
    ((7, 7), (11, 7)),
    ((7, 8), (11, 8)),
    ((8, 0), (12, 0)),
    ((8, 1), (12, 1)),
    ((8, 2), (12, 2)),
    ((8, 3), (12, 3)),
    ((8, 4), (12, 4)),
    ((8, 5), (12, 5)),
    ((8, 6), (12, 7)),
    ((8, 7), (12, 8)),
    ((8, 8), (12, 9)),
    ((9, 0), (13, 0)),
    ((9, 1), (13, 1)),
    ((9, 2), (13, 2)),
    ((9, 3), (13, 3)),
    ((9, 4), (13, 4)),
    ((9, 5), (13, 5)),
];

/// The CUDA release that introduced a PTX ISA, if the table has it.
pub fn release_of_isa(isa: (u16, u16)) -> Option<(u64, u64)> {
    ISA_RELEASE.iter().find(|(i, _)| *i == isa).map(|(_, r)| *r)
}

/// The PTX ISA a release's nvcc writes, if the table has it.
pub fn isa_of_release(release: (u64, u64)) -> Option<(u16, u16)> {
    ISA_RELEASE
        .iter()
        .find(|(_, r)| *r == release)
        .map(|(i, _)| *i)
}

/// PTX the driver cannot compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxTooNew {
    pub isa: (u16, u16),
    /// The release whose ISA it is; `None` when newer than the table.
    pub release: Option<(u64, u64)>,
    /// The driver that compiles it, when the data gives that release's driver.
    pub needs: Option<&'static str>,
    /// The first release (with a known driver) the driver here cannot run in full, and that
    /// release's driver: the least the PTX needs when its own release's is not known.
    pub at_least: ((u64, u64), &'static str),
}

impl PtxTooNew {
    /// "driver 580.65.06 or newer (CUDA 13.0)".
    pub fn driver_needed(&self) -> String {
        let of = self
            .release
            .map_or_else(|| "a newer CUDA".to_string(), release_name);
        match self.needs {
            Some(d) => format!("driver {d} or newer (CUDA {of})"),
            None => format!(
                "a driver for CUDA {of} (at least CUDA {}'s {})",
                release_name(self.at_least.0),
                self.at_least.1
            ),
        }
    }
}

/// Whether `driver` (as NVIDIA writes it) can compile PTX of this ISA: `Err` only when the
/// data shows it cannot (a release at or below the ISA's needs a newer driver); a driver
/// newer than every release in the data is never flagged.
pub fn driver_loads(facts: &Facts, isa: (u16, u16), driver: &str) -> Result<(), PtxTooNew> {
    let have = driver_key(driver);
    let release = release_of_isa(isa);
    let rows = facts.releases;
    // The first release (with a known driver) this driver does not run in full.
    let Some(first_missing) = rows
        .iter()
        .filter_map(|r| Some((r.release, r.driver?)))
        .filter(|(_, d)| have < driver_key(d))
        .min_by_key(|(r, _)| *r)
    else {
        return Ok(());
    };
    let too_new = match release {
        Some(r) => first_missing.0 <= r,
        // An ISA newer than the table: newer than every release, so newer than this one.
        None => isa > ISA_RELEASE.last().map_or((0, 0), |l| l.0),
    };
    if !too_new {
        return Ok(());
    }
    let needs = release.and_then(|r| rows.iter().find(|x| x.release == r)?.driver);
    Err(PtxTooNew {
        isa,
        release,
        needs,
        at_least: first_missing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_of_13_0_needs_a_13_0_driver_and_no_false_alarm_on_a_newer_one() {
        let err = driver_loads(Facts::embedded(), (9, 0), "575.57.08").unwrap_err();
        assert_eq!(err.release, Some((13, 0)));
        assert_eq!(err.driver_needed(), "driver 580.65.06 or newer (CUDA 13.0)");
        assert_eq!(driver_loads(Facts::embedded(), (9, 0), "580.65.06"), Ok(()));
        assert_eq!(
            driver_loads(Facts::embedded(), (9, 0), "580.159.04"),
            Ok(())
        );
        assert_eq!(driver_loads(Facts::embedded(), (8, 8), "575.57.08"), Ok(()));
        // 13.5's PTX on the H200's 580 driver (error 222 there).
        let err = driver_loads(Facts::embedded(), (9, 5), "580.159.04").unwrap_err();
        assert!(
            err.driver_needed()
                .starts_with("driver 620.70.06 or newer (CUDA 13.5)"),
            "{}",
            err.driver_needed()
        );
        // A driver newer than everything in the data is never flagged.
        assert_eq!(driver_loads(Facts::embedded(), (9, 5), "999.1"), Ok(()));
    }
}
