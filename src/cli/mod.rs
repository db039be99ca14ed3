//! The command line: one file per subcommand, each with its clap `Args` and `run()`.

mod check;
mod completions;
mod default;
mod discover;
mod doctor;
mod env_cmd;
mod hook;
mod hook_env;
mod install;
mod install_torch;
mod link;
mod list;
mod named_arg;
mod pin;
mod reshim;
mod run;
mod show;
mod trust_cmd;
mod uninstall;
mod unlink;
mod use_cmd;
mod which;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use gpuenv_core::context::Context;
use gpuenv_core::resolve::{self, ActiveSet, Request};
use gpuenv_core::toolchain::registry::{Home, Registry};
use gpuenv_core::toolchain::Spec;
use gpuenv_core::{env, guard, trust, ui};

#[derive(Debug, Parser)]
#[command(
    name = "gpuenv",
    version,
    about = "rustup for GPU stacks: CUDA Toolkits and ROCm trees side by side, per-project pins, one consistent environment"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Install(install::Args),
    Uninstall(uninstall::Args),
    Link(link::Args),
    Unlink(unlink::Args),
    List(list::Args),
    Default(default::Args),
    Check(check::Args),
    Discover(discover::Args),
    Doctor(doctor::Args),
    Pin(pin::Args),
    Reshim(reshim::Args),
    Show(show::Args),
    Env(env_cmd::Args),
    Run(run::Args),
    Which(which::Args),
    Trust(trust_cmd::Args),
    Use(use_cmd::Args),
    Hook(hook::Args),
    HookEnv(hook_env::Args),
    Completions(completions::Args),
}

/// An exit status chosen by a command (1: the thing asked is not so), with its message
/// already printed.
#[derive(Debug, thiserror::Error)]
#[error("exit status {0}")]
pub struct Exit(pub u8);

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = Context::from_process().and_then(|ctx| dispatch(cli.command, &ctx));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<Exit>() {
            Some(Exit(code)) => ExitCode::from(*code),
            None => {
                gpuenv_core::ui::error(&e);
                ExitCode::from(2)
            }
        },
    }
}

fn dispatch(command: Command, ctx: &Context) -> Result<()> {
    match command {
        Command::Install(a) => a.run(ctx),
        Command::Uninstall(a) => a.run(ctx),
        Command::Link(a) => a.run(ctx),
        Command::Unlink(a) => a.run(ctx),
        Command::List(a) => a.run(ctx),
        Command::Default(a) => a.run(ctx),
        Command::Check(a) => a.run(ctx),
        Command::Discover(a) => a.run(ctx),
        Command::Doctor(a) => a.run(ctx),
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
    }
}

/// The registry and where it lives.
fn registry(ctx: &Context) -> Result<(Home, Registry)> {
    let home = ctx.gpuenv_home()?;
    let registry = Registry::load(&home)?;
    Ok((home, registry))
}

/// The active set for the current directory, with `overrides` on top.
fn resolve_here(ctx: &Context, registry: &Registry, overrides: &[Spec]) -> Result<ActiveSet> {
    let torch = || guard::locate_torch(ctx, None);
    let req = Request::new(ctx, overrides, &torch);
    Ok(resolve::resolve(&req, registry)?)
}

/// The environment of `active`, applied to the process's current values. A toolchain
/// file's `[env]` counts only when the file is trusted.
fn environment(
    ctx: &Context,
    home: &Home,
    registry: &Registry,
    active: &ActiveSet,
) -> Result<env::Applied> {
    let trusted = trust::env_allowed(registry, active.project.as_ref())?;
    if let Some(notice) = trust::skipped_env_notice(active.project.as_ref(), trusted) {
        ui::warn(notice);
    }
    let change = env::plan(active, registry, home, trusted);
    Ok(change.apply(&|k| ctx.var(k).map(str::to_string)))
}

/// Parses specs given as arguments.
fn parse_specs(args: &[String]) -> Result<Vec<Spec>> {
    Ok(resolve::parse_specs("arguments", &args.join(","))?)
}
