//! A change to the environment as data: an ordered list of operations (set, unset,
//! prepend to a path list, remove entries), applied to the current values to give each
//! variable's value before and after.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::foreign::Foreign;
use crate::path_list;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Set(String, OsString),
    Unset(String),
    /// Put these entries first in the list, removing their other copies.
    Prepend(String, Vec<OsString>),
    /// Drop the entries that belong to another toolchain of this kind.
    Remove(String, Foreign),
    /// Set, unless the variable holds a value of the user's: one that is not under the
    /// directory given (where gpuenv's own values for it live).
    Default(String, OsString, PathBuf),
    /// Unset, if the variable holds a value gpuenv set (one under the directory given); a
    /// value of the user's stays.
    Clear(String, PathBuf),
    /// Put this word first in a space-separated list (`PIP_EXTRA_INDEX_URL`, `UV_INDEX`),
    /// keeping the user's words after it in their order: a word equal to it, or starting
    /// with the prefix given (`pytorch=`, gpuenv's own index name), is dropped from theirs.
    PrependWord(String, OsString, Option<OsString>),
}

/// How a change reads the current value of a variable.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// A computed change, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Change {
    pub ops: Vec<Op>,
}

/// The variables a change touches: their values before and after (`None` = unset).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Applied {
    pub before: BTreeMap<String, Option<OsString>>,
    pub after: BTreeMap<String, Option<OsString>>,
}

impl Applied {
    /// Only the variables whose value differs, in name order.
    pub fn diff(&self) -> Vec<(&str, Option<&OsStr>)> {
        self.after
            .iter()
            .filter(|(k, v)| self.before.get(*k) != Some(v))
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect()
    }
}

impl Change {
    /// Applies the change to the current values, returning before and after for every
    /// variable it touches.
    pub fn apply(&self, current: Lookup) -> Applied {
        let mut applied = Applied::default();
        for op in &self.ops {
            let key = match op {
                Op::Set(k, _)
                | Op::Unset(k)
                | Op::Prepend(k, _)
                | Op::Remove(k, _)
                | Op::Default(k, _, _)
                | Op::Clear(k, _)
                | Op::PrependWord(k, _, _) => k,
            };
            let before = applied
                .before
                .entry(key.clone())
                .or_insert_with(|| current(key))
                .clone();
            let value = applied.after.get(key).cloned().unwrap_or(before);
            let new = match op {
                Op::Set(_, v) => Some(v.clone()),
                Op::Unset(_) => None,
                Op::Prepend(_, front) => {
                    let list = path_list::prepend(path_list::split(value.as_deref()), front);
                    Some(path_list::join(&list))
                }
                Op::Remove(_, foreign) => value.as_deref().map(|v| {
                    let list = path_list::remove(path_list::split(Some(v)), |e| foreign.matches(e));
                    path_list::join(&list)
                }),
                Op::Default(_, v, ours) => match value {
                    Some(user) if !user.is_empty() && !Path::new(&user).starts_with(ours) => {
                        Some(user)
                    }
                    _ => Some(v.clone()),
                },
                Op::Clear(_, ours) => value.filter(|v| !is_ours(v, ours)),
                Op::PrependWord(_, word, replaces) => {
                    Some(prepend_word(value.as_deref(), word, replaces.as_deref()))
                }
            };
            applied.after.insert(key.clone(), new);
        }
        applied
    }
}

/// `word`, then the words of `list` that are not it (nor start with `replaces`), one space
/// apart: a user's index list keeps every entry of theirs after gpuenv's.
fn prepend_word(list: Option<&OsStr>, word: &OsStr, replaces: Option<&OsStr>) -> OsString {
    let mut out = word.as_bytes().to_vec();
    let theirs = list.map(OsStr::as_bytes).unwrap_or_default();
    for w in theirs
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
    {
        let gpuenvs = w == word.as_bytes() || replaces.is_some_and(|r| w.starts_with(r.as_bytes()));
        if !gpuenvs {
            out.push(b' ');
            out.extend_from_slice(w);
        }
    }
    OsString::from_vec(out)
}

/// A value gpuenv wrote: one naming a path under `ours` (as a whole, or after words such as
/// `ccache `).
fn is_ours(value: &OsStr, ours: &Path) -> bool {
    let (value, ours) = (value.as_bytes(), ours.as_os_str().as_bytes());
    (0..value.len()).any(|i| {
        (i == 0 || value[i - 1] == b' ')
            && value[i..].starts_with(ours)
            && value.get(i + ours.len()).is_none_or(|b| *b == b'/')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::toolchain::Kind;
    #[test]
    fn apply_records_before_and_after_and_reverts_exactly() {
        let change = Change {
            ops: vec![
                Op::Set("CUDA_HOME".into(), "/v".into()),
                Op::Remove(
                    "PATH".into(),
                    Foreign {
                        kinds: vec![Kind::Cuda],
                        ..Foreign::default()
                    },
                ),
                Op::Prepend("PATH".into(), vec!["/v/bin".into()]),
                Op::Prepend("CPATH".into(), vec!["/v/include".into()]),
                Op::Unset("GONE".into()),
            ],
        };
        let current = |k: &str| match k {
            "PATH" => Some("/home/u/bin:/usr/local/cuda-11.3/bin:/usr/bin".into()),
            "GONE" => Some("x".into()),
            _ => None,
        };
        let applied = change.apply(&current);
        assert_eq!(
            applied.after["PATH"].as_deref(),
            Some("/v/bin:/home/u/bin:/usr/bin".as_ref())
        );
        assert_eq!(
            applied.after["CPATH"].as_deref(),
            Some("/v/include".as_ref())
        );
        assert_eq!(applied.after["GONE"], None);
        assert_eq!(applied.before["CPATH"], None);
        assert_eq!(applied.before["PATH"], current("PATH"));
        assert_eq!(applied.diff().len(), 4);
    }

    #[test]
    fn a_word_list_keeps_the_users_entries_after_gpuenvs() {
        let change = Change {
            ops: vec![Op::PrependWord(
                "UV_INDEX".into(),
                "pytorch=https://t/cu130".into(),
                Some("pytorch=".into()),
            )],
        };
        let after = |v: Option<&str>| {
            let current = |_: &str| v.map(OsString::from);
            change.apply(&current).after["UV_INDEX"].clone().unwrap()
        };
        assert_eq!(after(None), "pytorch=https://t/cu130");
        assert_eq!(
            after(Some("corp=https://corp/simple  other=https://o/s")),
            "pytorch=https://t/cu130 corp=https://corp/simple other=https://o/s"
        );
        // Applied twice (a `gpuenv run` inside a hooked shell): one copy of gpuenv's.
        assert_eq!(
            after(Some("pytorch=https://t/cu124 corp=https://corp/simple")),
            "pytorch=https://t/cu130 corp=https://corp/simple"
        );
    }

    #[test]
    fn a_default_keeps_the_users_value_and_replaces_gpuenvs_own() {
        let op = Op::Default(
            "TORCH_EXTENSIONS_DIR".into(),
            "/h/te/b".into(),
            "/h/te".into(),
        );
        let change = Change { ops: vec![op] };
        let after = |v: Option<&str>| {
            let current = |_: &str| v.map(OsString::from);
            change.apply(&current).after["TORCH_EXTENSIONS_DIR"].clone()
        };
        let some = |s: &str| Some(OsString::from(s));
        assert_eq!(after(None), some("/h/te/b"));
        assert_eq!(after(Some("")), some("/h/te/b"));
        assert_eq!(after(Some("/h/te/a")), some("/h/te/b"));
        assert_eq!(after(Some("/mine")), some("/mine"));
    }

    #[test]
    fn a_clear_drops_gpuenvs_own_value_and_keeps_the_users() {
        let change = Change {
            ops: vec![Op::Clear("PYTORCH_NVCC".into(), "/h me/views".into())],
        };
        let after = |v: &str| {
            let current = |_: &str| Some(OsString::from(v));
            change.apply(&current).after["PYTORCH_NVCC"].clone()
        };
        assert_eq!(after("/h me/views/cuda-12.4/bin/nvcc"), None);
        assert_eq!(after("ccache /h me/views/cuda-12.4/bin/nvcc"), None);
        for mine in [
            "ccache nvcc",
            "/h me/views2/nvcc",
            "/usr/local/cuda/bin/nvcc",
        ] {
            assert_eq!(after(mine), Some(OsString::from(mine)), "{mine}");
        }
        let unset = |_: &str| None;
        assert_eq!(change.apply(&unset).after["PYTORCH_NVCC"], None);
    }
}
