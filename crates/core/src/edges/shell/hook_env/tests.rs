use super::saved::list_changes;
use super::*;
use crate::plan::env::{Change, Op};
use std::os::unix::ffi::OsStrExt;

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
        after: After::Value(Some("/v/bin:/a:/b".into())),
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
    assert_eq!(old.vars["CUDA_HOME"].after.value(), Some("/v/a".as_ref()));
    assert_eq!(State::decode(r#"{"v":999,"whatever":[1,2]}"#), None);
    assert_eq!(State::decode("not json"), None);
}

#[test]
fn a_state_of_version_2_is_read_and_what_it_applied_taken_back() {
    let v2 = r#"{"v":2,"fp":{"cwd":"/p","vars":[],"file":null,"settings":["/h/settings.toml",null],"extra":[]},"vars":{"CUDA_HOME":{"before":null,"after":"/a/view/of/cuda-12.4/that/is/long"},"PATH":{"before":"/usr/bin","after":"/v/bin:/usr/bin"}},"quiet":true}"#;
    let old = State::decode(v2).expect("version 2 is read");
    assert_eq!(old.v, STATE_VERSION);
    assert_eq!(old.fp.cwd, Path::new("/p"), "its fingerprint is kept");
    assert!(old.quiet);
    let e = env(&[
        ("CUDA_HOME", "/a/view/of/cuda-12.4/that/is/long"),
        ("PATH", "/v/bin:/usr/bin"),
    ]);
    let reverted = old.reverted(&|k: &str| e.get(k).cloned());
    assert_eq!(reverted["CUDA_HOME"], None);
    assert_eq!(reverted["PATH"].as_deref(), Some("/usr/bin".as_ref()));
}

#[test]
fn a_long_value_is_kept_as_its_checksum_and_a_users_change_to_it_is_theirs() {
    let long = "/home/u/.local/share/gpuenv/views/cuda-12.4";
    let mut e = env(&[("PATH", "/usr/bin")]);
    let set = Change {
        ops: vec![Op::Set("CUDA_HOME".into(), long.into())],
    };
    prompt(&mut e, Some(set.clone()), "/p/a");
    let state = e[STATE_VAR].to_str().unwrap().to_string();
    assert!(!state.contains(long), "{state}");
    assert!(matches!(
        State::decode(&state).unwrap().vars["CUDA_HOME"].after,
        After::Sum(_)
    ));
    // Left as the hook set it: taken back.
    prompt(&mut e, None, "/home");
    assert_eq!(e.get("CUDA_HOME"), None);
    // Changed by the user to another value as long: kept.
    prompt(&mut e, Some(set), "/p/a");
    let mine = "/home/u/.local/share/gpuenv/views/cuda-12.5";
    e.insert("CUDA_HOME".into(), mine.into());
    prompt(&mut e, None, "/home");
    assert_eq!(e["CUDA_HOME"], mine);
}

#[test]
fn a_broken_or_hostile_state_of_this_version_is_dropped_or_takes_back_nothing_of_the_users() {
    let state = |vars: &str| {
        format!(
            r#"{{"v":4,"fp":{{"cwd":"/p","vars":[],"file":null,"settings":["/h/s",null],"extra":[]}},"vars":{vars}}}"#
        )
    };
    // Entries of the wrong shape: the state is dropped, as one of an unknown layout.
    for broken in [
        r#"{"CUDA_HOME":[null]}"#,
        r#"{"CUDA_HOME":[null,"/v",1]}"#,
        r#"{"CUDA_HOME":{"before":null,"after":"/v"}}"#,
        r#"{"CUDA_HOME":[null,-1]}"#,
        r#"{"CUDA_HOME":[null,1.5]}"#,
        r#"{"PATH":["/usr/bin",[1,["/v/bin"]]]}"#,
        r#"{"PATH":["/usr/bin",[1,["/v/bin"],[],[]]]}"#,
        r#"{"PATH":["/usr/bin",[-1,["/v/bin"],[]]]}"#,
        r#"{"PATH":["/usr/bin",[1,[null],[]]]}"#,
    ] {
        assert_eq!(State::decode(&state(broken)), None, "{broken}");
    }
    // A checksum where a path list's entries belong: which entries the hook added is not
    // known, so none is taken out of the user's list.
    let old = State::decode(&state(r#"{"PATH":["/usr/bin",12345]}"#)).unwrap();
    let e = env(&[("PATH", "/mine:/usr/bin")]);
    let reverted = old.reverted(&|k: &str| e.get(k).cloned());
    assert_eq!(reverted["PATH"].as_deref(), Some("/mine:/usr/bin".as_ref()));
}

/// A user's `PATH` as long as a workstation's, to which a project adds one directory.
const LONG_PATH: &str = "/home/u/.cargo/bin:/home/u/.pyenv/shims:/home/u/.pyenv/bin:/home/u/miniconda3/condabin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

#[test]
fn a_long_path_list_is_kept_as_the_entries_the_hook_changed() {
    let mut e = env(&[("PATH", LONG_PATH)]);
    prompt(&mut e, Some(project("/v/a")), "/p/a");
    let state = e[STATE_VAR].to_str().unwrap().to_string();
    // The list before is kept whole (it is put back as it was); the list after is not.
    assert_eq!(state.matches(LONG_PATH).count(), 1, "{state}");
    let saved = &State::decode(&state).unwrap().vars["PATH"];
    assert_eq!(
        saved.after,
        After::Entries {
            sum: crate::fsutil::checksum(format!("/v/a/bin:{LONG_PATH}").as_bytes()),
            added: vec!["/v/a/bin".into()],
            removed: vec![],
        }
    );
    // Left as the hook set it: exactly the list before.
    let mut left = e.clone();
    prompt(&mut left, None, "/home");
    assert_eq!(left["PATH"], LONG_PATH);
    // Edited by the user: their entry stays, the hook's goes.
    let path = format!("/home/u/bin:{}", e["PATH"].to_str().unwrap());
    e.insert("PATH".into(), path.into());
    prompt(&mut e, None, "/home");
    assert_eq!(e["PATH"], format!("/home/u/bin:{LONG_PATH}").as_str());
    // A short list is kept as it is: its entries would be no shorter.
    let mut short = env(&[("PATH", "/usr/bin")]);
    prompt(&mut short, Some(project("/v/a")), "/p/a");
    let saved = &State::decode(short[STATE_VAR].to_str().unwrap())
        .unwrap()
        .vars["PATH"];
    assert_eq!(saved.after, After::Value(Some("/v/a/bin:/usr/bin".into())));
}

#[test]
fn a_path_lists_entries_take_back_what_the_whole_list_would() {
    use std::os::unix::ffi::OsStringExt;
    // Every list of up to two entries from these (a duplicate, an empty entry, one that
    // is not UTF-8), unset too, as the list before, the list the hook set and the list the
    // user has now: reverting from the entries gives what reverting from the whole list
    // gives.
    let names = [
        OsString::from("/a"),
        OsString::from("/b"),
        OsString::from(""),
        OsString::from_vec(b"/caf\xe9".to_vec()),
    ];
    let mut lists: Vec<Option<OsString>> = vec![None];
    for x in &names {
        lists.push(Some(x.clone()));
        for y in &names {
            lists.push(Some(path_list::join(&[x.clone(), y.clone()])));
        }
    }
    for before in &lists {
        for after in &lists {
            let (added, removed) = list_changes(before.as_deref(), after.as_deref());
            let whole = Saved {
                before: before.clone(),
                after: After::Value(after.clone()),
            };
            let entries = Saved {
                before: before.clone(),
                after: After::Entries {
                    sum: crate::fsutil::checksum(after.as_deref().unwrap_or_default().as_bytes()),
                    added,
                    removed,
                },
            };
            for now in &lists {
                assert_eq!(
                    revert_list(now.as_deref(), &entries),
                    revert_list(now.as_deref(), &whole),
                    "before {before:?}, after {after:?}, now {now:?}"
                );
            }
        }
    }
}

#[test]
fn a_path_lists_entries_that_are_not_utf8_survive_the_state() {
    use std::os::unix::ffi::OsStringExt;
    let mut odd = b"/tmp/caf\xe9:".to_vec();
    odd.extend_from_slice(LONG_PATH.as_bytes());
    let odd = OsString::from_vec(odd);
    let mut e = env(&[]);
    e.insert("PATH".into(), odd.clone());
    let view = OsString::from_vec(b"/v/caf\xe9".to_vec());
    let change = Change {
        ops: vec![Op::Prepend("PATH".into(), vec![view.clone()])],
    };
    prompt(&mut e, Some(change), "/p/a");
    let state = State::decode(e[STATE_VAR].to_str().unwrap()).unwrap();
    assert!(
        matches!(&state.vars["PATH"].after, After::Entries { added, .. } if *added == [view]),
        "{:?}",
        state.vars["PATH"]
    );
    prompt(&mut e, None, "/home");
    assert_eq!(e["PATH"], odd);
}

#[test]
fn a_state_of_version_3_is_read_as_this_one() {
    let v3 = r#"{"v":3,"fp":{"cwd":"/p","vars":[],"file":null,"settings":["/h/s",null],"extra":[]},"vars":{"PATH":["/usr/bin","/v/bin:/usr/bin"],"CUDA_HOME":[null,6363567516609826154]},"quiet":true}"#;
    let old = State::decode(v3).expect("version 3 is read");
    assert_eq!(old.v, STATE_VERSION);
    assert!(old.quiet);
    let e = env(&[("PATH", "/v/bin:/usr/bin")]);
    let reverted = old.reverted(&|k: &str| e.get(k).cloned());
    assert_eq!(reverted["PATH"].as_deref(), Some("/usr/bin".as_ref()));
}
