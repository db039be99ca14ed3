//! Which CUDA release can build an arch: the SM numbers come from the release tables
//! (`facts::lookup`), the suffixes from when nvcc learnt them.

use super::cuda::{CudaArch, Suffix};
use crate::facts::version::Version;
use crate::facts::{lookup, Facts};

/// The first release whose nvcc takes the suffix: `sm_90a` came with CUDA 12.0,
/// family-specific targets (`sm_100f`) with 12.9.
pub fn suffix_from(suffix: Suffix) -> Option<(u64, u64)> {
    match suffix {
        Suffix::None => None,
        Suffix::A => Some((12, 0)),
        Suffix::F => Some((12, 9)),
    }
}

/// What a CUDA release says to an arch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The table has no row for the release.
    Unknown,
    /// `release` is the table's row (`exact` false: a newer release looked up in its
    /// major's last row); `targets` its SM numbers, oldest first.
    Row {
        release: (u64, u64),
        exact: bool,
        targets: &'static [u32],
        problem: Option<Problem>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// The release's nvcc has no such SM number.
    NoSm,
    /// It has the SM number but not this suffix yet (`9.0a` before 12.0).
    SuffixTooNew { from: (u64, u64) },
}

impl Verdict {
    pub fn problem(&self) -> Option<Problem> {
        match self {
            Verdict::Unknown => None,
            Verdict::Row { problem, .. } => *problem,
        }
    }
}

pub fn can_build(facts: &Facts, cuda: &Version, arch: &CudaArch) -> Verdict {
    let Some(row) = lookup::archs(facts, cuda.release()).known() else {
        return Verdict::Unknown;
    };
    let targets: &'static [u32] = row.value;
    Verdict::Row {
        release: row.release,
        exact: row.exact,
        targets,
        problem: problem_with(row.release, targets, arch),
    }
}

/// What is wrong with `arch` for a release whose nvcc targets `targets` (from the tables,
/// or from the toolkit's own `nvcc --list-gpu-arch`).
pub fn problem_with(release: (u64, u64), targets: &[u32], arch: &CudaArch) -> Option<Problem> {
    if !targets.contains(&arch.sm()) {
        return Some(Problem::NoSm);
    }
    suffix_from(arch.suffix)
        .filter(|from| release < *from)
        .map(|from| Problem::SuffixTooNew { from })
}

/// The oldest and the newest release in the tables that build `arch`, suffix included.
pub fn releases_for(facts: &Facts, arch: &CudaArch) -> Option<((u64, u64), (u64, u64))> {
    let (oldest, newest) = lookup::releases_for_sm(facts, arch.sm())?;
    match suffix_from(arch.suffix) {
        Some(from) if from > newest => None,
        Some(from) => Some((oldest.max(from), newest)),
        None => Some((oldest, newest)),
    }
}

/// The release to suggest for `arch` instead of `have`: the oldest that builds it when
/// `have` is too old, else the newest.
pub fn release_to_suggest(facts: &Facts, arch: &CudaArch, have: (u64, u64)) -> Option<(u64, u64)> {
    let (oldest, newest) = releases_for(facts, arch)?;
    Some(if have < oldest { oldest } else { newest })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    fn a(s: &str) -> CudaArch {
        CudaArch::parse(s).unwrap()
    }

    #[test]
    fn suffixes_need_the_release_that_brought_them() {
        assert_eq!(
            can_build(Facts::embedded(), &v("11.8.89"), &a("9.0a")).problem(),
            Some(Problem::SuffixTooNew { from: (12, 0) })
        );
        assert_eq!(
            can_build(Facts::embedded(), &v("11.8.89"), &a("9.0")).problem(),
            None
        );
        assert_eq!(
            can_build(Facts::embedded(), &v("12.4.131"), &a("9.0a")).problem(),
            None
        );
        assert_eq!(
            can_build(Facts::embedded(), &v("12.8"), &a("10.0f")).problem(),
            Some(Problem::SuffixTooNew { from: (12, 9) })
        );
        assert_eq!(
            can_build(Facts::embedded(), &v("12.9"), &a("10.0f")).problem(),
            None
        );
        assert_eq!(
            can_build(Facts::embedded(), &v("12.4"), &a("10.0")).problem(),
            Some(Problem::NoSm)
        );
        assert_eq!(
            can_build(Facts::embedded(), &v("9.2"), &a("7.0")),
            Verdict::Unknown
        );
    }

    #[test]
    fn which_release_to_suggest() {
        // The newest release the data knows (13.5 in the embedded facts/cuda.toml).
        assert_eq!(
            releases_for(Facts::embedded(), &a("9.0a")),
            Some(((12, 0), (13, 5)))
        );
        assert_eq!(
            release_to_suggest(Facts::embedded(), &a("9.0a"), (11, 8)),
            Some((12, 0))
        );
        assert_eq!(
            release_to_suggest(Facts::embedded(), &a("3.5"), (12, 4)),
            Some((11, 8))
        );
        assert_eq!(
            release_to_suggest(Facts::embedded(), &a("10.0"), (12, 4)),
            Some((12, 8))
        );
        assert_eq!(releases_for(Facts::embedded(), &a("9.9")), None);
    }
}
