//! The toolchain file (`gpuenv.toml` or `.gpuenv.toml`): what it says, read once and parsed
//! with every error at file:line:column (`parse.rs`). Finding it walking up is [`locate`],
//! `gpuenv pin`'s change to it [`edit`].

mod edit;
mod gated;
mod locate;
pub mod owner;
mod parse;
pub mod pyproject;
pub mod trust;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::diagnostic::Diagnostic;
use crate::facts::arch::{CudaArch, RocmTarget};
use crate::facts::build_cache::BuildCache;
use crate::fsutil;
use crate::store::toolchain::{Kind, Spec};
use crate::ui::printable;

pub use edit::{edit, PinEdit};
pub use locate::{find, locate, Found, Here};
pub use owner::Foreign;
pub use parse::{is_env_name, load, parse};

pub const FILE_NAMES: [&str; 2] = ["gpuenv.toml", ".gpuenv.toml"];

/// The lock's name, beside the toolchain file (`gpuenv lock` writes it; the installer crate
/// reads it).
pub const LOCK_FILE: &str = "gpuenv.lock";

/// The lock that goes with the toolchain file `toolchain_file`: in its directory.
pub fn lock_beside(toolchain_file: &Path) -> PathBuf {
    toolchain_file
        .parent()
        .unwrap_or(Path::new("."))
        .join(LOCK_FILE)
}

/// Where in a toolchain file a value stands, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl Location {
    /// Where text that is not UTF-8 first goes wrong: the line of its first bad byte.
    pub fn of_bad_utf8(path: &Path, bytes: &[u8], e: &std::str::Utf8Error) -> Location {
        let before = &bytes[..e.valid_up_to()];
        Location {
            path: path.to_path_buf(),
            line: before.iter().filter(|b| **b == b'\n').count() + 1,
            column: 1,
        }
    }
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

/// `[build] archs`: what the proxy does when a compile's own arch flags leave out a pinned
/// arch. `warn` (the default) says so once per build, `add` appends the missing targets
/// (only from a trusted file: it changes a command line the build wrote), `off` says nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchPolicy {
    Warn,
    Add,
    Off,
}

impl ArchPolicy {
    /// As written in the file.
    pub fn name(self) -> &'static str {
        match self {
            ArchPolicy::Warn => "warn",
            ArchPolicy::Add => "add",
            ArchPolicy::Off => "off",
        }
    }

    /// What the proxy does under it, for `gpuenv show`.
    pub fn effect(self) -> &'static str {
        match self {
            ArchPolicy::Warn => {
                "a compile whose own arch flags leave out a pinned arch is told once per build"
            }
            ArchPolicy::Add => {
                "the pinned archs a compile's own arch flags leave out are added to it"
            }
            ArchPolicy::Off => "compiles keep their own arch flags, and nothing is said",
        }
    }
}

/// A parsed toolchain file. What it selects (pins, arch lists) is open to all; what would
/// run a program it names, relax the guard or set variables is read through accessors
/// that give it only once `gpuenv trust` recorded these very bytes ([`crate::project::trust`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFile {
    pub path: PathBuf,
    pub pins: Vec<Pin>,
    /// `cuda-arch`, each once, in the order written.
    pub cuda_arch: Vec<CudaArch>,
    /// `rocm-arch`, each once, in the order written.
    pub rocm_arch: Vec<RocmTarget>,
    /// Where each entry of `cuda_arch` and `rocm_arch` is written (same order), for
    /// messages such as `gpuenv audit`'s.
    pub cuda_arch_at: Vec<Location>,
    pub rocm_arch_at: Vec<Location>,
    torch_check: Option<TorchCheck>,
    /// `[torch] index = "auto"`, where it is written: export the PyTorch wheel index of the
    /// active toolkit for pip and uv (applied only when the file is trusted).
    torch_index: Option<Location>,
    /// `[build] cache`, and where it is written.
    build_cache: Option<(BuildCache, Location)>,
    /// `[build] archs`, and where it is written.
    build_archs: Option<(ArchPolicy, Location)>,
    /// `[build] jobs`: compile jobs at once (`MAX_JOBS`), and where it is written.
    pub build_jobs: Option<(u32, Location)>,
    /// `[build] nvcc-threads`: target archs one nvcc compiles at once, and where.
    pub nvcc_threads: Option<(u32, Location)>,
    /// `host-compiler = "g++-11"`: the command or path nvcc gets as its host compiler.
    host_compiler: Option<(String, Location)>,
    env: BTreeMap<String, String>,
    /// The bytes this was parsed from: trust is checked against exactly these.
    text: String,
    /// Whether `gpuenv trust` recorded exactly these bytes (set by `trust::settle`).
    trusted: bool,
}

impl ProjectFile {
    /// The sha256 of the bytes this was parsed from. Computed when asked (a trust check, or
    /// `gpuenv trust`), not at every parse: the proxy parses the file on every compile.
    pub fn sha256(&self) -> String {
        fsutil::content_hash(self.text.as_bytes())
    }

    pub fn pin(&self, kind: Kind) -> Option<&Pin> {
        self.pins.iter().find(|p| p.kind == kind)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProjectError {
    #[error("{at}: {message}")]
    Invalid { at: Location, message: String },
    /// An `[env]` key gpuenv or the shell owns.
    #[error("{at}: [env] cannot set {key}: {why}")]
    Reserved {
        at: Location,
        key: String,
        why: &'static str,
    },
    /// What the TOML parser refused: the file is not the shape of a toolchain file.
    /// `quoted`: the value written as a string, where a number stood for one.
    #[error("{at}: {message}")]
    Syntax {
        at: Location,
        message: String,
        quoted: Option<String>,
    },
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
            ProjectError::Invalid { at, .. }
            | ProjectError::Reserved { at, .. }
            | ProjectError::Syntax { at, .. } => &at.path,
            ProjectError::Unreadable { path, .. } | ProjectError::NotRegular { path, .. } => path,
            ProjectError::Both { dir } => dir,
        }
    }
}

/// For serde's "unknown field `cuda_arch`, expected one of `cuda`, …, `cuda-arch`, …": the
/// key meant, when the unknown one is an expected one with `_` for `-` (or the case off).
fn misspelled_key(message: &str) -> Option<String> {
    let rest = message.split("unknown field `").nth(1)?;
    let (unknown, expected) = rest.split_once('`')?;
    let want = unknown.replace('_', "-").to_ascii_lowercase();
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .find(|k| *k == want)
        .map(str::to_string)
}

impl Diagnostic for ProjectError {
    fn hints(&self) -> Vec<String> {
        match self {
            ProjectError::Both { .. } => vec!["keep one of them".into()],
            ProjectError::Reserved { key, .. } => vec![format!("remove {key} from [env]")],
            ProjectError::NotRegular { .. } => {
                vec!["a toolchain file must be a file: rename or remove it".into()]
            }
            ProjectError::Syntax {
                quoted: Some(q), ..
            } => vec![format!("quote it: {q} (unquoted, TOML reads a version as a number, and 13.10 as 13.1)")],
            ProjectError::Syntax { message, .. } if misspelled_key(message).is_some() => {
                vec![format!(
                    "did you mean `{}`? (keys are spelled with `-`)",
                    misspelled_key(message).unwrap_or_default()
                )]
            }
            ProjectError::Syntax { .. } => vec!["a toolchain file has a [toolchain] table (cuda, rocm, cuda-arch, rocm-arch), an optional [build] cache and archs, an optional [torch] check and index, and an optional [env] table; `gpuenv pin <spec>` writes a valid one".into()],
            ProjectError::Invalid { .. } | ProjectError::Unreadable { .. } => Vec::new(),
        }
    }
}

fn shown(path: &Path) -> String {
    printable(&path.to_string_lossy()).into_owned()
}
