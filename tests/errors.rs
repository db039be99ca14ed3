//! How every error is laid out: `error:` the message, `caused by:` each cause the message
//! does not already say, then the `hint:` lines, last.

mod common;

use fs_err as fs;

use common::*;

fn stderr_of_failing(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.gpuenv().args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "gpuenv {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn linking_a_missing_directory_gives_the_message_its_cause_and_the_fix_in_that_order() {
    let sb = Sandbox::new();
    let missing = sb.path("no-such-cuda");
    let err = stderr_of_failing(&sb, &["link", "cuda-12.4", missing.to_str().unwrap()]);
    assert_eq!(
        err,
        format!(
            "error: cannot link cuda-12.4\n  caused by: {} does not exist\nhint: give the directory that holds bin/nvcc (CUDA) or bin/hipcc (ROCm), e.g. /usr/local/cuda-12.4\n",
            missing.display()
        )
    );
}

#[test]
fn an_unreadable_state_file_is_named_once_with_the_system_reason_as_its_cause() {
    let sb = Sandbox::new();
    // A directory where the state file belongs: reading it fails even as root.
    let settings = sb.gpuenv_home().join("settings.toml");
    fs::create_dir_all(&settings).unwrap();
    let err = stderr_of_failing(&sb, &["list"]);
    assert_eq!(
        err,
        format!(
            "error: cannot read gpuenv's state file {}\n  caused by: Is a directory (os error 21)\n",
            settings.display()
        )
    );
}

#[test]
fn a_project_pinning_an_unregistered_toolchain_ends_with_how_to_get_it() {
    let sb = Sandbox::new();
    let proj = sb.path("proj");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"12.4\"\n");
    let out = sb.gpuenv().current_dir(&proj).arg("show").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with("error: cuda-12.4 is not installed: the pin at ")
            && lines[0].ends_with("asks for it, and no registered toolchain matches"),
        "{err}"
    );
    assert_eq!(
        lines[1..],
        ["hint: install it with `gpuenv install cuda-12.4`, or register a toolkit already on disk with `gpuenv link cuda-12.4 <path>` (`gpuenv list` shows what is registered)"],
        "{err}"
    );
}
