//! The SLURM TaskProlog (`gpuenv env --shell slurm`) in a project with a gpuenv.lock: a
//! node whose active toolchains are not the locked ones fails the task, naming each
//! difference; with `GPUENV_PROLOG_INSTALL=locked` it first installs, as `install --locked`
//! does, a locked toolchain the node does not have, for a trusted toolchain file only.
//!
//! A step that runs gpuenv itself (`srun gpuenv install --locked`, `srun gpuenv link`, the
//! doctor's `--node-report`) is never refused: those are the fixes, and gpuenv checks its
//! own toolchains. A TaskProlog sees the task's environment and `SLURM_*`, never its argv
//! (measured on SLURM 22.05), so on the refusing path only it asks slurmctld for the step's
//! name (`scontrol show step`, which srun sets to the program's file name); a prolog that
//! cannot tell refuses, as before.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

use gpuenv_core::context::{vars, Context};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::resolve::ActiveSet;
use gpuenv_core::session::Session;
use gpuenv_core::toolchain::registry::{Registry, Source as Origin};
use gpuenv_core::{trust, ui};
use gpuenv_install::lock::Locked;
use gpuenv_install::Choice;

use super::lock::{compared_here, differences_here, load_beside, Compared};

/// The node the prolog runs on as a message says it: `node gpu07` (SLURM's name, escaped),
/// or `this node` when SLURM gave none.
pub fn node(ctx: &Context) -> String {
    match ctx.var_nonempty(vars::SLURMD_NODENAME) {
        Some(name) => format!("node {}", ui::printable(name)),
        None => "this node".to_string(),
    }
}

/// The step's name in `scontrol show step` output: the `Name=` field.
pub fn step_name(scontrol: &str) -> Option<&str> {
    scontrol
        .split_whitespace()
        .find_map(|w| w.strip_prefix("Name="))
        .filter(|n| !n.is_empty())
}

/// Whether this task's step runs gpuenv itself: its name (the program srun started, as a
/// file name) is `gpuenv` or this binary's file name. Asked only when the prolog would
/// refuse the task; any failure to ask is a no.
pub fn step_runs_gpuenv(ctx: &Context) -> bool {
    let (Some(job), Some(step)) = (
        ctx.var_nonempty(vars::SLURM_JOB_ID),
        ctx.var_nonempty(vars::SLURM_STEP_ID),
    ) else {
        return false;
    };
    // Through `ask`: a hung scontrol (a slurmctld that does not answer) must not hang the
    // start of every job on the node.
    let Ok(out) = gpuenv_core::ask::output(std::process::Command::new("scontrol").args([
        "show",
        "step",
        &format!("{job}.{step}"),
    ])) else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(name) = step_name(&text).filter(|_| out.status.success()) else {
        return false;
    };
    let own = std::env::current_exe()
        .ok()
        .and_then(|e| e.file_name().map(|n| n.to_string_lossy().into_owned()));
    name == "gpuenv" || own.as_deref() == Some(name)
}

/// Whether `GPUENV_PROLOG_INSTALL` asks the prolog to install; anything but `locked` or
/// off is an error, so a typo does not silently leave nodes refusing tasks.
fn install_enabled(ctx: &Context) -> Result<bool> {
    match ctx.var_nonempty(vars::GPUENV_PROLOG_INSTALL) {
        None => Ok(false),
        Some("locked") => Ok(true),
        Some("off" | "0" | "no" | "false") => Ok(false),
        Some(other) => bail!(Hinted::new(format!(
            "GPUENV_PROLOG_INSTALL={} is not a setting gpuenv knows",
            ui::printable(other)
        ))
        .hint(
            "`locked` lets the TaskProlog install what gpuenv.lock names; unset it to only compare"
        )),
    }
}

/// Before resolving: under `GPUENV_PROLOG_INSTALL=locked`, each toolchain the project's lock
/// names that nothing registered here has, installed as `install --locked` installs it
/// (the download cache first, then its source). A registered one that differs is left
/// for the comparison to refuse: the prolog never replaces a tree other tasks may use.
pub fn install_missing(ctx: &Context) -> Result<()> {
    if !install_enabled(ctx)? {
        return Ok(());
    }
    let node = node(ctx);
    let (home, registry) = super::registry(ctx)?;
    let Some(file) = trust::in_effect(&ctx.cwd, &registry)?.file else {
        return Ok(());
    };
    if fs_err::symlink_metadata(gpuenv_core::project::lock_beside(&file.path)).is_err() {
        return Ok(());
    }
    let lock = load_beside(&file.path)?;
    let missing: Vec<&Locked> = lock
        .toolchains
        .iter()
        .filter(|l| !registry.toolchains.contains_key(&l.name))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names = missing
        .iter()
        .map(|l| l.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    // A cloned project's files choose what the node downloads only once the user said so.
    if !trust::trusted_as_is(&registry, &file) {
        bail!(Hinted::new(format!(
            "{names} is not installed on {node}; GPUENV_PROLOG_INSTALL=locked would install it as {} names, but {} is not trusted",
            lock.path.display(),
            file.path.display()
        ))
        .hint(format!(
            "`gpuenv trust {}` lets the TaskProlog install what the project locks (read gpuenv.toml and gpuenv.lock first), or `gpuenv install --locked` on {node} installs it now",
            ui::shell_word(&file.path)
        )));
    }
    gpuenv_install::writable_home(&home)?;
    let mut problems = Vec::new();
    for l in missing {
        ui::info(format!(
            "{} is not on {node}: installing it as {} locks it",
            l.name,
            lock.path.display()
        ));
        let found = super::install_locked::one(ctx, &home, &registry, l, Choice::Auto, None, false)
            .with_context(|| {
                format!(
                    "installing {} on {node} as {} locks it",
                    l.name,
                    lock.path.display()
                )
            })?;
        problems.extend(found);
    }
    if !problems.is_empty() {
        bail!(Hinted::new(format!(
            "{node} cannot install what {} names:\n  {}",
            lock.path.display(),
            problems.join("\n  ")
        ))
        .hint(format!(
            "the admin installs it on {node} (`gpuenv install --locked` in the project there) or into the site store; `gpuenv lock` records what is active instead"
        )));
    }
    Ok(())
}

/// After resolving: fails the task when the active toolchains are not what the project's
/// gpuenv.lock names, with each difference and the fix.
pub fn refuse_unlocked(session: &Session, active: &ActiveSet) -> Result<()> {
    match differences_here(session, active)? {
        Some(compared) => refuse(&node(session.ctx()), compared, session.registry()),
        None => Ok(()),
    }
}

/// When a toolchain the project asks for matches nothing registered on this node: with a
/// gpuenv.lock, fails the task with the lock's differences as `check --locked` names them
/// (a locked toolchain not installed here among them); without one, or when nothing
/// differs, `Ok`, and the resolution error stands.
pub fn refuse_unresolved(ctx: &Context) -> Result<()> {
    match compared_here(ctx)? {
        Some(compared) => refuse(&node(ctx), compared, &super::registry(ctx)?.1),
        None => Ok(()),
    }
}

/// The site store a locked toolchain comes from on this node, if it is a store's: the
/// upstream its registered entry is in, or, where nothing here has it, the only upstream in
/// use (each node has its own copy of the store; this one lacks it).
fn store_of<'a>(registry: &'a Registry, locked: &Locked) -> Option<&'a Path> {
    match registry.toolchains.get(&locked.name) {
        Some(e) => registry
            .upstreams
            .iter()
            .find(|r| e.root.starts_with(r))
            .map(PathBuf::as_path),
        None => match registry.upstreams.as_slice() {
            [only] => Some(only.as_path()),
            _ => None,
        },
    }
}

/// Who runs the store at `root`, for a message: its owner's account.
fn store_owner(root: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    fs_err::metadata(root).map_or_else(
        |_| "the site's admins".to_string(),
        |m| {
            format!(
                "the site's admins ({})",
                gpuenv_core::passwd::describe_uid(m.uid())
            )
        },
    )
}

/// Fails the task naming each way this node differs from the lock, and the fix.
fn refuse(node: &str, compared: Compared, registry: &Registry) -> Result<()> {
    let Compared {
        lock,
        problems,
        differing,
    } = compared;
    if problems.is_empty() {
        return Ok(());
    }
    let dir = lock.path.parent().unwrap_or(&lock.path);
    let mut err = Hinted::new(format!(
        "{node} does not have the toolchains {} names:\n  {}",
        lock.path.display(),
        problems.join("\n  ")
    ));
    // A store's toolchain is the site's to put on this node (the user cannot write the
    // store, nor uninstall from it); an own installed one can be installed again; a linked
    // tree is where the admin put it.
    let (stored, own): (Vec<&Locked>, Vec<&Locked>) = differing
        .iter()
        .partition(|l| l.source == Origin::Installed && store_of(registry, l).is_some());
    for l in &stored {
        let root = store_of(registry, l).unwrap_or(Path::new(""));
        err = err.hint(format!(
            "{} is the site store's, and the store at {} on {node} does not have the locked one: the store is incomplete on {node}; ask {} to install it there (`gpuenv install --locked` in {}, as the store's owner)",
            l.name,
            root.display(),
            store_owner(root),
            ui::shell_word(dir)
        ));
    }
    let (installed, placed): (Vec<&Locked>, Vec<&Locked>) =
        own.into_iter().partition(|l| l.source == Origin::Installed);
    if !installed.is_empty() {
        err = err
            .hint(format!(
                "on {node}, `gpuenv install --locked` in {} installs what the lock names (a toolchain of the same name that differs is `gpuenv uninstall`ed there first), or the admin puts the locked one in the site store",
                ui::shell_word(dir)
            ))
            .hint("`GPUENV_PROLOG_INSTALL=locked` in the TaskProlog lets it install a missing one itself");
    }
    for l in placed {
        err = err.hint(match &l.root {
            Some(root) => format!(
                "{} is a {} tree: the admin puts the locked one at {} on {node}, as on the other nodes",
                l.name,
                l.source.as_str(),
                ui::printable(&root.to_string_lossy())
            ),
            None => format!("{} is a {} tree: the admin puts the locked one on {node}", l.name, l.source.as_str()),
        });
    }
    bail!(
        err.hint("`gpuenv lock` records what is active instead, if that is what the project wants")
    )
}

#[cfg(test)]
mod tests {
    use super::step_name;

    #[test]
    fn the_step_name_is_the_name_field_of_scontrol_show_step() {
        let out = "StepId=5.1 UserId=0 StartTime=2026-12-04T18:39:53 TimeLimit=UNLIMITED\n   State=RUNNING Partition=debug NodeList=n1\n   Nodes=1 CPUs=1 Tasks=1 Name=gpuenv Network=(null)\n";
        assert_eq!(step_name(out), Some("gpuenv"));
        assert_eq!(step_name("StepId=5.1 Name= Tasks=1"), None);
        assert_eq!(step_name("slurm_load_steps error: Invalid job id"), None);
    }
}
