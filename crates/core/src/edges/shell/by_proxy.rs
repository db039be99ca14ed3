//! The prompt answered by the proxy binary: the hook scripts run `gpuenv-shim hook-env
//! --shell bash` (the proxy beside gpuenv), not gpuenv. Most of what a prompt after a `cd`
//! costs is starting a process, and the proxy starts in a fraction of gpuenv's time: one
//! crate, no command-line parser, no installer, and in the release wheels linked static
//! (docs/performance.md). It runs the same `prompt::prompt` as `gpuenv hook-env` and answers
//! only a prompt that gpuenv would answer the same without a word on stderr. Anything else
//! it hands over to gpuenv beside it (an exec with the same arguments, before it wrote
//! anything), which then runs the whole prompt:
//! - anything to say: an error, a trust notice, an unusable upstream (every message is held
//!   back by `ui::hold` and said by gpuenv instead, once);
//! - a project with a lock (gpuenv.lock is read by gpuenv's installer crate);
//! - a pin that is not installed (`GPUENV_AUTO_INSTALL` installs it through gpuenv);
//! - an installed proxy that is not this one (gpuenv puts it in place, as every command does);
//! - `GPUENV_LOG=verbose` (gpuenv says what it reads) or a level gpuenv does not know (it
//!   warns).

use std::cell::Cell;
use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::prompt::{self, Resolver};
use super::Shell;
use crate::context::{vars, BadFlag, Context};
use crate::diagnostic::{Diagnostic, Find};
use crate::edges::session::Session;
use crate::named::Named;
use crate::plan::auto_install::{InstallFailed, NotAllowed};
use crate::plan::exec::Exec;
use crate::plan::resolve::{ActiveSet, ResolveError};
use crate::store::home::PROXY_NAME;
use crate::store::toolchain::registry::StateError;
use crate::store::toolchain::Kind;
use crate::store::{shims, StoreError};
use crate::ui;

/// The shell of a prompt's call to the proxy binary: `argv[0]` names the proxy itself (not
/// a tool's shim or view) and the rest is exactly what the hook scripts pass.
pub fn prompt_call(argv: &[OsString]) -> Option<Shell> {
    let (program, args) = argv.split_first()?;
    if Path::new(program).file_name()? != PROXY_NAME {
        return None;
    }
    super::hook::prompt_call(args.iter().cloned())
}

/// Answers the prompt, or hands it over to gpuenv. Returns the exit status when gpuenv
/// cannot be started.
pub fn main(shell: Shell, find: &[Find]) -> u8 {
    crate::edges::proxy::start_up();
    ui::hold(true);
    if let Some(code) = answer().map(|p| p.render(shell)) {
        let mut out = std::io::stdout().lock();
        return match out.write_all(&code).and_then(|()| out.flush()) {
            Ok(()) => 0,
            Err(_) => 2,
        };
    }
    ui::hold(false);
    let gpuenv = std::env::current_exe()
        .unwrap_or_default()
        .with_file_name("gpuenv");
    let exec = Exec {
        program: gpuenv.clone(),
        args: ["hook-env", "--shell", shell.name()]
            .map(OsString::from)
            .to_vec(),
        env: Vec::new(),
    };
    let source = crate::edges::proxy::exec_raw(&exec);
    ui::error(
        &NoGpuenv {
            program: gpuenv,
            shell,
            source,
        },
        find,
    );
    2
}

/// The prompt as `gpuenv hook-env` makes it, when gpuenv would print it the same and say
/// nothing; `None` hands it over.
fn answer() -> Option<prompt::Prompt> {
    let ctx = Context::from_process_at_prompt().ok()?;
    if let Some(level) = ctx.var_nonempty(vars::GPUENV_LOG) {
        match ui::Level::parse(level)? {
            ui::Level::Verbose => return None,
            level => ui::set_level(level),
        }
    }
    crate::ask::configure(&ctx);
    let home = ctx.gpuenv_home().ok()?;
    let me = std::env::current_exe().ok()?;
    if shims::proxy_outdated(&home, &me) {
        return None;
    }
    let resolver = ByProxy {
        over: Cell::new(false),
    };
    let prompt = prompt::prompt(&ctx, &home, false, &resolver);
    let said = resolver.over.get() || ui::held_back() || !prompt.notes.is_empty();
    (!said).then_some(prompt)
}

/// Resolution as `gpuenv hook-env` does it, minus what needs gpuenv: that sets `over`.
struct ByProxy {
    over: Cell<bool>,
}

impl Resolver for ByProxy {
    type Error = HandOver;

    fn resolve(&self, session: &mut Session) -> Result<ActiveSet, HandOver> {
        // No installer: a pin that is not installed is an error here, and gpuenv's own run
        // installs it where the user asked for that.
        let mut active = session.resolve::<HandOver>(&[], &Kind::ALL, None)?;
        session.attach_host_compiler(&mut active);
        Ok(active)
    }

    fn lock_notes(&self, active: &ActiveSet) -> (Vec<String>, Option<PathBuf>) {
        let Some(project) = &active.project else {
            return (Vec::new(), None);
        };
        let lock = crate::project::lock_beside(&project.path);
        if fs_err::symlink_metadata(&lock).is_ok() {
            self.over.set(true);
        }
        (Vec::new(), Some(lock))
    }

    fn one_line(&self, _: &HandOver) -> String {
        self.over.set(true);
        String::new()
    }
}

/// Whatever went wrong: gpuenv, which the prompt is handed over to, says it.
#[derive(Debug, thiserror::Error)]
#[error("left to gpuenv")]
struct HandOver;

macro_rules! hand_over_on {
    ($($error:ty),*) => {$(
        impl From<$error> for HandOver {
            fn from(_: $error) -> HandOver {
                HandOver
            }
        }
    )*};
}
hand_over_on!(
    StateError,
    StoreError,
    ResolveError,
    InstallFailed,
    NotAllowed,
    BadFlag
);

/// gpuenv is not beside the proxy binary the hook runs.
#[derive(Debug, thiserror::Error)]
#[error("the shell hook's prompt needs gpuenv at {}, beside the proxy, and it cannot be started", program.display())]
pub struct NoGpuenv {
    program: PathBuf,
    shell: Shell,
    #[source]
    source: std::io::Error,
}

impl Diagnostic for NoGpuenv {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "install gpuenv again, which puts both binaries side by side, then open a new shell (its hook line: {})",
            super::hook::setup_line(self.shell)
        )]
    }
}
