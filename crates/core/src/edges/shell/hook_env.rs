//! What the prompt hook does: move the shell from its current environment to the one
//! wanted for the current directory, recording what it changed (in one variable) so that
//! the next move first puts back exactly what was there. One prompt (what it watches,
//! when it is skipped, the step it takes) is `prompt.rs`; its fast path `fast_path.rs`.

use crate::facts::vars;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::path_list;
use crate::plan::env::{Applied, Lookup, PATH_LISTS};
use crate::project;

mod saved;
use saved::{from_v2, SavedV2};
pub use saved::{After, Saved};

/// The variable that holds the state between prompts.
pub const STATE_VAR: &str = vars::__GPUENV_STATE;

/// The layout of the state. A shell keeps its state across an upgrade of gpuenv: a state
/// of an older layout is read (its saved values are what a revert needs), one of an unknown
/// layout is dropped and the hook starts afresh.
/// Version 2 watches variables by name and extra files (the prompt's fast path). Version 3
/// keeps each variable as `[before, after]`, and a long value that is not a path list as
/// its checksum ([`After`]): the shell reads and writes every byte of the state at each
/// prompt that starts a process (docs/performance.md). Version 4 keeps a path list's
/// after value as the entries the hook added and removed, where that is shorter.
pub const STATE_VERSION: u32 = 4;

/// Everything a prompt's result depends on; when it is unchanged the hook does nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub cwd: PathBuf,
    /// The variables the result depends on, by name (unset and empty are both `None`).
    pub vars: Vec<(String, Option<String>)>,
    /// The nearest toolchain file (found as resolution finds it). An unusable one is
    /// stamped as it is, or with zeros when it cannot be: its error is shown once, until
    /// it changes.
    pub file: Option<(PathBuf, Stamp)>,
    /// The registry's settings file (installs, links, default, trust): `None` when absent.
    pub settings: (PathBuf, Option<Stamp>),
    /// Other files the last result was computed from (the torch a `"torch"` pin read).
    pub extra: Vec<(PathBuf, Option<Stamp>)>,
    /// Watched while a `"torch"` pin is in effect: which torch it reads depends on the
    /// first `python3` on PATH (a venv put first on PATH without activating it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonOnPath>,
}

/// The first `python3` on PATH, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonOnPath {
    pub found: Option<PathBuf>,
}

pub use crate::stamp::Stamp;

pub fn stamp(path: &Path) -> Option<Stamp> {
    Stamp::at(path)
}

impl Fingerprint {
    /// A few `stat` calls: the directory and its ancestors for a toolchain file (found as
    /// resolution finds it), the settings file, and the `extra` files. No file is read.
    pub fn take(
        cwd: &Path,
        vars: Vec<(String, Option<String>)>,
        settings: &Path,
        extra: &[PathBuf],
    ) -> Fingerprint {
        let file = match project::locate(cwd) {
            Ok(found) => found.map(|f| (f.path, Stamp::of(&f.meta).unwrap_or_default())),
            Err(e) => Some((e.path().to_path_buf(), stamp(e.path()).unwrap_or_default())),
        };
        let mut fp = Fingerprint {
            cwd: cwd.to_path_buf(),
            vars,
            file,
            settings: (settings.to_path_buf(), stamp(settings)),
            extra: Vec::new(),
            python: None,
        };
        fp.watch(extra);
        fp
    }

    /// Watches the first `python3` on `path` (see [`Fingerprint::python`]).
    pub fn watch_python(&mut self, path: Option<&OsStr>) {
        let found = crate::plan::guard::find_on_path(path, "python3");
        self.python = Some(PythonOnPath { found });
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
    pub v: u32,
    pub fp: Fingerprint,
    pub vars: BTreeMap<String, Saved>,
    /// The run said nothing (no note for stderr): the shell may come back to this state
    /// without asking gpuenv (`hop`). Absent in an older state: not known, so never.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quiet: bool,
}

/// An older layout (no `v`, or `v` 1): the saved values read the same; its fingerprint is
/// not trusted, so the next prompt recomputes.
#[derive(Deserialize)]
struct StateV0 {
    vars: BTreeMap<String, SavedV2>,
}

/// Version 2: this version's fingerprint, the values in full.
#[derive(Deserialize)]
struct StateV2 {
    fp: Fingerprint,
    vars: BTreeMap<String, SavedV2>,
    #[serde(default)]
    quiet: bool,
}

impl State {
    pub fn decode(text: &str) -> Option<State> {
        // This version's state straight into the struct (every prompt reads one: going
        // through a `Value` first was a fifth of a prompt's instructions); any other
        // version through a `Value`, as before.
        // Version 3 is this layout without a path list's entries.
        if let Ok(state) = serde_json::from_str::<State>(text) {
            if state.v == STATE_VERSION || state.v == 3 {
                return Some(State {
                    v: STATE_VERSION,
                    ..state
                });
            }
        }
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        match value.get("v").map(|v| v.as_u64()) {
            // Read straight above; what did not parse there does not parse here.
            Some(Some(v)) if v == u64::from(STATE_VERSION) || v == 3 => None,
            Some(Some(2)) => {
                let old: StateV2 = serde_json::from_value(value).ok()?;
                Some(State {
                    v: STATE_VERSION,
                    fp: old.fp,
                    vars: from_v2(old.vars),
                    quiet: old.quiet,
                })
            }
            None | Some(Some(1)) => {
                let old: StateV0 = serde_json::from_value(value).ok()?;
                Some(State {
                    v: STATE_VERSION,
                    fp: Fingerprint::default(),
                    vars: from_v2(old.vars),
                    quiet: false,
                })
            }
            Some(_) => None,
        }
    }

    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("the hook state always serializes")
    }

    /// The values the shell would have without the hook's changes. A variable the user
    /// changed since is theirs: a scalar is kept as they set it; in a path list only the
    /// entries the hook added are taken out and the ones it removed put back.
    pub fn reverted(&self, current: Lookup) -> BTreeMap<String, Option<OsString>> {
        self.vars
            .iter()
            .map(|(k, saved)| {
                let now = current(k);
                let value = if saved.after.holds(now.as_deref()) {
                    saved.before.clone()
                } else if PATH_LISTS.contains(&k.as_str()) {
                    revert_list(now.as_deref(), saved)
                } else {
                    now
                };
                (k.clone(), value)
            })
            .collect()
    }
}

/// A path list the user edited after the hook set it, with the hook's own entries taken
/// out and the ones it removed put back. A list that ends up empty is unset when it was
/// unset before the hook or the user unset it: never the empty string the shell did not
/// have.
fn revert_list(now: Option<&OsStr>, saved: &Saved) -> Option<OsString> {
    let before = path_list::split(saved.before.as_deref());
    let (added, removed) = saved.after.list_changes(saved.before.as_deref());
    let mut list: Vec<OsString> = path_list::split(now)
        .into_iter()
        .filter(|e| before.contains(e) || !added.contains(e))
        .collect();
    // Each removed entry goes back right after the entry it followed before.
    for (i, e) in before.iter().enumerate() {
        if removed.contains(e) && !list.contains(e) {
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
    if list.is_empty() && (saved.before.is_none() || now.is_none()) {
        return None;
    }
    Some(path_list::join(&list))
}

/// The result of one prompt: the assignments to print and the new state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub assignments: Vec<(String, Option<OsString>)>,
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
        v: STATE_VERSION,
        fp,
        vars: BTreeMap::new(),
        quiet: false,
    };
    for (k, after) in &applied.after {
        let before = applied.before.get(k).cloned().flatten();
        if &before != after {
            state.vars.insert(
                k.clone(),
                Saved {
                    after: After::new(k, before.as_deref(), after.clone()),
                    before,
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
    assignments.push((STATE_VAR.to_string(), Some(state.encode().into())));
    Step { assignments, state }
}

impl Step {
    /// Marks the new state as one whose run said nothing (see [`State::quiet`]).
    pub fn mark_quiet(&mut self) {
        self.state.quiet = true;
        if let Some((_, v)) = self.assignments.iter_mut().find(|(k, _)| k == STATE_VAR) {
            *v = Some(self.state.encode().into());
        }
    }
}

/// Takes back everything the old state applied (a prompt that cannot resolve must not
/// leave the previous directory's toolchain in place); the new state records nothing but
/// `fp`, so the reason is shown once.
pub fn revert_all(old: Option<&State>, fp: Fingerprint, current: Lookup) -> Step {
    step(old, fp, current, &|_| Applied::default())
}

#[cfg(test)]
mod tests;
