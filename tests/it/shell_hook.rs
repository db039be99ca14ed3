//! Shell integration: the generated hook code (snapshots), and real bash, zsh and fish
//! sessions that cd between projects, use, trust, and come back to exactly the environment
//! they started with.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

use crate::common::shells::{self, dialect, env_dump};
use crate::common::*;
use fs_err as fs;

struct Projects {
    sb: Sandbox,
    /// Pinned to cuda-11.8; its name needs quoting in every shell.
    one: PathBuf,
    /// Pinned to cuda-12.4.
    two: PathBuf,
}

fn projects() -> Projects {
    let sb = Sandbox::new();
    for (name, version) in [("cuda-11.8", "11.8.89"), ("cuda-12.4", "12.4.131")] {
        let root = cuda_runfile(&sb.path(&format!("opt/{name}")), version);
        sb.ok(&["link", name, root.to_str().unwrap()]);
    }
    let one = sb.home().join("proj one/it's \"q\" $x");
    let two = sb.home().join("proj two");
    write(&one.join("gpuenv.toml"), "[toolchain]\ncuda = \"11.8\"\n");
    write(&two.join("gpuenv.toml"), "[toolchain]\ncuda = \"12.4\"\n");
    Projects { sb, one, two }
}

const START_PATH: &str = "/opt/my tools/bin:/usr/local/cuda-11.3/bin:/usr/bin:/bin";

impl Projects {
    /// Runs `script` in `shell` (no rc files) with the hook's binary and the two projects in
    /// variables, starting in $HOME.
    fn shell(&self, shell: &str, script: &str) -> Output {
        let bin = assert_cmd::cargo::cargo_bin("gpuenv");
        let (home, out_dir) = (self.sb.home(), self.sb.path("out"));
        let env: [(&str, &OsStr); 7] = [
            ("HOME", home.as_os_str()),
            ("PATH", START_PATH.as_ref()),
            ("LD_LIBRARY_PATH", "/opt/intel/lib".as_ref()),
            ("GPUENV_BIN", bin.as_os_str()),
            ("P1", self.one.as_os_str()),
            ("P2", self.two.as_os_str()),
            ("OUT", out_dir.as_os_str()),
        ];
        let out = shells::run(shell, script, &home, &env);
        assert!(
            out.status.success(),
            "{shell}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn out(&self, name: &str) -> String {
        fs::read_to_string(self.sb.path("out").join(name)).unwrap()
    }

    fn view(&self, name: &str) -> String {
        self.sb
            .gpuenv_home()
            .join("views")
            .join(name)
            .display()
            .to_string()
    }

    fn shims(&self) -> String {
        self.sb.gpuenv_home().join("shims").display().to_string()
    }
}

#[test]
fn cd_switches_toolkits_and_leaving_restores_the_environment_byte_for_byte() {
    for shell in ["bash", "zsh", "fish"] {
        if !have_tool(shell) {
            continue;
        }
        let p = projects();
        fs::create_dir_all(p.sb.path("out")).unwrap();
        let (source, prompt, hook) = dialect(shell);
        let report = "printf '%s\\n' \"$CUDA_HOME\" (command -v nvcc) \"$PATH\" \"$LD_LIBRARY_PATH\" \"$CPATH\" \"$GPUENV_ACTIVE\"";
        let report = if shell == "fish" {
            report.replace("(command -v nvcc)", "(command -s nvcc)")
        } else {
            report.replace("(command -v nvcc)", "\"$(command -v nvcc)\"")
        };
        let script = format!(
            "{source}\n{prompt}\nenv -0 > \"$OUT/before\"\n\
             cd \"$P1\"\n{hook}\n{report} > \"$OUT/one\"\n\
             cd \"$P2\"\n{hook}\n{report} > \"$OUT/two\"\n\
             cd \"$HOME\"\n{hook}\nenv -0 > \"$OUT/after\"\ntrue\n"
        );
        p.shell(shell, &script);

        let one: Vec<String> = p.out("one").lines().map(String::from).collect();
        let v = p.view("cuda-11.8");
        assert_eq!(one[0], v, "{shell}");
        assert_eq!(
            one[1],
            format!("{}/nvcc", p.shims()),
            "{shell}: shims come first"
        );
        assert_eq!(
            one[2],
            format!("{}:{v}/bin:/opt/my tools/bin:/usr/bin:/bin", p.shims()),
            "{shell}: the stale /usr/local/cuda-11.3/bin is gone, the rest keeps its order"
        );
        assert_eq!(one[3], format!("{v}/lib64:/opt/intel/lib"), "{shell}");
        assert_eq!(one[4], format!("{v}/include"), "{shell}");
        assert_eq!(one[5], "cuda-11.8", "{shell}");

        let two: Vec<String> = p.out("two").lines().map(String::from).collect();
        let v2 = p.view("cuda-12.4");
        assert_eq!(two[0], v2, "{shell}");
        assert_eq!(
            two[2],
            format!("{}:{v2}/bin:/opt/my tools/bin:/usr/bin:/bin", p.shims()),
            "{shell}"
        );
        assert_eq!(two[3], format!("{v2}/lib64:/opt/intel/lib"), "{shell}");

        let before = env_dump(&p.sb.path("out/before"));
        assert!(
            before.iter().any(|v| v.starts_with("__GPUENV_STATE=")),
            "{shell}: the hook ran"
        );
        assert_eq!(env_dump(&p.sb.path("out/after")), before, "{shell}");
    }
}

#[test]
fn use_switches_this_shell_and_use_none_restores_it() {
    for shell in ["bash", "zsh", "fish"] {
        if !have_tool(shell) {
            continue;
        }
        let p = projects();
        fs::create_dir_all(p.sb.path("out")).unwrap();
        let (source, prompt, _) = dialect(shell);
        let status = if shell == "fish" { "$status" } else { "$?" };
        let script = format!(
            "{source}\n{prompt}\nenv -0 > \"$OUT/before\"\n\
             gpuenv use cuda-12.4\necho \"$CUDA_HOME\" > \"$OUT/used\"\n\
             gpuenv use cuda-99 2> \"$OUT/err\"; echo {status} > \"$OUT/status\"\n\
             env -0 > \"$OUT/after-unknown\"\n\
             gpuenv use none\n{prompt}\nenv -0 > \"$OUT/after\"\ntrue\n"
        );
        let out = p.shell(shell, &script);
        assert_eq!(p.out("used").trim(), p.view("cuda-12.4"), "{shell}");
        assert_eq!(p.out("status").trim(), "2", "{shell}");
        // fish does not redirect a command substitution's stderr with its function's.
        let err = p.out("err") + &String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("cuda-99 matches no registered toolchain; nothing was changed"),
            "{shell}: {err}"
        );
        assert!(
            env_dump(&p.sb.path("out/after-unknown"))
                .contains(&format!("CUDA_HOME={}", p.view("cuda-12.4"))),
            "{shell}: an unknown spec changes nothing"
        );
        assert_eq!(
            env_dump(&p.sb.path("out/after")),
            env_dump(&p.sb.path("out/before")),
            "{shell}"
        );
    }
}

/// A hook pasted into the rc file of another shell says which shell it is for, and the
/// line fails, instead of doing nothing and succeeding.
#[test]
fn a_hook_read_by_another_shell_says_which_shell_it_is_for() {
    let p = projects();
    for reader in shells::SHELLS {
        if !have_tool(reader) {
            return;
        }
        for hook_for in shells::SHELLS.iter().filter(|s| **s != reader) {
            let load = match reader {
                "fish" => format!("$GPUENV_BIN hook {hook_for} | source; echo status=$status"),
                _ => format!("eval \"$(\"$GPUENV_BIN\" hook {hook_for})\"; echo status=$?"),
            };
            let bin = assert_cmd::cargo::cargo_bin("gpuenv");
            let home = p.sb.home();
            let env: [(&str, &OsStr); 3] = [
                ("HOME", home.as_os_str()),
                ("PATH", "/usr/bin:/bin".as_ref()),
                ("GPUENV_BIN", bin.as_os_str()),
            ];
            let out = shells::run(reader, &load, &home, &env);
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert_eq!(
                stdout.trim(),
                "status=1",
                "{reader} reading {hook_for}: {stderr}"
            );
            assert!(
                stderr.contains(&format!(
                    "gpuenv: this is the hook for {hook_for}, but {reader} is reading it; put "
                )) && stderr.contains(&format!("gpuenv hook {reader}")),
                "{reader} reading {hook_for}: {stderr}"
            );
        }
    }
    // Read by a program that is not a shell (or written to a file), it is the hook.
    let out = p.sb.ok(&["hook", "zsh"]);
    assert!(out.contains("GPUENV_SHELL=zsh"), "{out}");
    // Piped by another shell to a pager, too: that shell does not read it.
    let bin = assert_cmd::cargo::cargo_bin("gpuenv");
    let home = p.sb.home();
    let env: [(&str, &OsStr); 3] = [
        ("HOME", home.as_os_str()),
        ("PATH", "/usr/bin:/bin".as_ref()),
        ("GPUENV_BIN", bin.as_os_str()),
    ];
    let out = shells::run("bash", "\"$GPUENV_BIN\" hook zsh | head -n 1", &home, &env);
    let first = String::from_utf8_lossy(&out.stdout);
    assert!(
        first.starts_with("# gpuenv shell integration for zsh"),
        "{first}"
    );
}

#[test]
fn use_without_the_hook_says_how_to_add_it() {
    let p = projects();
    let out =
        p.sb.gpuenv()
            .args(["use", "cuda-12.4"])
            .assert()
            .code(2)
            .get_output()
            .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs gpuenv's shell hook"), "{err}");
    assert!(err.contains("eval \"$(gpuenv hook bash)\""), "{err}");
    assert!(
        err.contains("eval \"$(gpuenv use --print cuda-12.4)\""),
        "{err}"
    );
    let code = p.sb.ok(&["use", "--print", "cuda-12.4"]);
    assert!(
        code.starts_with("export GPUENV_TOOLCHAIN='cuda-12.4'\n"),
        "{code}"
    );
    assert!(
        code.contains(&format!("export CUDA_HOME='{}'", p.view("cuda-12.4"))),
        "{code}"
    );
}

#[test]
fn an_untrusted_env_table_is_skipped_until_trusted() {
    let p = projects();
    fs::create_dir_all(p.sb.path("out")).unwrap();
    write(
        &p.two.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n[env]\nNCCL_DEBUG = \"INFO\"\n",
    );
    let out = p.shell(
        "bash",
        "eval \"$(\"$GPUENV_BIN\" hook bash)\"\ncd \"$P2\"; _gpuenv_hook\necho \"[$NCCL_DEBUG] $CUDA_HOME\" > \"$OUT/untrusted\"\n\
         gpuenv trust\n_gpuenv_hook\necho \"[$NCCL_DEBUG]\" > \"$OUT/trusted\"\n",
    );
    assert_eq!(
        p.out("untrusted").trim(),
        format!("[] {}", p.view("cuda-12.4")),
        "pins apply without trust"
    );
    assert_eq!(p.out("trusted").trim(), "[INFO]");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("is not applied until you trust the file: gpuenv trust")
            .count(),
        1,
        "{err}"
    );
}

/// Moving from a project into one whose file is broken takes the first project's toolkit
/// back (it is not what the file here asks for), says why on one line, once.
#[test]
fn a_broken_toolchain_file_is_one_line_once_and_undoes_the_previous_project() {
    let p = projects();
    fs::create_dir_all(p.sb.path("out")).unwrap();
    write(&p.two.join("gpuenv.toml"), "[toolchain]\ncuda = \"12.4\n");
    let out = p.shell(
        "bash",
        "eval \"$(\"$GPUENV_BIN\" hook bash)\"\n_gpuenv_hook\nenv -0 > \"$OUT/start\"\n\
         cd \"$P1\"; _gpuenv_hook\n\
         cd \"$P2\"; _gpuenv_hook; _gpuenv_hook; _gpuenv_hook\nenv -0 > \"$OUT/broken\"\n\
         printf '[toolchain]\\ncuda = \"12.4\"\\n' > gpuenv.toml; _gpuenv_hook\necho \"$CUDA_HOME\" > \"$OUT/fixed\"\n",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("gpuenv: {}:", p.two.join("gpuenv.toml").display())),
        "{err}"
    );
    assert!(err.contains("changes to this shell are undone"), "{err}");
    // Outside any project with no CUDA outside gpuenv the shims are off PATH; where the
    // file is broken nothing is decided, so they stay (an `nvcc` there names the file).
    let shims = format!("{}:", p.sb.gpuenv_home().join("shims").display());
    let without_state = |name: &str| -> Vec<String> {
        env_dump(&p.sb.path(&format!("out/{name}")))
            .into_iter()
            .filter(|v| !v.starts_with("__GPUENV_STATE=") && !v.starts_with("PWD="))
            .map(|v| v.replacen(&format!("PATH={shims}"), "PATH=", 1))
            .collect()
    };
    assert_eq!(
        without_state("broken"),
        without_state("start"),
        "the first project's toolkit is gone"
    );
    assert_eq!(p.out("fixed").trim(), p.view("cuda-12.4"));
}

#[test]
fn the_no_change_path_changes_no_variable() {
    let p = projects();
    let first =
        p.sb.gpuenv()
            .current_dir(&p.one)
            .args(["hook-env", "--shell", "bash"])
            .output()
            .unwrap();
    let code = String::from_utf8(first.stdout).unwrap();
    let state = code
        .lines()
        .find_map(|l| l.strip_prefix("export __GPUENV_STATE="))
        .expect("the state is exported");
    // Unquote the single-quoted state as bash would.
    let state = state.trim_matches('\'').replace("'\\''", "'");
    let again =
        p.sb.gpuenv()
            .current_dir(&p.one)
            .env("__GPUENV_STATE", &state)
            .args(["hook-env", "--shell", "bash"])
            .output()
            .unwrap();
    assert!(again.status.success());
    // Only the prompt's fast-path check is defined again (never armed here: no $PWD).
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        "_gpuenv_fresh() { return 1; }\n"
    );
    // Touching the toolchain file is a change.
    write(&p.one.join("gpuenv.toml"), "[toolchain]\ncuda = \"12.4\"\n");
    let changed =
        p.sb.gpuenv()
            .current_dir(&p.one)
            .env("__GPUENV_STATE", &state)
            .args(["hook-env", "--shell", "bash"])
            .output()
            .unwrap();
    assert!(String::from_utf8_lossy(&changed.stdout).contains(&p.view("cuda-12.4")));
}

fn redacted_hook(shell: &str) -> String {
    let sb = Sandbox::new();
    let text = sb.ok(&["hook", shell]);
    let bin = assert_cmd::cargo::cargo_bin("gpuenv").display().to_string();
    let proxy = proxy_bin().display().to_string();
    // Each prompt runs the proxy beside gpuenv.
    assert!(
        text.contains(&format!("{proxy}' hook-env --shell {shell}")),
        "{text}"
    );
    text.replace(&proxy, "[PROXY]")
        .replace(&bin, "[GPUENV]")
        .replace(
            &sb.gpuenv_home().join("shims").display().to_string(),
            "[SHIMS]",
        )
}

#[test]
fn hook_code_bash() {
    insta::assert_snapshot!(redacted_hook("bash"));
}

#[test]
fn hook_code_zsh() {
    insta::assert_snapshot!(redacted_hook("zsh"));
}

#[test]
fn hook_code_fish() {
    insta::assert_snapshot!(redacted_hook("fish"));
}

#[test]
fn completions_are_valid_shell_code() {
    let sb = Sandbox::new();
    let bash = sb.ok(&["completions", "bash"]);
    assert!(bash.contains("_gpuenv()"), "{bash}");
    let file = sb.path("gpuenv.bash");
    fs::write(&file, &bash).unwrap();
    assert!(Command::new("bash")
        .arg("-n")
        .arg(&file)
        .status()
        .unwrap()
        .success());
    assert!(sb.ok(&["completions", "zsh"]).contains("#compdef gpuenv"));
    assert!(sb
        .ok(&["completions", "fish"])
        .contains("complete -c gpuenv"));
}

/// Tab after `gpuenv use` (and the other commands that take toolchains) offers the names
/// registered now, asked of gpuenv at each completion; after `--` it does not. Real bash,
/// zsh and fish: bash and zsh call the completion function as their completion system
/// does (zsh's `compadd` recorded), fish answers `complete -C`.
#[test]
fn completions_offer_the_registered_toolchain_names() {
    let p = projects();
    let bin = p.sb.path("bin");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("gpuenv"), bin.join("gpuenv")).unwrap();
    for shell in shells::SHELLS {
        if !have_tool(shell) {
            return;
        }
        let file = p.sb.path(&format!("completion.{shell}"));
        fs::write(&file, p.sb.ok(&["completions", shell])).unwrap();
        let ask = |line: &str| -> String {
            let words: Vec<&str> = line.split(' ').collect();
            let script = match shell {
                "bash" => format!(
                    "source \"$F\"; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; _gpuenv gpuenv '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                    words.join(" "),
                    words.len() - 1,
                    words[words.len() - 1],
                    words[words.len() - 2]
                ),
                "zsh" => format!(
                    "compdef() {{ :; }}; source \"$F\"; compadd() {{ [[ $1 == -a ]] && print -l -- \"${{(@P)2}}\"; }}; _gpuenv_clap() {{ print clap; }}; words=({}); CURRENT={}; _gpuenv",
                    words.join(" "),
                    words.len()
                ),
                _ => format!("source \"$F\"; complete -C '{line}'"),
            };
            let path = format!("{}:/usr/bin:/bin", bin.display());
            let (home, gpuenv_home) = (p.sb.home(), p.sb.gpuenv_home());
            let env: [(&str, &OsStr); 4] = [
                ("HOME", home.as_os_str()),
                ("PATH", path.as_ref()),
                ("F", file.as_os_str()),
                ("GPUENV_HOME", gpuenv_home.as_os_str()),
            ];
            let out = shells::run(shell, &script, &home, &env);
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let offered = ask("gpuenv use cu");
        for name in ["cuda-11.8", "cuda-12.4"] {
            assert!(
                offered.lines().any(|l| l.split('\t').next() == Some(name)),
                "{shell}: {name} not offered:\n{offered}"
            );
        }
        let after = ask("gpuenv run cuda-12.4 -- cu");
        assert!(
            !after.contains("cuda-11.8"),
            "{shell}: names after --:\n{after}"
        );
    }
}
