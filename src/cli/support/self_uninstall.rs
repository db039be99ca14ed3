//! `gpuenv self uninstall`: removes what gpuenv made in `$GPUENV_HOME` and its marked lines
//! in the shell start-up files, after saying what it will do and asking. It acts only on a
//! directory that carries gpuenv's mark (`store::marker`) and removes only what gpuenv made:
//! in `bin/` the two binaries gpuenv put there, caches by their `CACHEDIR.TAG`, nothing the
//! directory held before gpuenv first used it, never another account's entry, never a link's
//! target, and the home itself only when gpuenv made it. Toolchains in use are retired as
//! `gpuenv uninstall` retires them.

use std::io::{BufRead as _, Write as _};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::home::Home;
use gpuenv_core::store::home::{OWN_ENTRIES, PROXY_NAME};
use gpuenv_core::store::marker::{self, Marker};
use gpuenv_core::store::retired;
use gpuenv_core::toolchain::registry::{Registry, Source};
use gpuenv_core::ui;
use gpuenv_core::user_file;

mod rc;

pub use rc::{BEGIN, END};

/// The caches gpuenv tags: removed by their tag even in a directory gpuenv did not make.
const TAGGED: &[&str] = &["downloads", "cache"];

enum Step {
    /// Uninstall (or retire, when in use) each toolchain gpuenv installed.
    Toolchains(Vec<String>),
    /// A file or a link of gpuenv's.
    Remove(PathBuf),
    /// A directory of gpuenv's: each entry this account owns (retired trees kept), then the
    /// directory if that empties it.
    Empty(PathBuf),
    EditRc {
        path: PathBuf,
        shell: &'static str,
    },
}

pub fn run(ctx: &Context, yes: bool, keep_toolchains: bool) -> Result<()> {
    let home = ctx.own_home()?;
    let uid = me();
    let mut steps = Vec::new();
    let mut left = Vec::new();
    let mut marked = None;
    match fs_err::symlink_metadata(&home.root) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() || m.uid() != uid => {
            bail!(Hinted::new(format!(
                "{} is not a directory of yours (a link, a file, or another account's): gpuenv did not make it and removes nothing in it",
                home.root.display()
            ))
            .hint("point GPUENV_HOME at the home gpuenv made, or remove it yourself"));
        }
        // An empty directory holds nothing to remove (a run killed between removing the
        // mark and the home leaves one): the start-up files are still looked at.
        Ok(_) if is_empty(&home.root) => {}
        Ok(_) => {
            let Some(mark) = mark_of(&home) else {
                bail!(Hinted::new(format!(
                    "{} carries no gpuenv mark ({}) and holds more than gpuenv's own files: gpuenv cannot tell what it made there, so it removes nothing",
                    home.root.display(),
                    marker::FILE
                ))
                .hint("remove gpuenv's entries (toolchains, views, shims, bin/gpuenv-shim) yourself, or point GPUENV_HOME at the home gpuenv made"));
            };
            plan_home(&home, &mark, keep_toolchains, &mut steps, &mut left)?;
            marked = Some(mark);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    if let Some(user_home) = ctx.home_dir() {
        plan_rc(&user_home, &mut steps, &mut left);
    }

    if steps.is_empty() {
        ui::info(format!(
            "nothing of gpuenv's to remove in {}",
            home.root.display()
        ));
    } else {
        eprintln!("gpuenv self uninstall will:");
        for step in &steps {
            match step {
                Step::Toolchains(names) => eprintln!(
                    "  uninstall {} (retiring any in use, as `gpuenv uninstall` does)",
                    names.join(", ")
                ),
                Step::Remove(p) | Step::Empty(p) => eprintln!("  remove {}", p.display()),
                Step::EditRc { path, .. } => eprintln!(
                    "  remove the lines between `{BEGIN}` and `{END}` from {} (the old file is kept beside it)",
                    path.display()
                ),
            }
        }
        if keep_toolchains {
            eprintln!(
                "  and keep the toolchains, the download cache and the settings that register them"
            );
        }
        if !yes && !confirmed()? {
            ui::info("nothing was removed");
            return Ok(());
        }
        for step in &steps {
            match step {
                Step::Toolchains(names) => {
                    for name in names {
                        if let Err(e) = (super::uninstall::Uninstall { now: false }).run(ctx, name)
                        {
                            ui::warn(format!("{name} stays: {e:#}"));
                        }
                    }
                }
                Step::Remove(p) => gpuenv_install::remove_all(p)
                    .with_context(|| format!("removing {}", p.display()))?,
                Step::Empty(dir) => empty(&home, dir, &mut left)?,
                Step::EditRc { path, shell } => {
                    let home_dir = ctx.home_dir().unwrap_or_default();
                    match rc::edit(path, shell, &home_dir) {
                        Ok(Some(backup)) => ui::info(format!(
                            "removed gpuenv's lines from {} (the old file is {})",
                            path.display(),
                            backup.display()
                        )),
                        Ok(None) => {}
                        Err(e) => left.push(format!(
                            "gpuenv's lines in {} ({})",
                            path.display(),
                            ui::error_one_line(e.as_ref(), super::FIND)
                        )),
                    }
                }
            }
        }
        if let Some(mark) = &marked {
            finish_home(&home, mark, keep_toolchains);
        }
        ui::info(format!("removed gpuenv's state in {}", home.root.display()));
    }
    for l in &left {
        ui::warn(format!("left in place: {l}"));
    }
    let this = super::self_info::detect(&std::env::current_exe()?);
    ui::info(format!(
        "gpuenv itself stays until you run: {}",
        this.remove
    ));
    Ok(())
}

fn me() -> u32 {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

fn is_empty(dir: &Path) -> bool {
    fs_err::read_dir(dir).is_ok_and(|mut rd| rd.next().is_none())
}

/// The mark of the home, or for a home from before marks existed the mark it would have
/// been given: only one that holds gpuenv's names alone counts as gpuenv's.
fn mark_of(home: &Home) -> Option<Marker> {
    marker::read(home).or_else(|| {
        let guess = marker::recognise(&home.root);
        guess.made_home.then_some(guess)
    })
}

fn plan_home(
    home: &Home,
    mark: &Marker,
    keep_toolchains: bool,
    steps: &mut Vec<Step>,
    left: &mut Vec<String>,
) -> Result<()> {
    let uid = me();
    if !keep_toolchains {
        let installed: Vec<String> = Registry::load(home)?
            .toolchains
            .iter()
            .filter(|(_, e)| e.source == Source::Installed)
            .map(|(n, _)| n.to_string())
            .collect();
        if !installed.is_empty() {
            steps.push(Step::Toolchains(installed));
        }
    }
    let mut entries = fs_err::read_dir(&home.root)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == marker::FILE {
            continue;
        }
        let own = OWN_ENTRIES.iter().find(|(n, _)| name == *n);
        let meta = fs_err::symlink_metadata(&path)?;
        // What a killed edit of the settings left (the editor's journal and temp files).
        let leftover = name.starts_with(&user_file::in_place::temp_prefix(&home.settings()));
        if leftover && meta.is_file() && meta.uid() == uid && !keep_toolchains {
            steps.push(Step::Remove(path));
            continue;
        }
        match own {
            None => left.push(format!("{} (not gpuenv's)", path.display())),
            Some((_, true)) if keep_toolchains => {}
            Some((n, _)) if meta.file_type().is_symlink() || meta.uid() != uid => {
                left.push(format!(
                    "{} (gpuenv makes `{n}` itself; this one is {})",
                    path.display(),
                    if meta.file_type().is_symlink() {
                        "a link"
                    } else {
                        "another account's"
                    }
                ))
            }
            Some(_) if name == "bin" => plan_bin(&path, mark, steps, left),
            Some(_) if mark.found.contains(&name) && !tagged(&path, &name) => left.push(format!(
                "{} (it was there before gpuenv first used {})",
                path.display(),
                home.root.display()
            )),
            Some(_) if meta.is_dir() => steps.push(Step::Empty(path)),
            Some(_) => steps.push(Step::Remove(path)),
        }
    }
    Ok(())
}

/// A cache of gpuenv's: its `CACHEDIR.TAG` names gpuenv.
fn tagged(dir: &Path, name: &str) -> bool {
    TAGGED.contains(&name)
        && gpuenv_core::outside::read_head(
            &dir.join("CACHEDIR.TAG"),
            gpuenv_core::outside::Kind::CacheEntry,
        )
        .is_some_and(|t| {
            t.starts_with("Signature: 8a477f597d28d172789f06886806bc55") && t.contains("gpuenv")
        })
}

/// In `bin/` only the proxy gpuenv put there and its link to gpuenv; never the copy of
/// gpuenv that is running (a `pip install --user` one when the home is `~/.local`).
fn plan_bin(bin: &Path, mark: &Marker, steps: &mut Vec<Step>, left: &mut Vec<String>) {
    let running = std::env::current_exe()
        .ok()
        .and_then(|e| fs_err::canonicalize(e).ok());
    let running_dir = running.as_deref().and_then(Path::parent);
    for name in [PROXY_NAME, "gpuenv"] {
        let p = bin.join(name);
        let Ok(m) = fs_err::symlink_metadata(&p) else {
            continue;
        };
        let real_dir = fs_err::canonicalize(bin).ok();
        if real_dir.as_deref() == running_dir && running_dir.is_some() {
            left.push(format!("{} (gpuenv itself)", p.display()));
            continue;
        }
        // gpuenv puts the proxy as a file and gpuenv as a link to itself; anything else there
        // under these names is not what it put.
        let ours = match name {
            "gpuenv" => m.file_type().is_symlink(),
            _ => m.is_file() && m.uid() == me(),
        };
        match ours {
            true => steps.push(Step::Remove(p)),
            false => left.push(format!("{} (not what gpuenv put there)", p.display())),
        }
    }
    if !mark.found.iter().any(|f| f == "bin") {
        // Removed after the binaries only if that leaves it empty.
        steps.push(Step::Empty(bin.to_path_buf()));
    }
}

/// Removes each entry of `dir` this account owns (a retired toolchain's tree, record and
/// view stay), then `dir` if that emptied it; another account's entries stay and are named.
fn empty(home: &Home, dir: &Path, left: &mut Vec<String>) -> Result<()> {
    let kept: Vec<PathBuf> = retired::names(home)
        .iter()
        .flat_map(|n| {
            [
                retired::tree(home, n),
                retired::path(home, n),
                retired::view(home, n),
            ]
        })
        .collect();
    let is_bin = dir.file_name().is_some_and(|n| n == "bin");
    if let Ok(entries) = fs_err::read_dir(dir) {
        for e in entries.flatten() {
            let path = e.path();
            let Ok(m) = fs_err::symlink_metadata(&path) else {
                continue;
            };
            if is_bin || kept.contains(&path) {
                continue;
            }
            if m.uid() != me() {
                left.push(format!("{} (another account's)", path.display()));
                continue;
            }
            gpuenv_install::remove_all(&path)
                .with_context(|| format!("removing {}", path.display()))?;
        }
    }
    let _ = fs_err::remove_dir(dir);
    Ok(())
}

/// The mark goes last; the home goes too when gpuenv made it and nothing else is left.
fn finish_home(home: &Home, mark: &Marker, keep_toolchains: bool) {
    if keep_toolchains {
        return;
    }
    let others = fs_err::read_dir(&home.root)
        .map(|rd| rd.flatten().any(|e| e.file_name() != marker::FILE))
        .unwrap_or(true);
    if others && !mark.made_home {
        // The directory was the user's: the mark goes with gpuenv's files.
        let _ = fs_err::remove_file(home.root.join(marker::FILE));
    }
    if !others {
        let _ = fs_err::remove_file(home.root.join(marker::FILE));
        if mark.made_home {
            let _ = fs_err::remove_dir(&home.root);
        }
    }
}

fn plan_rc(user_home: &Path, steps: &mut Vec<Step>, left: &mut Vec<String>) {
    for (rel, shell) in rc::RC_FILES {
        let path = user_home.join(rel);
        let Ok(text) = gpuenv_core::outside::read_text(&path, gpuenv_core::outside::Kind::ShellRc)
        else {
            continue;
        };
        if rc::unmarked_hook(&text) {
            left.push(format!(
                "a gpuenv hook line in {} outside the `{BEGIN}` marks (gpuenv removes only its marked lines; remove it yourself)",
                path.display()
            ));
        }
        // A journal beside the file is an edit a kill cut short after the new text landed:
        // the edit's open finishes it and drops the journal, even with no block left.
        let journal = gpuenv_core::user_file::in_place::journal_of(&path);
        if rc::without_blocks(&text, "").1 > 0 || fs_err::symlink_metadata(journal).is_ok() {
            steps.push(Step::EditRc { path, shell });
        }
    }
}

/// Asks on stderr, reads the answer from stdin: only `y`/`yes` goes on.
fn confirmed() -> Result<bool> {
    eprint!("go on? [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
