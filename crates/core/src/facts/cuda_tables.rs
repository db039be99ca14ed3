//! Facts about CUDA releases, kept as data. Rows are per major.minor (an `nvcc` reports
//! `12.4.131`, not which update it came from, so the GA row applies to a whole minor).
//! A release newer than the last row of its major is looked up in that last row, and the
//! answer is marked inexact so checks can say so instead of guessing.

use crate::facts::version::Version;

/// A row found for a release: exact, or the nearest older row of the same major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row<T: 'static> {
    pub release: (u64, u64),
    pub exact: bool,
    pub value: &'static T,
}

fn lookup<T>(table: &'static [((u64, u64), T)], v: &Version) -> Option<Row<T>> {
    let want = (v.major(), v.minor().unwrap_or(0));
    table
        .iter()
        .filter(|(rel, _)| rel.0 == want.0 && rel.1 <= want.1)
        .max_by_key(|(rel, _)| *rel)
        .map(|(rel, value)| Row {
            release: *rel,
            exact: *rel == want,
            value,
        })
}

pub fn release_name(rel: (u64, u64)) -> String {
    format!("{}.{}", rel.0, rel.1)
}

// ---------------------------------------------------------------------------------------
// Minimum Linux x86_64 driver per release, GA rows. Source: NVIDIA CUDA Toolkit Release
// Notes, table "CUDA Toolkit and Corresponding Driver Versions" ("Toolkit Driver Version").

pub static MIN_DRIVER: &[((u64, u64), &str)] = &[
    ((10, 0), "410.48"),
    ((10, 1), "418.39"),
    ((10, 2), "440.33"),
    ((11, 0), "450.51.05"),
    ((11, 1), "455.23"),
    ((11, 2), "460.27.03"),
    ((11, 3), "465.19.01"),
    ((11, 4), "470.42.01"),
    ((11, 5), "495.29.05"),
    ((11, 6), "510.39.01"),
    ((11, 7), "515.43.04"),
    ((11, 8), "520.61.05"),
    ((12, 0), "525.60.13"),
    ((12, 1), "530.30.02"),
    ((12, 2), "535.54.03"),
    ((12, 3), "545.23.06"),
    ((12, 4), "550.54.14"),
    ((12, 5), "555.42.02"),
    ((12, 6), "560.28.03"),
    ((12, 8), "570.26"),
    ((12, 9), "575.51.03"),
    ((13, 0), "580.65.06"),
    ((13, 1), "590.44.01"),
];

// Same release notes, table "CUDA Toolkit and Minimum Required Driver Version for CUDA
// Minor Version Compatibility": below this, nothing of the major runs ("CUDA driver version
// is insufficient"); between it and the row above, apps run without PTX JIT and new APIs.
pub static MINOR_COMPAT_DRIVER: &[(u64, &str)] =
    &[(11, "450.80.02"), (12, "525.60.13"), (13, "580.65.06")];

/// Driver versions are shown as NVIDIA writes them (`520.61.05`: a `Version` would print
/// `520.61.5`) and compared as numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverNeed {
    pub release: (u64, u64),
    pub exact: bool,
    /// Everything in the release works from here.
    pub full: &'static str,
    /// Below this nothing of the release runs.
    pub hard: &'static str,
}

impl DriverNeed {
    pub fn full_met_by(&self, driver: &Version) -> bool {
        *driver >= v(self.full)
    }
    pub fn hard_met_by(&self, driver: &Version) -> bool {
        *driver >= v(self.hard)
    }
}

fn v(s: &str) -> Version {
    s.parse().expect("table versions are valid")
}

pub fn driver_need(cuda: &Version) -> Option<DriverNeed> {
    let row = lookup(MIN_DRIVER, cuda)?;
    let full: &'static str = row.value;
    let hard = MINOR_COMPAT_DRIVER
        .iter()
        .find(|(major, _)| *major == cuda.major())
        .map(|(_, d)| *d)
        .filter(|floor| v(floor) < v(full))
        .unwrap_or(full);
    Some(DriverNeed {
        release: row.release,
        exact: row.exact,
        full,
        hard,
    })
}

/// The newest release a driver runs in full, e.g. `12.4` for 550.54.14.
pub fn newest_cuda_for_driver(driver: &Version) -> Option<(u64, u64)> {
    MIN_DRIVER
        .iter()
        .filter(|(_, d)| v(d) <= *driver)
        .map(|(rel, _)| *rel)
        .max()
}

// ---------------------------------------------------------------------------------------
// Host GCC per release (major versions). Max: the `#if __GNUC__ > N` test in the release's
// include/crt/host_config.h ("unsupported GNU version! gcc versions later than N are not
// supported!"; 11.8 and 13.0 checked against the real headers); min: the CUDA Installation
// Guide for Linux, "Supported Compilers" table (given from 12.0 on).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GccRange {
    pub min: Option<u64>,
    pub max: u64,
}

const fn gcc(min: Option<u64>, max: u64) -> GccRange {
    GccRange { min, max }
}

pub static HOST_GCC: &[((u64, u64), GccRange)] = &[
    ((10, 2), gcc(None, 8)),
    ((11, 0), gcc(None, 9)),
    ((11, 1), gcc(None, 10)),
    ((11, 2), gcc(None, 10)),
    ((11, 3), gcc(None, 10)),
    ((11, 4), gcc(None, 11)),
    ((11, 5), gcc(None, 11)),
    ((11, 6), gcc(None, 11)),
    ((11, 7), gcc(None, 11)),
    ((11, 8), gcc(None, 11)),
    ((12, 0), gcc(Some(6), 12)),
    ((12, 1), gcc(Some(6), 12)),
    ((12, 2), gcc(Some(6), 12)),
    ((12, 3), gcc(Some(6), 12)),
    ((12, 4), gcc(Some(6), 13)),
    ((12, 5), gcc(Some(6), 13)),
    ((12, 6), gcc(Some(6), 13)),
    ((12, 8), gcc(Some(6), 14)),
    ((12, 9), gcc(Some(6), 14)),
    ((13, 0), gcc(None, 15)),
];

pub fn host_gcc(cuda: &Version) -> Option<Row<GccRange>> {
    lookup(HOST_GCC, cuda)
}

/// The oldest release whose max GCC is at least `gcc_major`.
pub fn first_cuda_for_gcc(gcc_major: u64) -> Option<(u64, u64)> {
    HOST_GCC
        .iter()
        .filter(|(_, r)| r.max >= gcc_major)
        .map(|(rel, _)| *rel)
        .min()
}

// ---------------------------------------------------------------------------------------
// SM architectures nvcc can target, as `nvcc --list-gpu-arch` prints them (compute_XX).
// 11.8 and 13.0 are the real output of those nvcc releases; the others follow the release
// notes' "Deprecated or Dropped Architectures" sections (sm_30 dropped in 11.0, sm_35/37 in
// 12.0, Maxwell/Pascal/Volta in 13.0).

const SM_10_2: &[u32] = &[30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75];
const SM_11_0: &[u32] = &[35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80];
const SM_11_1: &[u32] = &[35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86];
const SM_11_4: &[u32] = &[35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87];
const SM_11_8: &[u32] = &[
    35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90,
];
const SM_12_0: &[u32] = &[50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90];
const SM_12_8: &[u32] = &[
    50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120,
];
const SM_12_9: &[u32] = &[
    50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121,
];
const SM_13_0: &[u32] = &[75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];

pub static SM_ARCHS: &[((u64, u64), &[u32])] = &[
    ((10, 2), SM_10_2),
    ((11, 0), SM_11_0),
    ((11, 1), SM_11_1),
    ((11, 2), SM_11_1),
    ((11, 3), SM_11_1),
    ((11, 4), SM_11_4),
    ((11, 5), SM_11_4),
    ((11, 6), SM_11_4),
    ((11, 7), SM_11_4),
    ((11, 8), SM_11_8),
    ((12, 0), SM_12_0),
    ((12, 1), SM_12_0),
    ((12, 2), SM_12_0),
    ((12, 3), SM_12_0),
    ((12, 4), SM_12_0),
    ((12, 5), SM_12_0),
    ((12, 6), SM_12_0),
    ((12, 8), SM_12_8),
    ((12, 9), SM_12_9),
    ((13, 0), SM_13_0),
];

pub fn sm_archs(cuda: &Version) -> Option<Row<&'static [u32]>> {
    lookup(SM_ARCHS, cuda)
}

/// The newest release that can still target `sm`, and the oldest that can.
pub fn releases_for_sm(sm: u32) -> Option<((u64, u64), (u64, u64))> {
    let rels: Vec<(u64, u64)> = SM_ARCHS
        .iter()
        .filter(|(_, archs)| archs.contains(&sm))
        .map(|(rel, _)| *rel)
        .collect();
    Some((*rels.iter().min()?, *rels.iter().max()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ver(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn every_release_from_10_2_to_13_has_a_row() {
        for r in [
            "10.2.89", "11.8.89", "12.4.131", "12.9.86", "13.0.88", "13.2.86",
        ] {
            assert!(driver_need(&ver(r)).is_some(), "{r}");
            assert!(host_gcc(&ver(r)).is_some(), "{r}");
            assert!(sm_archs(&ver(r)).is_some(), "{r}");
        }
        assert!(driver_need(&ver("9.2")).is_none());
    }

    #[test]
    fn a_release_past_the_table_uses_its_last_row_and_says_so() {
        let row = host_gcc(&ver("13.2.86")).unwrap();
        assert_eq!(row.release, (13, 0));
        assert!(!row.exact);
        assert!(host_gcc(&ver("11.8.89")).unwrap().exact);
    }

    #[test]
    fn driver_needs_have_a_minor_version_compatibility_floor_from_11_on() {
        let n = driver_need(&ver("12.4.131")).unwrap();
        assert_eq!(
            (n.full.to_string(), n.hard.to_string()),
            ("550.54.14".into(), "525.60.13".into())
        );
        let n = driver_need(&ver("10.2.89")).unwrap();
        assert_eq!(n.hard, n.full);
        // 11.0 predates minor version compatibility's floor.
        let n = driver_need(&ver("11.0")).unwrap();
        assert_eq!(n.hard, "450.51.05");
        assert_eq!(newest_cuda_for_driver(&ver("450.119.03")), Some((11, 0)));
        assert_eq!(newest_cuda_for_driver(&ver("575.57.08")), Some((12, 9)));
    }

    #[test]
    fn gcc_and_arch_lookups_for_hints() {
        assert_eq!(host_gcc(&ver("11.8")).unwrap().value.max, 11);
        assert_eq!(first_cuda_for_gcc(12), Some((12, 0)));
        assert_eq!(releases_for_sm(35), Some(((10, 2), (11, 8))));
        assert_eq!(releases_for_sm(70), Some(((10, 2), (12, 9))));
        assert!(!sm_archs(&ver("13.0")).unwrap().value.contains(&70));
    }
}
