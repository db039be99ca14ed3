//! Reading a lock: every field checked before anything uses it, each error at
//! file:line:column (a lock from a clone is hostile until proven).

use std::path::{Path, PathBuf};

use reqwest::Url;
use serde::Deserialize;
use toml::Spanned;

use super::error::LockError;
use super::{Lock, Locked, LockedCompiler, FORMAT};
use crate::pathpart::Sha256;
use crate::record::{ArchiveRecord, Record};
use gpuenv_core::fsutil::line_col;
use gpuenv_core::named::Named;
use gpuenv_core::outside;
use gpuenv_core::project::Location;
use gpuenv_core::toolchain::registry::Source as Origin;
use gpuenv_core::toolchain::{check_name, Kind, Version};
use gpuenv_core::ui::printable;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawLock {
    lock_version: Spanned<u32>,
    host_compiler: Option<Spanned<RawCompiler>>,
    #[serde(default)]
    toolchain: Vec<Spanned<RawToolchain>>,
}

type S = Spanned<String>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolchain {
    name: S,
    kind: S,
    version: S,
    source: S,
    root: Option<S>,
    files: S,
    from: Option<S>,
    profile: Option<S>,
    components: Option<Vec<S>>,
    archive: Option<Vec<RawArchive>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCompiler {
    command: S,
    version: S,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArchive {
    component: S,
    version: S,
    url: S,
    sha256: S,
}

pub fn load(path: &Path) -> Result<Lock, LockError> {
    let unreadable = |message: String| LockError::Unreadable {
        path: path.to_path_buf(),
        message,
    };
    let bytes =
        outside::read(path, outside::Kind::Lock).map_err(|e| unreadable(e.why.to_string()))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| LockError::Invalid {
        at: Location::of_bad_utf8(path, &bytes, &e),
        message: "the file is not UTF-8 text".into(),
    })?;
    parse(path, text)
}

/// Why a component name or an archive's version is not one plain path component.
#[derive(Debug, thiserror::Error)]
enum NotPlain {
    #[error(transparent)]
    Part(#[from] crate::pathpart::UnsafeValue),
    #[error("the {what} `{}` has characters no {what} has", value.escape_debug())]
    Characters { what: &'static str, value: String },
}

/// The name of a component or an archive's version: one path component of plain characters.
fn plain(what: &'static str, v: &str) -> Result<(), NotPlain> {
    crate::pathpart::part(what, v)?;
    if v.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '+'))
    {
        Ok(())
    } else {
        Err(NotPlain::Characters {
            what,
            value: v.to_string(),
        })
    }
}

pub fn parse(path: &Path, text: &str) -> Result<Lock, LockError> {
    let at = |offset: usize| {
        let (line, column) = line_col(text, offset);
        Location {
            path: path.to_path_buf(),
            line,
            column,
        }
    };
    let bad = |s: &S, message: String| LockError::Invalid {
        at: at(s.span().start),
        message: printable(&message).into_owned(),
    };
    let raw: RawLock = toml::from_str(text).map_err(|e| LockError::Invalid {
        at: at(e.span().map_or(0, |s| s.start)),
        message: gpuenv_core::ui::toml_message(e.message()),
    })?;
    if *raw.lock_version.get_ref() != FORMAT {
        return Err(LockError::Invalid {
            at: at(raw.lock_version.span().start),
            message: format!(
                "lock-version {} is not one this gpuenv reads ({FORMAT})",
                raw.lock_version.get_ref()
            ),
        });
    }
    let mut toolchains: Vec<Locked> = Vec::new();
    for spanned in raw.toolchain {
        let start = spanned.span().start;
        let t = spanned.into_inner();
        let kind: Kind = t
            .kind
            .get_ref()
            .parse()
            .map_err(|e| bad(&t.kind, format!("kind: {e}")))?;
        let name = t.name.get_ref();
        let spec = check_name(name, kind).map_err(|e| bad(&t.name, format!("name: {e}")))?;
        let version: Version = t.version.get_ref().parse().map_err(|_| {
            bad(
                &t.version,
                format!(
                    "version `{}` is not a version",
                    t.version.get_ref().escape_debug()
                ),
            )
        })?;
        if !spec.version.is_prefix_of(&version) {
            return Err(bad(
                &t.version,
                format!("version {version} is not a version of {name}"),
            ));
        }
        if toolchains.iter().any(|o| o.kind == kind) {
            return Err(bad(
                &t.kind,
                format!("a second {kind} toolchain: a project locks one of each kind"),
            ));
        }
        let source = match t.source.get_ref().as_str() {
            "installed" => Origin::Installed,
            "linked" => Origin::Linked,
            "discovered" => Origin::Discovered,
            other => {
                return Err(bad(
                    &t.source,
                    format!(
                        "source `{}` is not installed, linked or discovered",
                        other.escape_debug()
                    ),
                ))
            }
        };
        let files =
            Sha256::parse(t.files.get_ref()).map_err(|e| bad(&t.files, format!("files: {e}")))?;
        let root = match (&t.root, source) {
            (Some(r), Origin::Installed) => {
                return Err(bad(
                    r,
                    "root: an installed toolchain's root is the store's, not the lock's".into(),
                ))
            }
            (None, Origin::Linked | Origin::Discovered) => {
                return Err(LockError::Invalid {
                    at: at(start),
                    message: format!("{name} is {} but has no root", source.as_str()),
                })
            }
            (Some(r), _) => {
                let p = PathBuf::from(r.get_ref());
                if !p.is_absolute()
                    || r.get_ref().contains('\0')
                    || r.get_ref().chars().any(char::is_control)
                {
                    return Err(bad(r, "root: not an absolute path".into()));
                }
                Some(p)
            }
            (None, Origin::Installed) => None,
        };
        let record = match &t.from {
            None => {
                if let Some(s) = t
                    .profile
                    .as_ref()
                    .or(t.archive.as_ref().and_then(|a| a.first().map(|a| &a.url)))
                {
                    return Err(bad(
                        s,
                        "profile and archives belong to a toolchain with `from`".into(),
                    ));
                }
                None
            }
            Some(_) if source != Origin::Installed => {
                return Err(bad(
                    t.from.as_ref().expect("matched"),
                    "from: only an installed toolchain has a source".into(),
                ))
            }
            Some(from) => Some(record(&t, from, &bad)?),
        };
        toolchains.push(Locked {
            name: name.clone(),
            kind,
            version,
            source,
            root,
            files,
            record,
            at: at(start),
        });
    }
    let host_compiler = match raw.host_compiler {
        None => None,
        Some(c) => {
            let start = c.span().start;
            let c = c.into_inner();
            let cmd = c.command.get_ref();
            if cmd.trim().is_empty() || cmd.chars().any(char::is_control) {
                return Err(bad(
                    &c.command,
                    "host-compiler command: empty or with control characters".into(),
                ));
            }
            let version: Version = c.version.get_ref().parse().map_err(|_| {
                bad(
                    &c.version,
                    format!(
                        "host-compiler version `{}` is not a version",
                        c.version.get_ref().escape_debug()
                    ),
                )
            })?;
            Some(LockedCompiler {
                command: cmd.clone(),
                version,
                at: at(start),
            })
        }
    };
    Ok(Lock {
        path: path.to_path_buf(),
        toolchains,
        host_compiler,
    })
}

fn record(
    t: &RawToolchain,
    from: &S,
    bad: &dyn Fn(&S, String) -> LockError,
) -> Result<Record, LockError> {
    let from_ok = ["nvidia", "pypi", "amd", "manifest"];
    if !from_ok.contains(&from.get_ref().as_str()) {
        return Err(bad(
            from,
            format!(
                "from `{}` is not nvidia, pypi, amd or manifest",
                from.get_ref().escape_debug()
            ),
        ));
    }
    let Some(profile) = &t.profile else {
        return Err(bad(
            from,
            "a toolchain with `from` has a profile too".into(),
        ));
    };
    if !crate::Profile::ALL
        .iter()
        .any(|p| p.name() == profile.get_ref())
    {
        return Err(bad(
            profile,
            format!(
                "profile `{}` is not minimal or default",
                profile.get_ref().escape_debug()
            ),
        ));
    }
    let mut components = Vec::new();
    for c in t.components.iter().flatten() {
        plain("component", c.get_ref()).map_err(|m| bad(c, m.to_string()))?;
        components.push(c.get_ref().clone());
    }
    let mut archives = Vec::new();
    for a in t.archive.iter().flatten() {
        plain("component", a.component.get_ref()).map_err(|m| bad(&a.component, m.to_string()))?;
        plain("version", a.version.get_ref()).map_err(|m| bad(&a.version, m.to_string()))?;
        let url = Url::parse(a.url.get_ref()).map_err(|e| bad(&a.url, format!("url: {e}")))?;
        if !matches!(url.scheme(), "http" | "https" | "file") {
            return Err(bad(
                &a.url,
                format!(
                    "url: the scheme {} is not http, https or file",
                    url.scheme()
                ),
            ));
        }
        let sha = Sha256::parse(a.sha256.get_ref()).map_err(|e| bad(&a.sha256, e.to_string()))?;
        archives.push(ArchiveRecord {
            component: a.component.get_ref().clone(),
            version: a.version.get_ref().clone(),
            url: url.to_string(),
            sha256: sha.to_string(),
        });
    }
    Ok(Record {
        from: from.get_ref().clone(),
        profile: profile.get_ref().clone(),
        components,
        // A lock does not say where a manifest is: `install --locked --manifest` is told.
        manifest: None,
        archives,
        // What a venv gives is in the file list's digest; a lock names no venv.
        linked: Vec::new(),
    })
}
