//! gpuenv.lock as the commands use it: writing it beside gpuenv.toml (`lock`, and `pin` and
//! `install` refreshing it), comparing the active toolchains with it (`check --locked`,
//! `doctor`, the shell hook, the SLURM prolog) and reading it (`install --locked`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::host_compiler::Probe;
use gpuenv_core::project;
use gpuenv_core::resolve::{ActiveSet, ResolveError};
use gpuenv_core::session::Session;
use gpuenv_core::toolchain::registry::{Registry, Source as Origin};
use gpuenv_core::toolchain::{Kind, Spec};
use gpuenv_core::ui;
use gpuenv_core::user_file::{self, Check, UserFile};
use gpuenv_install::lock::{self, Depth, Found, Locked, LockedCompiler, Mismatch};

use super::Exit;

/// After `pin` or `install`: rewrites gpuenv.lock if the project here has one; a lock that
/// cannot be rewritten now (a pin not installed yet) is left as it was, and said so.
pub fn refresh(ctx: &Context) {
    let Ok(Some(project)) = here(ctx) else {
        return;
    };
    if fs_err::symlink_metadata(project::lock_beside(&project)).is_err() {
        return;
    }
    if let Err(e) = write(ctx) {
        ui::warn(format!(
            "{} was left as it was: {}",
            project::lock_beside(&project).display(),
            ui::error_one_line(e.as_ref(), super::FIND)
        ));
    }
}

/// Writes gpuenv.lock beside the toolchain file here (`gpuenv lock`).
pub fn write(ctx: &Context) -> Result<()> {
    let mut session = super::session(ctx)?;
    let active = super::resolve_here(&mut session, &[], None)?;
    let Some(file) = &active.project else {
        bail!(Hinted::new(format!(
            "nothing to lock: no gpuenv.toml from {} up",
            ctx.cwd.display()
        ))
        .hint("`gpuenv pin cuda-13.0` pins a toolchain here first"));
    };
    let path = project::lock_beside(&file.path);
    let mut locked = Vec::new();
    for pin in &file.pins {
        let Some(t) = active.get(pin.kind).filter(|t| lock::pinned(&t.reason)) else {
            bail!(Hinted::new(format!(
                "{}: the {} pin is not what is active here ({})",
                pin.at,
                pin.kind,
                active
                    .get(pin.kind)
                    .map_or("nothing".to_string(), |t| t.reason.to_string())
            ))
            .hint("`gpuenv use none` lets the project's pins decide, then `gpuenv lock`"));
        };
        let (files, rec) = lock::inspect(&t.entry)?;
        let found = Found {
            name: &t.name,
            entry: &t.entry,
            files: &files,
            record: rec.as_ref(),
        };
        if t.entry.source == Origin::Installed && rec.is_none() {
            ui::warn(format!(
                "{} was installed by a gpuenv that kept no record of its archives: the lock has its version and file list only (`gpuenv uninstall {n}` and `gpuenv install {n}` record them)",
                t.name,
                n = t.name
            ));
        }
        locked.push(Locked::of(&found, pin.at.clone())?);
    }
    if locked.is_empty() {
        bail!(Hinted::new(format!(
            "nothing to lock: {} pins no toolchain",
            file.path.display()
        ))
        .hint("`gpuenv pin cuda-13.0` adds a pin"));
    }
    let cc = locked_compiler(&session, &active);
    let text = lock::render(&locked, cc.as_ref())?;
    // What is written must read back: a root that is not UTF-8 would not.
    lock::parse(&path, &text).context("the lock gpuenv made does not read back")?;
    write_lock(&path, &text)?;
    ui::info(format!(
        "wrote {} ({})",
        path.display(),
        locked
            .iter()
            .map(|l| l.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(())
}

/// The pinned host compiler gpuenv chose here, and its GCC version (none: nothing pinned,
/// or a compiler whose version gpuenv cannot read, such as clang).
fn locked_compiler(session: &Session, active: &ActiveSet) -> Option<LockedCompiler> {
    // Only a trusted file's host compiler is used, so only that one is locked.
    let (command, at) = active
        .project
        .as_ref()?
        .host_compiler()
        .map(|(c, at)| (c, at.clone()))?;
    let compiler = active.host_compiler.as_ref()?.compiler()?.to_path_buf();
    let version = session.host_compiler_probe().gcc_version(&compiler)?;
    Some(LockedCompiler {
        command,
        version,
        at,
    })
}

/// Replaces the lock atomically; a link, directory or other non-file at its name is
/// refused, never followed or replaced.
fn write_lock(path: &Path, text: &str) -> Result<()> {
    match fs_err::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => bail!(Hinted::new(format!(
            "{} is {}, not a file: gpuenv writes no lock through it",
            path.display(),
            if meta.file_type().is_symlink() {
                "a symbolic link"
            } else {
                "not a regular file"
            }
        ))
        .hint("remove it, then `gpuenv lock` again")),
        _ => {}
    }
    // The project's file, through the one editor: its mode, inode, line endings and the
    // user's comments kept (the new lock merged into their copy), a new one from the umask.
    let within = path.parent().unwrap_or(Path::new("."));
    let file = UserFile {
        path,
        within,
        scope: "the project",
        kind: gpuenv_core::outside::Kind::Lock,
    };
    // The lock is rendered whole: a key it no longer has (an unpinned kind) may go.
    let check = Check::Toml {
        may_lose: &|_| true,
    };
    // A lock that is not TOML is replaced by the one gpuenv made (`gpuenv lock` is how the
    // user asks to mend it).
    user_file::edit(file, check, |old: &str| -> Result<Option<String>> {
        let merged = user_file::form::merged(old, text)
            .ok_or_else(|| anyhow::anyhow!("the lock gpuenv made is not TOML"))?;
        Ok(Some(merged))
    })
    .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// `gpuenv check --locked`: exit 1 naming each way the active set differs from the lock.
pub fn check(ctx: &Context) -> Result<()> {
    // The lock is read first: a bad one is the error, whatever is installed.
    let lock = load_here(ctx)?;
    let mut session = super::session(ctx)?;
    let Compared { lock, problems, .. } = compare_registered(&mut session, lock)?;
    if problems.is_empty() {
        ui::info(format!(
            "the active toolchains match {} ({})",
            lock.path.display(),
            lock.toolchains
                .iter()
                .map(|l| l.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return Ok(());
    }
    let mut err = Hinted::new(format!(
        "the active toolchains differ from {}:\n  {}",
        lock.path.display(),
        problems.join("\n  ")
    ));
    for hint in install_torch_hints(&lock, session.registry()) {
        err = err.hint(hint);
    }
    let err = err.hint("`gpuenv install --locked` installs what the lock names; `gpuenv lock` records what is active now instead");
    super::print_error(&err.into());
    Err(Exit(1).into())
}

/// For each locked toolkit `gpuenv install torch` made that is not registered here, the one
/// command that makes it as locked (`install --locked` cannot: its venv's wheels are
/// nothing a lock brings), as a hint that comes before the others.
pub fn install_torch_hints(lock: &lock::Lock, registry: &Registry) -> Vec<String> {
    lock.toolchains
        .iter()
        .filter(|l| !registry.toolchains.contains_key(&l.name))
        .filter_map(|l| {
            let command = l.install_torch_command()?;
            Some(format!("{command}, makes {} as locked", l.name))
        })
        .collect()
}

/// `lock` compared in full with what is registered here, as `check --locked` compares it:
/// a locked toolchain whose kind's choice (pin, default, `GPUENV_TOOLCHAIN`) matches
/// nothing registered is a difference like the others, named as such, not an error.
pub fn compare_registered(session: &mut Session, mut lock: lock::Lock) -> Result<Compared> {
    let (active, unmatched) = resolve_registered(session)?;
    let (missing, rest): (Vec<Locked>, Vec<Locked>) = std::mem::take(&mut lock.toolchains)
        .into_iter()
        .partition(|l| unmatched.iter().any(|(spec, _)| spec.kind == l.kind));
    lock.toolchains = rest;
    let mut not_installed: Vec<String> = missing
        .iter()
        .map(|l| {
            let (spec, origin) = unmatched
                .iter()
                .find(|(spec, _)| spec.kind == l.kind)
                .expect("partitioned by kind");
            if session.registry().toolchains.contains_key(&l.name) {
                format!(
                    "{}: {} is locked, but {origin} asks for {spec}, which no registered toolchain matches",
                    l.at, l.name
                )
            } else {
                format!("{}: {} is locked but not installed here", l.at, l.name)
            }
        })
        .collect();
    // A pinned kind the lock does not name, whose pin matches nothing either.
    let pinned = |kind| {
        active
            .project
            .as_ref()
            .is_some_and(|p| p.pin(kind).is_some())
    };
    for (spec, origin) in &unmatched {
        if pinned(spec.kind) && !missing.iter().any(|l| l.kind == spec.kind) {
            not_installed.push(format!(
                "{}: {spec} is pinned but not locked, and {origin} matches no registered toolchain",
                lock.path.display()
            ));
        }
    }
    let Compared {
        mut lock,
        mut problems,
        mut differing,
    } = differences(session, lock, &active)?;
    not_installed.append(&mut problems);
    differing.extend(missing.iter().cloned());
    lock.toolchains.extend(missing);
    Ok(Compared {
        lock,
        problems: not_installed,
        differing,
    })
}

/// The gpuenv.lock of the project here compared with what is registered, as
/// `check --locked` compares it: `None` when there is no toolchain file or no lock.
pub fn compared_here(ctx: &Context) -> Result<Option<Compared>> {
    let Some(project) = here(ctx)? else {
        return Ok(None);
    };
    if fs_err::symlink_metadata(project::lock_beside(&project)).is_err() {
        return Ok(None);
    }
    let lock = load_beside(&project)?;
    let mut session = super::session(ctx)?;
    Ok(Some(compare_registered(&mut session, lock)?))
}

/// The active set of each kind whose choice (pin, default, `GPUENV_TOOLCHAIN`) matches a
/// registered toolchain, and, for each kind whose choice matches none, that spec and where
/// it was asked for: `check --locked` names those as differences instead of stopping.
fn resolve_registered(session: &mut Session) -> Result<(ActiveSet, Vec<(Spec, String)>)> {
    let mut kinds = Kind::ALL.to_vec();
    let mut unmatched = Vec::new();
    loop {
        match super::resolve_here_kinds(session, &[], &kinds, None) {
            Ok(active) => return Ok((active, unmatched)),
            Err(e) => match e.downcast_ref::<ResolveError>() {
                Some(ResolveError::NotRegistered { spec, origin, .. })
                    if kinds.contains(&spec.kind) =>
                {
                    kinds.retain(|k| *k != spec.kind);
                    unmatched.push((spec.clone(), origin.clone()));
                }
                _ => return Err(e),
            },
        }
    }
}

/// `active` compared in full with a lock.
pub struct Compared {
    pub lock: lock::Lock,
    /// Each difference, in `check --locked`'s words.
    pub problems: Vec<String>,
    /// The locked toolchains that are not active as locked.
    pub differing: Vec<Locked>,
}

/// Each way `active` differs from `lock`, everything it records compared.
pub fn differences(session: &Session, lock: lock::Lock, active: &ActiveSet) -> Result<Compared> {
    let found = lock::compare(&lock, active, Depth::Full, || {
        locked_compiler(session, active)
    })?;
    let problems = found.iter().flat_map(Mismatch::lines).collect();
    let differing = found.iter().filter_map(Mismatch::locked).cloned().collect();
    Ok(Compared {
        lock,
        problems,
        differing,
    })
}

/// The gpuenv.lock beside the toolchain file of `active`, compared in full: `None` when
/// there is no toolchain file or no lock beside it.
pub fn differences_here(session: &Session, active: &ActiveSet) -> Result<Option<Compared>> {
    let Some(project) = &active.project else {
        return Ok(None);
    };
    if fs_err::symlink_metadata(project::lock_beside(&project.path)).is_err() {
        return Ok(None);
    }
    let lock = load_beside(&project.path)?;
    Ok(Some(differences(session, lock, active)?))
}

/// For the shell hook, past its fast path: each way the active set differs from the
/// project's gpuenv.lock by name, version or source (file lists are `check --locked`'s:
/// too slow for a prompt), and the lock's path for the hook to watch.
pub fn hook_notes(active: &ActiveSet) -> (Vec<String>, Option<PathBuf>) {
    let Some(project) = &active.project else {
        return (Vec::new(), None);
    };
    let path = project::lock_beside(&project.path);
    if fs_err::symlink_metadata(&path).is_err() {
        return (Vec::new(), Some(path));
    }
    let lock = match load_beside(&project.path) {
        Ok(lock) => lock,
        Err(e) => {
            return (
                vec![ui::error_one_line(e.as_ref(), super::FIND)],
                Some(path),
            )
        }
    };
    // Identity reads nothing from the trees, so it cannot fail.
    let found = lock::compare(&lock, active, Depth::Identity, || None).unwrap_or_default();
    let notes = found
        .iter()
        .filter_map(|m| {
            let differs = match m {
                Mismatch::NotActive(l) => format!("no {} toolchain is active", l.kind),
                Mismatch::Differs { active: t, .. } => format!(
                    "{} ({} {}) is active",
                    t.name,
                    t.entry.source.as_str(),
                    t.entry.version
                ),
                _ => return None,
            };
            let l = m.locked()?;
            Some(format!(
                "{}: the lock has {} ({} {}), but {differs}; `gpuenv install --locked` or `gpuenv lock`",
                l.at,
                l.name,
                l.source.as_str(),
                l.version
            ))
        })
        .collect();
    (notes, Some(path))
}

/// The toolchain file this user applies here (another user's is passed over, as
/// resolution does).
fn here(ctx: &Context) -> Result<Option<PathBuf>> {
    let (_home, registry) = super::registry(ctx)?;
    Ok(project::find(&ctx.cwd, &registry.safe_directories)?.path)
}

/// The lock of the project here.
pub fn load_here(ctx: &Context) -> Result<lock::Lock> {
    let (_home, registry) = super::registry(ctx)?;
    let found = project::find(&ctx.cwd, &registry.safe_directories)?;
    let Some(project) = found.path else {
        // A file passed over (another account's, in an open directory) is why: said so.
        if let Some(foreign) = found.passed_over.first() {
            bail!(Hinted::new(format!(
                "no gpuenv.toml of yours from {} up: {foreign}",
                ctx.cwd.display()
            ))
            .hint("run it as the project's owner, or trust the directory as the message says"));
        }
        bail!(
            Hinted::new(format!("no gpuenv.toml from {} up", ctx.cwd.display()))
                .hint("`gpuenv pin <spec>` then `gpuenv lock`")
        );
    };
    load_beside(&project)
}

pub fn load_beside(project: &Path) -> Result<lock::Lock> {
    let path = project::lock_beside(project);
    match fs_err::symlink_metadata(&path) {
        Err(_) => bail!(Hinted::new(format!("{} does not exist", path.display()))
            .hint("`gpuenv lock` writes it from the toolchains pinned here")),
        // A link in a clone could name any file of this user's.
        Ok(m) if m.file_type().is_symlink() => bail!(Hinted::new(format!(
            "{} is a symbolic link: gpuenv reads no lock through one",
            path.display()
        ))
        .hint("replace it with the file itself, or `gpuenv lock` after removing it")),
        Ok(_) => {}
    }
    Ok(lock::load(&path)?)
}
