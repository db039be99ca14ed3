//! The unit tests of `registry.rs`.

use super::*;
use crate::store::toolchain::Kind;

fn entry(kind: Kind, version: &str) -> Entry {
    Entry {
        kind,
        version: version.parse().unwrap(),
        root: PathBuf::from(format!("/opt/{kind}-{version}")),
        source: Source::Linked,
        version_from: "version.json".into(),
        include_dir: PathBuf::from(format!("/opt/{kind}-{version}/include")),
        lib_dir: PathBuf::from(format!("/opt/{kind}-{version}/lib64")),
        collectives: None,
        system: None,
    }
}

fn registry(names: &[(&str, Kind, &str)]) -> Registry {
    let mut r = Registry::default();
    for (n, k, v) in names {
        r.toolchains.insert(n.to_string(), entry(*k, v));
    }
    r
}

#[test]
fn a_prefix_spec_picks_the_highest_matching_version() {
    let r = registry(&[
        ("cuda-12.1.0", Kind::Cuda, "12.1.0"),
        ("cuda-12.4.1", Kind::Cuda, "12.4.1"),
        ("cuda-12.4.0", Kind::Cuda, "12.4.0"),
        ("cuda-11.8", Kind::Cuda, "11.8.89"),
    ]);
    let find = |s: &str| r.find(&s.parse().unwrap()).map(|(n, _)| n.to_string());
    assert_eq!(find("cuda-12").as_deref(), Some("cuda-12.4.1"));
    assert_eq!(find("cuda-12.1").as_deref(), Some("cuda-12.1.0"));
    assert_eq!(find("cuda-11").as_deref(), Some("cuda-11.8"));
    assert_eq!(find("cuda-10"), None);
    assert_eq!(find("rocm-6"), None);
}

#[test]
fn a_match_whose_root_is_missing_here_gives_way_to_one_that_is_here() {
    let here = tempfile::tempdir().unwrap();
    let mut r = registry(&[
        ("cuda-13.0.88", Kind::Cuda, "13.0.88"),
        ("cuda-13.0.3", Kind::Cuda, "13.0.3"),
    ]);
    r.toolchains.get_mut("cuda-13.0.3").unwrap().root = here.path().to_path_buf();
    let find = |r: &Registry, s: &str| r.find(&s.parse().unwrap()).map(|(n, _)| n.to_string());
    assert_eq!(find(&r, "cuda-13.0").as_deref(), Some("cuda-13.0.3"));
    // The only match is chosen, here or not (the prolog then names the missing root).
    r.toolchains.remove("cuda-13.0.3");
    assert_eq!(find(&r, "cuda-13.0").as_deref(), Some("cuda-13.0.88"));
}

#[test]
fn an_old_name_after_nvccs_build_number_still_resolves_and_ranks_as_its_release() {
    let mut r = registry(&[
        ("cuda-13.0.88", Kind::Cuda, "13.0.88"),
        ("cuda-13.0.3", Kind::Cuda, "13.0.3"),
    ]);
    r.toolchains.get_mut("cuda-13.0.88").unwrap().version_from = "bin/nvcc --version".into();
    let find = |s: &str| r.find(&s.parse().unwrap()).map(|(n, _)| n.to_string());
    assert_eq!(find("cuda-13.0").as_deref(), Some("cuda-13.0.3"));
    assert_eq!(find("cuda-13").as_deref(), Some("cuda-13.0.3"));
    assert_eq!(find("cuda-13.0.88").as_deref(), Some("cuda-13.0.88"));
}

#[test]
fn plain_names_win_over_labelled_ones_of_the_same_version() {
    let r = registry(&[
        ("cuda-11.3-conda", Kind::Cuda, "11.3.109"),
        ("cuda-11.3", Kind::Cuda, "11.3.109"),
    ]);
    let (n, _) = r.find(&"cuda-11".parse().unwrap()).unwrap();
    assert_eq!(n, "cuda-11.3");
    let (n, _) = r.find(&"cuda-11.3-conda".parse().unwrap()).unwrap();
    assert_eq!(n, "cuda-11.3-conda");
}

fn save(home: &Home, r: &Registry) {
    Registry::update(home, |x| {
        *x = r.clone();
        Ok::<_, StateError>(())
    })
    .unwrap();
}

#[test]
fn each_write_keeps_the_state_it_replaces_as_the_backup() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let first = registry(&[("rocm-6.2.4", Kind::Rocm, "6.2.4")]);
    save(&home, &first);
    assert!(!home.settings_backup().exists(), "nothing to back up yet");
    let second = registry(&[("cuda-12.4", Kind::Cuda, "12.4.1")]);
    save(&home, &second);
    let bak = fs_err::read_to_string(home.settings_backup()).unwrap();
    assert_eq!(toml::from_str::<Registry>(&bak).unwrap(), first);

    // An emptied file loads with a notice naming it and the backup, and the next
    // write does not make the empty file the backup.
    fs_err::write(home.settings(), "").unwrap();
    let loaded = Registry::load(&home).unwrap();
    assert!(loaded.toolchains.is_empty());
    let notice = loaded.notice.expect("an empty file is noticed");
    let message = notice.to_string();
    assert!(
        message.contains(&home.settings().display().to_string()),
        "{message}"
    );
    let hints = notice.hints().join("\n");
    let restore = format!(
        "`cp {} {}`",
        home.settings_backup().display(),
        home.settings().display()
    );
    assert!(hints.contains(&restore), "{hints}");
    save(&home, &Registry::default());
    let bak = fs_err::read_to_string(home.settings_backup()).unwrap();
    assert_eq!(toml::from_str::<Registry>(&bak).unwrap(), first);
}

#[test]
fn round_trips_through_disk_and_reports_corruption_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    assert_eq!(Registry::load(&home).unwrap(), Registry::default());
    let r = registry(&[("rocm-6.2.4", Kind::Rocm, "6.2.4")]);
    save(&home, &r);
    assert_eq!(Registry::load(&home).unwrap(), r);

    fs_err::write(home.settings(), "[toolchains.x\n").unwrap();
    let err = Registry::load(&home).unwrap_err().to_string();
    assert!(
        err.contains(&home.settings().display().to_string()),
        "{err}"
    );
    assert!(err.contains("line 1"), "{err}");
}
