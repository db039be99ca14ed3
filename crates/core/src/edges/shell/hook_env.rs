//! What the prompt hook does: move the shell from its current environment to the one
//! wanted for the current directory, recording what it changed (in one variable) so that
//! the next move first puts back exactly what was there. One prompt (what it watches,
//! when it is skipped, the step it takes) is `prompt.rs`; its fast path `fast_path.rs`.

use crate::facts::vars;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::path_list;
use crate::plan::env::{Applied, Lookup, PATH_LISTS};
use crate::project;

/// The variable that holds the state between prompts.
pub const STATE_VAR: &str = vars::__GPUENV_STATE;

/// The layout of the state. A shell keeps its state across an upgrade of gpuenv: a state
/// of an older layout is read (its saved values are what a revert needs), one of an unknown
/// layout is dropped and the hook starts afresh.
/// Version 2 watches variables by name and extra files (the prompt's fast path).
pub const STATE_VERSION: u32 = 2;

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    #[serde(with = "os_value")]
    pub before: Option<OsString>,
    #[serde(with = "os_value")]
    pub after: Option<OsString>,
}

/// A value in the state: a JSON string when it is UTF-8, else its bytes as an array, so
/// the state (itself an environment variable) stays text and every byte comes back.
mod os_value {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub fn serialize<S: Serializer>(v: &Option<OsString>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref()
            .map(|v| match v.to_str() {
                Some(t) => Repr::Text(t.to_string()),
                None => Repr::Bytes(v.as_bytes().to_vec()),
            })
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<OsString>, D::Error> {
        Ok(Option::<Repr>::deserialize(d)?.map(|r| match r {
            Repr::Text(t) => OsString::from(t),
            Repr::Bytes(b) => OsString::from_vec(b),
        }))
    }
}

/// An older layout (no `v`, or `v` 1): the saved values read the same; its fingerprint is
/// not trusted, so the next prompt recomputes.
#[derive(Deserialize)]
struct StateV0 {
    vars: BTreeMap<String, Saved>,
}

impl State {
    pub fn decode(text: &str) -> Option<State> {
        // This version's state straight into the struct (every prompt reads one: going
        // through a `Value` first was a fifth of a prompt's instructions); any other
        // version through a `Value`, as before.
        if let Ok(state) = serde_json::from_str::<State>(text) {
            if state.v == STATE_VERSION {
                return Some(state);
            }
        }
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        match value.get("v").map(|v| v.as_u64()) {
            Some(Some(v)) if v == u64::from(STATE_VERSION) => serde_json::from_value(value).ok(),
            None | Some(Some(1)) => {
                let old: StateV0 = serde_json::from_value(value).ok()?;
                Some(State {
                    v: STATE_VERSION,
                    fp: Fingerprint::default(),
                    vars: old.vars,
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
                let value = if now == saved.after {
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
    let after = path_list::split(saved.after.as_deref());
    let mut list: Vec<OsString> = path_list::split(now)
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
mod tests {
    use super::*;
    use crate::plan::env::{Change, Op};

    type Env = BTreeMap<String, OsString>;

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect()
    }

    fn apply(env: &mut Env, step: &Step) {
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
                Op::Prepend("PATH".into(), vec![format!("{view}/bin").into()]),
            ],
        }
    }

    fn prompt(env: &mut Env, change: Option<Change>, cwd: &str) {
        let old = env
            .get(STATE_VAR)
            .and_then(|s| State::decode(s.to_str().unwrap()));
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
        let path = format!("/home/u/bin:{}", e["PATH"].to_str().unwrap());
        e.insert("PATH".into(), path.into());
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
            revert_list(Some("/x:/v/bin:/a:/b".as_ref()), &saved).unwrap(),
            "/x:/a:/usr/local/cuda-11.3/bin:/b"
        );
    }

    #[test]
    fn a_list_unset_before_and_unset_by_the_user_stays_unset() {
        let mut e = env(&[("PATH", "/usr/bin")]);
        let lib = Change {
            ops: vec![Op::Prepend(
                "LD_LIBRARY_PATH".into(),
                vec!["/v/lib64".into()],
            )],
        };
        prompt(&mut e, Some(lib), "/p/a");
        assert_eq!(e["LD_LIBRARY_PATH"], "/v/lib64");
        e.remove("LD_LIBRARY_PATH");
        prompt(&mut e, None, "/home");
        assert_eq!(e.get("LD_LIBRARY_PATH"), None);
    }

    #[test]
    fn values_that_are_not_utf8_survive_the_state() {
        use std::os::unix::ffi::OsStringExt;
        let odd = OsString::from_vec(b"/tmp/caf\xe9/bin:/bin".to_vec());
        let mut e = env(&[]);
        e.insert("PATH".into(), odd.clone());
        prompt(&mut e, Some(project("/v/a")), "/p/a");
        prompt(&mut e, None, "/home");
        assert_eq!(e["PATH"], odd);
    }

    #[test]
    fn a_state_of_the_first_layout_is_read_and_an_unknown_one_dropped() {
        let v0 = r#"{"fp":{"cwd":"/p","vars":[],"file":null,"settings":null},"vars":{"CUDA_HOME":{"before":null,"after":"/v/a"}}}"#;
        let old = State::decode(v0).expect("the first layout is read");
        assert_eq!(old.v, STATE_VERSION);
        assert_eq!(
            old.fp,
            Fingerprint::default(),
            "its fingerprint is not reused"
        );
        assert_eq!(
            old.vars["CUDA_HOME"].after.as_deref(),
            Some("/v/a".as_ref())
        );
        assert_eq!(State::decode(r#"{"v":999,"whatever":[1,2]}"#), None);
        assert_eq!(State::decode("not json"), None);
    }
}
