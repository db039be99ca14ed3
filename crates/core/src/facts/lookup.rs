//! Questions about one release, answered from one copy of the data. A release between rows
//! of its major (12.7) takes the nearest older row, marked inexact; a release newer than
//! every row of the fact is [`Unknown`]; older than the first row of its major, nothing.

use super::version::Version;
use super::{release_name, Fact, Facts, GccRange, ReleaseFacts, Unknown};

/// A row found for a release: exact, or the nearest older row of the same major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found<T: ?Sized + 'static> {
    pub release: (u64, u64),
    pub exact: bool,
    pub value: &'static T,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage<T: ?Sized + 'static> {
    Known(Found<T>),
    /// Newer than the data: say so, and how to refresh.
    Newer(Unknown),
    /// Older than the first row of its major (or a major the data never had).
    Older,
}

impl<T: ?Sized + 'static> Coverage<T> {
    pub fn known(self) -> Option<Found<T>> {
        match self {
            Coverage::Known(f) => Some(f),
            _ => None,
        }
    }
}

fn find<T: ?Sized + 'static>(
    facts: &Facts,
    want: (u64, u64),
    fact: Fact,
    pick: fn(&'static ReleaseFacts) -> Option<&'static T>,
) -> Coverage<T> {
    let rows: &'static [ReleaseFacts] = facts.releases;
    let with = || rows.iter().filter_map(|r| pick(r).map(|v| (r.release, v)));
    let Some(last) = with().map(|(rel, _)| rel).max() else {
        return Coverage::Older;
    };
    if want > last {
        return Coverage::Newer(Unknown {
            release: release_name(want),
            fact,
            last: release_name(last),
            date: facts.date,
        });
    }
    with()
        .filter(|(rel, _)| rel.0 == want.0 && rel.1 <= want.1)
        .max_by_key(|(rel, _)| *rel)
        .map_or(Coverage::Older, |(release, value)| {
            Coverage::Known(Found {
                release,
                exact: release == want,
                value,
            })
        })
}

pub fn driver(facts: &Facts, release: (u64, u64)) -> Coverage<str> {
    find(facts, release, Fact::Driver, |r| r.driver)
}

pub fn gcc(facts: &Facts, release: (u64, u64)) -> Coverage<GccRange> {
    find(facts, release, Fact::Gcc, |r| r.gcc.as_ref())
}

pub fn archs(facts: &Facts, release: (u64, u64)) -> Coverage<[u32]> {
    find(facts, release, Fact::Archs, |r| r.archs)
}

/// Which release an nvcc build belongs to, by the `[[nvcc-build]]` rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvccRelease {
    /// Exactly one release ships it.
    One(Version),
    /// Several do (13.0.88 is in 13.0.1, 13.0.2 and 13.0.3): it names none of them.
    Shared(Vec<Version>),
    /// No row has it (a build older or newer than the data, or not a three-number build).
    NotListed,
}

/// The release whose nvcc is `build` (what `nvcc --version` prints: V13.2.86 -> 13.2.2).
pub fn release_of_nvcc(facts: &Facts, build: &Version) -> NvccRelease {
    let mut found: Vec<Version> = facts
        .nvcc_builds
        .iter()
        .filter(|b| b.nvcc[..] == *build.parts())
        .map(|b| Version::new(&b.release))
        .collect();
    match found.len() {
        0 => NvccRelease::NotListed,
        1 => NvccRelease::One(found.remove(0)),
        _ => NvccRelease::Shared(found),
    }
}

/// A driver version as numbers (`520.61.05` -> [520, 61, 5]), for comparing.
pub fn driver_key(driver: &str) -> Option<[u64; 3]> {
    let mut out = [0; 3];
    let mut parts = driver.trim().split('.');
    for slot in &mut out {
        match parts.next() {
            Some(p) => *slot = p.parse().ok()?,
            None => break,
        }
    }
    parts.next().is_none().then_some(out)
}

/// What a driver must be for a release, as NVIDIA writes the versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverNeed {
    pub release: (u64, u64),
    pub exact: bool,
    /// Everything in the release works from here.
    pub full: &'static str,
    /// Below this nothing of the release runs (CUDA minor version compatibility's floor).
    pub hard: &'static str,
}

impl DriverNeed {
    pub fn full_met_by(&self, driver: &Version) -> bool {
        driver_key(&driver.to_string()) >= driver_key(self.full)
    }
    pub fn hard_met_by(&self, driver: &Version) -> bool {
        driver_key(&driver.to_string()) >= driver_key(self.hard)
    }
}

/// A release's drivers: `Ok(None)` when the data is older than the release's major.
pub fn driver_need(facts: &Facts, release: (u64, u64)) -> Result<Option<DriverNeed>, Unknown> {
    match driver(facts, release) {
        Coverage::Known(f) => Ok(Some(DriverNeed {
            release: f.release,
            exact: f.exact,
            full: f.value,
            hard: hard_floor(facts, release.0, f.value),
        })),
        Coverage::Newer(u) => Err(u),
        Coverage::Older => Ok(None),
    }
}

/// The minor version compatibility floor of `major`, when it is below `full`.
pub fn hard_floor(facts: &Facts, major: u64, full: &'static str) -> &'static str {
    facts
        .minor_compat
        .iter()
        .find(|m| m.major == major)
        .map(|m| m.driver)
        .filter(|floor| driver_key(floor) < driver_key(full))
        .unwrap_or(full)
}

/// The floor below which nothing of `major` runs, if the data has one.
pub fn major_floor(facts: &Facts, major: u64) -> Option<&'static str> {
    facts
        .minor_compat
        .iter()
        .find(|m| m.major == major)
        .map(|m| m.driver)
}

/// The newest release a driver runs in full, e.g. `12.4` for 550.54.14.
pub fn newest_cuda_for_driver(facts: &Facts, driver: &str) -> Option<(u64, u64)> {
    let have = driver_key(driver)?;
    facts
        .releases
        .iter()
        .filter(|r| r.driver.and_then(driver_key).is_some_and(|d| d <= have))
        .map(|r| r.release)
        .max()
}

/// The oldest release whose max GCC is at least `gcc_major`.
pub fn first_cuda_for_gcc(facts: &Facts, gcc_major: u64) -> Option<(u64, u64)> {
    facts
        .releases
        .iter()
        .filter(|r| r.gcc.is_some_and(|g| g.max >= gcc_major))
        .map(|r| r.release)
        .min()
}

/// The oldest and the newest release that can target `sm`.
pub fn releases_for_sm(facts: &Facts, sm: u32) -> Option<((u64, u64), (u64, u64))> {
    let rels = facts
        .releases
        .iter()
        .filter(|r| r.archs.is_some_and(|a| a.contains(&sm)))
        .map(|r| r.release);
    Some((rels.clone().min()?, rels.max()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e() -> &'static Facts {
        Facts::embedded()
    }

    #[test]
    fn a_release_newer_than_the_data_is_unknown_and_says_how_old_the_data_is() {
        let Coverage::Newer(u) = driver(e(), (13, 6)) else {
            panic!("13.6's driver is not in the data")
        };
        let text = u.to_string();
        assert!(
            text.contains("CUDA 13.6") && text.contains("not known"),
            "{text}"
        );
        assert!(text.contains(e().date), "{text}");
        assert!(matches!(gcc(e(), (13, 6)), Coverage::Newer(_)));
        assert!(matches!(archs(e(), (14, 0)), Coverage::Newer(_)));
    }

    #[test]
    fn the_measured_releases_of_the_package_index_are_exact_rows() {
        assert_eq!(gcc(e(), (13, 2)).known().unwrap().value.max, 15);
        assert_eq!(gcc(e(), (13, 4)).known().unwrap().value.max, 16);
        // Measured: compute_107 comes with 13.4 (13.4.59), not later.
        assert!(archs(e(), (13, 4)).known().unwrap().value.contains(&107));
        assert!(!archs(e(), (13, 3)).known().unwrap().value.contains(&107));
    }

    #[test]
    fn a_gap_in_a_major_takes_the_row_below_and_says_it_is_inexact() {
        let f = gcc(e(), (12, 7)).known().unwrap();
        assert_eq!((f.release, f.exact), ((12, 6), false));
        assert!(matches!(driver(e(), (9, 2)), Coverage::Older));
    }

    #[test]
    fn an_nvcc_build_names_the_one_release_that_ships_it_and_a_shared_one_names_none() {
        let of = |b: &str| release_of_nvcc(e(), &ver(b));
        assert_eq!(of("13.2.86"), NvccRelease::One(ver("13.2.2")));
        assert_eq!(of("12.4.131"), NvccRelease::One(ver("12.4.1")));
        assert_eq!(of("13.0.48"), NvccRelease::One(ver("13.0.0")));
        assert_eq!(
            of("13.0.88"),
            NvccRelease::Shared(vec![ver("13.0.1"), ver("13.0.2"), ver("13.0.3")])
        );
        assert!(matches!(of("12.5.40"), NvccRelease::Shared(v) if v.len() == 2));
        // Not in the data: 11.x (its names keep major.minor), a build past the data, a
        // major.minor alone.
        assert_eq!(of("11.8.89"), NvccRelease::NotListed);
        assert_eq!(of("13.9.1"), NvccRelease::NotListed);
        assert_eq!(of("13.2"), NvccRelease::NotListed);
        assert_eq!(of("13.2.86.1"), NvccRelease::NotListed);
    }

    #[test]
    fn every_12_and_13_release_of_the_package_index_has_its_nvcc_build() {
        let releases: Vec<String> = e()
            .nvcc_builds
            .iter()
            .map(|b| Version::new(&b.release).to_string())
            .collect();
        for r in [
            "12.0.0", "12.4.1", "12.8.2", "12.9.2", "13.0.3", "13.4.3", "13.5.0",
        ] {
            assert!(releases.iter().any(|x| x == r), "{r}: {releases:?}");
        }
        assert!(e()
            .nvcc_builds
            .iter()
            .all(|b| b.release[..2] == b.nvcc[..2]));
    }

    #[test]
    fn driver_versions_compare_as_numbers() {
        assert!(driver_key("520.61.05") < driver_key("520.61.10"));
        assert_eq!(driver_key("570.26"), Some([570, 26, 0]));
        assert_eq!(driver_key("five"), None);
        assert_eq!(newest_cuda_for_driver(e(), "575.57.08"), Some((12, 9)));
    }

    fn ver(s: &str) -> Version {
        s.parse().unwrap()
    }

    fn need(v: &str) -> Option<DriverNeed> {
        driver_need(e(), ver(v).release()).ok().flatten()
    }

    #[test]
    fn every_release_from_10_2_to_13_has_a_row() {
        for r in ["10.2.89", "11.8.89", "12.4.131", "12.9.86", "13.0.88"] {
            let rel = ver(r).release();
            assert!(need(r).is_some(), "{r}");
            assert!(gcc(e(), rel).known().is_some(), "{r}");
            assert!(archs(e(), rel).known().is_some(), "{r}");
        }
        assert!(gcc(e(), (13, 2)).known().unwrap().exact);
        assert!(need("9.2").is_none());
    }

    #[test]
    fn a_release_past_the_data_is_not_answered() {
        assert_eq!(gcc(e(), ver("13.9.1").release()).known(), None);
        assert_eq!(need("13.6.20"), None);
        assert!(gcc(e(), (11, 8)).known().unwrap().exact);
    }

    #[test]
    fn driver_needs_have_a_minor_version_compatibility_floor_from_11_on() {
        let n = need("12.4.131").unwrap();
        assert_eq!(
            (n.full.to_string(), n.hard.to_string()),
            ("550.54.14".into(), "525.60.13".into())
        );
        let n = need("10.2.89").unwrap();
        assert_eq!(n.hard, n.full);
        // 11.0 predates minor version compatibility's floor.
        let n = need("11.0").unwrap();
        assert_eq!(n.hard, "450.51.05");
        assert_eq!(newest_cuda_for_driver(e(), "450.119.03"), Some((11, 0)));
        assert_eq!(newest_cuda_for_driver(e(), "575.57.08"), Some((12, 9)));
        assert!(n.full_met_by(&ver("450.51.5")));
    }

    #[test]
    fn gcc_and_arch_lookups_for_hints() {
        assert_eq!(gcc(e(), (11, 8)).known().unwrap().value.max, 11);
        assert_eq!(first_cuda_for_gcc(e(), 12), Some((12, 0)));
        assert_eq!(first_cuda_for_gcc(e(), 16), Some((13, 4)));
        assert_eq!(releases_for_sm(e(), 35), Some(((10, 2), (11, 8))));
        assert_eq!(releases_for_sm(e(), 70), Some(((10, 2), (12, 9))));
        assert!(!archs(e(), (13, 0)).known().unwrap().value.contains(&70));
    }
}
