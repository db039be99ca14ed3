//! Bad input gets a clear message that says what, where and what to do, exit status 2, and
//! the state on disk is left as it was.

use fs_err as fs;

use crate::common::*;

fn fails(sb: &Sandbox, dir: &std::path::Path, args: &[&str]) -> String {
    let out = sb.gpuenv().current_dir(dir).args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "gpuenv {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "nothing on stdout on error");
    String::from_utf8(out.stderr).unwrap()
}

fn linked() -> Sandbox {
    let sb = Sandbox::new();
    sb.linked_runfile("cuda-12.4", "cuda-12.4", "12.4.131");
    sb
}

#[test]
fn malformed_toolchain_file_names_file_line_and_column() {
    let sb = linked();
    let proj = sb.project("proj", "[toolchain]\ncuda = \"12.4\n");
    let err = fails(&sb, &proj, &["env"]);
    let file = proj.join("gpuenv.toml").display().to_string();
    assert!(err.contains(&format!("{file}:2:")), "{err}");
}

#[test]
fn unknown_key_is_an_error_not_ignored() {
    let sb = linked();
    let proj = sb.path("proj");
    write(
        &proj.join(".gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\ncudnn = \"9\"\n",
    );
    let err = fails(&sb, &proj, &["show"]);
    assert!(
        err.contains(".gpuenv.toml:3:1: unknown field `cudnn`"),
        "{err}"
    );
    assert!(
        err.contains("expected one of `cuda`, `rocm`, `cuda-arch`, `rocm-arch`"),
        "{err}"
    );
}

#[test]
fn a_pin_matching_nothing_names_the_pin_and_the_install_command() {
    let sb = linked();
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "# needs 12.1\n[toolchain]\ncuda = \"12.1\"\n",
    );
    fs::create_dir_all(proj.join("sub")).unwrap();
    let err = fails(&sb, &proj.join("sub"), &["run", "--", "true"]);
    let file = proj.join("gpuenv.toml").display().to_string();
    assert!(
        err.contains(&format!(
            "cuda-12.1 is not installed: the pin at {file}:3:8 asks for it"
        )),
        "{err}"
    );
    assert!(
        err.contains("hint: install it with `gpuenv install cuda-12.1`"),
        "{err}"
    );
    // Never a silent fallback to the default.
    sb.ok(&["default", "cuda-12.4"]);
    fails(&sb, &proj, &["env"]);
}

#[test]
fn a_torch_pin_without_torch_says_where_it_looked() {
    let sb = linked();
    let proj = sb.project("proj", "[toolchain]\ncuda = \"torch\"\n");
    let err = fails(&sb, &proj, &["show"]);
    assert!(
        err.contains("gpuenv.toml:2:8: cuda = \"torch\", but no torch package was found (looked in: sys.path of "),
        "{err}"
    );
}

#[test]
fn bad_gpuenv_toolchain_and_bad_specs() {
    let sb = linked();
    let out = sb
        .gpuenv()
        .env("GPUENV_TOOLCHAIN", "cuda-12.4,cuda-11.8")
        .arg("show")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("GPUENV_TOOLCHAIN=cuda-12.4,cuda-11.8 names two cuda toolchains"),
        "{err}"
    );
    let err = fails(&sb, sb.dir.path(), &["env", "cuda12"]);
    assert!(
        err.contains("`cuda12` is not a toolchain name or spec"),
        "{err}"
    );
    let err = fails(&sb, sb.dir.path(), &["default", "rocm-6"]);
    assert!(
        err.contains("rocm-6 matches no registered toolchain"),
        "{err}"
    );
}

#[test]
fn linking_a_non_toolchain_or_a_taken_name_changes_nothing() {
    let sb = linked();
    let before = sb.settings().unwrap();
    let views = || {
        fs::read_dir(sb.gpuenv_home().join("views"))
            .unwrap()
            .count()
    };
    let n = views();

    fs::create_dir_all(sb.path("empty/lib64")).unwrap();
    let err = fails(
        &sb,
        sb.dir.path(),
        &["link", "cuda-11.8", sb.path("empty").to_str().unwrap()],
    );
    assert!(
        err.contains("found neither bin/nvcc nor bin/hipcc"),
        "{err}"
    );
    assert!(
        err.contains("hint: give the directory that holds bin/nvcc"),
        "{err}"
    );

    let err = fails(
        &sb,
        sb.dir.path(),
        &["link", "cuda-11.8", sb.path("missing").to_str().unwrap()],
    );
    assert!(err.contains("missing does not exist"), "{err}");

    let other = cuda_10_2(&sb.path("cuda-10.2"));
    let err = fails(
        &sb,
        sb.dir.path(),
        &["link", "cuda-12.4", other.to_str().unwrap()],
    );
    assert!(
        err.contains("is cuda 10.2 (cuda 10.2.89 from version.txt is a build number; the release it is part of is 10.2), which the name cuda-12.4 does not describe"),
        "{err}"
    );
    let err = fails(
        &sb,
        sb.dir.path(),
        &["link", "cuda-12.4", sb.path("cuda-12.4").to_str().unwrap()],
    );
    assert!(err.contains("cuda-12.4 is already registered"), "{err}");
    let err = fails(
        &sb,
        sb.dir.path(),
        &["link", "cuda-10.2-", other.to_str().unwrap()],
    );
    assert!(err.contains("is not a toolchain name"), "{err}");

    assert_eq!(sb.settings().unwrap(), before);
    assert_eq!(views(), n);
}

#[test]
fn a_corrupt_state_file_is_reported_with_its_path_and_kept() {
    let sb = linked();
    let settings = sb.gpuenv_home().join("settings.toml");
    fs::write(
        &settings,
        "[toolchains.cuda-12.4]\nkind = \"cuda\"\nversion = \n",
    )
    .unwrap();
    let other = cuda_10_2(&sb.path("cuda-10.2")).display().to_string();
    for args in [&["list"][..], &["show"], &["link", "cuda-10.2", &other]] {
        let err = fails(&sb, sb.dir.path(), args);
        assert!(
            err.contains(&format!(
                "gpuenv's state file {} is corrupt",
                settings.display()
            )),
            "{err}"
        );
        assert!(err.contains("line 3"), "{err}");
    }
    assert_eq!(
        fs::read_to_string(&settings).unwrap(),
        "[toolchains.cuda-12.4]\nkind = \"cuda\"\nversion = \n"
    );
}

#[test]
fn a_typo_in_one_settings_value_is_that_values_error_not_a_corrupt_file() {
    let sb = linked();
    let settings = sb.gpuenv_home().join("settings.toml");
    let good = fs::read_to_string(&settings).unwrap();
    // Valid TOML, one value of the wrong form: a typo in a key of [build].
    let typo = format!("{good}\n[build]\ncahce = \"ccache\"\n");
    fs::write(&settings, &typo).unwrap();
    let err = fails(&sb, sb.dir.path(), &["list"]);
    let line = typo.lines().position(|l| l.starts_with("cahce")).unwrap() + 1;
    assert!(
        err.contains(&format!("{}:{line}:", settings.display())),
        "{err}"
    );
    assert!(err.contains("cahce"), "{err}");
    assert!(!err.contains("is corrupt"), "{err}");
    assert!(!err.contains("move it away"), "{err}");
    assert!(err.contains(&format!("fix line {line}")), "{err}");
    assert_eq!(fs::read_to_string(&settings).unwrap(), typo);
}

#[test]
fn pin_never_overwrites_a_broken_file() {
    let sb = linked();
    let proj = sb.path("proj");
    let text = "[toolchain]\ncuda = 12\n";
    write(&proj.join("gpuenv.toml"), text);
    let err = fails(&sb, &proj, &["pin", "cuda-12.4"]);
    assert!(err.contains("gpuenv.toml:2:8"), "{err}");
    assert_eq!(fs::read_to_string(proj.join("gpuenv.toml")).unwrap(), text);
    let err = fails(&sb, &proj, &["pin", "--arch", "sm_90"]);
    assert!(
        err.contains("cuda-arch `sm_90` is not a compute capability"),
        "{err}"
    );
}

#[test]
fn run_of_a_missing_command_says_so() {
    let sb = linked();
    // Not a usage error: the status a shell gives a command it cannot find.
    let out = sb
        .gpuenv()
        .current_dir(sb.dir.path())
        .args(["run", "cuda-12", "--", "no-such-tool-xyz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(out.stdout.is_empty(), "nothing on stdout on error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-tool-xyz: command not found"), "{err}");
}
