//! The unit tests of `toolchains.rs`.

use super::*;
use crate::store::toolchain::system::System;
use crate::store::toolchain::Kind;

fn entry(root: &str, version: &str) -> Entry {
    Entry::linked_cuda(root, version)
}

/// A copy's toolchains section for `entries`, lines in the order given and `count` said,
/// after a header line, with an empty table of roots.
fn raw(entries: &[(&str, Entry)], count: usize) -> String {
    let mut text = format!("header\n{count}\n");
    for (name, e) in entries {
        text += &line::encode(name, e).unwrap();
        text.push('\n');
    }
    text + "0\n"
}

const START: usize = "header\n".len();

/// The copy `encode_copy` writes of `entries`, read back.
fn copy(entries: &[(&str, Entry)]) -> Toolchains {
    let owned: Toolchains = entries
        .iter()
        .map(|(n, e)| (n.to_string(), e.clone()))
        .collect();
    let text = format!("header\n{}", owned.encode_copy(START).unwrap());
    Toolchains::of_copy(Arc::new(text), START).unwrap()
}

fn three() -> Vec<(&'static str, Entry)> {
    vec![
        ("cuda-11.8", entry("/opt/cuda-11.8", "11.8")),
        ("cuda-12.4", entry("/opt/cuda-12.4", "12.4")),
        ("cuda-12.4-site", entry("/site/cuda-12.4", "12.4")),
    ]
}

fn decoded(t: &Toolchains) -> usize {
    t.inner
        .slots
        .iter()
        .filter(|s| s.entry.get().is_some())
        .count()
}

#[test]
fn a_copys_line_is_decoded_when_its_toolchain_is_asked_for_and_not_before() {
    let t = copy(&three());
    assert_eq!(decoded(&t), 0);
    assert_eq!(t.get("cuda-12.4"), Some(&three()[1].1));
    assert_eq!(decoded(&t), 1, "one line decoded for one toolchain");
    assert_eq!(t.get("cuda-12"), None);
    assert!(!t.is_empty());
    let names: Vec<&str> = t.keys().collect();
    assert_eq!(names, ["cuda-11.8", "cuda-12.4", "cuda-12.4-site"]);
    let owned: Toolchains = three().into_iter().map(|(n, e)| (n.into(), e)).collect();
    assert_eq!(t, owned);
    assert_eq!(t.len(), 3);
}

#[test]
fn a_copy_of_another_shape_is_not_read() {
    let text = raw(&three(), 3);
    let of = |text: &str| Toolchains::of_copy(Arc::new(text.to_string()), START);
    assert!(of(&text).is_some());
    assert!(of(&raw(&three(), 2)).is_none(), "a line more than counted");
    assert!(of(&raw(&three(), 4)).is_none(), "a line fewer than counted");
    assert!(of(text.trim_end()).is_none(), "the table cut short");
    assert!(
        of(&format!("{text}x")).is_none(),
        "something after the table"
    );
    assert!(
        of(&text.replace("\n0\n", "\n1\n")).is_none(),
        "a record fewer"
    );
    let swapped = [three()[1].clone(), three()[0].clone(), three()[2].clone()];
    assert!(of(&raw(&swapped, 3)).is_none(), "names out of order");
    let twice = [three()[0].clone(), three()[0].clone()];
    assert!(of(&raw(&twice, 2)).is_none(), "a name twice");
    let bare = text.replacen("\"cuda-11.8\"", "cuda-11.8", 1);
    assert!(of(&bare).is_none(), "a name that is not a JSON string");
    assert!(of("").is_none() && of("header\n0\n0\n").is_some());
}

#[test]
fn a_line_that_does_not_decode_is_no_toolchain() {
    let text = raw(&three(), 3);
    for (from, to, name) in [
        ("\tcuda\t12.4\t", "\tcuda\tx\t", "cuda-12.4"),
        ("\tcuda\t12.4\t", "\trocm\t12.4\t", "cuda-12.4"),
        (
            "\"cuda-11.8\"\t",
            "\"cuda-11.8\\u0041\"\t",
            "cuda-11.8\\u0041",
        ),
        (
            "\tlinked\t\"/opt/cuda-12.4\"",
            "\tfound\t\"/opt/cuda-12.4\"",
            "cuda-12.4",
        ),
        ("\"cuda-11.8\"\t", "\"../../x\"\t", "../../x"),
    ] {
        let text = text.replacen(from, to, 1);
        let t = Toolchains::of_copy(Arc::new(text), START).unwrap();
        assert_eq!(t.get(name), None, "{to}");
        assert!(!t.contains_key(name));
        assert_eq!(t.len(), 2, "{to}");
        assert!(t.keys().all(|n| n != name));
        assert_eq!(t.upstream_of(name), None);
    }
}

#[test]
fn no_change_to_a_copys_bytes_makes_a_question_panic() {
    let mut entries = three();
    entries[2].1.root = "/opt/a\tb \"c\"/é/".into();
    let owned: Toolchains = entries
        .iter()
        .map(|(n, e)| (n.to_string(), e.clone()))
        .collect();
    let text = format!("header\n{}", owned.encode_copy(START).unwrap());
    let bytes = text.as_bytes();
    for i in 0..bytes.len() {
        for b in [b'\n', b'\t', b'"', b'\\', b'x', b'/', 0xff] {
            let mut changed = bytes.to_vec();
            changed[i] = b;
            let Ok(changed) = String::from_utf8(changed) else {
                continue;
            };
            let Some(t) = Toolchains::of_copy(Arc::new(changed.clone()), START) else {
                continue;
            };
            for (name, e) in &entries {
                let _ = (t.get(name), t.upstream_of(name));
                for found in t.with_root(&root_key(&e.root)) {
                    assert_eq!(root_key(&found.root), root_key(&e.root), "a root it is not");
                }
            }
            let _ = t.iter().count();
            let mut t = t;
            t.insert("cuda-13.0".into(), entry("/opt/cuda-13.0", "13.0"));
            t.retain(|n, _| n != "cuda-11.8");
        }
    }
}

#[test]
fn roots_are_found_by_their_components_among_lines_and_entries_held_whole() {
    let mut entries = three();
    entries[0].1.root = "/opt//cuda-11.8/".into();
    entries[2].1.root = "/site/a\tb".into();
    let mut t = copy(&entries);
    let roots = |t: &Toolchains, key: &str| -> Vec<String> {
        t.with_root(key.as_bytes())
            .map(|e| e.version.to_string())
            .collect()
    };
    assert_eq!(roots(&t, "/opt/cuda-11.8"), ["11.8"]);
    assert_eq!(roots(&t, "/opt/cuda-12.4"), ["12.4"]);
    assert_eq!(roots(&t, "/site/a\tb"), ["12.4"]);
    assert!(roots(&t, "/opt").is_empty() && roots(&t, "/opt/cuda-12.4/bin").is_empty());
    // A change is seen by the next question.
    t.insert("cuda-13.0".into(), entry("/opt/cuda-13.0", "13.0"));
    t.get_mut("cuda-12.4").unwrap().root = "/elsewhere".into();
    assert_eq!(roots(&t, "/opt/cuda-13.0"), ["13.0"]);
    assert!(roots(&t, "/opt/cuda-12.4").is_empty());
    assert_eq!(roots(&t, "/elsewhere"), ["12.4"]);
    t.remove("cuda-13.0");
    assert!(roots(&t, "/opt/cuda-13.0").is_empty());
}

#[test]
fn an_upstreams_toolchains_go_under_the_own_and_remember_their_upstream() {
    let own = copy(&[("cuda-12.4", entry("/mine/cuda-12.4", "12.4"))]);
    let site = Upstream {
        root: "/site".into(),
        views: Arc::from(Path::new("/site/views")),
    };
    let other = Upstream {
        root: "/other".into(),
        views: Arc::from(Path::new("/other/views")),
    };
    let mut t = own;
    t.layer_under(copy(&three()), site.clone());
    let shadowed: Toolchains = [("cuda-12.4".to_string(), entry("/other/x", "12.4"))]
        .into_iter()
        .collect();
    t.layer_under(shadowed, other);
    assert_eq!(
        t.get("cuda-12.4").unwrap().root,
        Path::new("/mine/cuda-12.4")
    );
    assert_eq!(t.upstream_of("cuda-12.4"), None);
    assert_eq!(t.upstream_of("cuda-11.8"), Some(&site));
    assert_eq!(t.keys().count(), 3);
    let from: Vec<&str> = t.from_upstreams().map(|(n, _)| n).collect();
    assert_eq!(from, ["cuda-11.8", "cuda-12.4-site"]);
    // /other's only toolchain is shadowed: its views are no toolchain's.
    assert_eq!(
        t.upstream_view_dirs(),
        [Arc::from(Path::new("/site/views"))]
    );
    assert_eq!(t.with_root(b"/other/x").count(), 0);
    assert_eq!(t.with_root(b"/site/cuda-12.4").count(), 1);
}

#[test]
fn changes_to_a_copy_are_the_maps_changes() {
    let mut t = copy(&three());
    let shared = t.clone();
    assert_eq!(
        t.insert("cuda-12.4".into(), entry("/new", "12.4")),
        Some(three()[1].1.clone())
    );
    assert_eq!(t.insert("cuda-10.2".into(), entry("/x", "10.2")), None);
    assert_eq!(t.remove("cuda-11.8"), Some(three()[0].1.clone()));
    t.get_mut("cuda-12.4-site").unwrap().system = Some(System {
        prefix: "/usr".into(),
        tools: Vec::new(),
        tools_from: "dpkg".into(),
    });
    let names: Vec<&str> = t.keys().collect();
    assert_eq!(names, ["cuda-10.2", "cuda-12.4", "cuda-12.4-site"]);
    assert_eq!(t["cuda-12.4"].root, Path::new("/new"));
    assert_eq!(
        shared.get("cuda-12.4"),
        Some(&three()[1].1),
        "a clone keeps its own"
    );
    t.retain(|n, e| {
        e.kind = Kind::Cuda;
        n != "cuda-10.2"
    });
    let all: Vec<(String, Entry)> = t.clone().into_iter().collect();
    assert_eq!(all.len(), 2);
    let text = toml::to_string(&crate::store::toolchain::registry::Registry {
        toolchains: t.clone(),
        ..Default::default()
    })
    .unwrap();
    let back: crate::store::toolchain::registry::Registry = toml::from_str(&text).unwrap();
    assert_eq!(back.toolchains, t);
}
