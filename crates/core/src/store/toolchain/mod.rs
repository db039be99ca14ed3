//! Toolchains: their kind, version, name and spec; detecting a tree; the registry on disk.

pub mod detect;
pub mod discover;
pub mod entry;
pub mod gpu_archs;
pub mod registry;
pub mod registry_cache;
pub mod system;
pub mod toolchains;
pub mod upstream;
pub mod view;

use crate::facts::vars;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use crate::facts::version::Version;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Cuda,
    Rocm,
}

impl Kind {
    pub const ALL: [Kind; 2] = [Kind::Cuda, Kind::Rocm];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Cuda => "cuda",
            Kind::Rocm => "rocm",
        }
    }

    /// The variables that name a toolkit's root: what gpuenv sets to the view, and what a
    /// site's module files set to the toolkits they load.
    pub fn home_vars(self) -> &'static [&'static str] {
        match self {
            Kind::Cuda => &[vars::CUDA_HOME, vars::CUDA_PATH, vars::CUDAToolkit_ROOT],
            Kind::Rocm => &[vars::ROCM_PATH, vars::ROCM_HOME, vars::HIP_PATH],
        }
    }

    /// The compiler driver the proxy guards for this kind.
    pub fn compiler(self) -> &'static str {
        match self {
            Kind::Cuda => "nvcc",
            Kind::Rocm => "hipcc",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cuda" => Ok(Kind::Cuda),
            "rocm" => Ok(Kind::Rocm),
            _ => Err(NameError::Kind(s.to_string())),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    #[error("unknown toolchain kind `{}`: expected `cuda` or `rocm`", crate::ui::value(.0))]
    Kind(String),
    #[error("`{}` is not a toolchain name or spec: expected <kind>-<version>[-<label>], like cuda-12.4, cuda-11.3-conda or rocm-6.2.4", crate::ui::value(.0))]
    Shape(String),
    #[error(transparent)]
    Path(#[from] crate::pathpart::UnsafePart),
    #[error("`{name}` names a {named} toolchain, but its entry is a {kind} one")]
    WrongKind {
        name: String,
        named: Kind,
        kind: Kind,
    },
}

/// A toolchain name read from a file gpuenv did not write just now (a store's settings, an
/// upstream's): one path component (it names a view and a module file) of the name's shape,
/// whose kind is its entry's.
pub fn check_name(name: &str, kind: Kind) -> Result<Spec, NameError> {
    crate::pathpart::part("toolchain name", name)?;
    let spec: Spec = name.parse()?;
    if spec.kind != kind {
        return Err(NameError::WrongKind {
            name: name.to_string(),
            named: spec.kind,
            kind,
        });
    }
    Ok(spec)
}

/// `<kind>-<version>[-<label>]`: `cuda-12.4.1`, `cuda-11.3-conda`, `rocm-6.2.4`.
/// The version here may be a prefix; a spec and a name share this shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Spec {
    pub kind: Kind,
    pub version: Version,
    pub label: Option<String>,
}

impl Spec {
    /// Parses a spec whose kind is already known from context, as in a toolchain file's
    /// `cuda = "12.1"` or `cuda = "cuda-12.1"`.
    pub fn parse_for_kind(kind: Kind, s: &str) -> Result<Spec, NameError> {
        if s.starts_with(|c: char| c.is_ascii_digit()) {
            Spec::from_str(&format!("{kind}-{s}"))
        } else {
            let spec = Spec::from_str(s)?;
            if spec.kind != kind {
                return Err(NameError::Kind(format!(
                    "{} (a {} toolchain cannot be pinned as {kind})",
                    spec.kind, spec.kind
                )));
            }
            Ok(spec)
        }
    }

    /// False for a name [`Spec::matches`] cannot select, from its first bytes alone:
    /// another kind, or another major version. (True says nothing.)
    pub fn may_select(&self, name: &str) -> bool {
        let Some(rest) = name
            .strip_prefix(self.kind.as_str())
            .and_then(|r| r.strip_prefix('-'))
        else {
            return false;
        };
        let end = rest.find(['.', '-']).unwrap_or(rest.len());
        rest[..end]
            .parse::<u64>()
            .map_or(true, |major| major == self.version.major())
    }

    /// True for a registered toolchain name this spec selects: the same label (if the spec
    /// has one) and a version the spec's version is a prefix of.
    pub fn matches(&self, name: &Spec) -> bool {
        self.kind == name.kind
            && self.version.is_prefix_of(&name.version)
            && (self.label.is_none() || self.label == name.label)
    }
}

impl FromStr for Spec {
    type Err = NameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let shape = || NameError::Shape(s.to_string());
        let (kind, rest) = s.split_once('-').ok_or_else(shape)?;
        // `--source`, `-x`: an option where a spec goes, named whole.
        if kind.is_empty() {
            return Err(shape());
        }
        let kind: Kind = kind.parse()?;
        let (version, label) = match rest.split_once('-') {
            Some((v, l)) => (v, Some(l)),
            None => (rest, None),
        };
        let version: Version = version.parse().map_err(|_| shape())?;
        if let Some(l) = label {
            let ok = !l.is_empty()
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
            if !ok {
                return Err(shape());
            }
        }
        Ok(Spec {
            kind,
            version,
            label: label.map(str::to_string),
        })
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.kind, self.version)?;
        if let Some(l) = &self.label {
            write!(f, "-{l}")?;
        }
        Ok(())
    }
}

/// Roots that are a shared prefix (a conda environment, `/usr`): their entries are the
/// user's Python and system tools, never removed on a toolchain's behalf.
pub fn is_shared_prefix(root: &Path) -> bool {
    root.join("conda-meta").is_dir() || root.starts_with("/usr/lib") || root == Path::new("/usr")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> Spec {
        s.parse().unwrap()
    }

    #[test]
    fn names_have_kind_version_and_optional_label() {
        let s = spec("cuda-11.3-conda");
        assert_eq!(s.kind, Kind::Cuda);
        assert_eq!(s.version.to_string(), "11.3");
        assert_eq!(s.label.as_deref(), Some("conda"));
        assert_eq!(spec("rocm-6.2.4").to_string(), "rocm-6.2.4");
        for bad in [
            "cuda",
            "cuda-",
            "cuda-x",
            "metal-1.0",
            "cuda-12.4-",
            "cuda-12-a b",
        ] {
            assert!(bad.parse::<Spec>().is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn a_prefix_spec_matches_longer_versions_of_the_same_kind() {
        assert!(spec("cuda-12").matches(&spec("cuda-12.4.1")));
        assert!(spec("cuda-12.4").matches(&spec("cuda-12.4.131")));
        assert!(!spec("cuda-12.4").matches(&spec("cuda-12.40")));
        assert!(!spec("cuda-12").matches(&spec("rocm-12.0")));
        assert!(spec("cuda-11.3").matches(&spec("cuda-11.3-conda")));
        assert!(!spec("cuda-11.3-conda").matches(&spec("cuda-11.3")));
    }

    #[test]
    fn a_name_a_spec_may_select_has_its_kind_and_major_version() {
        for (spec_, name, may) in [
            ("cuda-12", "cuda-12.4.1", true),
            ("cuda-12.4", "cuda-12.40", true),
            ("cuda-12", "cuda-012.1", true),
            ("cuda-12", "cuda-12-site", true),
            ("cuda-12", "cuda-11.8", false),
            ("cuda-1", "cuda-12.4", false),
            ("cuda-12", "rocm-12.0", false),
            ("cuda-12", "cudax-12", false),
        ] {
            assert_eq!(spec(spec_).may_select(name), may, "{spec_} {name}");
            if !may {
                assert!(name.parse().map_or(true, |n| !spec(spec_).matches(&n)));
            }
        }
    }

    #[test]
    fn a_name_from_a_store_is_one_path_component_of_its_entrys_kind() {
        assert!(check_name("cuda-11.3-conda", Kind::Cuda).is_ok());
        for bad in ["../../x", "cuda-12.4-..", "cuda-12/..", "x", ""] {
            assert!(check_name(bad, Kind::Cuda).is_err(), "{bad}");
        }
        assert!(matches!(
            check_name("rocm-6.2", Kind::Cuda),
            Err(NameError::WrongKind { .. })
        ));
    }

    #[test]
    fn file_values_may_omit_the_kind() {
        assert_eq!(
            Spec::parse_for_kind(Kind::Cuda, "12.1").unwrap(),
            spec("cuda-12.1")
        );
        assert_eq!(
            Spec::parse_for_kind(Kind::Cuda, "cuda-11.3-conda").unwrap(),
            spec("cuda-11.3-conda")
        );
        assert!(Spec::parse_for_kind(Kind::Cuda, "rocm-6.2").is_err());
    }
}
