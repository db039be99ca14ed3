//! `gpuenv env`: the environment of the active toolchains (or of the given specs), for a
//! shell, CI, a Dockerfile or a SLURM TaskProlog.

use crate::cli::support;
use std::ffi::OsStr;

use anyhow::Result;
use gpuenv_core::diagnostic::Hinted;
use support::named_arg::named;

use gpuenv_core::context::{vars, Context};
use gpuenv_core::module;
use gpuenv_core::project;
use gpuenv_core::resolve::ResolveError;
use gpuenv_core::session::Purpose;
use gpuenv_core::shell::{self, ci, Format};
use gpuenv_core::store;
use gpuenv_core::store::locate::NoHome;
use gpuenv_core::toolchain::Kind;
use gpuenv_core::ui;

/// Print the environment of the active toolchains (or of the given specs)
#[derive(Debug, clap::Args)]
#[command(name = "env")]
pub struct Args {
    /// Specs to use instead of what is active here, e.g. cuda-11.8
    specs: Vec<String>,
    /// Output format (slurm: TaskProlog lines, printed only in a pinned project)
    #[arg(long, value_parser = named::<Format>(), default_value = "bash")]
    shell: Format,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let slurm = self.shell == Format::Slurm;
        let result = self.print(ctx);
        if let (true, Err(e)) = (slurm, &result) {
            // gpuenv's own step (`srun gpuenv install --locked`, the doctor's node report)
            // is how the node gets fixed or reported: it runs, told why nothing was set.
            let lets_run = support::prolog::step_runs_gpuenv(ctx);
            // slurmd logs a TaskProlog's stderr where the user never looks; `print` lines
            // go to the task's output, next to SLURM's "TaskProlog failed".
            let report = ui::Report::of(e.as_ref(), support::FIND);
            let texts = std::iter::once(&report.message)
                .chain(&report.causes)
                .chain(&report.hints);
            for line in texts.flat_map(|t| t.lines()) {
                println!("print gpuenv: {line}");
            }
            if lets_run {
                println!("print gpuenv: the step runs gpuenv itself, so the TaskProlog lets it run (with no toolchain set) to repair or report node {}", support::prolog::node(ctx));
                return Ok(());
            }
        }
        result
    }

    fn print(self, ctx: &Context) -> Result<()> {
        if self.shell == Format::Slurm {
            // Only when the admin (or user) opted in; before resolving, which a missing
            // locked toolchain would fail.
            support::prolog::install_missing(ctx)?;
        }
        let mut session = match support::session(ctx) {
            // A TaskProlog runs for every task: outside a project, a node without the
            // user's home is none of its business.
            Err(e)
                if self.shell == Format::Slurm
                    && e.downcast_ref::<NoHome>().is_some()
                    && matches!(project::locate(&ctx.cwd), Ok(None)) =>
            {
                return Ok(())
            }
            session => session?,
        };
        let overrides = support::parse_specs(&self.specs)?;
        let active = support::resolve_here(&mut session, &overrides, None);
        // The task's output is read far from the node: say which one could not resolve.
        let active = match (self.shell, active) {
            (Format::Slurm, Err(e)) => {
                // A locked toolchain not installed on this node is a lock difference, said
                // as `check --locked` says it.
                if overrides.is_empty()
                    && matches!(
                        e.downcast_ref::<ResolveError>(),
                        Some(ResolveError::NotRegistered { .. })
                    )
                {
                    support::prolog::refuse_unresolved(ctx)?;
                }
                return Err(e.context(format!(
                    "the task's toolchains cannot be set up on {}",
                    support::prolog::node(ctx)
                )));
            }
            (_, active) => active?,
        };
        // A TaskProlog runs for every task of every job: only a pinned project gets a
        // toolchain there, and anywhere else the task's environment is left as it is.
        if self.shell == Format::Slurm && (active.project.is_none() || active.toolchains.is_empty())
        {
            return Ok(());
        }
        if self.shell == Format::Slurm {
            // The registry is shared, the trees may not be: a node without the pinned tree
            // fails the task instead of running it against a toolkit that is not there.
            let node = support::prolog::node(ctx);
            for t in &active.toolchains {
                if let Some(problem) = store::tree_problem(&t.name, &t.entry) {
                    return Err(store::NotOnThisNode {
                        name: t.name.clone(),
                        node: node.clone(),
                        problem,
                    }
                    .into());
                }
            }
            // The trees are there; with a gpuenv.lock, they must also be the locked ones.
            support::prolog::refuse_unlocked(&session, &active)?;
        }
        if active.toolchains.is_empty() {
            ui::info_with_hints(
                "no toolchain is active here, so there is nothing to set",
                ["`gpuenv pin <spec>` or `gpuenv default <spec>`"],
            );
        }
        support::warn_host_compiler(&active);
        let applied = if self.shell == Format::Slurm {
            // Without PATH (`srun --export=NONE`), the task would get the view's `bin` only
            // and find no `hostname`: the system directories stay after the toolkit's.
            session.environment(&active, Purpose::Command)?.apply(&|k| {
                ctx.var_os(k)
                    .map(ToOwned::to_owned)
                    .or_else(|| (k == vars::PATH).then(|| gpuenv_core::facts::SYSTEM_PATH.into()))
            })
        } else {
            session.applied(&active, Purpose::Command)?
        };
        let vars: Vec<(&str, Option<&OsStr>)> = applied
            .after
            .iter()
            // A path list that was unset and stays unset is not worth a line.
            .filter(|(k, v)| v.is_some() || applied.before.get(*k).is_some_and(Option::is_some))
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        if self.shell == Format::Slurm {
            shell::check_slurm(&vars)?;
        }
        // A module that loaded another toolkit of an active kind is unloaded first, so the
        // module system agrees with what gpuenv set (a later `module unload` changes nothing).
        let kinds: Vec<Kind> = active.toolchains.iter().map(|t| t.entry.kind).collect();
        let displaced = module::displaced(
            ctx.var(vars::_LMFILES_),
            ctx.var(vars::LOADEDMODULES),
            &kinds,
        );
        let names: Vec<String> = displaced.iter().map(|r| r.module.clone()).collect();
        let unload = shell::module_unload(&names, self.shell);
        if !unload.is_empty() {
            ui::info(format!(
                "unloading module {} (its toolkit gives way to {})",
                names.join(", "),
                active
                    .toolchains
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if matches!(self.shell, Format::Github | Format::Dockerfile) {
            let changes: Vec<ci::Change> = vars
                .iter()
                .map(|&(k, v)| (k, applied.before.get(k).and_then(|b| b.as_deref()), v))
                .collect();
            return match self.shell {
                Format::Github => github(ctx, &ci::github(&changes)?),
                _ => support::stdout(ci::dockerfile(&changes)?.as_bytes()),
            };
        }
        let rendered = shell::render(&vars, self.shell)?;
        if !rendered.lossy.is_empty() {
            ui::warn(format!(
                "{} not UTF-8, which JSON cannot hold: the bytes that are not show as U+FFFD (the shell formats keep every byte)",
                rendered.lossy.join(", ") + if rendered.lossy.len() == 1 { " is" } else { " are" }
            ));
        }
        support::stdout(&[unload.as_bytes(), &rendered.bytes].concat())?;
        Ok(())
    }
}

/// Appends to the files a GitHub Actions runner named for this step, which it reads when
/// the step ends.
fn github(ctx: &Context, files: &ci::GithubFiles) -> Result<()> {
    use std::io::Write as _;
    for (var, bytes) in [
        (vars::GITHUB_ENV, &files.env),
        (vars::GITHUB_PATH, &files.path),
    ] {
        let Some(path) = ctx.var_nonempty(var) else {
            return Err(Hinted::new(format!(
                "{var} is not set: `gpuenv env --shell github` runs in a GitHub Actions step, which names the files it writes to"
            ))
            .hint("elsewhere, `gpuenv env --shell dotenv` prints the same variables")
            .into());
        };
        // Never blocking: a FIFO (or a device) at that name is refused, not waited on.
        use fs_err::os::unix::fs::OpenOptionsExt as _;
        let refuse = |what: &str| -> anyhow::Error {
            Hinted::new(format!(
                "{var} names {}, which is {what}, not the regular file a runner makes: gpuenv writes nothing to it",
                gpuenv_core::ui::printable(path)
            ))
            .hint(format!("point {var} at a file, as the GitHub Actions runner does"))
            .into()
        };
        if let Some(what) = fs_err::metadata(path)
            .ok()
            .and_then(|m| gpuenv_core::fsutil::not_regular(&m))
        {
            return Err(refuse(what));
        }
        // A FIFO swapped in after that check: opening without blocking fails (ENXIO) or,
        // with a reader, is refused below; never a wait.
        let file = fs_err::OpenOptions::new()
            .append(true)
            .create(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
            .open(path)?;
        if let Some(what) = gpuenv_core::fsutil::not_regular(&file.metadata()?) {
            return Err(refuse(what));
        }
        let mut file = file;
        file.write_all(bytes)?;
    }
    ui::info(format!(
        "wrote {} variable(s) to $GITHUB_ENV and {} director(ies) to $GITHUB_PATH for the next steps",
        files.set,
        files.path.iter().filter(|&&b| b == b'\n').count()
    ));
    Ok(())
}
