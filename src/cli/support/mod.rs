//! What several commands share: the session and store they open, how they resolve here,
//! print errors and warnings, parse specs, and exit; and the parts of commands that are no
//! command of their own (install steps, the lock library, the SLURM prolog, …). Commands
//! import from here, never from each other.

pub mod install_advice;
pub mod install_component;
pub mod install_from;
pub mod install_locked;
pub mod install_pinned;
pub mod install_torch;
pub mod interrupt;
pub mod lock;
pub mod named_arg;
pub mod outdated;
pub mod prolog;
pub mod pyproject;
pub mod self_info;
pub mod self_uninstall;
pub mod spec_hint;
pub mod stale_trees;
pub mod uninstall;

use anyhow::Result;

use gpuenv_core::auto_install::Installer;
use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::{Diagnostic, Find, Hinted};
use gpuenv_core::edges::installer::RunGpuenv;
use gpuenv_core::home::Home;
use gpuenv_core::project::{self, PinValue};
use gpuenv_core::resolve::{self, ActiveSet};
use gpuenv_core::session::{Door, Session};
use gpuenv_core::shell::prompt::{Prompt, Resolver};
use gpuenv_core::store::{Problem, Store};
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::toolchain::{upstream, Kind, Spec};
use gpuenv_core::{shims, ui};

/// An exit status chosen by a command (1: the thing asked is not so), with its message
/// already printed.
#[derive(Debug, thiserror::Error)]
#[error("exit status {0}")]
pub struct Exit(pub u8);

/// Exit statuses besides 0, 1 (the thing asked is not so) and 2 (usage or input error).
pub mod status {
    /// A fetch failed in the network or at the server (DNS, connection, certificate,
    /// timeout, HTTP error, redirect loop): not a usage error.
    pub const NETWORK: u8 = 3;
    /// Interrupted (Ctrl-C), as a shell reports SIGINT.
    pub const INTERRUPTED: u8 = 130;
    /// `gpuenv run -- cmd`: cmd was found but cannot be run, as a shell says.
    pub const NOT_EXECUTABLE: u8 = 126;
    /// `gpuenv run -- cmd`: no such command, as a shell says.
    pub const NOT_FOUND: u8 = 127;
}

/// Prints `err` and ends with `code`.
pub fn fail_with(code: u8, err: anyhow::Error) -> anyhow::Error {
    print_error(&err);
    Exit(code).into()
}

/// The finders of every crate whose errors reach the CLI (see `gpuenv_core::diagnostic`).
pub const FIND: &[Find] = gpuenv_install::FIND;

/// Prints an error with its causes and hints.
pub fn print_error(err: &anyhow::Error) {
    gpuenv_core::ui::error(err.as_ref(), FIND);
}

/// A command's session, its registry read (the upstreams' toolchains added, for reading
/// only: changes go through `Registry::update`, which sees the user's own file alone).
pub fn session(ctx: &Context) -> Result<Session<'_>> {
    Session::open(ctx, Door::Command)
}

/// The registry and where it lives, for commands that keep them past a session.
pub fn registry(ctx: &Context) -> Result<(Home, Registry)> {
    let (home, layered) = layered(ctx)?;
    Ok((home, layered.registry))
}

/// Refuses to change a toolchain that only an upstream has: gpuenv never writes there.
pub fn refuse_upstream(ctx: &Context, name: &str, command: &str) -> Result<()> {
    let (_home, layered) = layered(ctx)?;
    if let Some(root) = layered.upstream_of(name) {
        anyhow::bail!(Hinted::new(format!(
            "{name} belongs to the upstream {} (a shared, read-only gpuenv store), so `gpuenv {command}` leaves it alone",
            root.display()
        ))
        .hint(format!(
            "the store's admin runs `GPUENV_HOME={} gpuenv {command} {name}`; to stop seeing its toolchains, drop it from GPUENV_UPSTREAMS, `upstreams` in settings.toml or the system config",
            root.display()
        )));
    }
    Ok(())
}

/// The own registry and the upstreams', with a warning for each upstream that cannot be used.
pub fn layered(ctx: &Context) -> Result<(Home, upstream::Layered)> {
    let (home, layered, _) = session(ctx)?.into_parts();
    Ok((home, layered))
}

/// Says what is odd about the state file, if anything.
pub fn notice(registry: &Registry) {
    if let Some(n) = &registry.notice {
        ui::warn_with_hints(n, n.hints());
    }
}

/// What an installed toolchain is made of, by its install record (`list`, `show`); empty
/// for one gpuenv did not install, or installed before records.
pub fn made_of(entry: &gpuenv_core::toolchain::registry::Entry) -> Vec<String> {
    use gpuenv_core::toolchain::registry::Source as Origin;
    if entry.source != Origin::Installed {
        return Vec::new();
    }
    gpuenv_install::record::read(&entry.root).map_or_else(Vec::new, |r| r.made_of())
}

/// Each thing missing from the store, with the command that fixes it.
pub fn warn_problems(problems: &[Problem]) {
    for p in problems {
        ui::warn_with_hints(p, [p.hint()]);
    }
}

/// A host compiler nvcc would stop on (a pinned one that is missing, a default too new),
/// said by every command that sets up a compile (`show`, `env`, `run`), not only by nvcc.
pub fn warn_host_compiler(active: &ActiveSet) {
    if let Some(problem) = active.host_compiler.as_ref().and_then(|c| c.problem()) {
        ui::warn_with_hints(&problem, problem.hints());
    }
}

/// Toolchains that got no shims (`shims::MAX_SHIMS_PER_TOOLCHAIN`), and why.
pub fn warn_unshimmed(shims: &shims::Reshim) {
    for why in &shims.refused {
        ui::warn(format!("no shims for {why}"));
    }
}

/// Defaults that a forgotten toolchain took with it.
pub fn warn_dropped_defaults(dropped: &[String]) {
    for d in dropped {
        ui::warn(format!(
            "the default {d} no longer matches a registered toolchain and was cleared; set another with `gpuenv default <spec>`"
        ));
    }
}

/// Toolchain files (the one here, and the trusted ones gpuenv knows of) whose pin selected
/// the `removed` toolchain; `again` is the quoted command that puts it back.
pub fn warn_about_pins(ctx: &Context, registry: &Registry, removed: &Spec, again: &str) {
    let mut files: Vec<std::path::PathBuf> =
        registry.trusted.iter().map(|t| t.path.clone()).collect();
    if let Ok(Some(here)) = project::find(&ctx.cwd, &registry.safe_directories).map(|h| h.path) {
        files.insert(0, here);
    }
    files.dedup();
    for file in files {
        let Ok(p) = project::load(&file) else {
            continue;
        };
        for pin in &p.pins {
            let PinValue::Spec(spec) = &pin.value else {
                continue;
            };
            if !spec.matches(removed) {
                continue;
            }
            let now = match registry.find(spec) {
                Some((other, _)) => format!("now selects {other}"),
                None => "now selects nothing".to_string(),
            };
            ui::warn(format!(
                "{} pins {spec}, which {now}; {again} puts it back",
                pin.at
            ));
        }
    }
}

/// The store in this home, with the proxy built beside this gpuenv.
pub fn store(ctx: &Context) -> Result<Store> {
    Ok(Store::new(ctx.gpuenv_home()?, shims::proxy_source()?))
}

/// The active set for the current directory, with `overrides` on top, and the host
/// compiler its CUDA toolchain gets on this PATH. `installer`: what installs a missing pin
/// under `GPUENV_AUTO_INSTALL` (the shell hook's), if anything.
pub fn resolve_here(
    session: &mut Session,
    overrides: &[Spec],
    installer: Option<&dyn Installer>,
) -> Result<ActiveSet> {
    resolve_here_kinds(session, overrides, &Kind::ALL, installer)
}

/// [`resolve_here`] for `kinds` only.
pub fn resolve_here_kinds(
    session: &mut Session,
    overrides: &[Spec],
    kinds: &[Kind],
    installer: Option<&dyn Installer>,
) -> Result<ActiveSet> {
    let mut active: ActiveSet = session.resolve::<anyhow::Error>(overrides, kinds, installer)?;
    session.attach_host_compiler(&mut active);
    if let Some(p) = &active.project {
        ui::verbose(format!("toolchain file: {}", p.path.display()));
    }
    for t in &active.toolchains {
        ui::verbose(format!(
            "{}: {} at {} ({})",
            t.entry.kind,
            t.name,
            t.entry.root.display(),
            t.reason
        ));
    }
    Ok(active)
}

/// Writes output for machines (shell code, data) to stdout, byte for byte.
pub fn stdout(bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}

/// Parses specs given as arguments, at most one per kind.
pub fn parse_specs(args: &[String]) -> Result<Vec<Spec>> {
    parse_specs_each(args)?;
    Ok(resolve::parse_specs("the command line", &args.join(","))?)
}

/// Parses specs given as arguments, any number of each kind; a typo gets the spec it
/// most likely meant.
pub fn parse_specs_each(args: &[String]) -> Result<Vec<Spec>> {
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            a.parse::<Spec>().map_err(|e| {
                let next = args.get(i + 1).map(String::as_str);
                let hint = match spec_hint::meant(a, next) {
                    Some(s) => format!("did you mean `{s}`? (`gpuenv list` shows what is registered)"),
                    None => "name a version too: `cuda-12.4`, or any prefix of one such as `cuda-12` (`gpuenv list` shows what is registered)".to_string(),
                };
                Hinted::new(e.to_string()).hint(hint).into()
            })
        })
        .collect()
}

/// The shell hook's prompt (`hook-env`, and `use`, which forces one), with its notes said
/// on stderr.
pub fn hook_prompt(ctx: &Context, home: &Home, force: bool) -> Prompt {
    let prompt = gpuenv_core::shell::prompt::prompt(ctx, home, force, &HookResolver);
    for n in &prompt.notes {
        ui::hook_note(n);
    }
    prompt
}

/// What the CLI adds to a prompt: resolution as the commands do it (a missing pin
/// installed by running gpuenv), the lock's notes, errors in the CLI's words.
struct HookResolver;

impl Resolver for HookResolver {
    type Error = anyhow::Error;

    fn resolve(&self, session: &mut Session) -> Result<ActiveSet> {
        let installer = RunGpuenv::ThisProgram;
        resolve_here(session, &[], Some(&installer))
    }

    fn lock_notes(&self, active: &ActiveSet) -> (Vec<String>, Option<std::path::PathBuf>) {
        lock::hook_notes(active)
    }

    fn one_line(&self, err: &anyhow::Error) -> String {
        ui::error_one_line(err.as_ref(), gpuenv_install::FIND)
    }
}
