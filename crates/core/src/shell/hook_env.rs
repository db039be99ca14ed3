//! What the prompt hook does: move the shell from its current environment to the one
//! wanted for the current directory, recording what it changed (in one variable) so that
//! the next move first puts back exactly what was there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use crate::env::{path_list, Applied, Lookup, PATH_LISTS};
use crate::project::FILE_NAMES;

/// The variable that holds the state between prompts.
pub const STATE_VAR: &str = "__GPUENV_STATE";

/// Everything a prompt's result depends on; when it is unchanged the hook does nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub cwd: PathBuf,
    /// The variables the result depends on, by name (unset and empty are both `None`).
    pub vars: Vec<(String, Option<String>)>,
    /// The nearest toolchain file.
    pub file: Option<(PathBuf, Stamp)>,
    /// The registry's settings file (installs, links, default, trust): `None` when absent.
    pub settings: (PathBuf, Option<Stamp>),
    /// Other files the last result was computed from (the torch a `"torch"` pin read).
    pub extra: Vec<(PathBuf, Option<Stamp>)>,
}

/// A file's modification time and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub mtime_ns: u128,
    pub size: u64,
}

pub fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime_ns = meta
        .modified()
        .ok()?
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some(Stamp {
        mtime_ns,
        size: meta.len(),
    })
}

impl Fingerprint {
    /// A few `stat` calls: the directory and its ancestors for a toolchain file, the
    /// settings file, and the `extra` files. No file is read.
    pub fn take(
        cwd: &Path,
        vars: Vec<(String, Option<String>)>,
        settings: &Path,
        extra: &[PathBuf],
    ) -> Fingerprint {
        let file = cwd.ancestors().find_map(|d| {
            FILE_NAMES.iter().find_map(|n| {
                let p = d.join(n);
                stamp(&p).map(|s| (p, s))
            })
        });
        let mut fp = Fingerprint {
            cwd: cwd.to_path_buf(),
            vars,
            file,
            settings: (settings.to_path_buf(), stamp(settings)),
            extra: Vec::new(),
        };
        fp.watch(extra);
        fp
    }

    /// Records `extra` as files the result depends on, replacing the previous ones.
    pub fn watch(&mut self, extra: &[PathBuf]) {
        self.extra = extra.iter().map(|p| (p.clone(), stamp(p))).collect();
    }

    /// Every file it watched, with its stamp (`None`: it did not exist).
    pub fn files(&self) -> impl Iterator<Item = (&Path, Option<Stamp>)> {
        self.file
            .iter()
            .map(|(p, s)| (p.as_path(), Some(*s)))
            .chain(std::iter::once((
                self.settings.0.as_path(),
                self.settings.1,
            )))
            .chain(self.extra.iter().map(|(p, s)| (p.as_path(), *s)))
    }
}

/// What the hook set, and what was there before it, per variable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub fp: Fingerprint,
    pub vars: BTreeMap<String, Saved>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub before: Option<String>,
    pub after: Option<String>,
}

impl State {
    pub fn decode(text: &str) -> Option<State> {
        serde_json::from_str(text).ok()
    }

    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("the hook state always serializes")
    }

    /// The values the shell would have without the hook's changes. A variable the user
    /// changed since is theirs: a scalar is kept as they set it; in a path list only the
    /// entries the hook added are taken out and the ones it removed put back.
    pub fn reverted(
        &self,
        current: &dyn Fn(&str) -> Option<String>,
    ) -> BTreeMap<String, Option<String>> {
        self.vars
            .iter()
            .map(|(k, saved)| {
                let now = current(k);
                let value = if now == saved.after {
                    saved.before.clone()
                } else if PATH_LISTS.contains(&k.as_str()) {
                    Some(revert_list(now.as_deref(), saved))
                } else {
                    now
                };
                (k.clone(), value)
            })
            .collect()
    }
}

fn revert_list(now: Option<&str>, saved: &Saved) -> String {
    let before = path_list::split(saved.before.as_deref());
    let after = path_list::split(saved.after.as_deref());
    let mut list: Vec<String> = path_list::split(now)
        .into_iter()
        .filter(|e| before.contains(e) || !after.contains(e))
        .collect();
    // Each removed entry goes back right after the entry it followed before.
    for (i, e) in before.iter().enumerate() {
        if !after.contains(e) && !list.contains(e) {
            let at = match i
                .checked_sub(1)
                .and_then(|p| list.iter().position(|x| *x == before[p]))
            {
                Some(pos) => pos + 1,
                None => 0,
            };
            list.insert(at, e.clone());
        }
    }
    path_list::join(&list)
}

/// The result of one prompt: the assignments to print and the new state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub assignments: Vec<(String, Option<String>)>,
    pub state: State,
}

/// Moves from the current environment to `wanted` (computed on top of the reverted
/// values). Prints only what differs from what the shell has now.
pub fn step(
    old: Option<&State>,
    fp: Fingerprint,
    current: Lookup,
    wanted: &dyn Fn(Lookup) -> Applied,
) -> Step {
    let reverted = old.map(|s| s.reverted(current)).unwrap_or_default();
    let base = |k: &str| match reverted.get(k) {
        Some(v) => v.clone(),
        None => current(k),
    };
    let applied = wanted(&base);
    let mut state = State {
        fp,
        vars: BTreeMap::new(),
    };
    for (k, after) in &applied.after {
        let before = applied.before.get(k).cloned().flatten();
        if &before != after {
            state.vars.insert(
                k.clone(),
                Saved {
                    before,
                    after: after.clone(),
                },
            );
        }
    }
    let mut keys: Vec<&String> = reverted.keys().chain(applied.after.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut assignments = Vec::new();
    for k in keys {
        let target = match applied.after.get(k) {
            Some(v) => v.clone(),
            None => base(k),
        };
        if target != current(k) {
            assignments.push((k.clone(), target));
        }
    }
    assignments.push((STATE_VAR.to_string(), Some(state.encode())));
    Step { assignments, state }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{Change, Op};

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn apply(env: &mut BTreeMap<String, String>, step: &Step) {
        for (k, v) in &step.assignments {
            match v {
                Some(v) => env.insert(k.clone(), v.clone()),
                None => env.remove(k),
            };
        }
    }

    fn project(view: &str) -> Change {
        Change {
            ops: vec![
                Op::Set("CUDA_HOME".into(), view.into()),
                Op::Prepend("PATH".into(), vec![format!("{view}/bin")]),
            ],
        }
    }

    fn prompt(env: &mut BTreeMap<String, String>, change: Option<Change>, cwd: &str) {
        let old = env.get(STATE_VAR).and_then(|s| State::decode(s));
        let snapshot = env.clone();
        let current = |k: &str| snapshot.get(k).cloned();
        let fp = Fingerprint {
            cwd: cwd.into(),
            ..Default::default()
        };
        let change = change.unwrap_or_default();
        let s = step(old.as_ref(), fp, &current, &|base| change.apply(base));
        apply(env, &s);
    }

    #[test]
    fn entering_and_leaving_restores_exactly() {
        let mut e = env(&[("PATH", "/usr/bin:/bin")]);
        prompt(&mut e, None, "/home");
        let before = e.clone();
        prompt(&mut e, Some(project("/v/a")), "/p/a");
        assert_eq!(e["CUDA_HOME"], "/v/a");
        assert_eq!(e["PATH"], "/v/a/bin:/usr/bin:/bin");
        prompt(&mut e, Some(project("/v/b")), "/p/b");
        assert_eq!(e["PATH"], "/v/b/bin:/usr/bin:/bin");
        prompt(&mut e, None, "/home");
        assert_eq!(e, before);
    }

    #[test]
    fn the_users_own_later_edits_survive() {
        let mut e = env(&[("PATH", "/usr/bin:/bin"), ("CUDA_HOME", "/mine")]);
        prompt(&mut e, Some(project("/v/a")), "/p/a");
        // The user adds an entry and sets a variable of their own after the hook ran.
        let path = format!("/home/u/bin:{}", e["PATH"]);
        e.insert("PATH".into(), path);
        e.insert("MY_VAR".into(), "1".into());
        prompt(&mut e, None, "/home");
        assert_eq!(e["PATH"], "/home/u/bin:/usr/bin:/bin");
        assert_eq!(e["CUDA_HOME"], "/mine");
        assert_eq!(e["MY_VAR"], "1");
    }

    #[test]
    fn removed_entries_come_back_in_place() {
        let saved = Saved {
            before: Some("/a:/usr/local/cuda-11.3/bin:/b".into()),
            after: Some("/v/bin:/a:/b".into()),
        };
        assert_eq!(
            revert_list(Some("/x:/v/bin:/a:/b"), &saved),
            "/x:/a:/usr/local/cuda-11.3/bin:/b"
        );
    }
}
