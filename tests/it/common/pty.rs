//! Real interactive shells in a pseudo-terminal: a tmux pane on a private server, a shell
//! started with exactly the sandbox's environment and an rc file with the hook line, and
//! typing lines into it as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use fs_err as fs;

use super::*;

/// How long a pane may take to show what a test waits for (reached only on failure).
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The prompt every shell here is given: `(<GPUENV_ACTIVE or none>) $ `.
pub fn active_in_prompt(line: &str) -> Option<&str> {
    line.strip_prefix('(')?.split_once(") $").map(|(a, _)| a)
}

/// What one typed line printed, and the prompt that followed it.
#[derive(Debug)]
pub struct Ran {
    pub output: String,
    /// Anything printed after the line finished and before the prompt (the hook's stderr).
    pub before_prompt: String,
    /// `GPUENV_ACTIVE` as the prompt showed it.
    pub active: String,
}

impl Ran {
    pub fn lines(&self) -> Vec<&str> {
        self.output.lines().collect()
    }
}

/// An interactive shell in a 200x50 tmux pane, on a tmux server of its own (socket in the
/// sandbox). The server is killed when this is dropped, whether the test passed or not.
pub struct Pane {
    pub socket: String,
    pub tmpdir: PathBuf,
    pub typed: u32,
    pub shell_pid: Option<u32>,
}

impl Pane {
    /// Starts `argv` in `cwd` with exactly `env` (nothing of the developer's environment),
    /// and waits for its first prompt.
    pub fn start(sb: &Sandbox, cwd: &Path, env: &[(String, String)], argv: &[&str]) -> Pane {
        static SERVERS: AtomicU32 = AtomicU32::new(0);
        let mut pane = Pane {
            socket: format!(
                "gpuenv-pty-{}-{}",
                std::process::id(),
                SERVERS.fetch_add(1, Ordering::Relaxed)
            ),
            tmpdir: sb.path("tmux"),
            typed: 0,
            shell_pid: None,
        };
        fs::create_dir_all(&pane.tmpdir).unwrap();
        // -P -F: print the shell's pid.
        let mut args: Vec<String> = "new-session -d -x 200 -y 50 -s t -P -F #{pane_pid}"
            .split(' ')
            .map(String::from)
            .collect();
        args.extend(["-c".into(), cwd.display().to_string()]);
        args.extend(["env".into(), "-i".into()]);
        args.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        args.extend(argv.iter().map(|a| a.to_string()));
        // A shell that dies at startup stays on screen, so the failure shows why.
        args.extend([";", "set-option", "-g", "remain-on-exit", "on"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = pane.tmux(&args);
        pane.shell_pid = String::from_utf8_lossy(&out.stdout).trim().parse().ok();
        pane.wait_for("the first prompt", |screen| {
            screen.lines().find_map(active_in_prompt).map(|_| ())
        });
        pane
    }

    pub fn tmux(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env_clear()
            .env("TMUX_TMPDIR", &self.tmpdir)
            .env("PATH", system_path())
            .env("LANG", "C.UTF-8")
            .output()
            .expect("tmux runs");
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The whole pane, scrollback included, wrapped lines joined.
    pub fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", "t"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the pane until `found` sees what it wants in it.
    pub fn wait_for<T>(&self, what: &str, mut found: impl FnMut(&str) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if let Some(t) = found(&screen) {
                return t;
            }
            if start.elapsed() > DEADLINE {
                panic!(
                    "waited {DEADLINE:?} for {what}; the pane shows:\n{}",
                    screen.trim_end()
                );
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Types `line` and presses Enter, as a user would.
    pub fn type_line(&self, line: &str) {
        self.tmux(&[
            "send-keys",
            "-t",
            "t",
            "-l",
            line,
            ";",
            "send-keys",
            "-t",
            "t",
            "Enter",
        ]);
    }

    /// Types `line` at the prompt and waits until it has run and the next prompt is shown.
    pub fn run(&mut self, line: &str) -> Ran {
        self.typed += 1;
        let n = self.typed;
        // Quotes split the markers, so the echo of the typed line never matches them.
        self.type_line(&format!("echo BEGIN-''{n}; {line}; echo END-''{n}"));
        let (begin, end) = (format!("BEGIN-{n}"), format!("END-{n}"));
        self.wait_for(&format!("`{line}` and the prompt after it"), |screen| {
            let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
            let b = lines.iter().rposition(|l| *l == begin)?;
            let e = b + lines[b..].iter().position(|l| *l == end)?;
            let p = e + lines[e..]
                .iter()
                .position(|l| active_in_prompt(l).is_some())?;
            Some(Ran {
                output: lines[b + 1..e].join("\n"),
                before_prompt: lines[e + 1..p].join("\n").trim().to_string(),
                active: active_in_prompt(lines[p])?.to_string(),
            })
        })
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .env_clear()
            .env("TMUX_TMPDIR", &self.tmpdir)
            .env("PATH", system_path())
            .output();
        // The shell writes its history when the server hangs up on it: let it finish
        // before the sandbox is removed.
        if let Some(pid) = self.shell_pid {
            let start = Instant::now();
            while running(pid) && start.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// The process exists and is not a zombie.
pub fn running(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// The gpuenv of this build, as the rc file's hook line names it.
pub fn gpuenv_bin() -> String {
    assert_cmd::cargo::cargo_bin("gpuenv").display().to_string()
}

/// A clean environment for the shell: its own HOME, state and XDG dirs, a plain terminal.
pub fn shell_env(sb: &Sandbox, extra: &[(&str, PathBuf)]) -> Vec<(String, String)> {
    let home = sb.home();
    let mut env = vec![
        ("HOME", home.clone()),
        ("GPUENV_HOME", sb.gpuenv_home()),
        ("XDG_CONFIG_HOME", home.join(".config")),
        ("XDG_DATA_HOME", home.join(".local/share")),
        ("XDG_CACHE_HOME", home.join(".cache")),
        ("XDG_STATE_HOME", home.join(".local/state")),
        ("PATH", system_path().into()),
        ("TERM", "xterm-256color".into()),
        ("LANG", "C.UTF-8".into()),
        ("NO_COLOR", "1".into()),
    ];
    env.extend(extra.iter().cloned());
    env.into_iter()
        .map(|(k, v)| (k.to_string(), v.display().to_string()))
        .collect()
}

/// bash with `rc` as its only startup file (no /etc/bash.bashrc, no ~/.bashrc).
pub fn bash(sb: &Sandbox, rc: &str) -> Pane {
    let file = sb.path("rc/bashrc");
    write(&file, rc);
    Pane::start(
        sb,
        &sb.path("work"),
        &shell_env(sb, &[]),
        &[
            "bash",
            "--noprofile",
            "--rcfile",
            file.to_str().unwrap(),
            "-i",
        ],
    )
}

/// The lines a bash user puts in ~/.bashrc: a prompt showing GPUENV_ACTIVE, and the hook.
pub fn bash_rc(before_hook: &str) -> String {
    bash_rc_with(&gpuenv_bin(), before_hook)
}

/// The same, with the hook of the gpuenv binary at `bin`.
pub fn bash_rc_with(bin: &str, before_hook: &str) -> String {
    format!("PS1='(${{GPUENV_ACTIVE:-none}}) $ '\n{before_hook}\neval \"$('{bin}' hook bash)\"\n")
}

/// zsh with `ZDOTDIR/.zshrc` as its startup file (`-d`: no /etc/zsh/zshrc).
pub fn zsh(sb: &Sandbox, zshrc: &str) -> Pane {
    let zdotdir = sb.path("rc/zsh");
    write(&zdotdir.join(".zshrc"), zshrc);
    Pane::start(
        sb,
        &sb.path("work"),
        &shell_env(sb, &[("ZDOTDIR", zdotdir)]),
        &["zsh", "-d", "-i"],
    )
}

pub fn zsh_rc(before_hook: &str) -> String {
    zsh_rc_with(&gpuenv_bin(), before_hook)
}

pub fn zsh_rc_with(bin: &str, before_hook: &str) -> String {
    format!("setopt PROMPT_SUBST\nPS1='(${{GPUENV_ACTIVE:-none}}) $ '\n{before_hook}\neval \"$('{bin}' hook zsh)\"\n")
}

/// fish with no config but `rc` (`--no-config`: nothing from /etc/fish or ~/.config).
pub fn fish(sb: &Sandbox, rc: &str) -> Pane {
    let file = sb.path("rc/config.fish");
    write(&file, rc);
    let init = format!("source '{}'", file.display());
    Pane::start(
        sb,
        &sb.path("work"),
        &shell_env(sb, &[]),
        &["fish", "--no-config", "-C", &init],
    )
}

pub fn fish_rc() -> String {
    fish_rc_with(&gpuenv_bin())
}

pub fn fish_rc_with(bin: &str) -> String {
    format!("set -g fish_greeting\nset -g fish_autosuggestion_enabled 0\nfunction fish_prompt\n    if set -q GPUENV_ACTIVE\n        printf '(%s) $ ' $GPUENV_ACTIVE\n    else\n        printf '(none) $ '\n    end\nend\n'{bin}' hook fish | source\n")
}
