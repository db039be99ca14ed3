//! The command line: one file per subcommand, each with its clap `Args` and `run()`.

mod audit;
mod cache;
mod check;
mod completions;
mod default;
mod discover;
mod doctor;
mod env_cmd;
mod hook;
mod hook_env;
mod install;
mod install_advice;
mod install_component;
mod install_from;
mod install_locked;
mod install_pinned;
mod install_torch;
mod interrupt;
mod link;
mod list;
mod lock;
mod module;
mod named_arg;
mod outdated;
mod pin;
mod prefix;
mod prolog;
mod pyproject_cmd;
mod reshim;
mod run;
mod self_cmd;
mod self_info;
mod self_uninstall;
mod show;
mod spec_hint;
mod torch_cmd;
mod trust_cmd;
mod uninstall;
mod unlink;
mod update;
mod use_cmd;
mod which;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use gpuenv_core::auto_install::Installer;
use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::{Diagnostic, Find, Hinted};
use gpuenv_core::home::Home;
use gpuenv_core::project::{self, PinValue};
use gpuenv_core::resolve::{self, ActiveSet};
use gpuenv_core::session::{Door, Session};
use gpuenv_core::store::{Problem, Store};
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::toolchain::{upstream, Kind, Spec};
use gpuenv_core::{shims, ui};

/// `0.1.0 (207a5b9 2026-12-03)`: the commit and its date when built from git (build.rs).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), env!("GPUENV_BUILD_INFO"));

#[derive(Debug, Parser)]
#[command(
    name = "gpuenv",
    version = VERSION,
    about = "rustup for GPU stacks: CUDA Toolkits and ROCm trees side by side, per-project pins, one consistent environment"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Also say what gpuenv reads and decides (GPUENV_LOG=verbose)
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    verbose: bool,
    /// Only warnings and errors: no progress bars, no notes (GPUENV_LOG=quiet)
    #[arg(short, long, global = true)]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    Install(install::Args),
    Uninstall(uninstall::Args),
    Update(update::Args),
    Outdated(outdated::Args),
    Link(link::Args),
    Unlink(unlink::Args),
    List(list::Args),
    Lock(lock::Args),
    Default(default::Args),
    Check(check::Args),
    Discover(discover::Args),
    Doctor(doctor::Args),
    Audit(audit::Args),
    Pin(pin::Args),
    Reshim(reshim::Args),
    Show(show::Args),
    Env(env_cmd::Args),
    Run(run::Args),
    Which(which::Args),
    Prefix(prefix::Args),
    Trust(trust_cmd::Args),
    Use(use_cmd::Args),
    Hook(hook::Args),
    HookEnv(hook_env::Args),
    Completions(completions::Args),
    Cache(cache::Args),
    Module(module::Args),
    Torch(torch_cmd::Args),
    #[command(name = "self")]
    SelfCmd(self_cmd::Args),
}

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

/// The status of an error no command chose one for: [`status::NETWORK`] when the network
/// failed anywhere in its chain, else 2.
fn status_of(err: &anyhow::Error) -> u8 {
    if gpuenv_install::is_network_failure(err.as_ref()) {
        status::NETWORK
    } else {
        2
    }
}

/// The finders of every crate whose errors reach the CLI (see `gpuenv_core::diagnostic`).
pub const FIND: &[Find] = gpuenv_install::FIND;

/// Prints an error with its causes and hints.
pub fn print_error(err: &anyhow::Error) {
    gpuenv_core::ui::error(err.as_ref(), FIND);
}

pub fn main() -> ExitCode {
    reset_sigpipe();
    // The shell hook's own call skips clap: building the parser for every subcommand is
    // a tenth of a prompt after a `cd`. Any other spelling goes through clap.
    let hook_call = hook_env::Args::from_hook_call(std::env::args_os().skip(1));
    let cli = match hook_call {
        Some(args) => Cli {
            command: Command::HookEnv(args),
            verbose: false,
            quiet: false,
        },
        None => match Cli::try_parse() {
            Ok(cli) => cli,
            Err(e) => return usage_error(e),
        },
    };
    let ctx = match cli.command {
        Command::HookEnv(_) => Context::from_process_at_prompt(),
        _ => Context::from_process(),
    };
    let result = ctx.map_err(anyhow::Error::from).and_then(|ctx| {
        ui::set_level(log_level(&cli, &ctx));
        gpuenv_core::ask::configure(&ctx);
        // The doctor reports an old proxy rather than replacing it.
        if !matches!(cli.command, Command::Doctor(_)) {
            refresh_proxy(&ctx);
        }
        dispatch(cli.command, &ctx)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<Exit>() {
            Some(Exit(code)) => ExitCode::from(*code),
            None => {
                print_error(&e);
                ExitCode::from(status_of(&e))
            }
        },
    }
}

/// Rust starts programs with SIGPIPE ignored, so a write to a closed pipe (`gpuenv env |
/// head -0`) is an error that `print!` turns into a panic. Every command's output goes to a
/// reader that may stop early: like any Unix tool, gpuenv then ends quietly by the signal.
/// Sockets are unaffected (the standard library sends with MSG_NOSIGNAL).
fn reset_sigpipe() {
    // SAFETY: called first in main, before any thread exists; SIG_DFL is always valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The flags win over `GPUENV_LOG`; an unknown value of it is named once and ignored.
fn log_level(cli: &Cli, ctx: &Context) -> ui::Level {
    if cli.quiet {
        return ui::Level::Quiet;
    }
    if cli.verbose {
        return ui::Level::Verbose;
    }
    match ctx.var_nonempty(gpuenv_core::context::vars::GPUENV_LOG) {
        Some(v) => ui::Level::parse(v).unwrap_or_else(|| {
            ui::warn(format!(
                "GPUENV_LOG={v} is not a level gpuenv knows (quiet, info, verbose); using info"
            ));
            ui::Level::Normal
        }),
        None => ui::Level::Normal,
    }
}

/// clap's own message, except for `gpuenv run` without `--`, where clap's tip would put
/// `--` in the wrong place (`gpuenv run nvcc -- --version`).
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let is_run = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
        == Some("run");
    let plain_exit = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
    if is_run && !plain_exit && !args.iter().any(|a| a == "--") {
        if let Some(tip) = run::tip(&args) {
            anstream::eprintln!(
                "error: `gpuenv run` takes the command after `--`\n\n  tip: {tip}\n\nFor more information, try 'gpuenv run --help'."
            );
            return ExitCode::from(2);
        }
    }
    let _ = e.print();
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

fn dispatch(command: Command, ctx: &Context) -> Result<()> {
    match command {
        Command::Install(a) => a.run(ctx),
        Command::Uninstall(a) => a.run(ctx),
        Command::Update(a) => a.run(ctx),
        Command::Outdated(a) => a.run(ctx),
        Command::Prefix(a) => a.run(ctx),
        Command::Cache(a) => a.run(ctx),
        Command::Link(a) => a.run(ctx),
        Command::Unlink(a) => a.run(ctx),
        Command::List(a) => a.run(ctx),
        Command::Lock(a) => a.run(ctx),
        Command::Default(a) => a.run(ctx),
        Command::Check(a) => a.run(ctx),
        Command::Discover(a) => a.run(ctx),
        Command::Doctor(a) => a.run(ctx),
        Command::Audit(a) => a.run(ctx),
        Command::Pin(a) => a.run(ctx),
        Command::Reshim(a) => a.run(ctx),
        Command::Show(a) => a.run(ctx),
        Command::Env(a) => a.run(ctx),
        Command::Run(a) => a.run(ctx),
        Command::Which(a) => a.run(ctx),
        Command::Trust(a) => a.run(ctx),
        Command::Use(a) => a.run(ctx),
        Command::Hook(a) => a.run(ctx),
        Command::HookEnv(a) => a.run(ctx),
        Command::Completions(a) => a.run(ctx),
        Command::Module(a) => a.run(ctx),
        Command::Torch(a) => a.run(ctx),
        Command::SelfCmd(a) => a.run(ctx),
    }
}

/// A command's session, its registry read (the upstreams' toolchains added, for reading
/// only: changes go through `Registry::update`, which sees the user's own file alone).
fn session(ctx: &Context) -> Result<Session<'_>> {
    Session::open(ctx, Door::Command)
}

/// The registry and where it lives, for commands that keep them past a session.
fn registry(ctx: &Context) -> Result<(Home, Registry)> {
    let (home, layered) = layered(ctx)?;
    Ok((home, layered.registry))
}

/// Refuses to change a toolchain that only an upstream has: gpuenv never writes there.
fn refuse_upstream(ctx: &Context, name: &str, command: &str) -> Result<()> {
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
fn layered(ctx: &Context) -> Result<(Home, upstream::Layered)> {
    let (home, layered, _) = session(ctx)?.into_parts();
    Ok((home, layered))
}

/// Says what is odd about the state file, if anything.
fn notice(registry: &Registry) {
    if let Some(n) = &registry.notice {
        ui::warn_with_hints(n, n.hints());
    }
}

/// What an installed toolchain is made of, by its install record (`list`, `show`); empty
/// for one gpuenv did not install, or installed before records.
fn made_of(entry: &gpuenv_core::toolchain::registry::Entry) -> Vec<String> {
    use gpuenv_core::toolchain::registry::Source as Origin;
    if entry.source != Origin::Installed {
        return Vec::new();
    }
    gpuenv_install::record::read(&entry.root).map_or_else(Vec::new, |r| r.made_of())
}

/// Each thing missing from the store, with the command that fixes it.
fn warn_problems(problems: &[Problem]) {
    for p in problems {
        ui::warn_with_hints(p, [p.hint()]);
    }
}

/// A host compiler nvcc would stop on (a pinned one that is missing, a default too new),
/// said by every command that sets up a compile (`show`, `env`, `run`), not only by nvcc.
fn warn_host_compiler(active: &ActiveSet) {
    if let Some(problem) = active.host_compiler.as_ref().and_then(|c| c.problem()) {
        ui::warn_with_hints(&problem, problem.hints());
    }
}

/// Toolchains that got no shims (`shims::MAX_SHIMS_PER_TOOLCHAIN`), and why.
fn warn_unshimmed(shims: &shims::Reshim) {
    for why in &shims.refused {
        ui::warn(format!("no shims for {why}"));
    }
}

/// Defaults that a forgotten toolchain took with it.
fn warn_dropped_defaults(dropped: &[String]) {
    for d in dropped {
        ui::warn(format!(
            "the default {d} no longer matches a registered toolchain and was cleared; set another with `gpuenv default <spec>`"
        ));
    }
}

/// Toolchain files (the one here, and the trusted ones gpuenv knows of) whose pin selected
/// the `removed` toolchain; `again` is the quoted command that puts it back.
fn warn_about_pins(ctx: &Context, registry: &Registry, removed: &Spec, again: &str) {
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

/// After an upgrade the installed proxy (which every shim and view links to) is still the
/// old build's: it is replaced by this gpuenv's at its first command. Never fails a command.
fn refresh_proxy(ctx: &Context) {
    let (Ok(home), Ok(source)) = (ctx.gpuenv_home(), shims::proxy_source()) else {
        return;
    };
    match shims::refresh_proxy(&home, &source) {
        Ok(Some(path)) => ui::info(format!(
            "replaced the proxy {} (an older gpuenv's) with this gpuenv's",
            path.display()
        )),
        Ok(None) => {}
        Err(e) => ui::warn(format!(
            "the proxy {} is an older gpuenv's and could not be replaced: {e}; compiles still run the old one until `gpuenv reshim` succeeds",
            home.proxy().display()
        )),
    }
}

/// The store in this home, with the proxy built beside this gpuenv.
fn store(ctx: &Context) -> Result<Store> {
    Ok(Store::new(ctx.gpuenv_home()?, shims::proxy_source()?))
}

/// The active set for the current directory, with `overrides` on top, and the host
/// compiler its CUDA toolchain gets on this PATH. `installer`: what installs a missing pin
/// under `GPUENV_AUTO_INSTALL` (the shell hook's), if anything.
fn resolve_here(
    session: &mut Session,
    overrides: &[Spec],
    installer: Option<&dyn Installer>,
) -> Result<ActiveSet> {
    resolve_here_kinds(session, overrides, &Kind::ALL, installer)
}

/// [`resolve_here`] for `kinds` only.
fn resolve_here_kinds(
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
fn stdout(bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}

/// Parses specs given as arguments, at most one per kind.
fn parse_specs(args: &[String]) -> Result<Vec<Spec>> {
    parse_specs_each(args)?;
    Ok(resolve::parse_specs("the command line", &args.join(","))?)
}

/// Parses specs given as arguments, any number of each kind; a typo gets the spec it
/// most likely meant.
fn parse_specs_each(args: &[String]) -> Result<Vec<Spec>> {
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
