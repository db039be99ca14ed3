//! How every error is laid out: `error:` the message, `caused by:` each cause the message
//! does not already say, then the `hint:` lines, last. Warnings and notes end with their
//! hints the same way, and no message carries a hint in its text.

use fs_err as fs;

use crate::common::*;

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
fn an_unreadable_state_file_is_named_once_with_its_kind_and_why() {
    let sb = Sandbox::new();
    // A directory where the state file belongs: reading it fails even as root.
    let settings = sb.gpuenv_home().join("settings.toml");
    fs::create_dir_all(&settings).unwrap();
    let err = stderr_of_failing(&sb, &["list"]);
    assert_eq!(
        err,
        format!(
            "error: cannot read the settings file {}: it is a directory, not a regular file\nhint: replace it with a regular settings file of a sensible size, or remove it\n",
            settings.display()
        )
    );
}

#[test]
fn a_project_pinning_an_unregistered_toolchain_ends_with_how_to_get_it() {
    let sb = Sandbox::new();
    let proj = sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n");
    let out = sb.gpuenv().current_dir(&proj).arg("show").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    // What the file pins comes first (`show` says it even when it cannot resolve it); the
    // output ends with the error and how to get the toolchain.
    let lines: Vec<&str> = err.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("error: "))
        .expect(&err);
    assert!(
        lines[at].starts_with("error: cuda-12.4 is not installed: the pin at ")
            && lines[at].ends_with("asks for it, and no registered toolchain matches"),
        "{err}"
    );
    assert_eq!(
        lines[at + 1..],
        ["hint: install it with `gpuenv install cuda-12.4`, or register a toolkit already on disk with `gpuenv link cuda-12.4 <path>` (`gpuenv list` shows what is registered)"],
        "{err}"
    );
    assert!(lines[..at].iter().all(|l| l.starts_with("info: ")), "{err}");
}

#[test]
fn a_pin_no_install_source_has_is_not_told_to_run_gpuenv_install() {
    let sb = Sandbox::new();
    let proj = sb.path("proj");
    let cases = [
        (
            "cuda = \"10.2\"",
            "no source of `gpuenv install` has CUDA 10.2 (nvidia from 11.0, pypi from 13.0): register a toolkit already on disk with `gpuenv link cuda-10.2 <path>`, or install it from a gpuenv manifest with `gpuenv install cuda-10.2 --manifest <path|url>` (`gpuenv list` shows what is registered)",
        ),
        (
            "rocm = \"6.2\"",
            "AMD's ROCm wheels start at 7.14, so ROCm 6.2 comes from a gpuenv manifest: `gpuenv install rocm-6.2 --manifest <path|url>`; or register a toolkit already on disk with `gpuenv link rocm-6.2 <path>` (`gpuenv list` shows what is registered)",
        ),
    ];
    for (pin, hint) in cases {
        write(&proj.join("gpuenv.toml"), &format!("[toolchain]\n{pin}\n"));
        let err = stderr_in(&sb, &proj, &["show"]);
        assert_eq!(hints_after(&err, "error: "), [hint], "{pin}");
        // The same holds where a command names the spec.
        let spec = if pin.starts_with("cuda") {
            "cuda-10.2"
        } else {
            "rocm-6.2"
        };
        let err = stderr_in(&sb, &proj, &["prefix", spec]);
        assert!(!err.contains(&format!("`gpuenv install {spec}`")), "{err}");
    }
}

/// Each message in `stderr` (`error:`, `warning:`, `info:`) and its hints, checking the
/// layout on the way: every `hint:` is a line of its own after the message (and causes) it
/// belongs to, and no message line holds one.
#[track_caller]
fn messages_and_hints(stderr: &str) -> Vec<(&str, Vec<&str>)> {
    let mut out: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in stderr.lines() {
        if let Some(hint) = line.strip_prefix("hint: ") {
            let (_, hints) = out.last_mut().expect("a hint follows a message");
            hints.push(hint);
            continue;
        }
        assert!(
            !line.contains("hint:"),
            "a hint inside a message:\n{stderr}"
        );
        if ["error: ", "warning: ", "info: "]
            .iter()
            .any(|p| line.starts_with(p))
        {
            out.push((line, Vec::new()));
        } else {
            let (_, hints) = out.last().expect("stderr starts with a message");
            assert!(
                hints.is_empty(),
                "a message line after its hints:\n{stderr}"
            );
        }
    }
    out
}

/// The hints of the one message that starts with `head`.
#[track_caller]
fn hints_after<'a>(stderr: &'a str, head: &str) -> Vec<&'a str> {
    let found: Vec<_> = messages_and_hints(stderr)
        .into_iter()
        .filter(|(m, _)| m.starts_with(head))
        .collect();
    assert_eq!(found.len(), 1, "one message starting {head:?}:\n{stderr}");
    found.into_iter().next().unwrap().1
}

fn stderr_in(sb: &Sandbox, dir: &std::path::Path, args: &[&str]) -> String {
    let out = sb.gpuenv().current_dir(dir).args(args).output().unwrap();
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn each_mistake_a_new_user_makes_ends_with_its_fix_on_a_line_of_its_own() {
    let sb = Sandbox::new();
    let empty = sb.path("empty");
    fs::create_dir_all(&empty).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["prefix"], "name one: `gpuenv prefix cuda-12.4` (`gpuenv list` shows them)"),
        (&["prefix", "cuda-12.4"], "`gpuenv list` shows what is registered; `gpuenv install cuda-12.4` installs it"),
        (&["prefix", "cuda"], "name a version too: `cuda-12.4`, or any prefix of one such as `cuda-12` (`gpuenv list` shows what is registered)"),
        (&["install"], "`gpuenv install cuda-13.0` installs a release; `gpuenv pin cuda-13.0` pins one here first"),
        (&["which", "./nvcc"], "gpuenv which nvcc"),
        (&["run", "--", "no-such-tool-xyz"], "it is not on PATH, nor in the active toolchain's bin/ (`gpuenv which <tool>` shows where a tool comes from)"),
        (&["pin", "cuda-99"], "`gpuenv list --available cuda` shows the releases; a toolkit gpuenv does not know yet can be registered first with `gpuenv link <name> <path>`"),
        (&["uninstall", "../x"], "`gpuenv list` shows the registered names"),
    ];
    for (args, hint) in cases {
        let err = stderr_in(&sb, &empty, args);
        assert_eq!(hints_after(&err, "error: "), [*hint], "gpuenv {args:?}");
    }
}

#[test]
fn a_toolchain_file_setting_a_variable_gpuenv_owns_says_which_line_to_remove() {
    let sb = Sandbox::new();
    let proj = sb.project("proj", "[env]\nGPUENV_HOME = \"/tmp\"\n");
    let err = stderr_in(&sb, &proj, &["show"]);
    let head = format!(
        "error: {}:2:15: [env] cannot set GPUENV_HOME: variables named GPUENV_* control gpuenv itself",
        proj.join("gpuenv.toml").display()
    );
    assert_eq!(hints_after(&err, &head), ["remove GPUENV_HOME from [env]"]);
}

#[test]
fn an_emptied_state_file_warns_and_says_how_to_get_the_toolchains_back() {
    let sb = Sandbox::new();
    let cuda = sb.linked_runfile("cuda", "cuda-12.4", "12.4.1");
    sb.ok(&["link", "cuda-12.4-b", cuda.to_str().unwrap()]);
    let settings = sb.gpuenv_home().join("settings.toml");
    fs::write(&settings, "").unwrap();
    let err = stderr_in(&sb, &sb.home(), &["list"]);
    let head = format!(
        "warning: gpuenv's state file {} is empty, so no toolchain is registered",
        settings.display()
    );
    let backup = sb.gpuenv_home().join("settings.toml.bak");
    assert_eq!(
        hints_after(&err, &head),
        [format!(
            "the state before gpuenv's last change is in {}: `cp {} {}` brings it back",
            backup.display(),
            backup.display(),
            settings.display()
        )]
    );
}

#[test]
fn a_broken_system_config_and_a_missing_build_cache_warn_with_their_fixes() {
    let sb = Sandbox::new();
    let config = sb.path("etc/config.toml");
    write(&config, "upstreams = 3\n");
    let proj = sb.project("proj", "[build]\ncache = \"sccache\"\n");
    sb.ok(&["trust", proj.join("gpuenv.toml").to_str().unwrap()]);
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("GPUENV_SYSTEM_CONFIG", &config)
        .env("PATH", sb.path("empty-bin"))
        .arg("show")
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        hints_after(
            &err,
            &format!("warning: the system config {}: line 1", config.display())
        ),
        ["the system config takes `upstreams = [\"/path/to/site/gpuenv\"]`, a `[build]` table (`cache`, `shared`), a `[torch]` table (`index-url`) and a `[rocm]` table (`index-url`); fix the file or point GPUENV_SYSTEM_CONFIG at another"]
    );
    assert_eq!(
        hints_after(&err, "warning: the build cache is sccache"),
        ["install it (`apt-get install sccache`, `cargo install sccache`), or set `cache = \"off\"`"]
    );
}

/// The string literals in `code` (escaped quotes kept inside), roughly as Rust reads them.
fn string_literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        match (&mut current, c) {
            (Some(s), '\\') => {
                s.push(c);
                s.extend(chars.next());
            }
            (Some(_), '"') => out.extend(current.take()),
            (Some(s), c) => s.push(c),
            (None, '"') => current = Some(String::new()),
            // A char literal '"' opens no string.
            (None, '\'') => {
                let rest = chars.as_str();
                if rest.starts_with("\"'") {
                    chars.nth(1);
                }
            }
            (None, _) => {}
        }
    }
    out
}

/// gpuenv's own code, file by file, without unit tests and comment lines.
fn library_code() -> Vec<(std::path::PathBuf, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src")];
    for krate in fs::read_dir(root.join("crates")).unwrap() {
        dirs.push(krate.unwrap().path().join("src"));
    }
    let mut files = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 50, "found only {files:?}");
    files
        .into_iter()
        .filter(|f| !f.ends_with("tests.rs"))
        .map(|file| {
            let text = fs::read_to_string(&file).unwrap();
            // Unit tests may quote what they assert.
            let code = text.split("#[cfg(test)]").next().unwrap();
            let code: String = code
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            (file, code)
        })
        .collect()
}

#[test]
fn no_message_gpuenv_writes_carries_its_hint_as_text() {
    // Hints are data (`Diagnostic::hints`, `ui::warn_with_hints`) and one renderer lays them
    // out; a `hint:` typed into a message would be printed inside it, before its causes.
    let mut offenders = Vec::new();
    for (file, code) in library_code() {
        for literal in string_literals(&code) {
            // The renderers' own label is the one `hint:` allowed.
            if literal.contains("hint:") && literal != "hint:" {
                offenders.push(format!("{}: {literal}", file.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "hints written as text:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn every_variable_name_in_gpuenvs_code_comes_from_the_one_list() {
    // docs/variables.md is generated from crates/core/src/facts/vars.rs (a unit test keeps
    // it current); a name spelled out elsewhere could drift from the list.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let listed: Vec<String> = fs::read_to_string(root.join("docs/variables.md"))
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next().map(String::from))
        .collect();
    assert!(
        ["CUDA_HOME", "PATH", "GPUENV_HOME", "NCCL_ROOT"]
            .iter()
            .all(|v| listed.iter().any(|l| l == v)),
        "{listed:?}"
    );
    let mut offenders = Vec::new();
    for (file, code) in library_code() {
        // The list itself; and CMake cache keys, which share a spelling with variables.
        if file.ends_with("facts/vars.rs") || file.ends_with("cmake_cache.rs") {
            continue;
        }
        for literal in string_literals(&code) {
            if listed.contains(&literal) {
                offenders.push(format!("{}: \"{literal}\"", file.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "use the constant in facts::vars instead:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn only_the_diagnostics_list_lets_a_type_be_a_diagnostic() {
    // `diagnostics!` implements `Listed` and puts the type into its crate's `find`; a
    // `Listed` written by hand would make a `Diagnostic` whose hints are never shown.
    let mut offenders = Vec::new();
    for (file, code) in library_code() {
        if !file.ends_with("core/src/diagnostic.rs") && code.contains("Listed for") {
            offenders.push(file.display().to_string());
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn quiet_leaves_out_a_note_together_with_its_hint() {
    let sb = Sandbox::new();
    let out = sb.gpuenv().arg("list").output().unwrap();
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "info: no toolchains registered\nhint: `gpuenv discover --register` finds the ones on this machine; `gpuenv link <name> <path>` adds one\n"
    );
    let out = sb.gpuenv().args(["-q", "list"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
}

/// Mistyped specs get the one they meant, whichever command they are typed to.
#[test]
fn a_mistyped_spec_gets_did_you_mean() {
    let sb = Sandbox::new();
    let empty = sb.path("empty");
    fs::create_dir_all(&empty).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["install", "cuda13.0"], "cuda-13.0"),
        (&["install", "13.0"], "cuda-13.0"),
        (&["install", "cuda 13.0"], "cuda-13.0"),
        (&["install", "cuda", "13.0"], "cuda-13.0"),
        (&["install", "cdua-13.0"], "cuda-13.0"),
        (&["pin", "cdua-12.4"], "cuda-12.4"),
        (&["run", "rcom-6.2", "--", "true"], "rocm-6.2"),
        (&["use", "12.4"], "cuda-12.4"),
    ];
    for (args, meant) in cases {
        let out = sb
            .gpuenv()
            .current_dir(&empty)
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "gpuenv {args:?}: {err}");
        assert_eq!(
            hints_after(&err, "error: "),
            [format!(
                "did you mean `{meant}`? (`gpuenv list` shows what is registered)"
            )],
            "gpuenv {args:?}"
        );
    }
}

/// `cuda = 13.0` is a number to TOML (and 13.10 would be 13.1): the error says to quote it,
/// with the line as it should be.
#[test]
fn an_unquoted_version_in_the_toolchain_file_says_to_quote_it() {
    let sb = Sandbox::new();
    let proj = sb.path("proj");
    for (text, quoted, at) in [
        (
            "[toolchain]\ncuda = 13.0\n",
            "cuda = \"13.0\"",
            "gpuenv.toml:2:8",
        ),
        (
            "[toolchain]\ncuda = \"13.0\"\ncuda-arch = [\"8.0\", 9.0]\n",
            "\"9.0\"",
            "gpuenv.toml:3:21",
        ),
    ] {
        write(&proj.join("gpuenv.toml"), text);
        let err = stderr_in(&sb, &proj, &["show"]);
        assert!(err.contains(at), "{err}");
        assert_eq!(
            hints_after(&err, "error: "),
            [format!(
                "quote it: {quoted} (unquoted, TOML reads a version as a number, and 13.10 as 13.1)"
            )],
            "{text}"
        );
    }
}

/// The exit statuses a script can tell apart: 127 for a command `run` cannot find, 126 for
/// one it cannot run (as a shell says), 3 when the network fails, 2 for a usage error.
#[test]
fn exit_statuses_tell_a_missing_command_and_the_network_from_a_usage_error() {
    let sb = Sandbox::new();
    let empty = sb.path("empty");
    fs::create_dir_all(&empty).unwrap();
    let code = |args: &[&str], vars: &[(&str, &str)]| {
        let mut cmd = sb.gpuenv();
        cmd.current_dir(&empty).args(args);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (status, err) = code(&["run", "--", "no-such-command-xyz"], &[]);
    assert_eq!(status, Some(127), "{err}");
    assert!(
        err.contains("error: no-such-command-xyz: command not found"),
        "{err}"
    );
    let not_executable = sb.path("not-executable");
    write(&not_executable, "#!/bin/sh\n");
    let (status, err) = code(&["run", "--", not_executable.to_str().unwrap()], &[]);
    assert_eq!(status, Some(126), "{err}");
    // Nothing listens on port 9 of 127.0.0.1 (discard): every source's connection is refused.
    let refused = [
        ("GPUENV_CUDA_MIRROR", "http://127.0.0.1:9/redist/"),
        ("GPUENV_PYPI_URL", "http://127.0.0.1:9/simple/"),
    ];
    for args in [
        &["install", "cuda-13.0"][..],
        &["install", "cuda-13.0", "--source", "pypi"],
    ] {
        let (status, err) = code(args, &refused);
        assert_eq!(status, Some(3), "{args:?}: {err}");
        assert!(err.contains("Connection refused"), "{err}");
    }
    let (status, err) = code(&["install", "--no-such-flag"], &[]);
    assert_eq!(status, Some(2), "{err}");
}
