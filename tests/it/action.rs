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

/// `${{ inputs.NAME }}`, `${{ steps.ID.outputs.NAME }}` and `${{ github.action_path }}`
/// replaced as the runner does; any other expression in a script or an env value is a test
/// failure (the runner would need it).
fn substitute(
    text: &str,
    inputs: &BTreeMap<String, String>,
    steps: &BTreeMap<String, BTreeMap<String, String>>,
) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").expect("a closed expression") + start;
        let expr = rest[start + 3..end].trim();
        let step_output = expr
            .strip_prefix("steps.")
            .and_then(|r| r.split_once(".outputs."));
        let value = match (expr.strip_prefix("inputs."), step_output) {
            (Some(name), _) => inputs
                .get(name)
                .unwrap_or_else(|| panic!("no input {name}"))
                .clone(),
            (None, Some((id, name))) => steps
                .get(id)
                .and_then(|o| o.get(name))
                .unwrap_or_else(|| panic!("no output {name} of step {id} yet"))
                .clone(),
            (None, None) if expr == "github.action_path" => env!("CARGO_MANIFEST_DIR").to_string(),
            (None, None) => panic!("the runner would evaluate {expr}; this test does not"),
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

    /// Runs one bash script as a step; applies what it wrote; its stdout and stderr (an
    /// error when it failed, as the job would).
    fn step(
        &mut self,
        n: usize,
        id: Option<&str>,
        script: &str,
        env: &BTreeMap<String, String>,
        dir: &Path,
    ) -> Result<String, String> {
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
        if !out.status.success() {
            return Err(log);
        }
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
        Ok(log)
    }

    /// Every step of `action` with `given` inputs (the rest take their defaults), up to the
    /// first that fails: its log.
    fn run_action(&mut self, action: &Action, given: &[(&str, &str)]) -> Result<(), String> {
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
                // A cache: not run here (a test restores one by writing its directory);
                // what it is keyed on is checked, and that the key is made only of what a
                // cache key may hold (the inputs go in hashed).
                assert!(uses.starts_with("actions/cache@"), "{uses}");
                let key = &step.with["key"];
                for want in ["runner.os", "runner.arch"] {
                    assert!(key.contains(want), "the cache key has no {want}: {key}");
                }
                for raw in ["inputs.toolchains", "inputs.profile"] {
                    assert!(!key.contains(raw), "{raw} as given in a cache key: {key}");
                }
                match step.with["path"].as_str() {
                    "~/.cache/gpuenv-downloads" => {
                        assert_eq!(step.cond.as_deref(), Some("inputs.cache == 'true'"));
                        for want in ["hashFiles(", "gpuenv.lock", "steps.check.outputs.specs"] {
                            assert!(key.contains(want), "the cache key has no {want}: {key}");
                        }
                    }
                    "~/.cache/gpuenv-action/wheels" => {
                        assert_eq!(step.cond.as_deref(), Some("inputs.gpuenv == ''"));
                        for want in ["steps.check.outputs.version", "steps.check.outputs.sources"] {
                            assert!(key.contains(want), "the cache key has no {want}: {key}");
                        }
                    }
                    other => panic!("a cache of {other}"),
                }
                for (id, outputs) in &self.outputs {
                    for (name, value) in outputs {
                        if key.contains(&format!("steps.{id}.outputs.{name}")) {
                            assert!(
                                value
                                    .bytes()
                                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
                                "{name} = {value:?} in a cache key"
                            );
                        }
                    }
                }
                continue;
            }
            assert_eq!(step.shell.as_deref(), Some("bash"));
            let script = substitute(
                step.run.as_ref().expect("a run step"),
                &inputs,
                &self.outputs,
            );
            let env: BTreeMap<String, String> = step
                .env
                .iter()
                .map(|(k, v)| (k.clone(), substitute(v, &inputs, &self.outputs)))
                .collect();
            let dir = match &step.working_directory {
                Some(d) => self.workspace.join(substitute(d, &inputs, &self.outputs)),
                None => self.workspace.clone(),
            };
            self.step(n, step.id.as_deref(), &script, &env, &dir)?;
        }
        Ok(())
    }
}

/// A fresh runner for a job whose workspace holds the project (`gpuenv.toml` pinning 12.4,
/// and `lock` as its gpuenv.lock when given), with NVIDIA's archives from `mirror`.
fn job(mirror: &str, lock: Option<&str>) -> (Sandbox, Runner) {
    let job = Sandbox::new();
    let workspace = job.path("work/project");
    fs_err::create_dir_all(&workspace).unwrap();
    write(
        &workspace.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    if let Some(lock) = lock {
        write(&workspace.join("gpuenv.lock"), lock);
    }
    let temp = job.path("runner-temp");
    fs_err::create_dir_all(&temp).unwrap();
    let runner = Runner {
        env: [
            ("HOME", job.home().display().to_string()),
            ("LANG", "C.UTF-8".into()),
            ("NO_COLOR", "1".into()),
            ("RUNNER_OS", "Linux".into()),
            ("RUNNER_ARCH", "X64".into()),
            ("RUNNER_TEMP", temp.display().to_string()),
            ("GITHUB_WORKSPACE", job.path("work").display().to_string()),
            // The job's own env: where NVIDIA's archives come from.
            ("GPUENV_CUDA_MIRROR", mirror.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
        prepend: Vec::new(),
        outputs: BTreeMap::new(),
        temp,
        workspace: job.path("work"),
    };
    (job, runner)
}

/// The job's next step, anywhere in the workspace: the active toolkit's nvcc, and the
/// outputs naming it.
fn next_step_sees(job: &Sandbox, runner: &mut Runner, name: &str, release: &str) {
    let next = "nvcc --version\necho \"CUDA_HOME=$CUDA_HOME\"\necho \"nvcc at $(command -v nvcc)\"\necho \"GPUENV_TOOLCHAIN=$GPUENV_TOOLCHAIN\"\ncd / && nvcc --version\n";
    let log = runner
        .step(99, None, next, &BTreeMap::new(), &job.path("work"))
        .unwrap();
    assert_eq!(log.matches(release).count(), 2, "{log}");
    let outputs = &runner.outputs["env"];
    assert_eq!(outputs["cuda-version"], &name[5..], "{outputs:?}");
    let cuda_home = &outputs["cuda-home"];
    assert!(cuda_home.ends_with(&format!("views/{name}")), "{outputs:?}");
    assert!(log.contains(&format!("CUDA_HOME={cuda_home}\n")), "{log}");
    assert!(
        log.contains(&format!("nvcc at {cuda_home}/bin/nvcc\n")),
        "{log}"
    );
    assert!(log.contains(&format!("GPUENV_TOOLCHAIN={name}\n")), "{log}");
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
    let (job, mut runner) = job(&mirror, Some(&lock));
    runner
        .run_action(
            &action,
            &[
                ("gpuenv", wheel.to_str().unwrap()),
                ("working-directory", "project"),
            ],
        )
        .unwrap();
    assert!(
        job.toolchain("cuda-12.4.1").join("bin/nvcc").is_file(),
        "the locked toolkit is installed in the job's home"
    );
    next_step_sees(&job, &mut runner, "cuda-12.4.1", "release 12.4, V12.4.131");
}

/// A `container:` job whose image has python3 but neither `venv` nor `pip` (Debian's
/// python3 without python3-venv), and the action's default `gpuenv` input: the wheel of its
/// version, as the cache step restores it, is unpacked without either. The `toolchains` and
/// `profile` inputs install that toolkit with that profile.
#[test]
fn in_a_container_without_python3_venv_the_cached_wheel_is_unpacked_and_the_inputs_apply() {
    if !have_tool("python3") {
        return;
    }
    let Some(wheel) = wheel::wheel() else { return };
    let action = action();
    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    let (job, mut runner) = job(&mirror, None);
    // What `actions/cache` restores: the wheel of this version.
    let wheels = job.home().join(".cache/gpuenv-action/wheels");
    fs_err::create_dir_all(&wheels).unwrap();
    fs_err::copy(&wheel, wheels.join(wheel.file_name().unwrap())).unwrap();
    // The image's python3: no venv, no pip.
    let image = job.path("image-bin");
    write(
        &image.join("python3"),
        "#!/bin/sh\ncase \"$1 $2\" in\n  '-m venv'|'-m pip') echo \"/usr/bin/python3: No module named ${2}\" >&2; exit 1 ;;\nesac\nexec /usr/bin/python3 \"$@\"\n",
    );
    fs_err::set_permissions(
        image.join("python3"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    runner.prepend.push(image.display().to_string());
    runner
        .run_action(
            &action,
            &[
                ("working-directory", "project"),
                ("toolchains", "cuda-12.4.1"),
                ("profile", "minimal"),
            ],
        )
        .unwrap();
    assert!(
        !runner.temp.join("gpuenv-venv").exists(),
        "no venv was made"
    );
    let record =
        fs_err::read_to_string(job.toolchain("cuda-12.4.1").join(".gpuenv-install.toml")).unwrap();
    assert!(record.contains("profile = \"minimal\""), "{record}");
    next_step_sees(&job, &mut runner, "cuda-12.4.1", "release 12.4, V12.4.131");
}

/// The `toolchains` input is specs only: an option in it reaches `gpuenv install` after
/// `--` (refused as a spec), and a second line fails the step instead of being dropped.
#[test]
fn the_toolchains_input_is_never_options_and_a_second_line_is_refused() {
    if !have_tool("python3") {
        return;
    }
    let Some(wheel) = wheel::wheel() else { return };
    let action = action();
    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    for (toolchains, says) in [
        (
            "--source pypi cuda-12.4.1",
            "`--source` is not a toolchain name or spec",
        ),
        ("cuda-12.4.1\ncuda-13.0", "one line each"),
    ] {
        let (job, mut runner) = job(&mirror, None);
        let failed = runner
            .run_action(
                &action,
                &[
                    ("gpuenv", wheel.to_str().unwrap()),
                    ("working-directory", "project"),
                    ("toolchains", toolchains),
                ],
            )
            .unwrap_err();
        assert!(failed.contains(says), "{toolchains:?}: {failed}");
        assert!(
            !job.toolchain("cuda-12.4.1").exists(),
            "{toolchains:?}: nothing installed"
        );
    }
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
