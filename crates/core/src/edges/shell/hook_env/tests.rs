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
            r#"{{"v":3,"fp":{{"cwd":"/p","vars":[],"file":null,"settings":["/h/s",null],"extra":[]}},"vars":{vars}}}"#
        )
    };
    // Entries of the wrong shape: the state is dropped, as one of an unknown layout.
    for broken in [
        r#"{"CUDA_HOME":[null]}"#,
        r#"{"CUDA_HOME":[null,"/v",1]}"#,
        r#"{"CUDA_HOME":{"before":null,"after":"/v"}}"#,
        r#"{"CUDA_HOME":[null,-1]}"#,
        r#"{"CUDA_HOME":[null,1.5]}"#,
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
