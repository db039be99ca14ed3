//! Reading a file gpuenv did not write: the one way to do it. Anyone may have put a FIFO,
//! `/dev/zero`, a 10 GB file or a link there, so every such read is opened without
//! blocking (a FIFO never hangs `open`), checked on the opened descriptor (a regular file,
//! after the kernel resolved any links once), and capped at a size that fits its [`Kind`].
//! The kinds and their caps are one table, [`Kind::limit`]; a file that steers gpuenv
//! ([`Kind::steers`]) must also pass the one ownership rule, [`owner_and_mode`].
//!
//! ```ignore
//! let text = outside::read_text(&root.join("version.json"), Kind::VersionFile)?;
//! ```

use std::fmt;
use std::fs::Metadata;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use fs_err::os::unix::fs::OpenOptionsExt;

use crate::fsutil;

/// What a file is, for its cap and for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ToolchainFile,
    Lock,
    /// A gpuenv home's `settings.toml` (an upstream's, or the user's own).
    Settings,
    SystemConfig,
    CompatData,
    /// A Tcl or Lua module file.
    ModuleFile,
    /// `version.json`, `version.txt`, `.info/version`.
    VersionFile,
    /// `cuda.h`, `hip_version.h`, `host_config.h`.
    Header,
    /// torch's `version.py`.
    TorchVersion,
    /// A Python package's `METADATA`.
    PackageMetadata,
    /// `CMakeCUDACompiler.cmake`.
    CMakeCompiler,
    CMakeCache,
    NinjaFile,
    /// A release manifest (`redistrib_*.json`, gpuenv's TOML) read from a directory.
    Manifest,
    /// A package index page read from a directory.
    IndexPage,
    /// What a toolchain's install recorded in its root.
    InstallRecord,
    /// gpuenv's record of a toolchain it retired (`store::retired`): it says which tree the
    /// proxy runs, so it steers.
    RetiredRecord,
    /// A process's `maps` or `environ` under `/proc`.
    ProcessFile,
    /// A list of files or environments another program keeps (dpkg's `.list`, conda's
    /// `environments.txt`).
    FileList,
    /// A kernel or system file such as `/proc/driver/nvidia/version`.
    SystemFile,
    /// A script's first lines (a `#!` line).
    Script,
    /// An answer gpuenv cached in its own home (a compiler's version, nvcc's archs).
    CacheEntry,
    /// A shell's startup file (`~/.bashrc`), read for the lines gpuenv's docs put there.
    ShellRc,
    /// A Python project's `pyproject.toml`.
    Pyproject,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

impl Kind {
    /// The most bytes a file of this kind may hold: well above any real one (measured sizes
    /// in the comments), far below what hurts a machine.
    pub fn limit(self) -> u64 {
        match self {
            // A few lines; the fast path reads at most 16 KiB of it in the shell.
            Kind::ToolchainFile => MIB,
            // A few KiB per pinned toolchain.
            Kind::Lock => 4 * MIB,
            // A site store with thousands of toolchains is ~1 MiB.
            Kind::Settings => 16 * MIB,
            Kind::SystemConfig => MIB,
            // The embedded data is about 20 KiB.
            Kind::CompatData => MIB,
            // Real ones are under 10 KiB.
            Kind::ModuleFile => 256 * KIB,
            // A full toolkit's version.json is ~5 KiB.
            Kind::VersionFile => MIB,
            // CUDA 12's cuda.h is ~1 MiB.
            Kind::Header => 16 * MIB,
            // ~300 bytes.
            Kind::TorchVersion => 64 * KIB,
            // torch's, README included, ~50 KiB.
            Kind::PackageMetadata => 4 * MIB,
            Kind::CMakeCompiler => 64 * KIB,
            Kind::CMakeCache => MIB,
            Kind::NinjaFile => 256 * KIB,
            // A real redistrib_*.json is under 100 KiB.
            Kind::Manifest => 16 * MIB,
            // PyPI's largest simple pages are a few MiB.
            Kind::IndexPage => 64 * MIB,
            Kind::InstallRecord => MIB,
            // A few hundred bytes.
            Kind::RetiredRecord => 64 * KIB,
            // A torch process maps a few thousand files (~1 MiB); an environment is at most
            // ARG_MAX (2 MiB).
            Kind::ProcessFile => 64 * MIB,
            Kind::FileList => 16 * MIB,
            Kind::SystemFile => MIB,
            Kind::Script => 64 * KIB,
            Kind::CacheEntry => 64 * KIB,
            Kind::ShellRc => MIB,
            // Real ones are a few KiB.
            Kind::Pyproject => MIB,
        }
    }

    /// The kind in words, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::ToolchainFile => "toolchain file",
            Kind::Lock => "lock file",
            Kind::Settings => "settings file",
            Kind::SystemConfig => "system config",
            Kind::CompatData => "compatibility-data copy",
            Kind::ModuleFile => "module file",
            Kind::VersionFile => "version file",
            Kind::Header => "header",
            Kind::TorchVersion => "torch version.py",
            Kind::PackageMetadata => "package METADATA",
            Kind::CMakeCompiler => "CMake compiler file",
            Kind::CMakeCache => "CMake cache",
            Kind::NinjaFile => "build.ninja",
            Kind::Manifest => "manifest",
            Kind::IndexPage => "index page",
            Kind::InstallRecord => "install record",
            Kind::RetiredRecord => "record of a retired toolchain",
            Kind::ProcessFile => "process file",
            Kind::FileList => "file list",
            Kind::SystemFile => "system file",
            Kind::Script => "script",
            Kind::CacheEntry => "cache entry",
            Kind::ShellRc => "shell startup file",
            Kind::Pyproject => "pyproject.toml",
        }
    }

    /// Whether what the file says changes what gpuenv does for this user (where it looks,
    /// what it runs, which data it believes): such a file must be this user's or root's.
    pub fn steers(self) -> bool {
        matches!(
            self,
            Kind::SystemConfig | Kind::CompatData | Kind::Settings | Kind::RetiredRecord
        )
    }
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Why {
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("it is larger than {limit} bytes, the most a {kind} may be", kind = .kind.name())]
    TooLarge { kind: Kind, limit: u64 },
    #[error("it is not UTF-8 text")]
    NotText,
    #[error("{0}")]
    Foreign(Foreign),
    #[error("{}", fsutil::io_reason(.0))]
    Io(std::io::Error),
}

/// A file that could not be read, or was refused: which, of what kind, and why.
#[derive(Debug, thiserror::Error)]
pub struct ReadError {
    pub path: PathBuf,
    pub kind: Kind,
    pub why: Why,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self.why {
            Why::Foreign(_) => "not using",
            _ => "cannot read",
        };
        let path = crate::ui::printable(&self.path.to_string_lossy()).into_owned();
        write!(f, "{verb} the {} {path}: {}", self.kind.name(), self.why)
    }
}

impl ReadError {
    /// There is no file there (a missing optional file is usually no error).
    pub fn is_missing(&self) -> bool {
        matches!(&self.why, Why::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

impl crate::diagnostic::Diagnostic for ReadError {
    fn hints(&self) -> Vec<String> {
        match &self.why {
            Why::Foreign(_) => vec![format!(
                "a {} must belong to you or root and be writable by no one else: ask its owner to fix it, or stop using it",
                self.kind.name()
            )],
            Why::NotRegular(_) | Why::TooLarge { .. } => vec![format!(
                "replace it with a regular {} of a sensible size, or remove it",
                self.kind.name()
            )],
            Why::NotText | Why::Io(_) => Vec::new(),
        }
    }
}

/// The bytes of the file of `kind` at `path`.
pub fn read(path: &Path, kind: Kind) -> Result<Vec<u8>, ReadError> {
    open(path, kind)?.read()
}

/// A file of `kind` opened and checked (a regular file, not over its cap, and for a file
/// that steers gpuenv the owner rule), not read yet: for a caller that decides from its
/// metadata whether to read it at all.
pub struct Opened {
    path: PathBuf,
    kind: Kind,
    file: fs_err::File,
    meta: Metadata,
}

/// Opens the file of `kind` at `path` as [`read`] does.
pub fn open(path: &Path, kind: Kind) -> Result<Opened, ReadError> {
    let fail = |why| ReadError {
        path: path.to_path_buf(),
        kind,
        why,
    };
    let file = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| fail(Why::Io(e)))?;
    let meta = file.metadata().map_err(|e| fail(Why::Io(e)))?;
    if let Some(what) = fsutil::not_regular(&meta) {
        return Err(fail(Why::NotRegular(what)));
    }
    if kind.steers() {
        owner_and_mode(path, &meta).map_err(|f| fail(Why::Foreign(f)))?;
    }
    let limit = kind.limit();
    if meta.len() > limit {
        return Err(fail(Why::TooLarge { kind, limit }));
    }
    Ok(Opened {
        path: path.to_path_buf(),
        kind,
        file,
        meta,
    })
}

impl Opened {
    /// The opened file's metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.meta
    }

    /// Its bytes, to its kind's cap.
    pub fn read(self) -> Result<Vec<u8>, ReadError> {
        let (kind, limit) = (self.kind, self.kind.limit());
        let fail = |why| ReadError {
            path: self.path.clone(),
            kind,
            why,
        };
        // Sized from the handle; `take` holds a file that grows while it is read. A file of
        // /proc or /sys says 0 and has a page at most: read in one call, not eight.
        let size = match self.meta.len() {
            0 => 4096,
            n => n as usize + 1,
        };
        let mut bytes = Vec::with_capacity(size.min(limit as usize + 1));
        (&self.file)
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(Why::Io(e)))?;
        if bytes.len() as u64 > limit {
            return Err(fail(Why::TooLarge { kind, limit }));
        }
        Ok(bytes)
    }

    /// Its bytes as UTF-8 text.
    pub fn text(self) -> Result<String, ReadError> {
        let (path, kind) = (self.path.clone(), self.kind);
        String::from_utf8(self.read()?).map_err(|_| ReadError {
            path,
            kind,
            why: Why::NotText,
        })
    }
}

/// The file as UTF-8 text.
pub fn read_text(path: &Path, kind: Kind) -> Result<String, ReadError> {
    open(path, kind)?.text()
}

/// [`read_text`], with a missing file as `Ok(None)`.
pub fn read_text_if_present(path: &Path, kind: Kind) -> Result<Option<String>, ReadError> {
    match read_text(path, kind) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.is_missing() => Ok(None),
        Err(e) => Err(e),
    }
}

/// At most the cap of `kind` from the start of the file, as text (bytes that are not UTF-8
/// replaced; a cut last line dropped): for files whose head says enough, such as a build
/// directory's. `None` when it cannot be read or is not a regular file.
pub fn read_head(path: &Path, kind: Kind) -> Option<String> {
    let limit = kind.limit();
    let file = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if fsutil::not_regular(&meta).is_some() {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize);
    file.take(limit).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 == limit {
        let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(end);
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A file that steers gpuenv but another user could have written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    pub owner: u32,
    pub mode: u32,
    /// What is wrong, in words.
    pub what: ForeignWhy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForeignWhy {
    /// The file, or the link naming it, belongs to someone else.
    Owner,
    /// Users other than its owner can write to it.
    Writable,
    /// Its directory is writable by every user and no sticky bit protects it.
    OpenDirectory(PathBuf),
    /// A directory on its resolved path belongs to someone else.
    OwnerOfDirectory(PathBuf),
}

impl fmt::Display for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let owned = format!(
            "owner {}, mode {:04o}",
            crate::passwd::describe_uid(self.owner),
            self.mode & 0o7777
        );
        match &self.what {
            ForeignWhy::Owner => write!(
                f,
                "it belongs to another user, not to you or root ({owned})"
            ),
            ForeignWhy::Writable => write!(f, "other users can write to it ({owned})"),
            ForeignWhy::OpenDirectory(dir) => write!(
                f,
                "its directory {} is writable by every user ({owned} of the directory)",
                crate::ui::printable(&dir.to_string_lossy())
            ),
            ForeignWhy::OwnerOfDirectory(dir) => write!(
                f,
                "the directory {} on its path belongs to another user, not to you or root ({owned} of the directory)",
                crate::ui::printable(&dir.to_string_lossy())
            ),
        }
    }
}

const ROOT: u32 = 0;
const STICKY: u32 = 0o1000;

/// The one rule for a file that steers gpuenv (`file` is its opened handle's metadata): it
/// belongs to this user or root and no one else can write to it; every link on the way to
/// it (the name itself, a directory named by a link, each link a link names) belongs to this
/// user or root; and every directory on the resolved path does too and is not writable by
/// every user unless a sticky bit protects it (as on `/tmp`): whoever can change any of
/// them could choose which file is read.
pub fn owner_and_mode(path: &Path, file: &Metadata) -> Result<(), Foreign> {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    let me = unsafe { libc::geteuid() };
    rule(path, file, me)
}

fn rule(path: &Path, file: &Metadata, me: u32) -> Result<(), Foreign> {
    let ours = |uid: u32| uid == me || uid == ROOT;
    let foreign = |m: &Metadata, what| Foreign {
        owner: m.uid(),
        mode: m.mode(),
        what,
    };
    if !ours(file.uid()) {
        return Err(foreign(file, ForeignWhy::Owner));
    }
    if file.mode() & 0o022 != 0 {
        return Err(foreign(file, ForeignWhy::Writable));
    }
    let (links, real) = walk(path);
    for link in &links {
        if !ours(link.uid()) {
            return Err(foreign(link, ForeignWhy::Owner));
        }
    }
    let mut dir = real.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(m) = fs_err::metadata(d) {
            if !ours(m.uid()) {
                return Err(foreign(&m, ForeignWhy::OwnerOfDirectory(d.to_path_buf())));
            }
            let open = m.mode() & 0o002 != 0;
            let protected = m.mode() & STICKY != 0;
            if open && !protected {
                return Err(foreign(&m, ForeignWhy::OpenDirectory(d.to_path_buf())));
            }
        }
        dir = d.parent();
    }
    Ok(())
}

/// The links met resolving `path` component by component (each one's own metadata), and
/// the path it resolves to (relative when `path` is).
fn walk(path: &Path) -> (Vec<Metadata>, PathBuf) {
    use std::path::Component;
    let start = match path.is_absolute() {
        true => PathBuf::from("/"),
        false => PathBuf::new(),
    };
    let mut links = Vec::new();
    let mut todo: Vec<std::ffi::OsString> = path
        .components()
        .rev()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    let mut at = start;
    // The kernel's own limit on links followed in one lookup.
    let mut hops = 0;
    while let Some(name) = todo.pop() {
        if name == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&name);
        match fs_err::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() && hops < 40 => {
                hops += 1;
                let Ok(target) = fs_err::read_link(&next) else {
                    return (links, next);
                };
                links.push(m);
                if target.is_absolute() {
                    at = PathBuf::from("/");
                }
                for c in target.components().rev() {
                    match c {
                        Component::Normal(n) => todo.push(n.to_os_string()),
                        Component::ParentDir => todo.push("..".into()),
                        _ => {}
                    }
                }
            }
            _ => at = next,
        }
    }
    (links, at)
}

#[cfg(test)]
mod tests;
