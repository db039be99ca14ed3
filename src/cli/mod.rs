//! The command line: parses the arguments and dispatches to one command. Each command is
//! a file in `commands/` (its clap `Args` and `run()`); what commands share is in
//! `support/`.

mod commands;
mod support;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use gpuenv_core::context::Context;
use gpuenv_core::{shims, ui};

use commands::*;
use support::{print_error, status, Exit};

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
    Env(env::Args),
    Run(run::Args),
    Which(which::Args),
    Prefix(prefix::Args),
    Trust(trust::Args),
    Use(use_::Args),
    Hook(hook::Args),
    HookEnv(hook_env::Args),
    Completions(completions::Args),
    Cache(cache::Args),
    Module(module::Args),
    Torch(torch::Args),
    #[command(name = "self")]
    SelfCmd(self_::Args),
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

/// After an upgrade the installed proxy (which every shim and view links to) is still the
/// old build's: it is replaced by this gpuenv's at its first command. Never fails a command.
fn refresh_proxy(ctx: &Context) {
    let (Ok(home), Ok(source)) = (ctx.gpuenv_home(), shims::proxy_source()) else {
        return;
    };
    match shims::refresh_proxy(&home, &source) {
        Ok(Some(shims::Refreshed::Replaced(path))) => ui::info(format!(
            "replaced the proxy {} (an older gpuenv's) with this gpuenv's",
            path.display()
        )),
        Ok(Some(shims::Refreshed::Restored(path))) => ui::info(format!(
            "put back the proxy {}, which was missing (every shim and view links to it)",
            path.display()
        )),
        Ok(None) => {}
        Err(e) => ui::warn(format!(
            "the proxy {} is an older gpuenv's or missing, and could not be put in place: {e}; `gpuenv reshim` tries again",
            home.proxy().display()
        )),
    }
}
