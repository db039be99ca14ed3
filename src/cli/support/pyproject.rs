//! The edge of `project::pyproject`: the project's `pyproject.toml`, read as a file gpuenv
//! did not write (a link or another account's file is refused before anything is read), and
//! written only on `gpuenv torch index --write-pyproject`.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::{torch_index, Facts, TorchIndex};
use gpuenv_core::project::owner;
use gpuenv_core::project::pyproject;
use gpuenv_core::resolve::ActiveSet;
use gpuenv_core::toolchain::Kind;
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

/// PyTorch's index for the pinned CUDA toolkit, if PyTorch has one.
pub fn pinned_index(facts: &Facts, active: &ActiveSet) -> Option<&'static TorchIndex> {
    let v = &active.get(Kind::Cuda)?.entry.version;
    torch_index::for_release(facts, (v.major(), v.minor().unwrap_or(0)))
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
pub fn write(facts: &Facts, active: &ActiveSet, cwd: &Path) -> Result<()> {
    let Some(index) = pinned_index(facts, active) else {
        anyhow::bail!(Hinted::new(
            "no PyTorch CUDA index to write: no CUDA toolkit is pinned here, or PyTorch publishes no index for its release"
        )
        .hint("pin a CUDA toolkit PyTorch builds for (`gpuenv torch index --list`)"));
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

/// What `gpuenv check` says of the file: each way it sends torch elsewhere than the
/// pinned toolkit's index. Nothing when there is no file or no pinned index.
pub fn check(facts: &Facts, active: &ActiveSet, cwd: &Path) -> Result<Vec<String>> {
    let Some(index) = pinned_index(facts, active) else {
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
