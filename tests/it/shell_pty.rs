//! Real interactive shells in a pseudo-terminal (a tmux pane on a private server): with the
//! hook line in the rc file, `cd` into a pinned project switches the toolkit by the next
//! prompt, and `cd` out puts everything back. Nothing calls the hook by hand; the prompt
//! shows `GPUENV_ACTIVE`, as a user who wants to see it would set it up.

use std::path::Path;

use fs_err as fs;

use crate::common::pty::*;
use crate::common::*;

/// CUDA 12.4 and 10.2 linked; `work/proj a` pinned to 12.4 and `work/proj-b` to 10.2.
fn projects() -> Sandbox {
    let sb = Sandbox::new();
    let cuda124 = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    let cuda102 = cuda_10_2(&sb.path("opt/cuda-10.2"));
    sb.ok(&["link", "cuda-12.4", cuda124.to_str().unwrap()]);
    sb.ok(&["link", "cuda-10.2", cuda102.to_str().unwrap()]);
    write(
        &sb.path("work/proj a/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    fs::create_dir_all(sb.path("work/proj a/src")).unwrap();
    write(
        &sb.path("work/proj-b/gpuenv.toml"),
        "[toolchain]\ncuda = \"10.2\"\n",
    );
    sb
}

/// `env | sort` without what a shell changes by itself on `cd` and between commands.
fn saved_env(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("_=") && !l.starts_with("OLDPWD="))
        .map(String::from)
        .collect()
}

/// The same session in every shell: `cd` into a project, to another one, out again; then
/// `gpuenv use` and `gpuenv use none`. `all_nvcc` prints every nvcc on PATH, in order.
fn cd_in_and_out(pane: &mut Pane, sb: &Sandbox, all_nvcc: &str) {
    let view = |name: &str| sb.gpuenv_home().join("views").join(name);
    let shim = sb.gpuenv_home().join("shims/nvcc").display().to_string();
    let before = sb.path("before.env");
    let after = sb.path("after.env");

    // In work/, outside any project: nothing is active, and with no CUDA outside gpuenv
    // (the panes' PATH has none; /usr/local/cuda where a machine has it) the shims are off
    // PATH, so `which nvcc` finds what it would without gpuenv.
    let outside: Vec<&str> = if Path::new("/usr/local/cuda").is_dir() {
        vec![shim.as_str()]
    } else {
        vec![]
    };
    let out = pane.run(&format!("env | sort > '{}'", before.display()));
    assert_eq!(out.active, "none");
    assert_eq!(pane.run(all_nvcc).lines(), outside);

    // cd into a subdirectory of a project: the very next prompt shows its toolkit.
    let out = pane.run("cd 'proj a/src'");
    assert_eq!(out.active, "cuda-12.4");
    assert_eq!(out.before_prompt, "", "the hook prints nothing on a switch");
    let out = pane.run("echo \"$CUDA_HOME\"");
    assert_eq!(out.output, view("cuda-12.4").display().to_string());
    let view_nvcc = view("cuda-12.4").join("bin/nvcc").display().to_string();
    assert_eq!(pane.run(all_nvcc).lines(), [shim.as_str(), &view_nvcc]);
    let out = pane.run("nvcc --version");
    assert!(out.output.contains("release 12.4, V12.4.131"), "{out:?}");

    // Straight into a project pinned to another version.
    let out = pane.run("cd ../../proj-b");
    assert_eq!(out.active, "cuda-10.2");
    let out = pane.run("echo \"$CUDA_HOME\"");
    assert_eq!(out.output, view("cuda-10.2").display().to_string());
    let view_nvcc = view("cuda-10.2").join("bin/nvcc").display().to_string();
    assert_eq!(pane.run(all_nvcc).lines(), [shim.as_str(), &view_nvcc]);

    // cd out: the toolkit is gone from the prompt, CUDA_HOME and PATH.
    let out = pane.run("cd ..");
    assert_eq!(out.active, "none");
    let cuda_home = if outside.is_empty() {
        "[]"
    } else {
        "[/usr/local/cuda]"
    };
    assert_eq!(pane.run("echo \"[$CUDA_HOME]\"").output, cuda_home);
    assert_eq!(pane.run(all_nvcc).lines(), outside);

    // `gpuenv use` (the hook's shell function) switches this shell at once; `none` undoes it.
    let out = pane.run("gpuenv use cuda-10.2");
    assert_eq!(out.active, "cuda-10.2");
    assert_eq!(out.output, "info: this shell now uses cuda-10.2");
    let out = pane.run("gpuenv use none");
    assert_eq!(out.active, "none");

    // Every variable is back as it was before the first cd.
    pane.run(&format!("env | sort > '{}'", after.display()));
    assert_eq!(saved_env(&after), saved_env(&before));
}

#[test]
fn bash_switches_at_the_prompt_after_cd() {
    if !have_tool("tmux") || !have_tool("bash") {
        return;
    }
    let sb = projects();
    let mut pane = bash(&sb, &bash_rc(""));
    cd_in_and_out(&mut pane, &sb, "type -ap nvcc");
}

#[test]
fn zsh_switches_at_the_prompt_after_cd() {
    if !have_tool("tmux") || !have_tool("zsh") {
        return;
    }
    let sb = projects();
    let mut pane = zsh(&sb, &zsh_rc(""));
    cd_in_and_out(&mut pane, &sb, "whence -ap nvcc");
}

#[test]
fn fish_switches_at_the_prompt_after_cd() {
    if !have_tool("tmux") || !have_tool("fish") {
        return;
    }
    let sb = projects();
    let mut pane = fish(&sb, &fish_rc());
    cd_in_and_out(&mut pane, &sb, "type -a -p nvcc");
}

/// A broken toolchain file is one line at the prompt that meets it, not one per prompt; the
/// environment stays as it was, and fixing the file applies it at the next prompt.
fn broken_file_is_reported_once(pane: &mut Pane, sb: &Sandbox) {
    let file = sb.path("work/proj-b/gpuenv.toml");
    write(&file, "[toolchain\ncuda = \"10.2\"\n");
    assert_eq!(pane.run("cd proj-b").active, "none");
    for _ in 0..3 {
        assert_eq!(pane.run("true").before_prompt, "");
    }
    assert_eq!(pane.run("echo \"[$CUDA_HOME]\"").output, "[]");
    let screen = pane.screen();
    let errors: Vec<&str> = screen
        .lines()
        .filter(|l| l.starts_with("gpuenv: "))
        .collect();
    assert_eq!(errors.len(), 1, "{screen}");
    assert!(
        errors[0].contains(&format!("{}:1:", file.display())),
        "{screen}"
    );

    write(&file, "[toolchain]\ncuda = \"10.2\"\n");
    assert_eq!(pane.run("true").active, "cuda-10.2");
}

#[test]
fn bash_reports_a_broken_file_once() {
    if !have_tool("tmux") || !have_tool("bash") {
        return;
    }
    let sb = projects();
    broken_file_is_reported_once(&mut bash(&sb, &bash_rc("")), &sb);
}

#[test]
fn zsh_reports_a_broken_file_once() {
    if !have_tool("tmux") || !have_tool("zsh") {
        return;
    }
    let sb = projects();
    broken_file_is_reported_once(&mut zsh(&sb, &zsh_rc("")), &sb);
}

#[test]
fn fish_reports_a_broken_file_once() {
    if !have_tool("tmux") || !have_tool("fish") {
        return;
    }
    let sb = projects();
    broken_file_is_reported_once(&mut fish(&sb, &fish_rc()), &sb);
}

/// The four prompts of `cd_fail_and_leave` as a prompt command that records `$?` and
/// CUDA_HOME sees them: it runs after the hook, which keeps the last command's status.
fn prompts_seen(view: &Path) -> Vec<String> {
    let view = view.display();
    [
        "0 unset",
        &format!("0 {view}"),
        &format!("3 {view}"),
        "0 unset",
    ]
    .map(String::from)
    .to_vec()
}

/// First prompt in work/; `cd` into the project; a command that fails; `cd` out.
fn cd_fail_and_leave(pane: &mut Pane) {
    assert_eq!(pane.run("cd 'proj a'").active, "cuda-12.4");
    pane.type_line("sh -c 'exit 3'");
    assert_eq!(pane.run("cd ..").active, "none");
}

fn lines_of(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn bash_keeps_a_prompt_command_string_running() {
    if !have_tool("tmux") || !have_tool("bash") {
        return;
    }
    let sb = projects();
    let log = sb.path("prompts.log");
    let users = format!(
        "PROMPT_COMMAND='echo \"$? ${{CUDA_HOME:-unset}}\" >> \"{}\"'",
        log.display()
    );
    let mut pane = bash(&sb, &bash_rc(&users));
    cd_fail_and_leave(&mut pane);
    let view = sb.gpuenv_home().join("views/cuda-12.4");
    assert_eq!(lines_of(&log), prompts_seen(&view));
}

#[test]
fn bash_keeps_a_prompt_command_array_running() {
    if !have_tool("tmux") || !have_tool("bash") {
        return;
    }
    let sb = projects();
    let (log, log2) = (sb.path("prompts.log"), sb.path("prompts2.log"));
    // bash 5.1+: every element runs at each prompt.
    let users = format!(
        "PROMPT_COMMAND=('echo \"$? ${{CUDA_HOME:-unset}}\" >> \"{}\"' 'echo \"second ${{CUDA_HOME:-unset}}\" >> \"{}\"')",
        log.display(),
        log2.display()
    );
    let mut pane = bash(&sb, &bash_rc(&users));
    cd_fail_and_leave(&mut pane);
    let view = sb.gpuenv_home().join("views/cuda-12.4");
    assert_eq!(lines_of(&log), prompts_seen(&view));
    let second: Vec<String> = prompts_seen(&view)
        .iter()
        .map(|l| format!("second {}", l.split_once(' ').unwrap().1))
        .collect();
    assert_eq!(lines_of(&log2), second);
    // Still an array, the user's elements untouched.
    let out = pane.run("declare -p PROMPT_COMMAND");
    assert!(
        out.output.starts_with("declare -a PROMPT_COMMAND="),
        "{out:?}"
    );
}

#[test]

fn bash_evaluating_the_hook_again_keeps_one_hook() {
    if !have_tool("tmux") || !have_tool("bash") {
        return;
    }
    let sb = projects();
    // What a user has: the hook line in ~/.bashrc; PROMPT_COMMAND set up elsewhere.
    let bashrc = sb.home().join(".bashrc");
    write(
        &bashrc,
        &format!("eval \"$('{}' hook bash)\"\n", gpuenv_bin()),
    );
    let rc = "PS1='(${GPUENV_ACTIVE:-none}) $ '\nPROMPT_COMMAND=('history -a' 'true')\nsource ~/.bashrc\n";
    let mut pane = bash(&sb, rc);
    // After editing ~/.bashrc, the user sources it again.
    pane.run("source ~/.bashrc");
    let out = pane.run("printf '%s\\n' \"${PROMPT_COMMAND[@]}\"");
    assert_eq!(out.lines(), ["_gpuenv_hook", "history -a", "true"]);
}

#[test]

fn bash_keeps_the_users_sigint_trap() {
    if !have_tool("tmux") || !have_tool("bash") {
        return;
    }
    let sb = projects();
    let mut pane = bash(&sb, &bash_rc("trap 'echo interrupted' INT"));
    assert_eq!(pane.run("cd 'proj a'").active, "cuda-12.4");
    let out = pane.run("trap -p INT");
    assert_eq!(out.output, "trap -- 'echo interrupted' SIGINT");
}

#[test]

fn zsh_keeps_the_users_trapint() {
    if !have_tool("tmux") || !have_tool("zsh") {
        return;
    }
    let sb = projects();
    let mut pane = zsh(&sb, &zsh_rc("TRAPINT() { print interrupted; return 128 }"));
    assert_eq!(pane.run("cd 'proj a'").active, "cuda-12.4");
    let out = pane.run("whence -w TRAPINT");
    assert_eq!(out.output, "TRAPINT: function");
}

/// `gpuenv doctor` typed in a pinned project, in a shell whose start-up file puts gpuenv on
/// PATH but never loads the hook: a warning names the hook line for that shell and its file.
/// With the hook loaded, the same check is ok.
#[test]
fn doctor_in_a_shell_without_the_hook_names_the_missing_line() {
    for shell in ["tmux", "bash", "zsh", "fish"] {
        if !have_tool(shell) {
            return;
        }
    }
    let bin = gpuenv_bin();
    let dir = Path::new(&bin).parent().unwrap().display().to_string();
    for (shell, line, file) in [
        ("bash", "eval \"$(gpuenv hook bash)\"", "~/.bashrc"),
        ("zsh", "eval \"$(gpuenv hook zsh)\"", "~/.zshrc"),
        (
            "fish",
            "gpuenv hook fish | source",
            "~/.config/fish/config.fish",
        ),
    ] {
        for hooked in [false, true] {
            let sb = projects();
            let mut pane = match shell {
                "bash" => {
                    let rc = bash_rc(&format!("export PATH='{dir}':\"$PATH\""));
                    let rc = if hooked {
                        rc
                    } else {
                        rc.lines().take(2).collect::<Vec<_>>().join("\n") + "\n"
                    };
                    bash(&sb, &rc)
                }
                "zsh" => {
                    let rc = zsh_rc(&format!("export PATH='{dir}':\"$PATH\""));
                    let rc = if hooked {
                        rc
                    } else {
                        rc.lines().take(3).collect::<Vec<_>>().join("\n") + "\n"
                    };
                    zsh(&sb, &rc)
                }
                _ => {
                    let rc = fish_rc();
                    let rc = if hooked {
                        rc
                    } else {
                        rc.lines()
                            .filter(|l| !l.contains(" hook fish"))
                            .collect::<Vec<_>>()
                            .join("\n")
                            + "\n"
                    };
                    let file = sb.path("rc/config.fish");
                    write(&file, &format!("set -gx PATH '{dir}' $PATH\n{rc}"));
                    let init = format!("source '{}'", file.display());
                    Pane::start(
                        &sb,
                        &sb.path("work"),
                        &shell_env(&sb, &[]),
                        &["fish", "--no-config", "-i", "-C", &init],
                    )
                }
            };
            pane.run("cd 'proj a'");
            let out = pane.run("gpuenv doctor 2>&1 | grep -A4 'shell-hook'");
            let what = format!("{shell}, hooked: {hooked}");
            if hooked {
                assert!(
                    out.output.starts_with(&format!(
                        "ok    shell-hook hook: the hook is loaded in this {shell}"
                    )),
                    "{what}: {out:?}"
                );
            } else {
                assert!(
                    out.output.starts_with(&format!("warn  shell-hook hook: this {shell} has no gpuenv hook: cuda-12.4 is pinned here")),
                    "{what}: {out:?}"
                );
                assert!(
                    out.output
                        .contains(&format!("hint: add `{line}` to {file}")),
                    "{what}: {out:?}"
                );
            }
        }
    }
}
