use std::ffi::OsStr;

use anyhow::Result;

use super::named_arg::named;

use gpuenv_core::context::{vars, Context};
use gpuenv_core::env::Op;
use gpuenv_core::home::Home;
use gpuenv_core::shell::hook_env::{self, Fingerprint, State, Step, STATE_VAR};
use gpuenv_core::shell::{self, Format, Shell};
use gpuenv_core::toolchain::registry::Registry;
use gpuenv_core::toolchain::upstream;
use gpuenv_core::{env, trust, ui};

/// Internal: called by the shell hook at each prompt; prints the code that moves the shell
/// to the environment of the current directory
#[derive(Debug, clap::Args)]
#[command(hide = true)]
pub struct Args {
    #[arg(long, value_parser = named::<Shell>())]
    shell: Shell,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        if let Some(step) = prompt_step(ctx, &home, false) {
            super::stdout(&render(&step, self.shell))?;
        }
        Ok(())
    }
}

pub fn format_of(shell: Shell) -> Format {
    match shell {
        Shell::Bash => Format::Bash,
        Shell::Zsh => Format::Zsh,
        Shell::Fish => Format::Fish,
    }
}

pub fn render(step: &Step, shell: Shell) -> Vec<u8> {
    let vars: Vec<(&str, Option<&OsStr>)> = step
        .assignments
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_deref()))
        .collect();
    shell::render(&vars, format_of(shell)).bytes
}

/// One prompt's step, or `None` when nothing it depends on changed since the last one
/// (unless `force`). Never fails: a problem is one line on stderr, what the hook had
/// applied is taken back (a directory that cannot be resolved must not keep the previous
/// one's toolchain and `[env]`), and the line is not repeated until something changes.
pub fn prompt_step(ctx: &Context, home: &Home, force: bool) -> Option<Step> {
    let watched = [
        vars::GPUENV_TOOLCHAIN,
        vars::VIRTUAL_ENV,
        vars::CONDA_PREFIX,
    ]
    .iter()
    .map(|k| {
        ctx.var_os(k)
            .filter(|v| !v.is_empty())
            .map(|v| v.to_string_lossy().into_owned())
    })
    .collect();
    let fp = Fingerprint::take(&ctx.cwd, watched, &home.settings());
    let old = ctx.var(STATE_VAR).and_then(State::decode);
    if !force && old.as_ref().is_some_and(|s| s.fp == fp) {
        return None;
    }
    let current = |k: &str| ctx.var_os(k).map(ToOwned::to_owned);
    match wanted_change(ctx, home) {
        Ok(change) => Some(hook_env::step(old.as_ref(), fp, &current, &|base| {
            change.apply(base)
        })),
        Err(e) => {
            let step = hook_env::revert_all(old.as_ref(), fp, &current);
            let undone = step.assignments.iter().any(|(k, _)| k != STATE_VAR);
            let why = ui::error_one_line(e.as_ref(), gpuenv_install::FIND);
            if undone {
                ui::hook_note(format!(
                    "{why} (gpuenv's changes to this shell are undone until this is fixed)"
                ));
            } else {
                ui::hook_note(why);
            }
            Some(step)
        }
    }
}

fn wanted_change(ctx: &Context, home: &Home) -> Result<env::Change> {
    let mut home = home.clone();
    // Own toolchains and the upstreams', loaded again after an auto-install.
    let mut load = || -> Result<Registry> {
        let own = Registry::load(&home)?;
        let layered = upstream::layered(&mut home, own);
        for w in &layered.warnings {
            ui::hook_note(w);
        }
        Ok(layered.registry)
    };
    let (registry, active) = super::auto_install::resolve_installing(ctx, &mut load)?;
    let home = &home;
    let trusted = trust::env_allowed(&registry, active.project.as_ref());
    if let Some(notice) = trust::skipped_env_notice(active.project.as_ref(), trusted) {
        ui::hook_note(notice);
    }
    let mut change = env::plan(&active, &registry, home, trusted);
    gpuenv_core::module::count_loaded_as_foreign(&mut change, ctx.var(vars::LMFILES));
    // The shims stay ahead of toolchain bins, so nvcc and hipcc always pass the guard.
    if !change.ops.is_empty() {
        change.ops.push(Op::Prepend(
            "PATH".into(),
            vec![home.shims().into_os_string()],
        ));
    }
    Ok(change)
}
