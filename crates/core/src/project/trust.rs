//! Trust: nothing in a toolchain file runs, relaxes the guard or sets a variable before the
//! user said so. An untrusted file selects (pins, arch lists); `gpuenv trust` records its
//! path and the sha256 of its bytes, so an edited file needs trusting again. The hash is
//! the one of the bytes that were parsed (`ProjectFile::sha256`), computed only for a file
//! that sets something only a trusted file may: the file is never read a second time.
//! Whose a file is comes first ([`crate::project::owner`]): someone else's is not applied
//! at all unless its directory is accepted (`gpuenv trust --safe-directory`).

use std::path::{Path, PathBuf};

use crate::project::{self, Foreign, ProjectError, ProjectFile};
use crate::store::toolchain::registry::{Registry, Trusted};
use crate::ui::shell_word;

pub fn is_trusted(registry: &Registry, path: &Path, sha256: &str) -> bool {
    registry
        .trusted
        .iter()
        .any(|t| t.path == path && t.sha256 == sha256)
}

/// Marks `file` trusted when `gpuenv trust` recorded exactly its bytes. Hashes only a file
/// that needs trust: the proxy settles a file on every compile.
pub fn settle(registry: &Registry, file: &mut ProjectFile) {
    if file.needs_trust() {
        file.set_trusted(is_trusted(registry, &file.path, &file.sha256()));
    }
}

/// Whether the user trusted exactly these bytes, also for a file that needs no trust to
/// apply (an automatic install acts only on a trusted file's pins).
pub fn trusted_as_is(registry: &Registry, file: &ProjectFile) -> bool {
    file.is_trusted() || is_trusted(registry, &file.path, &file.sha256())
}

/// The toolchain file in effect for a directory, and the nearer ones passed over as
/// someone else's.
#[derive(Debug, Default)]
pub struct InEffect {
    pub file: Option<ProjectFile>,
    pub passed_over: Vec<Foreign>,
}

/// The toolchain file this user applies at `dir`, loaded, with its trust settled. `mine`
/// is the user's own registry (never an upstream's: trust is the user's to give).
pub fn in_effect(dir: &Path, mine: &Registry) -> Result<InEffect, ProjectError> {
    let here = project::find(dir, &mine.safe_directories)?;
    let file = match here.path {
        Some(path) => {
            let mut file = project::load(&path)?;
            settle(mine, &mut file);
            Some(file)
        }
        None => None,
    };
    Ok(InEffect {
        file,
        passed_over: here.passed_over,
    })
}

/// One line for a file whose keys are held back until it is trusted (as it is now), naming
/// the keys, the file and the command; `None` when nothing is held back.
pub fn held_back_notice(file: Option<&ProjectFile>) -> Option<String> {
    let file = file?;
    let keys = file.held_back();
    let (last, rest) = keys.split_last()?;
    let named = if rest.is_empty() {
        last.to_string()
    } else {
        format!("{} and {last}", rest.join(", "))
    };
    let verb = if rest.is_empty() { "is" } else { "are" };
    let path = crate::ui::printable(&file.path.to_string_lossy()).into_owned();
    Some(format!(
        "{path} sets {named}, which {verb} not applied until you trust the file: gpuenv trust {}",
        shell_word(&file.path)
    ))
}

/// Every notice about the file in effect: each file passed over, then what is held back.
pub fn notices(file: Option<&ProjectFile>, passed_over: &[Foreign]) -> Vec<String> {
    passed_over
        .iter()
        .map(ToString::to_string)
        .chain(held_back_notice(file))
        .collect()
}

/// Records the file as parsed, replacing an older record of the same path.
pub fn trust(registry: &mut Registry, file: &ProjectFile) {
    registry.trusted.retain(|t| t.path != file.path);
    registry.trusted.push(Trusted {
        path: file.path.clone(),
        sha256: file.sha256(),
    });
}

/// Accepts the toolchain files of `dir` whoever owns them; `false` if it already was.
pub fn accept_directory(registry: &mut Registry, dir: PathBuf) -> bool {
    if registry.safe_directories.contains(&dir) {
        return false;
    }
    registry.safe_directories.push(dir);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_names_each_held_back_key_the_file_and_the_command() {
        let text = "[toolchain]\nhost-compiler = \"./evil.sh\"\n[env]\nA = \"1\"\n";
        let path = Path::new("/work/my proj/gpuenv.toml");
        let mut file = project::parse(path, text).unwrap();
        assert_eq!(
            held_back_notice(Some(&file)).unwrap(),
            "/work/my proj/gpuenv.toml sets host-compiler and [env], which are not applied until you trust the file: gpuenv trust '/work/my proj/gpuenv.toml'"
        );
        let mut registry = Registry::default();
        trust(&mut registry, &file);
        settle(&registry, &mut file);
        assert_eq!(held_back_notice(Some(&file)), None);
        // Edited, it is held back again.
        let mut edited = project::parse(path, &text.replace("evil", "good")).unwrap();
        settle(&registry, &mut edited);
        assert!(held_back_notice(Some(&edited)).is_some());
    }

    #[test]
    fn a_file_that_only_selects_is_never_hashed_to_apply() {
        let file = project::parse(
            Path::new("/p/gpuenv.toml"),
            "[toolchain]\ncuda = \"12.4\"\n",
        )
        .unwrap();
        assert!(!file.needs_trust());
        assert_eq!(held_back_notice(Some(&file)), None);
        let registry = Registry::default();
        assert!(!trusted_as_is(&registry, &file));
    }
}
