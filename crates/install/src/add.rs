//! Adding components to an installed toolchain (`gpuenv install NAME --component X`). Only
//! the new archives are fetched and unpacked. The new tree is built beside the old one from
//! hard links to the old one's files plus the new component's, checked like any install,
//! and exchanged with the old tree in one rename: a build never sees it half-changed, and a
//! failure leaves the old tree as it was. A tree linked into a venv's wheels (`install
//! torch`) is made in the install's order: its links into the venv are left out of the
//! copy, the archives placed, then the venv linked again where no archive put a file.

use std::path::{Path, PathBuf};

use crate::error::{Context as _, InstallError, Result};

use super::install::{components_of, fetch_all, finish_tree, link_wheel_trees, place_archive};
use super::record::{self, ArchiveRecord, Record};
use super::{assemble, Job, Plan, Selection};
use super::{lock_toolchain, seal, writable_home};
use crate::source::components::recorded_component;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::toolchain::detect;
use gpuenv_core::toolchain::registry::{Registry, Source as Origin};

/// Adds to the installed `plan.name` the archives of `plan` that `old` (its record) does not
/// have, and links the venv wheels of `plan.linked` it did not link. `sel` is what the new
/// record says was asked for. Returns the components added.
pub(crate) fn add(job: &Job, plan: &Plan, old: &Record, sel: &Selection) -> Result<Vec<String>> {
    let Job {
        store,
        fetcher,
        progress,
    } = *job;
    let home = store.home();
    let name = &plan.name;
    let root = home.toolchains().join(name);
    writable_home(home)?;
    let _lock = lock_toolchain(home, name)?;
    // Checked again under the lock: an uninstall may have come first.
    match Registry::load(home)?.toolchains.get(name) {
        Some(e) if e.source == Origin::Installed && e.root == root => {}
        _ => {
            return Err(Hinted::new(format!("{name} is not installed"))
                .hint(format!("`gpuenv install {name}` installs it"))
                .into())
        }
    }
    let had = |c: &str| {
        let c = recorded_component(c);
        let linked = old.linked.iter().flat_map(|l| &l.wheels);
        old.archives
            .iter()
            .any(|o| recorded_component(&o.component) == c)
            || linked
                .clone()
                .any(|w| recorded_component(&w.component) == c)
    };
    let new: Vec<_> = plan
        .archives
        .iter()
        .filter(|a| !had(&a.component))
        .cloned()
        .collect();
    // Wheels the venv got since: linked once the tree is made again.
    let new_wheels: Vec<String> = plan
        .linked
        .iter()
        .flat_map(|l| &l.wheels)
        .filter(|w| !had(&w.component))
        .map(|w| w.component.clone())
        .collect();
    let mut added: Vec<String> = new.iter().map(|a| a.component.clone()).collect();
    added.extend(new_wheels);
    if added.is_empty() {
        return Ok(added);
    }
    let names = added.join(", ");
    let dirs = fetch_all(fetcher, &new, progress)?;
    crate::dir::remove_leftovers(&home.toolchains(), name);
    let tmp = crate::dir::temp_dir(&home.toolchains(), name).with_context(|| {
        format!(
            "creating a temporary directory in {}",
            home.toolchains().display()
        )
    })?;
    let venvs: Vec<PathBuf> = old
        .linked
        .iter()
        .flat_map(|l| crate::install::wheel_trees(plan.kind, &l.tree))
        .collect();
    link_tree(&root, tmp.path(), &venvs).with_context(|| format!("copying {}", root.display()))?;
    for (a, dir) in new.iter().zip(&dirs) {
        place_archive(fetcher, a, dir, tmp.path())
            .with_context(|| format!("adding {} to {name}", a.file_name()))?;
    }
    assemble::links_stay_inside(tmp.path()).with_context(|| format!("assembling {name}"))?;
    link_wheel_trees(plan, tmp.path())?;
    let mut archives = old.archives.clone();
    archives.extend(new.iter().map(ArchiveRecord::of));
    let mut components: Vec<(String, String)> = old
        .archives
        .iter()
        .map(|a| (a.component.clone(), a.version.clone()))
        .collect();
    components.extend(components_of(&new));
    finish_tree(plan, &components, tmp.path())?;
    let rec = Record {
        from: old.from.clone(),
        profile: old.profile.clone(),
        components: Record {
            components: sel.components.clone(),
            ..old.clone()
        }
        .recorded_components(),
        manifest: old.manifest.clone(),
        archives,
        linked: plan.linked.clone(),
    };
    record::write(tmp.path(), &rec).with_context(|| format!("recording how {name} was made"))?;
    seal::read_only(tmp.path())?;
    let detected = detect::detect(tmp.path(), Origin::Installed).map_err(|e| {
        InstallError::msg(format!(
            "{name} with {} is not a working toolchain: {e}",
            names
        ))
    })?;
    if detected.kind != plan.kind || !plan.version.is_prefix_of(&detected.version) {
        return Err(Hinted::new(format!(
            "{name} with {} would be {} {}, not {} {}",
            names, detected.kind, detected.version, plan.kind, plan.version
        ))
        .hint("the source's metadata is wrong; report it to whoever publishes it")
        .into());
    }
    let built = tmp.keep();
    exchange(&built, &root).with_context(|| format!("putting the new {name} in place"))?;
    // `built` now holds the old tree.
    let _ = crate::dir::remove_all(&built);
    let entry = detect::detect(&root, Origin::Installed)?;
    store.register(vec![(name.clone(), entry)])?;
    Ok(added)
}

/// `to` as a copy of `from` made of hard links (the files are the download cache's, read
/// only), links as they are; without the files gpuenv writes (version.json, the record),
/// which are written anew, and without the links into `venvs`, which are linked anew.
fn link_tree(from: &Path, to: &Path, venvs: &[PathBuf]) -> Result<()> {
    let mut stack = vec![std::path::PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for item in fs_err::read_dir(from.join(&rel))? {
            let item = item?;
            let rel = rel.join(item.file_name());
            if rel == Path::new("version.json") || rel == Path::new(record::RECORD) {
                continue;
            }
            let meta = fs_err::symlink_metadata(item.path())?;
            let dst = to.join(&rel);
            if meta.is_dir() {
                fs_err::create_dir_all(&dst)?;
                stack.push(rel);
            } else if meta.file_type().is_symlink() {
                let target = fs_err::read_link(item.path())?;
                if target.is_absolute() && venvs.iter().any(|v| target.starts_with(v)) {
                    continue;
                }
                std::os::unix::fs::symlink(&target, &dst)
                    .with_context(|| format!("linking {}", dst.display()))?;
            } else if fs_err::hard_link(item.path(), &dst).is_err() {
                fs_err::copy(item.path(), &dst)?;
            }
        }
    }
    Ok(())
}

/// Swaps the trees at `a` and `b` in one step (renameat2 RENAME_EXCHANGE); where the file
/// system cannot, `b` is moved aside first.
fn exchange(a: &Path, b: &Path) -> Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    match renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
            // Still under the temp dir's prefix: a leftover of a killed process is removed.
            let mut aside = a.as_os_str().to_owned();
            aside.push("-aside");
            let aside = std::path::PathBuf::from(aside);
            fs_err::rename(b, &aside)?;
            fs_err::rename(a, b)?;
            fs_err::rename(&aside, a)?;
            Ok(())
        }
        Err(e) => Err(std::io::Error::from(e))
            .with_context(|| format!("exchanging {} and {}", a.display(), b.display())),
    }
}
