//! `gpuenv env --shell bash|zsh|fish`, evaluated by the real shell, reproduces every value
//! byte for byte: spaces, quotes, `$`, backslashes, newlines, in paths and in [env] values.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::*;

const NASTY: &str =
    "two  spaces 'single' \"double\" $HOME ${x} `tick` back\\slash \\' end\nsecond line\n";

fn shell_env(shell: &str, script: &Path, sb: &Sandbox) -> BTreeMap<String, String> {
    let source = format!("source '{}'; env -0", script.display());
    let mut cmd = Command::new(shell);
    match shell {
        "bash" => cmd.args(["--norc", "--noprofile", "-c", &source]),
        "zsh" => cmd.args(["-f", "-c", &source]),
        "fish" => cmd.args(["--no-config", "-c", &source]),
        _ => unreachable!(),
    };
    let out = cmd
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{shell}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn every_shell_reads_back_exactly_what_gpuenv_computed() {
    let sb = Sandbox::new();
    // A GPUENV_HOME whose path needs quoting puts awkward bytes into every path variable.
    let home = sb.path("state dir/it's $x \"q\" \\b");
    let root = cuda_runfile(&sb.path("cuda 12.4 'x'"), "12.4.131");
    let gpuenv = |args: &[&str]| {
        let out = sb
            .gpuenv()
            .env("GPUENV_HOME", &home)
            .env("PATH", "/usr/bin:/opt/a dir/bin:/bin")
            .current_dir(sb.path("proj"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    fs_err::create_dir_all(sb.path("proj")).unwrap();
    let toml_value = serde_json::to_string(NASTY).unwrap(); // a JSON string is a valid TOML basic string
    write(
        &sb.path("proj/gpuenv.toml"),
        &format!("[toolchain]\ncuda = \"12.4\"\n[env]\nNASTY = {toml_value}\nEMPTY = \"\"\n"),
    );
    gpuenv(&["link", "cuda-12.4", root.to_str().unwrap()]);
    gpuenv(&["trust"]);

    let want: BTreeMap<String, Option<String>> =
        serde_json::from_str(&gpuenv(&["env", "--shell", "json"])).unwrap();
    assert_eq!(want["NASTY"].as_deref(), Some(NASTY));
    assert!(want["CUDA_HOME"]
        .as_deref()
        .unwrap()
        .contains("it's $x \"q\" \\b"));
    assert_eq!(want["EMPTY"].as_deref(), Some(""));

    let mut ran = 0;
    for shell in ["bash", "zsh", "fish"] {
        if !have_tool(shell) {
            continue;
        }
        let script = sb.path(&format!("env.{shell}"));
        fs_err::write(&script, gpuenv(&["env", "--shell", shell])).unwrap();
        let got = shell_env(shell, &script, &sb);
        for (k, v) in &want {
            assert_eq!(got.get(k), v.as_ref(), "{shell}: {k}");
        }
        ran += 1;
    }
    assert!(ran > 0, "no shell was available to test with");
}

#[test]
fn dotenv_output_is_one_quoted_line_per_variable() {
    let sb = Sandbox::new();
    let root = cuda_10_2(&sb.path("cuda-10.2"));
    sb.ok(&["link", "cuda-10.2", root.to_str().unwrap()]);
    let out = sb.ok(&["env", "cuda-10.2", "--shell", "dotenv"]);
    let home = sb
        .gpuenv_home()
        .join("views/cuda-10.2")
        .display()
        .to_string();
    assert!(out.contains(&format!("CUDA_HOME=\"{home}\"\n")), "{out}");
    assert!(
        out.lines().all(|l| l
            .split_once('=')
            .is_some_and(|(_, v)| v.starts_with('"') && v.ends_with('"'))),
        "{out}"
    );
}

/// A Dockerfile instruction is one line: a value with a newline is refused, naming the
/// variable, and nothing is printed; without the newline, every other byte of the same
/// value is escaped as Docker's double quotes read it (`\"`, `\\`, `\$`).
#[test]
fn dockerfile_output_refuses_a_newline_and_escapes_everything_else() {
    let sb = Sandbox::new();
    sb.linked_runfile("cuda", "cuda-12.4", "12.4.131");
    let proj = sb.path("proj");
    let env_with = |value: &str| {
        let toml_value = serde_json::to_string(value).unwrap();
        write(
            &proj.join("gpuenv.toml"),
            &format!("[toolchain]\ncuda = \"12.4\"\n[env]\nNASTY = {toml_value}\n"),
        );
        succeeded(
            &sb.gpuenv()
                .current_dir(&proj)
                .arg("trust")
                .output()
                .unwrap(),
        );
        sb.gpuenv()
            .current_dir(&proj)
            .args(["env", "--shell", "dockerfile"])
            .output()
            .unwrap()
    };
    let out = env_with(NASTY);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "nothing printed half");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("NASTY's value cannot be written for a Dockerfile: it has a newline"),
        "{err}"
    );

    let one_line = NASTY.replace('\n', " ");
    let out = env_with(&one_line);
    let printed = succeeded(&out);
    let line = printed
        .lines()
        .find(|l| l.starts_with("ENV NASTY="))
        .unwrap_or_else(|| panic!("{printed}"));
    let escaped: String = one_line
        .chars()
        .flat_map(|c| match c {
            '"' | '\\' | '$' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    assert_eq!(line, format!("ENV NASTY=\"{escaped}\""));
}
