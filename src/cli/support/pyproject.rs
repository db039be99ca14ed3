//! The edge of `project::pyproject`: the project's `pyproject.toml`, read as a file gpuenv
//! did not write (a link or another account's file is refused before anything is read), and
//! written only on `gpuenv torch index --write-pyproject`.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::torch_choose::{self, NoIndex};
use gpuenv_core::facts::{torch_index, Facts, Platform};
use gpuenv_core::plan::torch_pick;
use gpuenv_core::project::owner;
use gpuenv_core::project::pyproject;
use gpuenv_core::resolve::ActiveSet;
use gpuenv_core::user_file::{self, UserFile};
use gpuenv_core::{fsutil, outside, ui};

/// `pyproject.toml` beside the toolchain file in effect, else in `cwd`.
pub fn path(active: &ActiveSet, cwd: &Path) -> PathBuf {
    active
        .project
        .as_ref()
        .and_then(|f| f.path.parent())
        .unwrap_or(cwd)
        .join("pyproject.toml")
}

/// PyTorch's index for the pinned toolkit on `platform`, as the one chooser picks it for the
/// project.
pub fn pinned_index(
    facts: &Facts,
    active: &ActiveSet,
    platform: Platform,
) -> Result<torch_index::Chosen, NoIndex> {
    torch_pick::for_project(facts, active, platform).map(|p| p.index)
}

/// The file's text, or why it is not read: missing (`Ok(None)`), a link, another
/// account's, too large, not text.
fn read(path: &Path) -> Result<Option<String>> {
    let shown = path.display();
    let meta = match fs_err::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => anyhow::bail!(Hinted::new(format!(
            "cannot read {shown}: {}",
            fsutil::io_reason(&e)
        ))),
    };
    if meta.file_type().is_symlink() {
        anyhow::bail!(Hinted::new(format!(
            "{shown} is a symbolic link: gpuenv reads and writes only a pyproject.toml that is the file itself"
        ))
        .hint("replace the link with the file, or run in the directory that holds it"));
    }
    if meta.uid() != owner::me() {
        anyhow::bail!(Hinted::new(format!(
            "{shown} belongs to {}, not to you: gpuenv does not read or write another account's project file",
            gpuenv_core::passwd::describe_uid(meta.uid())
        ))
        .hint("run it as the file's owner, or copy the project to a directory of your own"));
    }
    let text = outside::read_text(path, outside::Kind::Pyproject)?;
    Ok(Some(text))
}

/// `gpuenv torch index --write-pyproject`: the pinned toolkit's index as an explicit
/// `[[tool.uv.index]]` with torch, torchvision and torchaudio routed to it.
pub fn write(facts: &Facts, active: &ActiveSet, cwd: &Path, platform: Platform) -> Result<()> {
    if torch_pick::toolkit(active).is_none() {
        anyhow::bail!(
            Hinted::new("no PyTorch index to write: no toolkit is pinned here")
                .hint("pin a toolkit PyTorch builds for (`gpuenv torch index --list`)")
        );
    }
    let index = match pinned_index(facts, active, platform) {
        Ok(index) => index,
        Err(why) => {
            use gpuenv_core::diagnostic::Diagnostic as _;
            let mut e = Hinted::new(format!("no PyTorch index to write: {why}"));
            for h in why.hints() {
                e = e.hint(h);
            }
            anyhow::bail!(e);
        }
    };
    let path = path(active, cwd);
    let shown = path.display();
    // Refused as `check` refuses it (a link, another account's file) before the edit.
    if read(&path)?.is_none() {
        anyhow::bail!(
            Hinted::new(format!("there is no {shown} to write the index into"))
                .hint("`uv init` makes one; gpuenv never creates a project's pyproject.toml")
        );
    }
    let url = index.url();
    let within = path.parent().unwrap_or(cwd).to_path_buf();
    let outcome = user_file::edit(
        UserFile {
            path: &path,
            within: &within,
            scope: "the project",
            kind: outside::Kind::Pyproject,
        },
        user_file::Check::TOML,
        |text: &str| -> Result<Option<String>> {
            let new = pyproject::write_index(text, &url).map_err(|e| {
                Hinted::new(format!("{shown} is not valid TOML: {e}"))
                    .hint("fix the file (uv cannot read it either); nothing was written")
            })?;
            Ok(Some(new))
        },
    )?;
    if outcome.edited == user_file::Edited::Unchanged {
        ui::info(format!("{shown} already sends torch to {url}"));
        return Ok(());
    }
    ui::info(format!(
        "{shown}: torch, torchvision and torchaudio now come from the index `{}` ({url}); run `uv lock` to re-resolve",
        pyproject::INDEX_NAME
    ));
    Ok(())
}

/// After `pin` moved the project's CUDA to `release` (major, minor): the index gpuenv wrote
/// into `pyproject.toml` ([`pyproject::written_index`]) follows it, through the editor, and
/// the one command that makes `uv lock --check` pass again is said. Nothing for a file
/// without that index. Never fails the pin: what cannot be done is a warning naming the fix.
pub fn follow_pin(
    facts: &Facts,
    active: &ActiveSet,
    cwd: &Path,
    release: (u64, u64),
    platform: Platform,
) {
    let path = path(active, cwd);
    let shown = path.display();
    let text = match read(&path) {
        Ok(Some(text)) => text,
        Ok(None) => return,
        Err(e) => return ui::warn(format!("{e:#}")),
    };
    let Ok(Some(old)) = pyproject::written_index(&text) else {
        return;
    };
    // The one chooser, as `--write-pyproject` asks it, with the toolkit the pin moved to.
    let machine = torch_index::Machine {
        toolkit: Some(torch_index::Toolkit::Cuda(release)),
        ..torch_pick::project_machine(active, torch_pick::pyproject_torch(active), platform)
    };
    let index = match torch_choose::choose(facts, &machine) {
        Ok(pick) => pick.index,
        Err(why) => {
            return ui::warn_with_hints(
                format!(
                    "{shown} still sends torch to {old}, and no PyTorch index fits CUDA {}.{} here ({why}): `uv sync` keeps installing a torch built for the old toolkit",
                    release.0, release.1
                ),
                ["pin a CUDA release PyTorch builds for (`gpuenv torch index --list`), or remove the `pytorch` index from the file".to_string()],
            )
        }
    };
    let url = index.url();
    if old.trim_end_matches('/') == url {
        return;
    }
    let within = path.parent().unwrap_or(cwd).to_path_buf();
    let edited = user_file::edit(
        UserFile {
            path: &path,
            within: &within,
            scope: "the project",
            kind: outside::Kind::Pyproject,
        },
        user_file::Check::TOML,
        |text: &str| -> Result<Option<String>> {
            Ok(Some(pyproject::write_index(text, &url).map_err(|e| {
                Hinted::new(format!("{shown} is not valid TOML: {e}"))
            })?))
        },
    );
    match edited {
        Ok(_) => ui::info(format!(
            "{shown}: the index `{}` gpuenv wrote follows the pin, {old} -> {url}; run `uv lock` (then `uv lock --check` and a colleague's `uv sync --locked` pass)",
            pyproject::INDEX_NAME
        )),
        Err(e) => ui::warn_with_hints(
            format!("{shown} still sends torch to {old}, not the new pin's {url}: {e:#}"),
            [format!("`gpuenv torch index --write-pyproject` points it at {url}, then `uv lock`")],
        ),
    }
}

/// What `gpuenv check` says of the file: each way it sends torch elsewhere than the
/// pinned toolkit's index. Nothing when there is no file or no pinned index.
pub fn check(
    facts: &Facts,
    active: &ActiveSet,
    cwd: &Path,
    platform: Platform,
) -> Result<Vec<String>> {
    let Ok(index) = pinned_index(facts, active, platform) else {
        return Ok(Vec::new());
    };
    let path = path(active, cwd);
    let Some(text) = read(&path)? else {
        return Ok(Vec::new());
    };
    pyproject::disagreements(&text, &index.url()).map_err(|e| {
        Hinted::new(format!("{} is not valid TOML: {e}", path.display()))
            .hint("fix the file (uv cannot read it either)")
            .into()
    })
}
