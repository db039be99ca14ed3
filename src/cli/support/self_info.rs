//! `gpuenv self info`: how this copy was installed, told from where the running binary is
//! (cargo's `bin/` beside `.crates2.json`; a Python environment whose `gpuenv-*.dist-info`
//! names its installer; a uv tool or pipx environment), and the command that upgrades it.
//! What is read there is only read: a few small files, never run.

use std::path::{Path, PathBuf};

use anyhow::Result;

use gpuenv_core::context::Context;
use gpuenv_core::store::home::PROXY_NAME;
use gpuenv_core::store::shims;

/// How a copy of gpuenv got where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub how: String,
    pub upgrade: String,
    pub remove: String,
}

fn installed(how: &str, upgrade: &str, remove: &str) -> Installed {
    Installed {
        how: how.into(),
        upgrade: upgrade.into(),
        remove: remove.into(),
    }
}

/// The `INSTALLER` of the gpuenv wheel in the Python environment at `prefix`, if one is
/// there (`lib/python*/site-packages/gpuenv-*.dist-info/INSTALLER`).
fn wheel_installer(prefix: &Path) -> Option<String> {
    for lib in fs_err::read_dir(prefix.join("lib")).ok()?.flatten() {
        let site = lib.path().join("site-packages");
        let Ok(entries) = fs_err::read_dir(&site) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("gpuenv-") && name.ends_with(".dist-info") {
                let text = gpuenv_core::outside::read_text(
                    &e.path().join("INSTALLER"),
                    gpuenv_core::outside::Kind::PackageMetadata,
                )
                .ok()?;
                // Another program's file: printed, so no control character reaches the terminal.
                return Some(gpuenv_core::ui::printable(text.trim()).into_owned());
            }
        }
    }
    None
}

/// A path as one shell word a user can paste: quoted when it needs it, and with no control
/// character left raw (a name with an escape sequence prints as `\x1b`, never runs on the
/// terminal).
fn shell_word(path: &Path) -> String {
    gpuenv_core::ui::printable(&gpuenv_core::quote::word(&path.to_string_lossy())).into_owned()
}

/// Tells how the gpuenv at `exe` (links resolved) was installed.
pub fn detect(exe: &Path) -> Installed {
    let exe = exe.canonicalize().unwrap_or_else(|_| exe.to_path_buf());
    let bin = exe.parent().unwrap_or(Path::new("/"));
    let prefix = bin.parent().unwrap_or(Path::new("/"));
    if prefix.join(".crates2.json").is_file() || prefix.join(".crates.toml").is_file() {
        return installed(
            "with `cargo install`",
            "in a newer clone: cargo install --locked --path .",
            "cargo uninstall gpuenv",
        );
    }
    if let Some(installer) = wheel_installer(prefix) {
        if prefix.join("uv-receipt.toml").is_file() {
            return installed(
                "as a uv tool (a wheel)",
                "uv tool upgrade gpuenv   (from a clone: uv tool install --reinstall .)",
                "uv tool uninstall gpuenv",
            );
        }
        if prefix.join("pipx_metadata.json").is_file() {
            return installed(
                "with pipx (a wheel)",
                "pipx upgrade gpuenv   (from a clone: pipx install --force .)",
                "pipx uninstall gpuenv",
            );
        }
        let python = prefix.join("bin/python");
        let py = shell_word(&python);
        let how = format!(
            "as a wheel by {} into the Python environment {}",
            if installer.is_empty() {
                "an unknown installer"
            } else {
                &installer
            },
            gpuenv_core::ui::shown(prefix)
        );
        return match installer.as_str() {
            "uv" => installed(
                &how,
                &format!("uv pip install --python {py} --upgrade gpuenv"),
                &format!("uv pip uninstall --python {py} gpuenv"),
            ),
            _ => installed(
                &how,
                &format!("{py} -m pip install --upgrade gpuenv   (or a newer wheel or clone in place of gpuenv)"),
                &format!("{py} -m pip uninstall gpuenv"),
            ),
        };
    }
    installed(
        "by hand: a build not installed by cargo, pip, uv or pipx",
        "rebuild it (cargo build --release), or install it from a clone: uv tool install .",
        &format!(
            "rm {} {}",
            shell_word(&bin.join("gpuenv")),
            shell_word(&bin.join(PROXY_NAME))
        ),
    )
}

pub fn run(ctx: &Context) -> Result<()> {
    let exe: PathBuf = std::env::current_exe()?;
    let this = detect(&exe);
    let real = exe.canonicalize().unwrap_or(exe);
    println!(
        "gpuenv {} at {}",
        env!("CARGO_PKG_VERSION"),
        gpuenv_core::ui::shown(&real)
    );
    println!("installed {}", this.how);
    match shims::proxy_source() {
        Ok(p) => println!("proxy {}", gpuenv_core::ui::shown(&p)),
        Err(e) => println!("proxy missing: {e}"),
    }
    if let Ok(home) = ctx.own_home() {
        let installed = home.proxy();
        let state = match shims::proxy_source() {
            Ok(src) if installed.is_file() => {
                if shims::is_current(&installed, &src).unwrap_or(false) {
                    "this copy's"
                } else {
                    "another build's (the next gpuenv command replaces it)"
                }
            }
            _ if installed.is_file() => "present",
            _ => "not installed yet (the first install or link puts it there)",
        };
        println!(
            "home {} (proxy: {state})",
            gpuenv_core::ui::shown(&home.root)
        );
    }
    println!("upgrade: {}", this.upgrade);
    println!("remove: gpuenv self uninstall, then {}", this.remove);
    Ok(())
}
