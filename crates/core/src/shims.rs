//! The proxy binary and where it is linked: `$GPUENV_HOME/bin/gpuenv-shim` (a copy, so a
//! rebuilt or moved gpuenv never breaks the shims), `$GPUENV_HOME/shims/<tool>` for every
//! tool of every registered toolchain, and each view's `bin/nvcc` / `bin/hipcc`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

use crate::toolchain::registry::{Entry, Home, Registry};

pub const PROXY_NAME: &str = "gpuenv-shim";

/// The proxy built beside the running gpuenv binary.
fn proxy_source() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the running gpuenv binary")?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let source = exe.with_file_name(PROXY_NAME);
    if !source.is_file() {
        bail!(
            "the gpuenv proxy {} is missing (it is built and installed beside gpuenv)\nhint: build it with `cargo build --release --workspace`, or install both with `cargo install --path shims && cargo install --path .`",
            source.display()
        );
    }
    Ok(source)
}

/// Puts the proxy into `$GPUENV_HOME/bin/`: a hard link to the built binary where the file
/// system allows (no copy of a large debug build per link), else a copy; replaced
/// atomically, so a running shim keeps its old inode. Returns its path there.
pub fn install_proxy(home: &Home) -> Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let source = proxy_source()?;
    let target = home.proxy();
    let src_meta = fs_err::metadata(&source)?;
    if let Ok(meta) = std::fs::metadata(&target) {
        let same_inode = meta.dev() == src_meta.dev() && meta.ino() == src_meta.ino();
        if same_inode
            || (meta.len() == src_meta.len() && fs_err::read(&target)? == fs_err::read(&source)?)
        {
            return Ok(target);
        }
    }
    let dir = target.parent().expect("the proxy lives in a directory");
    fs_err::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{PROXY_NAME}.tmp-{}", std::process::id()));
    let _ = fs_err::remove_file(&tmp);
    if std::fs::hard_link(&source, &tmp).is_err() {
        fs_err::copy(&source, &tmp)?;
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
    }
    fs_err::rename(&tmp, &target)?;
    Ok(target)
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
#[error("{name} at {root} has {count} programs in bin/, more than any toolkit ({max}): it looks like a shared prefix, and a shim for each would put every program there behind a pin\nhint: link the toolkit's own root (the directory holding bin/nvcc or bin/hipcc, e.g. /usr/local/cuda-12.4 or /opt/rocm-6.2.4); Debian's packages are found by `gpuenv discover`")]
pub struct TooManyTools {
    pub name: String,
    pub root: PathBuf,
    pub count: usize,
    pub max: usize,
}

/// The tool names of a toolchain, or why it gets none.
pub fn tools_of(name: &str, entry: &Entry) -> Result<Vec<String>, TooManyTools> {
    let tools = entry.tool_names();
    if tools.len() > MAX_SHIMS_PER_TOOLCHAIN {
        return Err(TooManyTools {
            name: name.to_string(),
            root: entry.root.clone(),
            count: tools.len(),
            max: MAX_SHIMS_PER_TOOLCHAIN,
        });
    }
    Ok(tools)
}

/// Makes `$GPUENV_HOME/shims/` hold exactly one proxy link per program of any registered
/// toolchain (`Entry::tool_names`). Updated in place, so no shim is ever missing meanwhile.
pub fn reshim(home: &Home, registry: &Registry) -> Result<Reshim> {
    let proxy = install_proxy(home)?;
    let dir = home.shims();
    fs_err::create_dir_all(&dir)?;
    let mut wanted = BTreeSet::new();
    let mut report = Reshim::default();
    for (name, entry) in &registry.toolchains {
        match tools_of(name, entry) {
            Ok(tools) => wanted.extend(tools),
            Err(too_many) => report.refused.push(too_many.to_string()),
        }
    }
    for name in &wanted {
        let link = dir.join(name);
        if fs_err::read_link(&link).ok().as_deref() != Some(proxy.as_path()) {
            replace_with_link(&proxy, &link)?;
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

/// Points `link` at `target` atomically (a temp link renamed over it).
pub fn replace_with_link(target: &Path, link: &Path) -> Result<()> {
    let tmp = link.with_file_name(format!(
        ".{}.tmp-{}",
        link.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let _ = fs_err::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)
        .with_context(|| format!("linking {} -> {}", tmp.display(), target.display()))?;
    fs_err::rename(&tmp, link)?;
    Ok(())
}
