//! The unit tests of the torch guard (`guard/mod.rs`).

use super::*;
use crate::test_support::captured;

fn torch(file: &str) -> TorchVersion {
    let text = captured(file);
    parse_version_py(Path::new("/site/torch"), &text)
}

fn v(s: &str) -> Version {
    s.parse().unwrap()
}

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

#[test]
fn reads_annotated_and_plain_version_files() {
    let t = torch("torch-version.py-2.15.0-cu132");
    assert_eq!(t.version.as_deref(), Some("2.15.0+cu132"));
    assert_eq!(t.cuda.as_deref(), Some("13.2"));
    assert_eq!(t.hip, None);
    assert_eq!(t.built_for(Kind::Cuda), Some(v("13.2")));

    let t = torch("torch-version.py-rocm6.0");
    assert_eq!(t.cuda, None);
    assert_eq!(t.hip.as_deref(), Some("6.0.32830-d62f6a171"));
    assert_eq!(t.built_for(Kind::Rocm), Some(v("6.0")));
    assert_eq!(t.built_for(Kind::Cuda), None);

    let t = torch("torch-version.py-2.8.0-cu128");
    assert_eq!(t.built_for(Kind::Cuda), Some(v("12.8")));
}

#[test]
fn recognises_extension_builds_in_every_include_form() {
    let site = "/v/lib/python3.11/site-packages/torch/include";
    for form in [
        format!("-I{site} -c x.cu"),
        format!("-I {site} -c x.cu"),
        format!("-isystem {site}/torch/csrc/api/include -c x.cu"),
        format!("-isystem={site} -c x.cu"),
        format!("--include-path {site} -c x.cu"),
    ] {
        assert_eq!(
            torch_extension_build(&args(&form)),
            Some(Some(PathBuf::from(site))),
            "{form}"
        );
    }
    assert_eq!(
        torch_extension_build(&args("-DTORCH_EXTENSION_NAME=ext -c x.cu")),
        Some(None)
    );
    assert_eq!(torch_extension_build(&args("-I/usr/include -c x.cu")), None);
    assert_eq!(torch_extension_build(&args("--version")), None);
}

#[test]
fn policies_compare_major_minor_or_major() {
    let t = torch("torch-version.py-2.15.0-cu132");
    assert_eq!(
        compare(Kind::Cuda, &v("13.2.86"), &t, TorchCheck::Minor),
        Verdict::Match
    );
    assert_eq!(
        compare(Kind::Cuda, &v("13.0.1"), &t, TorchCheck::Minor),
        Verdict::Mismatch { torch: v("13.2") }
    );
    assert_eq!(
        compare(Kind::Cuda, &v("13.0.1"), &t, TorchCheck::Major),
        Verdict::Match
    );
    assert_eq!(
        compare(Kind::Cuda, &v("12.4"), &t, TorchCheck::Major),
        Verdict::Mismatch { torch: v("13.2") }
    );
    assert_eq!(
        compare(Kind::Cuda, &v("12.4"), &t, TorchCheck::Off),
        Verdict::Off
    );
    let rocm = torch("torch-version.py-rocm6.0");
    assert_eq!(
        compare(Kind::Cuda, &v("12.4"), &rocm, TorchCheck::Minor),
        Verdict::NotBuiltFor
    );
    assert_eq!(
        compare(Kind::Rocm, &v("6.0.2"), &rocm, TorchCheck::Minor),
        Verdict::Match
    );
    assert_eq!(
        compare(Kind::Rocm, &v("6.2.4"), &rocm, TorchCheck::Minor),
        Verdict::Mismatch { torch: v("6.0") }
    );
}

#[test]
fn the_environment_variable_beats_the_file() {
    let file = Some((TorchCheck::Major, Path::new("/p/gpuenv.toml")));
    assert_eq!(
        Policy::choose(Some("off"), file).unwrap().check,
        TorchCheck::Off
    );
    assert_eq!(Policy::choose(None, file).unwrap().check, TorchCheck::Major);
    assert_eq!(Policy::choose(None, None).unwrap().check, TorchCheck::Minor);
    assert!(Policy::choose(Some("loose"), None).is_err());
}
