//! The proxy binary and where it is linked: `$GPUENV_HOME/bin/gpuenv-shim` (a copy, so a
//! rebuilt or moved gpuenv never breaks the shims), `$GPUENV_HOME/shims/<tool>` for every
//! tool of every registered toolchain, and each view's `bin/nvcc` / `bin/hipcc`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

use crate::toolchain::registry::{Home, Registry};

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

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reshim {
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// Makes `$GPUENV_HOME/shims/` hold exactly one proxy link per tool name found in any
/// registered toolchain's `bin/`. Updated in place, so no shim is ever missing meanwhile.
pub fn reshim(home: &Home, registry: &Registry) -> Result<Reshim> {
    let proxy = install_proxy(home)?;
    let dir = home.shims();
    fs_err::create_dir_all(&dir)?;
    let mut wanted = BTreeSet::new();
    for entry in registry.toolchains.values() {
        if let Ok(rd) = fs_err::read_dir(entry.root.join("bin")) {
            for tool in rd.flatten() {
                let name = tool.file_name().to_string_lossy().into_owned();
                // Tools only: the wheels' bin/ also holds a `crt/` directory.
                if is_tool_name(&name) && tool.path().is_file() {
                    wanted.insert(name);
                }
            }
        }
    }
    let mut report = Reshim::default();
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

/// Tool names worth a shim: not hidden files, not data files such as `nvcc.profile`.
fn is_tool_name(name: &str) -> bool {
    !name.starts_with('.') && !name.ends_with(".profile") && !name.contains(' ')
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
