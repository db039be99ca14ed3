//! action.yml, run as a GitHub runner runs a composite action: each `run:` step's script
//! with bash, `${{ … }}` substituted, fresh `GITHUB_ENV`/`GITHUB_PATH`/`GITHUB_OUTPUT` files
//! per step, and what a step wrote applied to the steps after it (`$GITHUB_PATH` lines in
//! front of PATH, the last line first). gpuenv comes from the wheel built from this
//! checkout; the project's gpuenv.lock names a CUDA 12.4.1 from a local redist mirror; the
//! job's next step sees that toolkit's nvcc.

use crate::common::install_fixtures as fixtures;
use crate::common::wheel;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use fixtures::*;

#[derive(Debug, serde::Deserialize)]
struct Action {
    inputs: BTreeMap<String, Input>,
    outputs: BTreeMap<String, OutputDef>,
    runs: Runs,
}

#[derive(Debug, serde::Deserialize)]
struct Input {
    default: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct OutputDef {
    value: String,
}

#[derive(Debug, serde::Deserialize)]
struct Runs {
    using: String,
    steps: Vec<Step>,
}

#[derive(Debug, serde::Deserialize)]
struct Step {
    id: Option<String>,
    #[serde(rename = "if")]
    cond: Option<String>,
    run: Option<String>,
    uses: Option<String>,
    shell: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    with: BTreeMap<String, String>,
    #[serde(rename = "working-directory")]
    working_directory: Option<String>,
}

fn action() -> Action {
    let text = fs_err::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/action.yml")).unwrap();
    serde_yaml::from_str(&text).unwrap()
}

/// `${{ inputs.NAME }}` and `${{ github.action_path }}` replaced as the runner does; any
/// other expression in a script or an env value is a test failure (the runner would need it).
fn substitute(text: &str, inputs: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").expect("a closed expression") + start;
        let expr = rest[start + 3..end].trim();
        let value = match expr.strip_prefix("inputs.") {
            Some(name) => inputs
                .get(name)
                .unwrap_or_else(|| panic!("no input {name}"))
                .clone(),
            None if expr == "github.action_path" => env!("CARGO_MANIFEST_DIR").to_string(),
            None => panic!("the runner would evaluate {expr}; this test does not"),
        };
        out.push_str(&value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// A runner file's commands: `NAME=value`, and `NAME<<DELIM` … `DELIM`.
fn parse_file_commands(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        let eq = line.find('=');
        let heredoc = line.find("<<");
        match (eq, heredoc) {
            (Some(e), h) if h.is_none_or(|h| e < h) => {
                out.push((line[..e].to_string(), line[e + 1..].to_string()))
            }
            (_, Some(h)) => {
                let (name, delim) = (&line[..h], &line[h + 2..]);
                let mut value = Vec::new();
                loop {
                    let l = lines.next().expect("a heredoc ends with its delimiter");
                    if l == delim {
                        break;
                    }
                    value.push(l);
                }
                out.push((name.to_string(), value.join("\n")));
            }
            _ => panic!("not a file command: {line:?}"),
        }
    }
    out
}

struct Runner {
    env: BTreeMap<String, String>,
    /// `$GITHUB_PATH` lines so far, in the order read.
    prepend: Vec<String>,
    outputs: BTreeMap<String, BTreeMap<String, String>>,
    temp: PathBuf,
    workspace: PathBuf,
}

impl Runner {
    fn path(&self) -> String {
        let mut dirs: Vec<&str> = self.prepend.iter().rev().map(String::as_str).collect();
        dirs.push("/usr/bin:/bin");
        dirs.join(":")
    }

    /// Runs one bash script as a step; applies what it wrote; its stdout and stderr.
    fn step(
        &mut self,
        n: usize,
        id: Option<&str>,
        script: &str,
        env: &BTreeMap<String, String>,
        dir: &Path,
    ) -> String {
        let files = self.temp.join(format!("_runner_file_commands/step{n}"));
        fs_err::create_dir_all(&files).unwrap();
        let (genv, gpath, gout) = (files.join("env"), files.join("path"), files.join("output"));
        for f in [&genv, &gpath, &gout] {
            fs_err::write(f, "").unwrap();
        }
        let file = files.join("script.sh");
        fs_err::write(&file, script).unwrap();
        let out = Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&file)
            .env_clear()
            .envs(&self.env)
            .envs(env)
            .env("PATH", self.path())
            .env("GITHUB_ENV", &genv)
            .env("GITHUB_PATH", &gpath)
            .env("GITHUB_OUTPUT", &gout)
            .current_dir(dir)
            .output()
            .unwrap();
        let log = format!(
            "step {n}:\n{script}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{log}");
        for (k, v) in parse_file_commands(&fs_err::read_to_string(&genv).unwrap()) {
            self.env.insert(k, v);
        }
        for line in fs_err::read_to_string(&gpath).unwrap().lines() {
            if !line.is_empty() {
                self.prepend.retain(|p| p != line);
                self.prepend.push(line.to_string());
            }
        }
        if let Some(id) = id {
            let outputs = parse_file_commands(&fs_err::read_to_string(&gout).unwrap());
            self.outputs
                .insert(id.to_string(), outputs.into_iter().collect());
        }
        log
    }

    /// Every step of `action` with `given` inputs (the rest take their defaults).
    fn run_action(&mut self, action: &Action, given: &[(&str, &str)]) {
        let mut inputs: BTreeMap<String, String> = action
            .inputs
            .iter()
            .map(|(k, i)| (k.clone(), i.default.clone().unwrap_or_default()))
            .collect();
        for (k, v) in given {
            assert!(inputs.contains_key(*k), "action.yml has no input {k}");
            inputs.insert(k.to_string(), v.to_string());
        }
        for (n, step) in action.runs.steps.iter().enumerate() {
            if let Some(uses) = &step.uses {
                // The cache: not run here; what it is keyed on is checked.
                assert!(uses.starts_with("actions/cache@"), "{uses}");
                assert_eq!(step.cond.as_deref(), Some("inputs.cache == 'true'"));
                let key = &step.with["key"];
                for want in ["runner.os", "runner.arch", "hashFiles(", "gpuenv.lock"] {
                    assert!(key.contains(want), "the cache key has no {want}: {key}");
                }
                assert_eq!(step.with["path"], "~/.cache/gpuenv-downloads");
                continue;
            }
            assert_eq!(step.shell.as_deref(), Some("bash"));
            let script = substitute(step.run.as_ref().expect("a run step"), &inputs);
            let env: BTreeMap<String, String> = step
                .env
                .iter()
                .map(|(k, v)| (k.clone(), substitute(v, &inputs)))
                .collect();
            let dir = match &step.working_directory {
                Some(d) => self.workspace.join(substitute(d, &inputs)),
                None => self.workspace.clone(),
            };
            self.step(n, step.id.as_deref(), &script, &env, &dir);
        }
    }
}

#[test]
fn the_action_installs_the_locked_toolkit_and_the_next_step_sees_its_nvcc() {
    if !have_tool("python3") {
        return;
    }
    let Some(wheel) = wheel::wheel() else { return };
    let action = action();
    assert_eq!(action.runs.using, "composite");
    for out in ["cuda-home", "cuda-version"] {
        assert!(
            action.outputs[out].value.contains("steps.env.outputs."),
            "{out}"
        );
    }

    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    let locked = locked_project(&mirror, NVIDIA_12_4_1_MINIMAL);
    let lock = fs_err::read_to_string(locked.path("gpuenv.lock")).unwrap();
    // The job's workspace: a clone of the project on a fresh runner.
    let job = Sandbox::new();
    let workspace = job.path("work/project");
    fs_err::create_dir_all(&workspace).unwrap();
    write(
        &workspace.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    write(&workspace.join("gpuenv.lock"), &lock);
    let temp = job.path("runner-temp");
    fs_err::create_dir_all(&temp).unwrap();
    let mut runner = Runner {
        env: [
            ("HOME", job.home().display().to_string()),
            ("LANG", "C.UTF-8".into()),
            ("NO_COLOR", "1".into()),
            ("RUNNER_OS", "Linux".into()),
            ("RUNNER_ARCH", "X64".into()),
            ("RUNNER_TEMP", temp.display().to_string()),
            ("GITHUB_WORKSPACE", job.path("work").display().to_string()),
            // The job's own env: where NVIDIA's archives come from.
            ("GPUENV_CUDA_MIRROR", mirror.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
        prepend: Vec::new(),
        outputs: BTreeMap::new(),
        temp,
        workspace: job.path("work"),
    };
    runner.run_action(
        &action,
        &[
            ("gpuenv", wheel.to_str().unwrap()),
            ("working-directory", "project"),
        ],
    );
    assert!(
        job.toolchain("cuda-12.4.1").join("bin/nvcc").is_file(),
        "the locked toolkit is installed in the job's home"
    );

    // The job's next step, anywhere in the workspace.
    let next =
        "nvcc --version\necho \"CUDA_HOME=$CUDA_HOME\"\necho \"nvcc at $(command -v nvcc)\"\n";
    let log = runner.step(99, None, next, &BTreeMap::new(), &job.path("work"));
    assert!(log.contains("release 12.4, V12.4.131"), "{log}");
    let outputs = &runner.outputs["env"];
    assert_eq!(outputs["cuda-version"], "12.4.1", "{outputs:?}");
    let cuda_home = &outputs["cuda-home"];
    assert!(cuda_home.ends_with("views/cuda-12.4.1"), "{outputs:?}");
    assert!(log.contains(&format!("CUDA_HOME={cuda_home}\n")), "{log}");
    assert!(
        log.contains(&format!("nvcc at {cuda_home}/bin/nvcc\n")),
        "{log}"
    );
}

#[test]
fn github_file_commands_written_by_gpuenv_read_back_exactly_as_the_runner_reads_them() {
    // A value no single line can hold: quotes, `=`, `<<`, and GitHub's delimiter itself.
    let hostile = "a=b \"q\" 'q' <<EOF\nghadelimiter_gpuenv\n$HOME ${x} `t`";
    let sb = Sandbox::new();
    sb.linked_runfile("cuda", "cuda-12.4", "12.4.131");
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        &format!(
            "[toolchain]\ncuda = \"12.4\"\n[env]\nHOSTILE = {}\n",
            // A JSON string is a TOML basic string (the same escapes).
            serde_json::to_string(hostile).unwrap()
        ),
    );
    let trust = sb
        .gpuenv()
        .current_dir(&proj)
        .arg("trust")
        .output()
        .unwrap();
    succeeded(&trust);
    let (genv, gpath) = (sb.path("github_env"), sb.path("github_path"));
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("GITHUB_ENV", &genv)
        .env("GITHUB_PATH", &gpath)
        .args(["env", "--shell", "github"])
        .output()
        .unwrap();
    succeeded(&out);
    let vars: BTreeMap<String, String> =
        parse_file_commands(&fs_err::read_to_string(&genv).unwrap())
            .into_iter()
            .collect();
    assert_eq!(vars["HOSTILE"], hostile);
    assert!(vars["CUDA_HOME"].ends_with("views/cuda-12.4"), "{vars:?}");
    assert!(
        !vars.contains_key("PATH"),
        "PATH only grew: $GITHUB_PATH has it"
    );
    let path = fs_err::read_to_string(&gpath).unwrap();
    assert_eq!(path, format!("{}/bin\n", vars["CUDA_HOME"]));

    // Outside a runner it says where it writes, and writes nothing.
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["env", "--shell", "github"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("GITHUB_ENV is not set"),
        "{}",
        text(&out)
    );
}
