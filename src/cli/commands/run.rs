//! `gpuenv run -- CMD`: a command run with the environment of the active (or given) toolchains.

use crate::cli::support;
use std::ffi::OsString;

use anyhow::Result;

use gpuenv_core::context::{vars, Context};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::session::{self, Purpose};
use gpuenv_core::shell::quote;
use gpuenv_core::store;
use gpuenv_core::toolchain::Spec;

/// Run a command with the environment of the given toolchains (or of those active here)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpuenv run -- nvcc --version\n  gpuenv run cuda-12.4 -- python setup.py build_ext"
)]
pub struct Args {
    /// Specs such as cuda-11.8 rocm-6.2 (at most one per kind); they win over
    /// GPUENV_TOOLCHAIN and the toolchain file
    specs: Vec<String>,
    /// Put the toolkit's library dir on LD_LIBRARY_PATH even where it holds libraries the
    /// active Python environment's NVIDIA wheels ship (by default it is left off there, so
    /// JAX and others load the wheels' own)
    #[arg(long)]
    toolkit_libs: bool,
    /// The command and its arguments, after `--`
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let mut session = support::session(ctx)?;
        let overrides = support::parse_specs(&self.specs)?;
        let active = support::resolve_here(&mut session, &overrides, None)?;
        support::warn_host_compiler(&active);
        session.keep_toolkit_libs(self.toolkit_libs);
        if let Some(node) = ctx.var_nonempty(vars::SLURMD_NODENAME) {
            // The TaskProlog lets gpuenv's own steps through, so `srun gpuenv run` refuses
            // a tree that is not on this node itself, as the prolog would.
            for t in &active.toolchains {
                if let Some(problem) = store::tree_problem(&t.name, &t.entry) {
                    return Err(store::NotOnThisNode {
                        name: t.name.clone(),
                        node: format!("node {node}"),
                        problem,
                    }
                    .into());
                }
            }
        }
        let applied = session.applied(&active, Purpose::Command)?;
        let program = &self.command[0];
        let args = self.command[1..].iter().map(OsString::from).collect();
        // exec: the command's exit status and signals are its own.
        let err = session::exec_with(program.into(), args, &applied);
        // The statuses a shell gives: 127 not found, 126 found but not runnable.
        if err.kind() == std::io::ErrorKind::NotFound {
            let hint = if program.contains('/') {
                format!("check the path {program}")
            } else {
                "it is not on PATH, nor in the active toolchain's bin/ (`gpuenv which <tool>` shows where a tool comes from)".to_string()
            };
            let err = Hinted::new(format!("{program}: command not found")).hint(hint);
            return Err(support::fail_with(support::status::NOT_FOUND, err.into()));
        }
        let err = anyhow::Error::from(err).context(format!("cannot run `{program}`"));
        Err(support::fail_with(support::status::NOT_EXECUTABLE, err))
    }
}

/// The corrected command line for `gpuenv run …` typed without `--` (`args`: everything
/// after `gpuenv`): leading specs stay, the rest goes after `--`. `None` when there is no
/// command to move.
pub fn tip(args: &[String]) -> Option<String> {
    let at = args.iter().position(|a| a == "run")?;
    let (globals, rest) = (&args[..at], &args[at + 1..]);
    let specs = rest
        .iter()
        .take_while(|a| !a.starts_with('-') && a.parse::<Spec>().is_ok())
        .count();
    let command = &rest[specs..];
    if command.is_empty() {
        return None;
    }
    let words = |ws: &[String]| -> Vec<String> {
        ws.iter()
            .map(|w| {
                if w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=+,:@%".contains(c))
                {
                    w.clone()
                } else {
                    String::from_utf8_lossy(&quote::posix(w.as_bytes())).into_owned()
                }
            })
            .collect()
    };
    let mut line = vec!["gpuenv".to_string()];
    line.extend(words(globals));
    line.push("run".into());
    line.extend(words(&rest[..specs]));
    line.push("--".into());
    line.extend(words(command));
    Some(line.join(" "))
}

#[cfg(test)]
mod tests {
    use super::tip;

    fn t(line: &str) -> Option<String> {
        tip(&line.split(' ').map(str::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn the_command_moves_after_the_dashes_and_specs_stay() {
        assert_eq!(
            t("run nvcc --version").as_deref(),
            Some("gpuenv run -- nvcc --version")
        );
        assert_eq!(
            t("-v run cuda-12.4 python setup.py").as_deref(),
            Some("gpuenv -v run cuda-12.4 -- python setup.py")
        );
        assert_eq!(t("run cuda-12.4"), None);
    }
}
