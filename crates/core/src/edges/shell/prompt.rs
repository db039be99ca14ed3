//! One prompt of the shell hook: what its result depends on (the watched variables and
//! files), whether anything changed since the last one (else the fast path is armed
//! again), and the step that moves the shell there. It prints nothing: the notes for
//! stderr and the code for the shell are returned.

use std::ffi::OsStr;
use std::path::PathBuf;

use crate::context::{vars, Context};
use crate::edges::session::{Door, Purpose, Session};
use crate::edges::shell::fast_path::{self, Check};
use crate::edges::shell::hook_env::{self, Fingerprint, State, Step, STATE_VAR};
use crate::edges::shell::hop::{self, Hop};
use crate::edges::shell::{self as shell, Shell};
use crate::plan::env;
use crate::plan::resolve::{ActiveSet, Reason};
use crate::store::home::Home;
use crate::store::toolchain::registry::StateError;
use crate::store::toolchain::upstream;
use crate::store::StoreError;

/// What the command line adds to a prompt past its fast path.
pub trait Resolver {
    type Error: From<StateError> + From<StoreError>;
    /// The active set here, as the commands resolve it (a missing pin installed under
    /// `GPUENV_AUTO_INSTALL`).
    fn resolve(&self, session: &mut Session) -> Result<ActiveSet, Self::Error>;
    /// How the active set differs from the project's lock, one line each, and the lock's
    /// path for the hook to watch.
    fn lock_notes(&self, active: &ActiveSet) -> (Vec<String>, Option<PathBuf>);
    /// The error in one line.
    fn one_line(&self, err: &Self::Error) -> String;
}

/// What one prompt prints.
pub struct Prompt {
    /// `None` when nothing it depends on changed since the last one.
    pub step: Option<Step>,
    /// When the shell may skip the next run (`None`: never).
    pub check: Option<Check>,
    /// One line each for stderr (`ui::hook_note`): the lock's differences, an error.
    pub notes: Vec<String>,
    /// The way back to the state before this run (`hop`), when there is one.
    pub hop: Option<Hop>,
}

impl Prompt {
    /// The assignments, then the fast-path function, which every run redefines, and the
    /// way back, which every run that moves the shell redefines.
    pub fn render(&self, shell: Shell) -> Vec<u8> {
        let mut out = match &self.step {
            Some(step) => render(step, shell),
            None => Vec::new(),
        };
        out.extend_from_slice(fast_path::render(self.check.as_ref(), shell).as_bytes());
        if self.step.is_some() {
            out.extend_from_slice(hop::render(self.hop.as_ref(), shell).as_bytes());
        }
        out
    }
}

pub fn render(step: &Step, shell: Shell) -> Vec<u8> {
    let vars: Vec<(&str, Option<&OsStr>)> = step
        .assignments
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_deref()))
        .collect();
    shell::render(&vars, shell.format())
        .expect("the shells' quoting holds any value")
        .bytes
}
/// The variables a prompt's result depends on, besides the directory and the files.
const WATCHED_VARS: [&str; 9] = [
    vars::GPUENV_TOOLCHAIN,
    // The PyTorch index mirror: UV_INDEX and PIP_EXTRA_INDEX_URL follow an export at once.
    vars::GPUENV_TORCH_INDEX_URL,
    vars::VIRTUAL_ENV,
    vars::CONDA_PREFIX,
    vars::GPUENV_HOME,
    vars::XDG_DATA_HOME,
    vars::GPUENV_UPSTREAMS,
    vars::GPUENV_SYSTEM_CONFIG,
    vars::_LMFILES_,
];

/// One prompt's step (skipped when nothing it depends on changed since the last one,
/// unless `force`), and the check that lets the shell skip the next one. Never fails: a
/// problem is one line of `notes`, what the hook had applied is taken back (a directory
/// that cannot be resolved must not keep the previous one's toolchain and `[env]`), and
/// the line is not repeated until something changes.
pub fn prompt<R: Resolver>(ctx: &Context, home: &Home, force: bool, resolver: &R) -> Prompt {
    let watched = WATCHED_VARS
        .iter()
        .map(|k| {
            let value = ctx
                .var_os(k)
                .filter(|v| !v.is_empty())
                .map(|v| v.to_string_lossy().into_owned());
            (k.to_string(), value)
        })
        .collect();
    let old = ctx.var(STATE_VAR).and_then(State::decode);
    let extra: Vec<PathBuf> = old
        .iter()
        .flat_map(|s| s.fp.extra.iter().map(|(p, _)| p.clone()))
        .collect();
    let mut fp = Fingerprint::take(&ctx.cwd, watched, &home.settings(), &extra);
    let path = ctx.var_os(vars::PATH);
    if old.as_ref().is_some_and(|s| s.fp.python.is_some()) {
        fp.watch_python(path);
    }
    let pwd = ctx.var(vars::PWD);
    if !force && old.as_ref().is_some_and(|s| s.fp == fp) {
        let quiet = old.as_ref().is_some_and(|s| s.quiet);
        let check = fast_path::arm(home, &fp, pwd, path, quiet);
        return Prompt {
            step: None,
            check,
            notes: Vec::new(),
            hop: None,
        };
    }
    let current = |k: &str| ctx.var_os(k).map(ToOwned::to_owned);
    let mut notes = Vec::new();
    let mut step = match wanted_change(ctx, home, resolver, &mut notes) {
        Ok(wanted) => {
            fp.watch(&wanted.read);
            fp.python = None;
            if wanted.torch {
                fp.watch_python(path);
            }
            let change = wanted.change;
            hook_env::step(old.as_ref(), fp, &current, &|base| change.apply(base))
        }
        Err(e) => {
            // A `"torch"` pin that found no torch may find one once a venv is first on
            // PATH: the error is said again then, not kept.
            fp.watch_python(path);
            let step = hook_env::revert_all(old.as_ref(), fp, &current);
            let undone = step.assignments.iter().any(|(k, _)| k != STATE_VAR);
            let why = resolver.one_line(&e);
            if undone {
                notes.push(format!(
                    "{why} (gpuenv's changes to this shell are undone until this is fixed)"
                ));
            } else {
                notes.push(why);
            }
            step
        }
    };
    // PATH as the shell will have it once this step is applied.
    let path_after = match step.assignments.iter().find(|(k, _)| k == vars::PATH) {
        Some((_, v)) => v.as_deref(),
        None => path,
    };
    let check = fast_path::arm(home, &step.state.fp, pwd, path_after, notes.is_empty());
    // Only a prompt's own run (not `use`, which forces one) that said nothing and may be
    // skipped next time makes a way back (`hop`).
    let hop = match (&check, notes.is_empty() && !force) {
        (Some(here), true) => {
            step.mark_quiet();
            way_back(ctx, home, old.as_ref(), &step, here)
        }
        _ => None,
    };
    Prompt {
        step: Some(step),
        check,
        notes,
        hop,
    }
}

/// The hop between the shell as it is now (`old`'s state) and what `step` makes of it,
/// when the shell may come back to `old` without asking gpuenv: `old`'s run said nothing
/// and was armed (`State::quiet`), the user changed none of the variables it set since,
/// it did not depend on the `python3` on PATH (which the shell cannot look up), and its
/// check, made again from what it recorded (stamps, values, the toolchain file's text),
/// still holds for it.
fn way_back(
    ctx: &Context,
    home: &Home,
    old: Option<&State>,
    step: &hook_env::Step,
    here: &Check,
) -> Option<Hop> {
    let old = old.filter(|o| o.quiet && o.fp.python.is_none())?;
    let now = |k: &str| ctx.var_os(k).map(ToOwned::to_owned);
    if old
        .vars
        .iter()
        .any(|(k, saved)| !saved.after.holds(now(k).as_deref()))
    {
        return None;
    }
    // The directory the old run was taken in, as the shell names it there.
    let pwd = old.fp.cwd.to_str()?;
    let back = fast_path::arm(home, &old.fp, Some(pwd), ctx.var_os(vars::PATH), true)?;
    // Every variable either state set or this step assigns: its value on each side (what
    // the shell has now, what it will have), each checked before a hop leaves that side.
    let mut keys: Vec<&str> = step
        .assignments
        .iter()
        .map(|(k, _)| k.as_str())
        .chain(old.vars.keys().map(String::as_str))
        .chain(step.state.vars.keys().map(String::as_str))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let after = |k: &str| match step.assignments.iter().find(|(n, _)| n == k) {
        Some((_, v)) => v.clone(),
        None => now(k),
    };
    let side = |check: Check, value: &dyn Fn(&str) -> Option<std::ffi::OsString>| hop::Side {
        check,
        values: keys.iter().map(|k| (k.to_string(), value(k))).collect(),
    };
    Hop::new(side(back, &now), side(here.clone(), &after), home.hops())
}

/// The change for a directory, and what besides the toolchain file and the registry it
/// was computed from.
struct Wanted {
    change: env::Change,
    /// Files: the upstreams' settings, the torch a pin read, the lock.
    read: Vec<PathBuf>,
    /// A `"torch"` pin is in effect: the first `python3` on PATH counts too.
    torch: bool,
}

fn wanted_change<R: Resolver>(
    ctx: &Context,
    home: &Home,
    resolver: &R,
    notes: &mut Vec<String>,
) -> Result<Wanted, R::Error> {
    // Own toolchains and the upstreams', read again after an auto-install.
    let mut session = Session::open_at(ctx, home.clone(), Door::Hook)?;
    let active = resolver.resolve(&mut session)?;
    let (lock_notes, lock) = resolver.lock_notes(&active);
    notes.extend(lock_notes);
    let home = session.home();
    // Besides the user's settings: the system config and every upstream's settings.
    let mut read: Vec<PathBuf> = vec![upstream::system_config_path(ctx)];
    read.extend(home.upstreams.iter().map(|u| Home::new(u).settings()));
    // A new or edited lock is said at the next prompt.
    read.extend(lock);
    // As `env` and `run` do, a toolchain whose view is missing (an upstream's the upstream
    // has none for) gets one in the user's own home, or its nvcc would not be on PATH. Only
    // here, past the fast path: a prompt where nothing changed still runs nothing.
    let change = session.environment(&active, Purpose::Hook)?;
    // The fingerprint stamps the nearest file; when that one was passed over as someone
    // else's, the one applied is farther up.
    if !active.passed_over.is_empty() {
        read.extend(active.project.as_ref().map(|p| p.path.clone()));
    }
    let torch: Vec<PathBuf> = active
        .toolchains
        .iter()
        .filter_map(|t| match &t.reason {
            Reason::Torch(_, _, torch) => Some(torch.join("version.py")),
            _ => None,
        })
        .collect();
    let torch_pin = !torch.is_empty();
    read.extend(torch);
    Ok(Wanted {
        change,
        read,
        torch: torch_pin,
    })
}
