//! Running a program to ask it something (`g++ --version`, `nvidia-smi`, `rocminfo`, a
//! Python for its `sys.path`): never for longer than a deadline. A wedged driver or a
//! hanging wrapper script must not hang `show`, `env`, the prompt or a compile, so every
//! such program gpuenv starts goes through [`output`], which stops it when time is up and
//! says which program it was and how long it was given.
//!
//! The deadline is `GPUENV_PROBE_TIMEOUT` seconds (default [`DEFAULT_LIMIT`]), read once
//! at each entry point by [`configure`].
//!
//! Each program runs in a process group of its own, and the whole group is killed at the
//! deadline: a wrapper (`g++` from a module, pyenv's `python3` shim, an `nvidia-smi`
//! script) leaves none of its children behind. The group is also killed when gpuenv itself
//! is stopped by SIGINT, SIGTERM or SIGHUP while it waits (Ctrl-C at a prompt), since a
//! group of its own no longer gets the terminal's signals.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::context::{vars, Context};
use group::{Group, Held};

mod group;

/// Long enough for `nvidia-smi` on a driver without persistence mode (a few seconds), short
/// enough that a prompt behind a wedged tool comes back.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(10);

static LIMIT: OnceLock<Duration> = OnceLock::new();

/// Reads the deadline from `GPUENV_PROBE_TIMEOUT` (seconds; fractions allowed); a value
/// that is not a positive number leaves the default.
pub fn configure(ctx: &Context) {
    let limit = ctx
        .var_nonempty(vars::GPUENV_PROBE_TIMEOUT)
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64);
    if let Some(limit) = limit {
        let _ = LIMIT.set(limit);
    }
}

/// The deadline every asked program gets.
pub fn limit() -> Duration {
    LIMIT.get().copied().unwrap_or(DEFAULT_LIMIT)
}

/// What a program answered.
#[derive(Debug)]
pub struct Answer {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Answer {
    /// Stdout then stderr, as text.
    pub fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&self.stderr));
        text
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("cannot run `{command}`: {source}")]
    Start {
        command: String,
        source: std::io::Error,
    },
    #[error("`{command}` did not answer within {}, so gpuenv stopped it", seconds(*.limit))]
    TimedOut { command: String, limit: Duration },
    #[error("waiting for `{command}`: {source}")]
    Wait {
        command: String,
        source: std::io::Error,
    },
}

impl crate::diagnostic::Diagnostic for AskError {
    fn hints(&self) -> Vec<String> {
        match self {
            AskError::TimedOut { .. } => vec![format!(
                "find out why it hangs (a wedged driver, a network file system); {} sets how many seconds gpuenv waits",
                vars::GPUENV_PROBE_TIMEOUT
            )],
            AskError::Start { .. } | AskError::Wait { .. } => Vec::new(),
        }
    }
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// The command as a person would type it, for messages.
fn shown(cmd: &Command) -> String {
    let mut words: Vec<OsString> = vec![cmd.get_program().to_os_string()];
    words.extend(cmd.get_args().map(|a| a.to_os_string()));
    let words: Vec<String> = words
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    words.join(" ")
}

enum Event {
    /// A chunk read from stdout (`true`) or stderr (`false`).
    Read(bool, Vec<u8>),
    /// That pipe is at its end (or cannot be read).
    Closed(bool),
    Exited(std::io::Result<ExitStatus>),
}

/// Most of a program's stdout or stderr kept: an answer is a few lines. Past it the pipe is
/// closed, and a program that goes on writing stops (SIGPIPE) or meets the deadline.
const MAX_OUTPUT: u64 = 1 << 20;

/// How long, once the program has exited, its pipes may take to reach their end: what it
/// wrote is already in them; only a child it left behind holds them open longer.
const AFTER_EXIT: Duration = Duration::from_millis(200);

/// Runs `cmd` with stdin closed, collecting stdout and stderr, for at most [`limit`]. A
/// program still running then is killed (`SIGKILL`, with its whole process group) and the
/// answer is [`AskError::TimedOut`]. Output held open by a child it left behind is not
/// waited for: that child is killed at the deadline.
pub fn output(cmd: &mut Command) -> Result<Answer, AskError> {
    output_within(cmd, limit())
}

/// [`output`] with an explicit deadline.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Result<Answer, AskError> {
    let command = shown(cmd);
    let deadline = Instant::now() + limit;
    // A signal between the spawn and the group's registration would kill gpuenv and leave
    // the group running (holding the shell's command substitution open): held off until
    // the group is known. The child starts with no signal blocked (std resets the mask).
    let held = Held::new();
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A program that another process has only just written is "busy" (ETXTBSY) while any
    // fork made in that moment still holds its writing descriptor: asked again shortly.
    let mut spawned = cmd.spawn();
    for wait in [5, 20, 80] {
        match &spawned {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(wait));
                spawned = cmd.spawn();
            }
            _ => break,
        }
    }
    let mut child = spawned.map_err(|source| AskError::Start {
        command: command.clone(),
        source,
    })?;
    let group = Group::new(child.id() as libc::pid_t);
    drop(held);
    let (tx, rx) = mpsc::channel();
    // Both pipes are read on threads so a chatty program never blocks on a full pipe, in
    // chunks so what came before a leftover child's open pipe is kept.
    let drain = |pipe: Option<Box<dyn Read + Send>>, out: bool| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            let mut kept = 0u64;
            if let Some(mut p) = pipe {
                while let Ok(n @ 1..) = p.read(&mut buf) {
                    // Past the cap the pipe is closed (below, by dropping it).
                    kept += n as u64;
                    if kept > MAX_OUTPUT || tx.send(Event::Read(out, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
            let _ = tx.send(Event::Closed(out));
        });
    };
    drain(child.stdout.take().map(|p| Box::new(p) as _), true);
    drain(child.stderr.take().map(|p| Box::new(p) as _), false);
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send(Event::Exited(child.wait()));
        });
    }
    drop(tx);
    let (mut stdout, mut stderr, mut status) = (Vec::new(), Vec::new(), None);
    let mut open = [true, true];
    let mut until = deadline;
    while status.is_none() || open.contains(&true) {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Event::Read(true, b)) => stdout.extend(b),
            Ok(Event::Read(false, b)) => stderr.extend(b),
            Ok(Event::Closed(out)) => open[usize::from(!out)] = false,
            Ok(Event::Exited(Ok(s))) => {
                status = Some(s);
                until = deadline.min(Instant::now() + AFTER_EXIT);
            }
            Ok(Event::Exited(Err(source))) => return Err(AskError::Wait { command, source }),
            // It answered; what it left behind holding the output open goes with the group.
            Err(_) if status.is_some() => break,
            Err(_) => {
                group.kill();
                return Err(AskError::TimedOut { command, limit });
            }
        }
    }
    Ok(Answer {
        status: status.expect("the loop ends with a status"),
        stdout,
        stderr,
    })
}

/// Runs `cmd` attached to gpuenv's own terminal and process group, and waits for it: the
/// one kind of program gpuenv starts that is not asked a question. Only `gpuenv install`
/// started by `GPUENV_AUTO_INSTALL` runs so: its progress belongs on the terminal, a
/// download has no deadline, and Ctrl-C at the prompt must reach it (a group of its own
/// would not get the terminal's signals).
pub fn attached(cmd: &mut Command) -> std::io::Result<ExitStatus> {
    cmd.status()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_still_open_for_writing_a_moment_is_run_once_it_is_closed() {
        use std::io::Write as _;
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("nvcc");
        let mut file = std::fs::File::create(&script).unwrap();
        file.write_all(b"#!/bin/sh\necho 13.0\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Still open for writing: its exec is refused (ETXTBSY) until this closes.
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            drop(file);
        });
        let a = output_within(&mut Command::new(&script), Duration::from_secs(5)).unwrap();
        closer.join().unwrap();
        assert_eq!(a.stdout, b"13.0\n");
    }

    #[test]
    fn a_program_that_answers_is_read_whole() {
        let a = output_within(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(a.stdout, b"out\n");
        assert_eq!(a.stderr, b"err\n");
        assert_eq!(a.status.code(), Some(3));
    }

    #[test]
    fn a_program_that_hangs_is_stopped_and_named() {
        let e = output_within(
            Command::new("sh").args(["-c", "sleep 600"]),
            Duration::from_millis(200),
        )
        .unwrap_err();
        assert!(matches!(e, AskError::TimedOut { .. }), "{e}");
        let text = e.to_string();
        assert!(text.contains("`sh -c sleep 600`"), "{text}");
        assert!(text.contains("0.2 s"), "{text}");
    }

    #[test]
    fn output_kept_open_by_a_leftover_child_is_not_waited_for() {
        // The leftover `sleep` holds both pipes open for 20 s; the deadline is longer.
        let started = Instant::now();
        let a = output_within(
            Command::new("sh").args(["-c", "echo hi; echo err >&2; sleep 20 & exit 0"]),
            Duration::from_secs(120),
        )
        .unwrap();
        assert!(a.status.success());
        assert_eq!(a.stdout, b"hi\n", "what it wrote before exiting is kept");
        assert_eq!(a.stderr, b"err\n");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "it waited for the leftover child: {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn the_whole_group_is_stopped_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child");
        let script = format!("sleep 600 & echo $! > '{}'; wait", pid_file.display());
        let e = output_within(
            Command::new("sh").args(["-c", &script]),
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(matches!(e, AskError::TimedOut { .. }), "{e}");
        let pid = fs_err::read_to_string(&pid_file).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        let start = Instant::now();
        // Gone, or a zombie until init reaps it.
        while fs_err::read_to_string(&stat).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, r)| !r.starts_with('Z'))
        }) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the child lives on"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_missing_program_is_an_error_naming_it() {
        let e = output_within(&mut Command::new("/nonexistent/g++"), DEFAULT_LIMIT).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/g++"), "{e}");
    }
}
