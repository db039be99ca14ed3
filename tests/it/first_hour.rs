//! What a new user meets in the first hour, through the built binary: output control
//! (-v, -q, GPUENV_LOG), the tips and messages of common mistakes, and the small commands
//! people reach for (prefix, which --json, completions --help, list, --version).

use crate::common::*;
use serde_json::Value;

/// CUDA 12.4 and 13.0 linked, a project pinned to 12.4.
fn linked() -> Sandbox {
    let sb = Sandbox::new();
    let c124 = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    let c130 = cuda_runfile(&sb.path("opt/cuda-13.0"), "13.0.88");
    sb.ok(&["link", "cuda-12.4", c124.to_str().unwrap()]);
    sb.ok(&["link", "cuda-13.0", c130.to_str().unwrap()]);
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    sb
}

fn run(sb: &Sandbox, dir: &str, vars: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut cmd = sb.gpuenv();
    cmd.current_dir(sb.path(dir)).args(args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn verbose_says_what_gpuenv_reads_and_decides_and_quiet_keeps_only_warnings() {
    let sb = linked();
    let (code, _, err) = run(&sb, "proj", &[], &["--verbose", "show"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("verbose: reading ") && err.contains("settings.toml"),
        "{err}"
    );
    assert!(
        err.contains("verbose: toolchain file: ") && err.contains("proj/gpuenv.toml"),
        "{err}"
    );
    assert!(err.contains("verbose: cuda: cuda-12.4 at "), "{err}");

    // The same through the environment, and after the subcommand.
    let (_, _, err) = run(&sb, "proj", &[("GPUENV_LOG", "verbose")], &["show"]);
    assert!(err.contains("verbose: toolchain file: "), "{err}");
    let (_, _, err) = run(&sb, "proj", &[], &["show", "-v"]);
    assert!(err.contains("verbose: toolchain file: "), "{err}");

    // Quiet: no notes; warnings stay.
    let (code, _, err) = run(&sb, "proj", &[], &["-q", "pin", "cuda-13.0"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let (code, _, err) = run(
        &sb,
        "proj",
        &[("GPUENV_LOG", "quiet")],
        &["pin", "cuda-12.9"],
    );
    assert_eq!(code, 0);
    assert!(err.starts_with("warning: pinned cuda-12.9"), "{err}");
    assert!(!err.contains("info:"), "{err}");
    // The flag wins over the variable.
    let (_, _, err) = run(&sb, "proj", &[("GPUENV_LOG", "quiet")], &["-v", "show"]);
    assert!(err.contains("verbose:"), "{err}");
}

#[test]
fn a_mistyped_flag_gets_no_tip_about_version_and_run_without_dashes_gets_the_right_one() {
    let sb = linked();
    let (code, _, err) = run(&sb, "proj", &[], &["--verbos", "list"]);
    assert_eq!(code, 2);
    assert!(!err.contains("'--version'"), "{err}");
    let (code, _, _) = run(&sb, "proj", &[], &["--verbose", "list"]);
    assert_eq!(code, 0, "--verbose is a flag now");

    let (code, _, err) = run(&sb, "proj", &[], &["run", "nvcc", "--version"]);
    assert_eq!(code, 2);
    assert!(err.contains("tip: gpuenv run -- nvcc --version"), "{err}");
    assert!(!err.contains("nvcc -- --version"), "{err}");
    let (_, _, err) = run(
        &sb,
        "proj",
        &[],
        &["run", "cuda-13.0", "nvcc", "-c", "a b.cu"],
    );
    assert!(
        err.contains("tip: gpuenv run cuda-13.0 -- nvcc -c 'a b.cu'"),
        "{err}"
    );
    // And the line it suggests works.
    let (code, out, err) = run(&sb, "proj", &[], &["run", "--", "nvcc", "--version"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("release 12.4"), "{out}");
}

#[test]
fn running_a_command_that_does_not_exist_says_command_not_found() {
    let sb = linked();
    let (code, _, err) = run(&sb, "proj", &[], &["run", "--", "nosuchcmd", "x"]);
    // A shell's status for a command it cannot find.
    assert_eq!(code, 127);
    assert!(err.contains("error: nosuchcmd: command not found"), "{err}");
    assert!(!err.contains("os error"), "{err}");
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn pin_refuses_what_cannot_work_and_prints_each_error_once() {
    let sb = linked();
    let toml = sb.path("proj/gpuenv.toml");
    let before = fs_err::read_to_string(&toml).unwrap();

    let (code, _, err) = run(&sb, "proj", &[], &["pin", "cuda"]);
    assert_eq!(code, 2);
    assert_eq!(
        err.matches("is not a toolchain name or spec").count(),
        1,
        "{err}"
    );
    assert!(err.contains("hint: name a version too"), "{err}");

    let (code, _, err) = run(&sb, "proj", &[], &["pin", "cuda-99"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cuda-99 matches no registered toolchain and no CUDA release"),
        "{err}"
    );
    assert_eq!(
        fs_err::read_to_string(&toml).unwrap(),
        before,
        "the file is unchanged"
    );

    // 13.0 is registered here and cannot target Maxwell (sm_50).
    let (code, _, err) = run(&sb, "proj", &[], &["pin", "cuda-13.0", "--arch", "5.0"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("CUDA 13.0.88 cannot target 5.0 (sm_50)"),
        "{err}"
    );
    assert!(err.contains("CUDA 10.2 to 12.9 can target sm_50"), "{err}");
    assert_eq!(fs_err::read_to_string(&toml).unwrap(), before);
    // The arch goes with the file's pin when the command names no toolkit.
    run(&sb, "proj", &[], &["pin", "cuda-13.0"]);
    let (code, _, _) = run(&sb, "proj", &[], &["pin", "--arch", "5.0"]);
    assert_eq!(code, 2);

    // A toolkit that is only a spec (not installed yet) gets a warning, not a refusal.
    let (code, _, err) = run(&sb, "proj", &[], &["pin", "cuda-13.1", "--arch", "5.0"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: CUDA 13.1 cannot target 5.0"),
        "{err}"
    );
}

#[test]
fn check_compares_without_claiming_to_build() {
    let sb = linked();
    let site = torch_package(
        &sb.path("venv/lib/python3.11/site-packages"),
        "2.5.1+cu121",
        Some("12.1"),
        None,
    );
    write_exe(&sb.path("venv/bin/python3"), "#!/bin/sh\n");
    let venv = sb.path("venv");
    let torch_before = fs_err::read_to_string(site.join("torch/version.py")).unwrap();
    let (code, _, err) = run(
        &sb,
        "proj",
        &[("VIRTUAL_ENV", venv.to_str().unwrap())],
        &["check"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("a PyTorch extension built here would be refused: nvcc is cuda 12.4.131 but torch 2.5.1+cu121 was built for cuda 12.1"), "{err}");
    assert!(!err.contains("refusing to build"), "{err}");
    let torch_after = fs_err::read_to_string(site.join("torch/version.py")).unwrap();
    assert_eq!(torch_after, torch_before, "check changed torch");
}

#[test]
fn prefix_and_which_json_name_the_toolkit_root() {
    let sb = linked();
    let (code, out, err) = run(&sb, "proj", &[], &["prefix", "cuda-13"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), sb.path("opt/cuda-13.0").to_str().unwrap());
    let (_, out, _) = run(&sb, "proj", &[], &["prefix"]);
    assert_eq!(
        out.trim(),
        sb.path("opt/cuda-12.4").to_str().unwrap(),
        "the active one here"
    );
    let (code, _, err) = run(&sb, "proj", &[], &["prefix", "cuda-11"]);
    assert_eq!(code, 2);
    assert!(err.contains("hint:"), "{err}");

    let (code, out, err) = run(&sb, "proj", &[], &["which", "nvcc", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["path"],
        sb.path("opt/cuda-12.4/bin/nvcc").to_str().unwrap()
    );
    assert_eq!(v["toolchain"], "cuda-12.4");
    assert_eq!(v["version"], "12.4.131");
    assert!(v["reason"].as_str().unwrap().contains("gpuenv.toml"), "{v}");
}

#[test]
fn completions_help_says_where_each_shell_file_goes_without_root() {
    let sb = Sandbox::new();
    let (code, out, _) = run(&sb, ".", &[], &["completions", "bash", "--help"]);
    assert_eq!(code, 0);
    for path in [
        "~/.local/share/bash-completion/completions/gpuenv",
        "~/.zfunc/_gpuenv",
        "fpath+=~/.zfunc",
        "~/.config/fish/completions/gpuenv.fish",
    ] {
        assert!(out.contains(path), "{path} missing from:\n{out}");
    }
}

#[test]
fn list_has_a_header_on_a_terminal_only() {
    if !have_tool("script") {
        return;
    }
    let sb = linked();
    let (_, piped, _) = run(&sb, "proj", &[], &["list"]);
    assert!(
        piped.lines().next().unwrap().contains("cuda-12.4"),
        "{piped}"
    );
    assert!(!piped.contains("NAME"), "{piped}");

    // util-linux `script` gives the command a terminal.
    let gpuenv = assert_cmd::cargo::cargo_bin("gpuenv");
    let shown = std::process::Command::new("script")
        .args(["-qec", &format!("{} list", gpuenv.display()), "/dev/null"])
        .current_dir(sb.path("proj"))
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.contains("NAME") && header.contains("VERSION") && header.contains("ROOT"),
        "{text}"
    );
}

#[test]
fn version_prints_the_commit_and_its_date() {
    let sb = Sandbox::new();
    let (code, out, _) = run(&sb, ".", &[], &["--version"]);
    assert_eq!(code, 0);
    let repo = env!("CARGO_MANIFEST_DIR");
    let version = format!("gpuenv {}", env!("CARGO_PKG_VERSION"));
    // Built from a tarball: the version alone.
    if !std::path::Path::new(repo).join(".git").exists() {
        assert_eq!(out.trim(), version);
        return;
    }
    if !have_tool("git") {
        return;
    }
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(repo)
            .output()
            .unwrap();
        succeeded(&out).trim().to_string()
    };
    // A prefix of HEAD's full hash, and the day of its commit (from its ISO 8601 date).
    let head = git(&["rev-parse", "HEAD"]);
    let day = git(&["show", "-s", "--format=%cI", "HEAD"])[..10].to_string();
    let (commit, date) = out
        .trim()
        .strip_prefix(&format!("{version} ("))
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|rest| rest.split_once(' '))
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(
        commit.len() >= 7 && head.starts_with(commit),
        "{commit} is not a short form of HEAD {head}"
    );
    assert_eq!(date, day, "{out}");
}

#[test]
fn every_doctor_finding_links_to_a_section_of_the_docs_in_the_repository() {
    // Relative to the repository's root, so the link is to the docs of this very version.
    let sb = linked();
    let out = sb
        .gpuenv()
        .current_dir(sb.path("proj"))
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/docs");
    let findings = report["findings"].as_array().unwrap();
    assert!(findings.len() >= 13, "{report}");
    for f in findings {
        let url = f["docs"]
            .as_str()
            .unwrap_or_else(|| panic!("no docs link: {f}"));
        let (page, anchor) = url
            .strip_prefix("docs/")
            .and_then(|rest| rest.split_once('#'))
            .unwrap_or_else(|| panic!("{url}"));
        let text = fs_err::read_to_string(format!("{docs}/{page}")).unwrap();
        let heading = text.lines().any(|l| {
            l.starts_with('#')
                && l.trim_start_matches('#')
                    .trim()
                    .to_lowercase()
                    .replace(' ', "-")
                    == anchor
        });
        assert!(
            heading,
            "{page} has no section #{anchor} (linked by {})",
            f["id"]
        );
        if let Some(fm) = f["id"].as_str().filter(|id| id.starts_with("FM-")) {
            assert!(
                text.contains(&format!("<a id=\"{anchor}\"></a>")),
                "{fm}: no stable anchor"
            );
        }
    }
}

#[test]
fn the_repository_documents_itself_and_points_nowhere_outside() {
    let outside = ["..", "shared"].join("/");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![
        root.join("docs"),
        root.join("src"),
        root.join("crates"),
        root.join("scripts"),
    ];
    while let Some(dir) = dirs.pop() {
        for e in fs_err::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p
                .extension()
                .is_some_and(|x| ["rs", "md", "sh", "toml"].contains(&x.to_str().unwrap()))
            {
                files.push(p);
            }
        }
    }
    for f in &files {
        let text = fs_err::read_to_string(f).unwrap();
        assert!(
            !text.contains(&outside),
            "{} points at {outside}",
            f.display()
        );
    }
    for page in ["README.md", "design.md", "failure-modes.md"] {
        assert!(root.join("docs").join(page).is_file(), "docs/{page}");
    }
}

/// `show` prints the arch pins, and when the pin is not installed it still prints the
/// file's settings before the error that says how to install it.
#[test]
fn show_prints_the_arch_pins_even_when_the_pin_is_not_installed() {
    let sb = linked();
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\", \"9.0\"]\n",
    );
    let (code, stdout, stderr) = run(&sb, "proj", &[], &["show"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("cuda: cuda-12.4 ("), "{stdout}");
    assert!(stdout.contains("cuda-arch: 8.0, 9.0 ("), "{stdout}");

    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"11.8\"\ncuda-arch = [\"8.0\", \"9.0\"]\n[build]\narchs = \"off\"\n",
    );
    let (code, stdout, stderr) = run(&sb, "proj", &[], &["show"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    // Nothing on stdout on an error: the settings are said to the person, then the error.
    assert!(stdout.is_empty(), "{stdout}");
    let file = sb.path("proj/gpuenv.toml");
    for line in [
        format!("info: toolchain file: {}", file.display()),
        format!(
            "info: cuda: cuda-11.8 (pinned at {}:2:8; not resolved here: see the error)",
            file.display()
        ),
        format!("info: cuda-arch: 8.0, 9.0 ({}:3:14)", file.display()),
    ] {
        assert!(stderr.lines().any(|l| l == line), "{line}\n{stderr}");
    }
    assert!(stderr.contains("info: build archs: off ("), "{stderr}");
    let error = stderr.find("error: cuda-11.8 is not installed").unwrap();
    assert!(stderr.find("info: cuda-arch").unwrap() < error, "{stderr}");
    assert!(stderr.contains("`gpuenv install cuda-11.8`"), "{stderr}");
    let (code, stdout, _) = run(&sb, "proj", &[], &["show", "--json"]);
    assert_eq!(code, 2);
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["cuda_arch"], serde_json::json!(["8.0", "9.0"]));
    assert_eq!(json["pins"][0]["pin"], "cuda-11.8");
}
