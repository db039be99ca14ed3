//! The toolchain file (`gpuenv.toml` or `.gpuenv.toml`): what it says and where, found
//! walking up ([`locate`]), parsed with every error at file:line:column ([`parse`]), and
//! edited keeping comments and order ([`edit`]).

mod arch;
mod edit;
mod locate;
mod parse;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::build_cache::BuildCache;
use crate::diagnostic::Diagnostic;
use crate::toolchain::{Kind, Spec};
use crate::ui::printable;

pub use arch::{validate_cuda_arch, validate_rocm_arch, ArchError};
pub use edit::{edit, PinEdit};
pub use locate::{find, locate, Found};
pub use parse::{is_env_name, load, parse};

pub const FILE_NAMES: [&str; 2] = ["gpuenv.toml", ".gpuenv.toml"];

/// Where in a toolchain file a value stands, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.to_string_lossy();
        write!(f, "{}:{}:{}", printable(&path), self.line, self.column)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinValue {
    Spec(Spec),
    /// `cuda = "torch"`: the version of the torch in the active Python.
    Torch,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub kind: Kind,
    pub value: PinValue,
    pub at: Location,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TorchCheck {
    Minor,
    Major,
    Off,
}

/// A parsed toolchain file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFile {
    pub path: PathBuf,
    pub pins: Vec<Pin>,
    pub cuda_arch: Vec<String>,
    pub rocm_arch: Vec<String>,
    pub torch_check: Option<TorchCheck>,
    /// `[build] cache`, and where it is written.
    pub build_cache: Option<(BuildCache, Location)>,
    /// `host-compiler = "g++-11"`: the command or path nvcc gets as its host compiler.
    pub host_compiler: Option<(String, Location)>,
    /// Applied only when the file is trusted.
    pub env: BTreeMap<String, String>,
    /// The sha256 of the bytes this was parsed from: trust is checked against exactly these.
    pub sha256: String,
}

impl ProjectFile {
    pub fn pin(&self, kind: Kind) -> Option<&Pin> {
        self.pins.iter().find(|p| p.kind == kind)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProjectError {
    #[error("{at}: {message}")]
    Invalid { at: Location, message: String },
    /// What the TOML parser refused: the file is not the shape of a toolchain file.
    #[error("{at}: {message}")]
    Syntax { at: Location, message: String },
    #[error("cannot read {}: {message}", shown(path))]
    Unreadable { path: PathBuf, message: String },
    #[error("{} is {what}, not a regular file", shown(path))]
    NotRegular { path: PathBuf, what: &'static str },
    #[error("{} has both gpuenv.toml and .gpuenv.toml", shown(dir))]
    Both { dir: PathBuf },
}

impl ProjectError {
    /// The file (or directory) at fault.
    pub fn path(&self) -> &Path {
        match self {
            ProjectError::Invalid { at, .. } | ProjectError::Syntax { at, .. } => &at.path,
            ProjectError::Unreadable { path, .. } | ProjectError::NotRegular { path, .. } => path,
            ProjectError::Both { dir } => dir,
        }
    }
}

impl Diagnostic for ProjectError {
    fn hints(&self) -> Vec<String> {
        match self {
            ProjectError::Both { .. } => vec!["keep one of them".into()],
            ProjectError::NotRegular { .. } => {
                vec!["a toolchain file must be a file: rename or remove it".into()]
            }
            ProjectError::Syntax { .. } => vec!["a toolchain file has a [toolchain] table (cuda, rocm, cuda-arch, rocm-arch), an optional [build] cache, an optional [torch] check and an optional [env] table; `gpuenv pin <spec>` writes a valid one".into()],
            ProjectError::Invalid { .. } | ProjectError::Unreadable { .. } => Vec::new(),
        }
    }
}

fn shown(path: &Path) -> String {
    printable(&path.to_string_lossy()).into_owned()
}
