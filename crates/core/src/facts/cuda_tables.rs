//! The questions the checks ask about CUDA releases, answered from the data in effect
//! (`facts`: the embedded `facts/cuda.toml`, or a newer checked copy). Kept for its
//! callers; a release newer than the data answers `None` here, and
//! [`crate::facts::lookup`] says why (`Coverage::Newer`, with the data's date).

use crate::facts::version::Version;
use crate::facts::{self, lookup, Coverage, ReleaseFacts};

pub use crate::facts::{release_name, GccRange};

/// A row found for a release: exact, or the nearest older row of the same major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row<T: 'static> {
    pub release: (u64, u64),
    pub exact: bool,
    pub value: &'static T,
}

fn rel(v: &Version) -> (u64, u64) {
    (v.major(), v.minor().unwrap_or(0))
}

/// The row of the data in effect for `release`.
fn row(release: (u64, u64)) -> &'static ReleaseFacts {
    let rows: &'static [ReleaseFacts] = facts::current().releases;
    rows.iter()
        .find(|r| r.release == release)
        .expect("a release lookup found returns one of the data's rows")
}

/// The releases the data has a row for.
pub fn releases() -> impl Iterator<Item = (u64, u64)> {
    facts::current().releases.iter().map(|r| r.release)
}

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
        lookup::driver_key(&driver.to_string()) >= lookup::driver_key(self.full)
    }
    pub fn hard_met_by(&self, driver: &Version) -> bool {
        lookup::driver_key(&driver.to_string()) >= lookup::driver_key(self.hard)
    }
}

pub fn driver_need(cuda: &Version) -> Option<DriverNeed> {
    let n = lookup::driver_need(facts::current(), rel(cuda)).ok()??;
    Some(DriverNeed {
        release: n.release,
        exact: n.exact,
        full: n.full,
        hard: n.hard,
    })
}

/// The newest release a driver runs in full, e.g. `12.4` for 550.54.14.
pub fn newest_cuda_for_driver(driver: &Version) -> Option<(u64, u64)> {
    lookup::newest_cuda_for_driver(facts::current(), &driver.to_string())
}

pub fn host_gcc(cuda: &Version) -> Option<Row<GccRange>> {
    let found = lookup::gcc(facts::current(), rel(cuda)).known()?;
    Some(Row {
        release: found.release,
        exact: found.exact,
        value: found.value,
    })
}

/// The oldest release whose max GCC is at least `gcc_major`.
pub fn first_cuda_for_gcc(gcc_major: u64) -> Option<(u64, u64)> {
    lookup::first_cuda_for_gcc(facts::current(), gcc_major)
}

pub fn sm_archs(cuda: &Version) -> Option<Row<&'static [u32]>> {
    let found = match lookup::archs(facts::current(), rel(cuda)) {
        Coverage::Known(f) => f,
        _ => return None,
    };
    Some(Row {
        release: found.release,
        exact: found.exact,
        value: row(found.release).archs.as_ref()?,
    })
}

/// The oldest and the newest release that can target `sm`.
pub fn releases_for_sm(sm: u32) -> Option<((u64, u64), (u64, u64))> {
    lookup::releases_for_sm(facts::current(), sm)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ver(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn every_release_from_10_2_to_13_has_a_row() {
        for r in ["10.2.89", "11.8.89", "12.4.131", "12.9.86", "13.0.88"] {
            assert!(driver_need(&ver(r)).is_some(), "{r}");
            assert!(host_gcc(&ver(r)).is_some(), "{r}");
            assert!(sm_archs(&ver(r)).is_some(), "{r}");
        }
        assert!(host_gcc(&ver("13.2.78")).unwrap().exact);
        assert!(driver_need(&ver("9.2")).is_none());
    }

    #[test]
    fn a_release_past_the_data_is_not_answered() {
        assert_eq!(host_gcc(&ver("13.9.1")), None);
        assert_eq!(driver_need(&ver("13.2.78")), None);
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
        assert!(n.full_met_by(&ver("450.51.5")));
    }

    #[test]
    fn gcc_and_arch_lookups_for_hints() {
        assert_eq!(host_gcc(&ver("11.8")).unwrap().value.max, 11);
        assert_eq!(first_cuda_for_gcc(12), Some((12, 0)));
        assert_eq!(first_cuda_for_gcc(16), Some((13, 4)));
        assert_eq!(releases_for_sm(35), Some(((10, 2), (11, 8))));
        assert_eq!(releases_for_sm(70), Some(((10, 2), (12, 9))));
        assert!(!sm_archs(&ver("13.0")).unwrap().value.contains(&70));
    }
}
