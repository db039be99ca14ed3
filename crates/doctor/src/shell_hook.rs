//! The shell hook: `doctor` typed in an interactive bash, zsh or fish that never loaded
//! gpuenv's hook, in a directory that pins a toolchain, is the case of `nvcc: command not
//! found` (or another nvcc) with everything else fine. The shell is doctor's parent process
//! (`/proc/self/stat`), read under the machine's root so a fixture tree can stand in for it.

use gpuenv_core::context::vars;
use gpuenv_core::resolve::Reason;
use gpuenv_core::shell::{hook, Shell};

use super::{Check, Finding, Inputs, Machine, Notes, Status};

pub const CHECK: Check = Check {
    id: "shell-hook",
    name: "hook",
};

/// The interactive shell that started doctor: its parent, when that is bash, zsh or fish
/// with no script or `-c` command (only options, as a terminal starts it).
pub fn interactive_parent(m: &Machine) -> Option<Shell> {
    let stat = m.read("/proc/self/stat")?;
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
    let ppid: u32 = stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()?;
    let comm = m.read(&format!("/proc/{ppid}/comm"))?;
    let shell: Shell = comm.trim().trim_start_matches('-').parse().ok()?;
    let cmdline = m.read(&format!("/proc/{ppid}/cmdline"))?;
    let args: Vec<&str> = cmdline
        .split('\0')
        .skip(1)
        .filter(|a| !a.is_empty())
        .collect();
    let command = args.iter().any(|a| *a == "-c" || *a == "--command");
    let interactive = args.contains(&"-i") || args.iter().all(|a| a.starts_with('-'));
    (interactive && !command).then_some(shell)
}

fn rc_file(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => "~/.bashrc",
        Shell::Zsh => "~/.zshrc",
        Shell::Fish => "~/.config/fish/config.fish",
    }
}

fn hook_line(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => "eval \"$(gpuenv hook bash)\"",
        Shell::Zsh => "eval \"$(gpuenv hook zsh)\"",
        Shell::Fish => "gpuenv hook fish | source",
    }
}

pub fn run(inputs: &Inputs) -> Finding {
    let m = &inputs.machine;
    let Some(shell) = interactive_parent(m) else {
        return CHECK.skip("doctor was not started by an interactive bash, zsh or fish");
    };
    if m.var(vars::__GPUENV_STATE).is_some() {
        return Notes::default().finish(
            CHECK,
            format!("the hook is loaded in this {shell}: it switches on every cd"),
        );
    }
    // What only the hook would have put in this shell: pins and the default, not
    // GPUENV_TOOLCHAIN (`gpuenv use` needs the hook itself and says so).
    let wanted: Vec<&str> = inputs
        .active
        .toolchains
        .iter()
        .filter(|t| {
            matches!(
                t.reason,
                Reason::File(..) | Reason::Default(..) | Reason::Torch(..)
            )
        })
        .map(|t| t.name.as_str())
        .collect();
    if wanted.is_empty() {
        return CHECK.skip(format!(
            "this {shell} has no gpuenv hook, and nothing here is pinned that it would switch to"
        ));
    }
    if let Some(applied) = m.var(vars::GPUENV_ACTIVE) {
        return Notes::default().finish(
            CHECK,
            format!("this {shell} has no gpuenv hook, but gpuenv's environment was applied ({applied}): it will not follow a cd"),
        );
    }
    let mut notes = Notes::default();
    notes.problem(
        Status::Warn,
        format!(
            "this {shell} has no gpuenv hook: {} is pinned here but not in its environment (`nvcc` here is not gpuenv's)",
            wanted.join(", ")
        ),
    );
    notes.seen(format!(
        "__GPUENV_STATE and GPUENV_ACTIVE are unset; the hook is loaded by {}",
        hook::setup_line(shell)
    ));
    notes.hint(format!(
        "add `{}` to {} and open a new shell (or run it in this one)",
        hook_line(shell),
        rc_file(shell)
    ));
    notes.finish(CHECK, "")
}
