//! What an installed toolchain was made of (`<root>/.gpuenv-install.toml`, written by the
//! install into the tree it assembles, before the tree is sealed and renamed into place), and
//! a digest of a tree's file list: what `gpuenv lock` records and `--locked` compares.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::source::components::recorded_component;
use crate::torch::Linked;
use crate::{Plan, Profile, Selection};
use gpuenv_core::install_hint::{self, Came};
use gpuenv_core::named::Named;
use gpuenv_core::quote;
use gpuenv_core::toolchain::Spec;
use gpuenv_core::{fsutil, outside};
use reqwest::Url;

/// The record's file name inside an installed root.
pub(crate) const RECORD: &str = ".gpuenv-install.toml";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The source that planned it: `nvidia`, `pypi` or `manifest`.
    pub from: String,
    pub profile: String,
    /// The components asked for beyond the profile (`--component`).
    #[serde(default)]
    pub components: Vec<String>,
    /// The gpuenv manifest (URL) of one `from = "manifest"`, for the command that installs
    /// it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    #[serde(default, rename = "archive")]
    pub archives: Vec<ArchiveRecord>,
    /// The venv wheels it links to (`gpuenv install torch`); none for a tree of archives
    /// alone, whose record stays as older gpuenvs wrote and read it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub linked: Vec<Linked>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveRecord {
    pub component: String,
    pub version: String,
    pub url: String,
    pub sha256: String,
}

impl ArchiveRecord {
    pub fn of(a: &crate::Archive) -> ArchiveRecord {
        ArchiveRecord {
            component: a.component.clone(),
            version: a.version.clone(),
            url: a.url.to_string(),
            sha256: a.sha256.to_string(),
        }
    }
}

impl Record {
    pub fn of(plan: &Plan, sel: &Selection) -> Record {
        Record {
            from: plan.source.to_string(),
            profile: sel.profile.name().to_string(),
            components: sel
                .components
                .iter()
                .map(|c| recorded_component(c))
                .collect(),
            manifest: plan.manifest.as_ref().map(ToString::to_string),
            archives: plan.archives.iter().map(ArchiveRecord::of).collect(),
            linked: plan.linked.clone(),
        }
    }

    /// What the tree is made of: each archive's component and each linked wheel's, under
    /// their recorded names, sorted, without repeats.
    pub fn made_of(&self) -> Vec<String> {
        let archives = self.archives.iter().map(|a| a.component.as_str());
        let wheels = self.linked.iter().flat_map(|l| &l.wheels);
        let mut out: Vec<String> = archives
            .chain(wheels.map(|w| w.component.as_str()))
            .map(recorded_component)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The manifest it came from as a shell word for a hint: a local file as its path, a
    /// URL as it is, quoted where a shell would read it otherwise; `None` when the record
    /// names none gpuenv could have written.
    pub fn manifest_word(&self) -> Option<String> {
        let url = Url::parse(self.manifest.as_deref()?).ok()?;
        let text = match url.scheme() {
            "file" => url.to_file_path().ok()?.to_str()?.to_string(),
            "http" | "https" => url.to_string(),
            _ => return None,
        };
        Some(quote::word(&text))
    }

    /// The selection to plan it again with.
    pub fn selection(&self) -> Selection {
        Selection {
            profile: Profile::ALL
                .iter()
                .copied()
                .find(|p| p.name() == self.profile)
                .unwrap_or_default(),
            components: self.recorded_components(),
        }
    }

    /// The components asked for, each under its recorded name (a record or lock written
    /// before names were normalised may say `cublas` or `cuda_runtime`), without repeats.
    pub fn recorded_components(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.components.iter().map(|c| recorded_component(c)) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }
}

pub(crate) fn write(root: &Path, record: &Record) -> crate::Result<()> {
    let text = toml::to_string(record)?;
    fsutil::write_atomic(&root.join(RECORD), text.as_bytes())?;
    Ok(())
}

/// The record of an installed root, if it has a readable one (toolchains installed before
/// records existed have none). What it says is validated where it is used (the lock).
pub fn read(root: &Path) -> Option<Record> {
    let bytes = outside::read(&root.join(RECORD), outside::Kind::InstallRecord).ok()?;
    toml::from_str(std::str::from_utf8(&bytes).ok()?).ok()
}

/// The command that installs `name` again once it is uninstalled, by `rec`, its record
/// (`None`: installed before records): with the manifest it came from, if it did.
pub fn reinstall_command(name: &Spec, rec: Option<&Record>) -> String {
    let word = rec.and_then(Record::manifest_word);
    let came = match rec {
        Some(r) if r.from == "manifest" => Came::Manifest(word.as_deref()),
        _ => Came::Elsewhere,
    };
    install_hint::reinstall_command(name, came)
}

/// Where the record of an uninstalled toolchain is kept (in `toolchains/`, beside its lock),
/// so that installing it again brings the same profile and components, also `--offline`
/// from the download cache.
pub(crate) fn kept_path(toolchains: &Path, name: &str) -> std::path::PathBuf {
    toolchains.join(format!(".{name}.uninstalled.toml"))
}

/// Keeps `root`'s record for a later reinstall of `name` (nothing when it has none). Not
/// one linked into a venv: `install torch` makes that again from whichever venv is active,
/// and a kept one would hand its profile to a plain `gpuenv install cuda-13.0`.
pub fn keep(root: &Path, toolchains: &Path, name: &str) -> crate::Result<()> {
    if let Some(rec) = read(root).filter(|r| r.linked.is_empty()) {
        let text = toml::to_string(&rec)?;
        fsutil::write_atomic(&kept_path(toolchains, name), text.as_bytes())?;
    }
    Ok(())
}

/// The record kept when `name` was uninstalled, if any.
pub(crate) fn kept(toolchains: &Path, name: &str) -> Option<Record> {
    let path = kept_path(toolchains, name);
    // gpuenv writes it as a file: a link in its place is not gpuenv's, and is not followed.
    if fs_err::symlink_metadata(&path)
        .ok()?
        .file_type()
        .is_symlink()
    {
        return None;
    }
    let bytes = outside::read(&path, outside::Kind::InstallRecord).ok()?;
    toml::from_str(std::str::from_utf8(&bytes).ok()?).ok()
}

/// The kept records of toolchains `spec` selects, highest version first.
pub fn kept_matching(
    toolchains: &Path,
    spec: &gpuenv_core::toolchain::Spec,
) -> Vec<(String, Record)> {
    let Ok(rd) = fs_err::read_dir(toolchains) else {
        return Vec::new();
    };
    let mut found: Vec<(gpuenv_core::toolchain::Spec, String, Record)> = rd
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let name = file.strip_prefix('.')?.strip_suffix(".uninstalled.toml")?;
            let this: gpuenv_core::toolchain::Spec = name.parse().ok()?;
            (spec.matches(&this)).then_some(())?;
            Some((this, name.to_string(), kept(toolchains, name)?))
        })
        .collect();
    found.sort_by(|a, b| b.0.version.cmp(&a.0.version));
    found.into_iter().map(|(_, n, r)| (n, r)).collect()
}

/// Drops the kept record of `name` once it is installed again.
pub(crate) fn forget_kept(toolchains: &Path, name: &str) {
    let _ = fs_err::remove_file(kept_path(toolchains, name));
}

/// The sha256 of a tree's file list: every entry's path, type, and for a file its size and
/// executable bit, for a link its target; links are not followed and the record is left out
/// (the same archives from another mirror make the same tree). Contents are not read: an
/// installed tree's come from archives checked by sha256, and a linked tree may be large.
pub fn files_digest(root: &Path) -> std::io::Result<String> {
    digest_of(root, &[])
}

/// [`files_digest`] of an installed tree with its record: a link into a venv's wheel tree
/// the record names (`gpuenv install torch`), or into the `nvidia/` beside it (NCCL's
/// wheel), counts by its path inside, so the toolkit a teammate makes from their own venv
/// of the same wheels is the locked one.
pub(crate) fn tree_digest(root: &Path, rec: Option<&Record>) -> std::io::Result<String> {
    let trees: Vec<&Path> = rec
        .into_iter()
        .flat_map(|r| &r.linked)
        .map(|l| match l.tree.parent() {
            Some(nvidia) if nvidia.file_name().is_some_and(|n| n == "nvidia") => nvidia,
            _ => l.tree.as_path(),
        })
        .collect();
    digest_of(root, &trees)
}

fn digest_of(root: &Path, linked: &[&Path]) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut stack = vec![root.to_path_buf()];
    let mut entries = Vec::new();
    while let Some(dir) = stack.pop() {
        for e in fs_err::read_dir(&dir)? {
            let e = e?;
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            if rel.as_os_str() == RECORD {
                continue;
            }
            let meta = fs_err::symlink_metadata(&path)?;
            let line = if meta.is_dir() {
                stack.push(path.clone());
                b"d".to_vec()
            } else if meta.file_type().is_symlink() {
                let target = fs_err::read_link(&path)?;
                let mut l = b"l ".to_vec();
                match linked.iter().find_map(|t| target.strip_prefix(t).ok()) {
                    Some(inside) => {
                        l.extend_from_slice(b"<linked>/");
                        l.extend_from_slice(inside.as_os_str().as_bytes());
                    }
                    None => l.extend_from_slice(target.as_os_str().as_bytes()),
                }
                l
            } else {
                let exec = meta.permissions().mode() & 0o111 != 0;
                format!("f {} {}", meta.len(), if exec { "x" } else { "-" }).into_bytes()
            };
            entries.push((rel, line));
        }
    }
    entries.sort();
    for (rel, line) in entries {
        hasher.update(rel.as_os_str().as_bytes());
        hasher.update([0]);
        hasher.update(&line);
        hasher.update([b'\n']);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reinstall_hint_names_the_recorded_manifest_as_one_shell_word() {
        let rec = |manifest: Option<&str>| Record {
            from: "manifest".into(),
            profile: "default".into(),
            components: Vec::new(),
            manifest: manifest.map(String::from),
            archives: Vec::new(),
            linked: Vec::new(),
        };
        let rocm: Spec = "rocm-6.2.4".parse().unwrap();
        assert_eq!(
            reinstall_command(&rocm, Some(&rec(Some("file:///srv/site%20m/t.toml")))),
            "`gpuenv install rocm-6.2.4 --manifest '/srv/site m/t.toml'`"
        );
        assert_eq!(
            reinstall_command(&rocm, Some(&rec(Some("https://h.example/t.toml")))),
            "`gpuenv install rocm-6.2.4 --manifest https://h.example/t.toml`"
        );
        // What no install of gpuenv's wrote is not shown as a command to paste.
        for odd in [None, Some("$(touch x)"), Some("ftp://h/t.toml")] {
            assert!(
                reinstall_command(&rocm, Some(&rec(odd)))
                    .starts_with("`gpuenv install rocm-6.2.4 --manifest <path|url>`"),
                "{odd:?}"
            );
        }
        let nvidia = Record {
            from: "nvidia".into(),
            ..rec(None)
        };
        let cuda: Spec = "cuda-12.4.1".parse().unwrap();
        assert_eq!(
            reinstall_command(&cuda, Some(&nvidia)),
            "`gpuenv install cuda-12.4.1`"
        );
        assert_eq!(
            reinstall_command(&cuda, None),
            "`gpuenv install cuda-12.4.1`"
        );
    }

    #[test]
    fn the_digest_sees_names_sizes_modes_and_links_but_not_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs_err::create_dir_all(root.join("bin")).unwrap();
        fs_err::write(root.join("bin/nvcc"), "x").unwrap();
        let first = files_digest(root).unwrap();
        fs_err::write(root.join(RECORD), "from = \"nvidia\"\n").unwrap();
        assert_eq!(files_digest(root).unwrap(), first);
        fs_err::write(root.join("bin/nvcc"), "xy").unwrap();
        let bigger = files_digest(root).unwrap();
        assert_ne!(bigger, first);
        fs_err::set_permissions(
            root.join("bin/nvcc"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert_ne!(files_digest(root).unwrap(), bigger);
        std::os::unix::fs::symlink("nvcc", root.join("bin/cc")).unwrap();
        assert_eq!(files_digest(root).unwrap().len(), 64);
    }

    #[test]
    fn links_into_the_recorded_venv_tree_count_by_their_path_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let record = |tree: &str| Record {
            from: "pypi".into(),
            profile: "minimal".into(),
            components: Vec::new(),
            manifest: None,
            archives: Vec::new(),
            linked: vec![Linked {
                tree: dir.path().join(tree),
                wheels: Vec::new(),
            }],
        };
        let toolkit = |name: &str, tree: &str| {
            let root = dir.path().join(name);
            fs_err::create_dir_all(root.join("include")).unwrap();
            let tree = dir.path().join(tree);
            let cudart = tree.join("include/cuda_runtime.h");
            std::os::unix::fs::symlink(cudart, root.join("include/cuda_runtime.h")).unwrap();
            // NCCL's wheel beside the tree.
            let nccl = tree.parent().unwrap().join("nccl/include/nccl.h");
            std::os::unix::fs::symlink(nccl, root.join("include/nccl.h")).unwrap();
            tree_digest(&root, Some(&record(tree.to_str().unwrap()))).unwrap()
        };
        // Mine and a teammate's, each linked into their own venv.
        assert_eq!(
            toolkit("a", "venv/nvidia/cu13"),
            toolkit("b", "other/venv/nvidia/cu13")
        );
        // Without the record, the link's whole target counts.
        assert_ne!(
            files_digest(&dir.path().join("a")).unwrap(),
            files_digest(&dir.path().join("b")).unwrap()
        );
    }
}
