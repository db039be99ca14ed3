//! The proxy binary and where it is linked: `$GPUENV_HOME/bin/gpuenv-shim` (a hard link or
//! copy, so a rebuilt or moved gpuenv never breaks the shims), `$GPUENV_HOME/shims/<tool>`
//! for every tool of every registered toolchain, and each view's `bin/nvcc` / `bin/hipcc`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::fsutil;
use crate::store::home::{Home, PROXY_NAME};
use crate::store::toolchain::registry::{Entry, Registry};

use crate::store::toolchain::upstream;

#[derive(Debug, thiserror::Error)]
pub enum ShimError {
    #[error("the gpuenv proxy {path} is missing (it is built and installed beside gpuenv)")]
    ProxyMissing { path: PathBuf },
    #[error("cannot find the running gpuenv binary")]
    CurrentExe(#[source] std::io::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Diagnostic for ShimError {
    fn hints(&self) -> Vec<String> {
        match self {
            ShimError::ProxyMissing { .. } => vec!["install gpuenv again, which puts both binaries side by side: `uv tool install --reinstall .` (or `pip install --force-reinstall .`) in a clone, or `cargo install --locked --path .`; a build in place: `cargo build --release --workspace`".into()],
            ShimError::CurrentExe(_) | ShimError::Io(_) => Vec::new(),
        }
    }
}

/// The proxy built beside the running gpuenv binary; an error with the fix when it is not
/// there (checked before an install downloads anything).
pub fn proxy_source() -> Result<PathBuf, ShimError> {
    let exe = std::env::current_exe().map_err(ShimError::CurrentExe)?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let source = exe.with_file_name(PROXY_NAME);
    if !source.is_file() {
        return Err(ShimError::ProxyMissing { path: source });
    }
    Ok(source)
}

/// Puts the proxy `source` into `$GPUENV_HOME/bin/`: a hard link where the file system
/// allows (no copy of a large debug build per link), else a copy; replaced atomically, so
/// a running shim keeps its old inode. Returns its path there.
pub fn install_proxy(home: &Home, source: &Path) -> Result<PathBuf, ShimError> {
    let target = home.proxy();
    link_gpuenv(home, source)?;
    if fs_err::metadata(&target).is_ok()
        && (is_current(&target, source)? || fsutil::same_bytes(&target, source)?)
    {
        return Ok(target);
    }
    replace_proxy(home, source)
}

/// Whether the installed proxy `installed` is `source`: the same file (a hard link), or a
/// copy with its size and modification time. Two `stat`s, no read: an upgraded or rebuilt
/// gpuenv has a new file beside it, so an old proxy is told apart at every command.
pub fn is_current(installed: &Path, source: &Path) -> Result<bool, ShimError> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (fs_err::metadata(installed)?, fs_err::metadata(source)?);
    Ok((a.dev() == b.dev() && a.ino() == b.ino())
        || (a.len() == b.len() && a.modified()? == b.modified()?))
}

/// What [`refresh_proxy`] did to the installed proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refreshed {
    /// It was an older gpuenv's and is now this one's.
    Replaced(PathBuf),
    /// It was missing while shims or views link to it, and is back.
    Restored(PathBuf),
}

/// After gpuenv was upgraded or rebuilt: the installed proxy, when it is not the one beside
/// the running gpuenv, is replaced by it (atomically); when it is missing while shims or
/// views link to it (every `nvcc` would be "command not found"), it is put back. `None`
/// when it is current, or none is installed and nothing needs one (a home with no
/// toolchain).
pub fn refresh_proxy(home: &Home, source: &Path) -> Result<Option<Refreshed>, ShimError> {
    let target = home.proxy();
    if fs_err::symlink_metadata(&target).is_err() {
        if !linked_to(home) {
            return Ok(None);
        }
        link_gpuenv(home, source)?;
        return replace_proxy(home, source).map(|p| Some(Refreshed::Restored(p)));
    }
    if is_current(&target, source)? {
        return Ok(None);
    }
    link_gpuenv(home, source)?;
    replace_proxy(home, source).map(|p| Some(Refreshed::Replaced(p)))
}

/// Whether [`refresh_proxy`] would change anything: the installed proxy is not `source`, or
/// it is missing while shims or views link to it. Two `stat`s when it is current.
pub fn proxy_outdated(home: &Home, source: &Path) -> bool {
    let target = home.proxy();
    match fs_err::symlink_metadata(&target) {
        Err(_) => linked_to(home),
        Ok(_) => !is_current(&target, source).unwrap_or(false),
    }
}

/// Whether any shim or view is there to link to the proxy.
fn linked_to(home: &Home) -> bool {
    let used = |dir: PathBuf| fs_err::read_dir(dir).is_ok_and(|mut rd| rd.next().is_some());
    used(home.shims()) || used(home.views())
}

/// Puts `source` at `$GPUENV_HOME/bin/gpuenv-shim` by a rename: a hard link, else a copy
/// with the source's modification time (which `is_current` compares).
fn replace_proxy(home: &Home, source: &Path) -> Result<PathBuf, ShimError> {
    let target = home.proxy();
    let dir = target.parent().expect("the proxy lives in a directory");
    fs_err::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{PROXY_NAME}.tmp-{}", std::process::id()));
    let _ = fs_err::remove_file(&tmp);
    if fs_err::hard_link(source, &tmp).is_err() {
        let copied = fs_err::copy(source, &tmp).and_then(|_| {
            use std::os::unix::fs::PermissionsExt;
            fs_err::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
            let modified = fs_err::metadata(source)?.modified()?;
            fs_err::OpenOptions::new()
                .write(true)
                .open(&tmp)?
                .file()
                .set_modified(modified)
        });
        if let Err(e) = copied {
            let _ = fs_err::remove_file(&tmp);
            return Err(e.into());
        }
    }
    fs_err::rename(&tmp, &target)?;
    Ok(target)
}

/// `$GPUENV_HOME/bin/gpuenv`: a link to the gpuenv beside the proxy's source, so the
/// proxy finds the installer beside itself (`GPUENV_AUTO_INSTALL`).
fn link_gpuenv(home: &Home, proxy_source: &Path) -> Result<(), ShimError> {
    let gpuenv = proxy_source.with_file_name("gpuenv");
    let link = home.proxy().with_file_name("gpuenv");
    if !gpuenv.is_file() || fs_err::read_link(&link).ok().as_deref() == Some(gpuenv.as_path()) {
        return Ok(());
    }
    // The home's bin/ is where gpuenv itself is installed (`GPUENV_HOME=~/.local` with a
    // `pip install --user` gpuenv): that gpuenv is the user's, never replaced by a link.
    let real_dir = |p: &Path| p.parent().and_then(|d| fs_err::canonicalize(d).ok());
    if real_dir(&gpuenv).is_some() && real_dir(&gpuenv) == real_dir(&link) {
        return Ok(());
    }
    fs_err::create_dir_all(
        home.proxy()
            .parent()
            .expect("the proxy lives in a directory"),
    )?;
    Ok(fsutil::replace_with_link(&gpuenv, &link)?)
}

/// True if `file` is the gpuenv proxy: a link to it (a shim, a view's compiler) or a copy
/// of one of `proxies`.
pub fn is_proxy(file: &Path, proxies: &[&Path]) -> bool {
    let Ok(real) = file.canonicalize() else {
        return false;
    };
    if real.file_name().is_some_and(|n| n == PROXY_NAME) {
        return true;
    }
    proxies
        .iter()
        .any(|p| fsutil::same_bytes(&real, p).unwrap_or(false))
}

/// More programs than any toolkit has (a CUDA 12 runfile tree has about 40, AMD's ROCm 6
/// about 150): a toolchain with more is a shared prefix such as `/usr/local`, and shimming
/// its `bin/` would put every program of the system behind a pin.
pub const MAX_SHIMS_PER_TOOLCHAIN: usize = 300;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reshim {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Toolchains that got no shims, and why.
    pub refused: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("{name} at {root} has {count} programs in bin/, more than any toolkit ({max}): it looks like a shared prefix, and a shim for each would put every program there behind a pin", root = root.display())]
pub struct TooManyTools {
    pub name: String,
    pub root: PathBuf,
    pub count: usize,
    pub max: usize,
}

impl crate::diagnostic::Diagnostic for TooManyTools {
    fn hints(&self) -> Vec<String> {
        vec!["link the toolkit's own root (the directory holding bin/nvcc or bin/hipcc, e.g. /usr/local/cuda-12.4 or /opt/rocm-6.2.4); Debian's packages are found by `gpuenv discover`".into()]
    }
}

/// The tool names of a toolchain (its toolkit's programs only), or why it gets none: a
/// root whose `bin/` holds more programs than any toolkit is a shared prefix.
pub fn tools_of(name: &str, entry: &Entry) -> Result<Vec<String>, TooManyTools> {
    let count = match entry.system {
        Some(_) => 0,
        None => fs_err::read_dir(entry.root.join("bin")).map_or(0, |rd| rd.count()),
    };
    if count > MAX_SHIMS_PER_TOOLCHAIN {
        return Err(TooManyTools {
            name: name.to_string(),
            root: entry.root.clone(),
            count,
            max: MAX_SHIMS_PER_TOOLCHAIN,
        });
    }
    Ok(entry.tool_names())
}

/// Makes `$GPUENV_HOME/shims/` hold exactly one link to `proxy` per program of any
/// registered toolchain (`Entry::tool_names`; a toolchain whose root is gone has none).
/// Updated in place, so no shim is ever missing meanwhile.
pub fn reshim(home: &Home, registry: &Registry, proxy: &Path) -> Result<Reshim, ShimError> {
    let dir = home.shims();
    fs_err::create_dir_all(&dir)?;
    let mut wanted = BTreeSet::new();
    let mut report = Reshim::default();
    // The upstreams' toolchains get shims here too: the user runs their tools.
    let upstream_entries: Vec<(String, Entry)> = upstream::roots(home, registry)
        .iter()
        .filter_map(|root| Registry::load(&Home::new(root)).ok())
        .flat_map(|r| r.toolchains.into_iter())
        .collect();
    let upstream = upstream_entries.iter().map(|(n, e)| (n.as_str(), e));
    for (name, entry) in registry.toolchains.iter().chain(upstream) {
        match tools_of(name, entry) {
            Ok(tools) => wanted.extend(tools),
            Err(too_many) => report.refused.push(too_many.to_string()),
        }
    }
    for name in &wanted {
        let link = dir.join(name);
        if fs_err::read_link(&link).ok().as_deref() != Some(proxy) {
            fsutil::replace_with_link(proxy, &link)?;
            report.added.push(name.clone());
        }
    }
    for existing in fs_err::read_dir(&dir)?.flatten() {
        let name = existing.file_name().to_string_lossy().into_owned();
        if !wanted.contains(&name) {
            fs_err::remove_file(existing.path())?;
            report.removed.push(name);
        }
    }
    Ok(report)
}
