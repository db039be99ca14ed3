//! The one version type: `12`, `12.4`, `12.4.131`, ROCm's `6.2.4` (a build suffix such as
//! `-120` is kept apart). Ordering treats a missing component as lower than any present one.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version {
    /// At least one component; `12.4.131` is `[12, 4, 131]`.
    parts: Vec<u64>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{0}` is not a version (expected numbers separated by dots, like 12.4 or 12.4.131)")]
pub struct VersionError(pub String);

impl Version {
    pub fn new(parts: &[u64]) -> Self {
        assert!(!parts.is_empty(), "a version has at least one component");
        Version {
            parts: parts.to_vec(),
        }
    }

    pub fn major(&self) -> u64 {
        self.parts[0]
    }

    pub fn minor(&self) -> Option<u64> {
        self.parts.get(1).copied()
    }

    /// The release whose row of the data describes this version: (major, minor or 0).
    pub fn release(&self) -> (u64, u64) {
        (self.major(), self.minor().unwrap_or(0))
    }

    pub fn parts(&self) -> &[u64] {
        &self.parts
    }

    /// `12.4` is a prefix of `12.4.131` and of `12.4`, not of `12.40`.
    pub fn is_prefix_of(&self, other: &Version) -> bool {
        other.parts.len() >= self.parts.len() && other.parts[..self.parts.len()] == self.parts[..]
    }

    /// The first `n` components (fewer if the version is shorter).
    pub fn truncated(&self, n: usize) -> Version {
        Version {
            parts: self.parts[..n.min(self.parts.len())].to_vec(),
        }
    }

    /// Finds the first dotted number in `text`, e.g. `575.57.08` in a driver banner.
    pub fn find_in(text: &str) -> Option<Version> {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                    i += 1;
                }
                let candidate = text[start..i].trim_end_matches('.');
                if candidate.contains('.') {
                    if let Ok(v) = candidate.parse() {
                        return Some(v);
                    }
                }
            } else {
                i += 1;
            }
        }
        None
    }
}

impl FromStr for Version {
    type Err = VersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Byte by byte: every call of the proxy reads a version per registered toolchain
        // (a site store has hundreds), and `split('.')` + `parse` cost several times this.
        let bad = || VersionError(s.to_string());
        let mut parts = Vec::with_capacity(4);
        let mut part: Option<u64> = None;
        for b in s.bytes() {
            match b {
                b'0'..=b'9' => {
                    let d = u64::from(b - b'0');
                    let n = part.unwrap_or(0);
                    part = Some(
                        n.checked_mul(10)
                            .and_then(|n| n.checked_add(d))
                            .ok_or_else(bad)?,
                    );
                }
                b'.' => parts.push(part.take().ok_or_else(bad)?),
                _ => return Err(bad()),
            }
        }
        parts.push(part.ok_or_else(bad)?);
        Ok(Version { parts })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts.cmp(&other.parts)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl serde::Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn parses_and_prints_dotted_numbers() {
        assert_eq!(v("12.4.131").parts(), &[12, 4, 131]);
        assert_eq!(v("10.2").to_string(), "10.2");
        assert!("12.x".parse::<Version>().is_err());
        assert!("".parse::<Version>().is_err());
        assert!("12..4".parse::<Version>().is_err());
    }

    #[test]
    fn orders_numerically_not_lexically() {
        assert!(v("12.10") > v("12.4"));
        assert!(v("12.4.131") > v("12.4"));
        assert!(v("11.8.89") < v("12.0"));
    }

    #[test]
    fn prefix_matches_whole_components() {
        assert!(v("12").is_prefix_of(&v("12.4.1")));
        assert!(v("12.4").is_prefix_of(&v("12.4")));
        assert!(!v("12.4").is_prefix_of(&v("12.40.1")));
        assert!(!v("12.4.1").is_prefix_of(&v("12.4")));
    }

    #[test]
    fn finds_the_first_dotted_number_in_a_banner() {
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08";
        assert_eq!(Version::find_in(open), Some(v("575.57.08")));
        assert_eq!(Version::find_in("x86_64 only"), None);
    }
}
