use super::*;

fn fp(cwd: &str, file: Option<&str>) -> Fingerprint {
    Fingerprint {
        cwd: cwd.into(),
        vars: vec![("GPUENV_TOOLCHAIN".into(), None)],
        file: file.map(|f| {
            (
                PathBuf::from(f),
                Stamp {
                    mtime_ns: 5,
                    size: 1,
                    ..Stamp::default()
                },
            )
        }),
        settings: ("/h/settings.toml".into(), None),
        ..Default::default()
    }
}

#[test]
fn files_that_would_be_found_first_must_stay_absent() {
    let got = missing_toolchain_files(&fp("/p/a/b", Some("/p/a/gpuenv.toml")));
    let want: Vec<PathBuf> = [
        "/p/a/b/gpuenv.toml",
        "/p/a/b/.gpuenv.toml",
        "/p/a/.gpuenv.toml",
    ]
    .map(PathBuf::from)
    .to_vec();
    assert_eq!(got, want);
    // No file at all: every directory up to `/`.
    assert_eq!(missing_toolchain_files(&fp("/p/a", None)).len(), 6);
}

#[test]
fn a_racy_or_foreign_directory_is_never_armed() {
    let home = Home::new("/nonexistent");
    let mut f = fp("/p", None);
    assert!(arm(&home, &f, None, None, true).is_none(), "no $PWD");
    assert!(arm(&home, &f, Some("/elsewhere"), None, true).is_none());
    // A toolchain file written just now: a second edit may keep its time.
    let just_now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    f.file = Some((
        "/p/gpuenv.toml".into(),
        Stamp {
            mtime_ns: just_now,
            size: 1,
            ..Stamp::default()
        },
    ));
    assert!(arm(&home, &f, Some("/p"), None, true).is_none());
}

#[test]
fn a_quiet_run_outside_projects_holds_in_any_such_directory() {
    let home = Home::new("/nonexistent");
    let f = fp("/p", None);
    let path = |p: &str| Some(std::ffi::OsStr::new(p).to_owned());
    let place = |pwd: &str, path: Option<std::ffi::OsString>, quiet: bool| {
        arm(&home, &f, Some(pwd), path.as_deref(), quiet).map(|c| c.place)
    };
    assert_eq!(place("/p", path("/usr/bin:/bin"), true), Some(Place::Plain));
    assert_eq!(place("/p", None, true), Some(Place::Plain));
    // A run that said something says it again in the next directory.
    assert_eq!(place("/p", None, false), Some(Place::Dir("/p".into())));
    // `bin` and an empty entry are found from `$PWD`.
    for relative in ["bin:/usr/bin", "/usr/bin::/bin"] {
        assert_eq!(
            place("/p", path(relative), true),
            Some(Place::Dir("/p".into())),
            "{relative}"
        );
    }
    // A toolchain file found (even one not applied) ties the check to its directory.
    let with_file = fp("/p/a", Some("/p/gpuenv.toml"));
    let check = arm(&home, &with_file, Some("/p/a"), None, true);
    assert!(check.is_none_or(|c| c.place == Place::Dir("/p/a".into())));
    // The walk replaces the list of files that must stay absent; other files stay.
    let c = arm(&home, &f, Some("/p"), None, true).unwrap();
    assert_eq!(c.absent, vec![PathBuf::from("/h/settings.toml")]);
    let bash = render(Some(&c), Shell::Bash);
    assert!(bash.contains("[[ $PWD == /*"), "{bash}");
    assert!(bash.contains("! -e $__gpuenv_dir/.gpuenv.toml"), "{bash}");
    let fish = render(Some(&c), Shell::Fish);
    assert!(fish.contains("string match -q '/*' -- \"$PWD\""), "{fish}");
}

#[test]
fn values_are_quoted_for_each_shell() {
    let c = Check {
        place: Place::Dir("/it's $x".into()),
        vars: vec![("VIRTUAL_ENV".into(), Some("-n".into()))],
        same_time: vec![],
        same_text: vec![("/p/gpuenv.toml".into(), "cuda = \"12.4\"\n".into())],
        absent: vec!["/a b/gpuenv.toml".into()],
    };
    let bash = render(Some(&c), Shell::Bash);
    assert!(bash.contains(r"$PWD == '/it'\''s $x'"), "{bash}");
    assert!(bash.contains("${VIRTUAL_ENV-} == '-n'"), "{bash}");
    let fish = render(Some(&c), Shell::Fish);
    assert!(fish.contains(r#"test "x$PWD" = x'/it\'s $x'"#), "{fish}");
    assert!(fish.contains("not test -e '/a b/gpuenv.toml'"), "{fish}");
    assert!(
        bash.contains("[[ $__gpuenv_text == 'cuda = \"12.4\"\n' ]]"),
        "{bash}"
    );
    assert!(
        fish.contains("test \"x$text\" = x'cuda = \"12.4\"\n'"),
        "{fish}"
    );
}

#[test]
fn bash_asks_gpuenv_while_its_comparisons_ignore_case() {
    let c = Check {
        place: Place::Under("/w/proj".into()),
        vars: vec![],
        same_time: vec![],
        same_text: vec![],
        absent: vec![],
    };
    assert!(render(Some(&c), Shell::Bash).contains("shopt -q nocasematch && return 1"));
    // zsh's `==` never ignores case (CASE_MATCH is about regular expressions), and it has
    // no `shopt`.
    assert!(!render(Some(&c), Shell::Zsh).contains("shopt"));
}
