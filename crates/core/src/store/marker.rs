//! The mark of a gpuenv home, `$GPUENV_HOME/.gpuenv-home`: written the first time gpuenv
//! changes state there, it says whether gpuenv made the directory and which of the names
//! gpuenv uses were there before it (a `~/.local/bin` of the user's). `self uninstall`
//! acts only on a directory with the mark and removes only what gpuenv made.
//!
//! A home from before the mark existed is recognised by its entries: one that holds only
//! names gpuenv makes, its state lock `.lock` among them, was made by gpuenv; any other directory gpuenv has used (`~/.local`,
//! `$HOME`) gets a mark that lists gpuenv's names already there as the user's, so nothing
//! that might be theirs is ever removed.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fsutil;
use crate::store::home::{Home, OWN_ENTRIES};

/// The mark's file name in the home.
pub const FILE: &str = ".gpuenv-home";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Marker {
    /// gpuenv made the directory itself (so it may remove it when empty).
    pub made_home: bool,
    /// Names gpuenv uses that were in the directory before gpuenv first used it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found: Vec<String>,
}

/// The mark of `home`, if it has a readable one of gpuenv's.
pub fn read(home: &Home) -> Option<Marker> {
    let path = home.root.join(FILE);
    let meta = fs_err::symlink_metadata(&path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let text = crate::outside::read_text(&path, crate::outside::Kind::CacheEntry).ok()?;
    toml::from_str(&text).ok()
}

/// Marks `home` if it has no mark yet; `created`: gpuenv has just made the directory.
/// Best effort: a home that cannot be marked is only never removed by `self uninstall`.
pub fn ensure(home: &Home, created: bool) {
    if fs_err::symlink_metadata(home.root.join(FILE)).is_ok() {
        return;
    }
    let marker = if created {
        Marker {
            made_home: true,
            found: Vec::new(),
        }
    } else {
        recognise(&home.root)
    };
    let text = format!(
        "# gpuenv's mark: `gpuenv self uninstall` removes only what gpuenv made here.\n{}",
        toml::to_string(&marker).expect("the mark always serializes")
    );
    let _ = fsutil::write_atomic(&home.root.join(FILE), text.as_bytes());
}

/// The mark an existing directory without one gets: gpuenv's own when every entry is a
/// name gpuenv makes and its state lock is there (a home gpuenv made before marks existed
/// and changed state in), else the user's, listing gpuenv's names already there.
pub fn recognise(root: &Path) -> Marker {
    let names: Vec<String> = fs_err::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != FILE)
                .collect()
        })
        .unwrap_or_default();
    // gpuenv's names, and what a killed edit of its settings left beside them.
    let leftover = crate::user_file::in_place::temp_prefix(&root.join("settings.toml"));
    let own = |n: &String| OWN_ENTRIES.iter().any(|(o, _)| o == n) || n.starts_with(&leftover);
    if names.iter().all(own) && names.iter().any(|n| n == ".lock") {
        return Marker {
            made_home: true,
            found: Vec::new(),
        };
    }
    let mut found: Vec<String> = names.into_iter().filter(own).collect();
    found.sort();
    Marker {
        made_home: false,
        found,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_of_gpuenvs_names_only_is_gpuenvs_and_any_other_keeps_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["toolchains", "settings.toml", "views"] {
            fs_err::create_dir(dir.path().join(n)).unwrap();
        }
        // gpuenv's names alone, but no state lock: a directory of the user's.
        assert!(!recognise(dir.path()).made_home);
        fs_err::write(dir.path().join(".lock"), "").unwrap();
        assert!(recognise(dir.path()).made_home);
        let local = tempfile::tempdir().unwrap();
        for n in ["bin", "share", "lib"] {
            fs_err::create_dir(local.path().join(n)).unwrap();
        }
        let home = Home::new(local.path());
        ensure(&home, false);
        assert_eq!(
            read(&home),
            Some(Marker {
                made_home: false,
                found: vec!["bin".into()]
            })
        );
        // Marked once: a later look changes nothing.
        fs_err::create_dir(local.path().join("cache")).unwrap();
        ensure(&home, false);
        assert_eq!(read(&home).unwrap().found, vec!["bin".to_string()]);
    }
}
