//! A session: the one object every entry point (a command, the shell hook, the proxy,
//! doctor) goes through, as rustup's `Cfg`. It finds gpuenv's home, loads the registry with
//! its upstreams (the proxy started as a view's nvcc hands in the one registry it read),
//! resolves the active set for the directory (installing a missing pin through the
//! [`Installer`] it is handed), builds the environment for a purpose, and execs with it.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use crate::context::{vars, Context};
use crate::facts::tegra::{self, UnknownJetson};
use crate::facts::{Facts, InEffect, Platform};
use crate::plan::auto_install::{self, InstallFailed, Installer, NotAllowed};
use crate::plan::env::{self, Change, Op};
use crate::plan::exec::Exec;
use crate::plan::guard;
use crate::plan::host_compiler::cache::CachedProbe;
use crate::plan::module;
use crate::plan::resolve::{self, ActiveSet, Request, ResolveError};
use crate::plan::{build_jobs, jit, runtime};
use crate::project::trust;
use crate::store::home::Home;
use crate::store::locate::NoHome;
use crate::store::shims;
use crate::store::toolchain::registry::{Registry, StateError};
use crate::store::toolchain::upstream::{self, Layered};
use crate::store::toolchain::{view, Kind, Spec};
use crate::store::StoreError;
use crate::ui;

mod loading;
mod runtime_env;

use loading::{facts_of, load};
pub use runtime_env::machine;

/// Who the session speaks for, which decides what it says while it works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// A command: says what it reads (`-v`), the settings' notice, an unusable system
    /// config and each unusable upstream, as warnings.
    Command,
    /// The shell hook: each unusable upstream as a one-line note at the prompt.
    Hook,
    /// The proxy: each unusable upstream as a warning, nothing else.
    Proxy,
}

/// What an environment is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// `gpuenv env` (a shell, a dotenv file, a TaskProlog) and `gpuenv run`: the project's
    /// `[env]` once trusted, a view made for an upstream's toolchain that has none,
    /// loaded modules' toolkits removed.
    Command,
    /// The shell hook: as `Command`, and the shims kept first on PATH.
    Hook,
    /// The proxy's exec: as `Command`, without making views (the proxy writes nothing)
    /// or notices.
    Proxy,
}

pub struct Session<'c> {
    ctx: &'c Context,
    home: Home,
    door: Door,
    layered: Layered,
    /// The compatibility data in effect for this home and its upstreams, read at the first
    /// question and handed down to what asks.
    facts: InEffect,
    /// The toolkit's libraries go on `LD_LIBRARY_PATH` even where a Python environment's
    /// NVIDIA wheels ship some of them (`gpuenv run --toolkit-libs`).
    toolkit_libs: bool,
}

impl<'c> Session<'c> {
    /// The session for the home `ctx` names, its registry read.
    pub fn open<E>(ctx: &'c Context, door: Door) -> Result<Self, E>
    where
        E: From<NoHome> + From<StateError>,
    {
        Ok(Session::open_at(ctx, ctx.gpuenv_home()?, door)?)
    }

    /// The session for a home already found (the shell hook has it for its fast path).
    pub fn open_at(ctx: &'c Context, mut home: Home, door: Door) -> Result<Self, StateError> {
        let layered = load(ctx, &mut home, door)?;
        let facts = facts_of(&home, door);
        Ok(Session {
            ctx,
            home,
            door,
            layered,
            facts,
            toolkit_libs: false,
        })
    }

    /// The session of the view at `view_dir` (`<home>/views/<name>`) and the toolchain's
    /// name, when that name is registered in that home. The proxy started as a view's nvcc
    /// reads that one registry, and the upstreams' only for the user's own view of an
    /// upstream's toolchain.
    pub fn of_view(
        ctx: &'c Context,
        view_dir: &Path,
        door: Door,
    ) -> Result<Option<(Self, String)>, StateError> {
        let Some((mut home, name)) = Home::of_view(view_dir) else {
            return Ok(None);
        };
        if !home.settings().is_file() {
            return Ok(None);
        }
        // The copy of a settings file is kept in the user's own home, never in the view's
        // when that is an upstream's.
        let own = ctx.own_home().unwrap_or_else(|_| home.clone());
        // Another home's view is used as an upstream is: only when no other user controls it
        // (else the proxy resolves as anywhere else).
        if own.root != home.root && upstream::not_safe(&home, owner_uid()).is_some() {
            return Ok(None);
        }
        let mut registry = Registry::load_cached(&home, &own)?;
        if !registry.toolchains.contains_key(&name) {
            home.upstreams = upstream::from_context(ctx).0;
            registry = upstream::layered_in(&mut home, registry, &own).registry;
        }
        if !registry.toolchains.contains_key(&name) {
            // A retired toolchain's view still runs its own tree for the jobs that use it.
            match crate::store::retired::read(&home, &name) {
                Ok(Some(retired)) => drop(registry.toolchains.insert(name.clone(), retired.entry)),
                _ => return Ok(None),
            }
        }
        let facts = facts_of(&home, door);
        let layered = Layered {
            registry,
            ..Layered::default()
        };
        Ok(Some((
            Session {
                ctx,
                home,
                door,
                layered,
                facts,
                toolkit_libs: false,
            },
            name,
        )))
    }

    /// Puts the toolkit's library directories on `LD_LIBRARY_PATH` even where they shadow
    /// libraries of the active Python environment's NVIDIA wheels.
    pub fn keep_toolkit_libs(&mut self, keep: bool) {
        self.toolkit_libs = keep;
    }

    pub fn ctx(&self) -> &'c Context {
        self.ctx
    }

    /// The home, with the upstream views filled.
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// The own registry with the upstreams' toolchains added. Only for reading: changes go
    /// through `Registry::update`, which sees the user's own file alone.
    pub fn layered(&self) -> &Layered {
        &self.layered
    }

    pub fn registry(&self) -> &Registry {
        &self.layered.registry
    }

    /// The compatibility data in effect (read at the first call).
    pub fn facts(&self) -> &Facts {
        self.facts.facts()
    }

    /// The copy of the data in effect, for code that reads it only if it needs a fact.
    pub fn facts_in_effect(&self) -> &InEffect {
        &self.facts
    }

    /// The platform wheels must run on here: a Jetson's JetPack read off the board (under
    /// the system root), else what the CPU implies; `Err` for a Jetson gpuenv knows no
    /// wheels for. Only an aarch64 host reads a file.
    pub fn platform(&self) -> Result<Platform, UnknownJetson> {
        tegra::platform(&self.ctx.system_root(), std::env::consts::ARCH)
    }

    /// The home, registry and data in effect, for code that keeps them past the session.
    pub fn into_parts(self) -> (Home, Layered, InEffect) {
        (self.home, self.layered, self.facts)
    }

    /// The active set of `kinds` for the context's directory, `overrides` first. With
    /// `GPUENV_AUTO_INSTALL` and an `installer`, a pin that is only missing is installed
    /// and resolution runs again on the registry read anew (at most
    /// `auto_install::MAX_INSTALLS` times).
    pub fn resolve<E>(
        &mut self,
        overrides: &[Spec],
        kinds: &[Kind],
        installer: Option<&dyn Installer>,
    ) -> Result<ActiveSet, E>
    where
        E: From<StateError>
            + From<ResolveError>
            + From<InstallFailed>
            + From<NotAllowed>
            + From<crate::context::BadFlag>,
    {
        let ctx = self.ctx;
        let torch = || guard::locate_torch(ctx, None);
        let req = Request::new(ctx, overrides, &torch);
        let mut installs = 0;
        loop {
            let err = match resolve::resolve_kinds(&req, self.registry(), kinds) {
                Ok(active) => {
                    self.say_trust_notices(&active);
                    return Ok(active);
                }
                Err(e) => e,
            };
            // Asked only when a pin is missing, where its answer matters.
            let auto =
                auto_install::missing(&err).is_some() || auto_install::not_allowed(&err).is_some();
            let auto = auto && auto_install::enabled(ctx)?;
            let missing = auto_install::missing(&err)
                .filter(|_| auto)
                .filter(|_| installs < auto_install::MAX_INSTALLS);
            let (Some((spec, origin)), Some(installer)) = (missing, installer) else {
                // An untrusted file's pin: say what would be installed and how to allow it.
                let refused =
                    auto_install::not_allowed(&err).filter(|_| installer.is_some() && auto);
                return Err(refused.map_or_else(|| err.into(), Into::into));
            };
            installer.install(ctx, spec, origin)?;
            installs += 1;
            self.layered = load(ctx, &mut self.home, self.door)?;
        }
    }

    /// Decides the host compiler of `active`'s CUDA toolchain on this PATH (the project's
    /// trusted pin, else the newest g++ the toolkit accepts).
    pub fn attach_host_compiler(&self, active: &mut ActiveSet) {
        active.attach_host_compiler(self.facts(), &self.host_compiler_probe());
    }

    /// How this session asks a host compiler its version: once per compiler file, the
    /// answer kept in the home (`host_compiler::cache`), shared by the proxy and every
    /// command.
    pub fn host_compiler_probe(&self) -> CachedProbe<'c> {
        CachedProbe::new(self.ctx, &self.home, |e| {
            ui::warn_with_hints(e, crate::diagnostic::Diagnostic::hints(e))
        })
    }

    /// What the toolchain file in effect may not do yet, and nearer files passed over as
    /// someone else's: once, in the door's voice (the proxy says them itself, for compiles).
    fn say_trust_notices(&self, active: &ActiveSet) {
        for notice in trust::notices(active.project.as_ref(), &active.passed_over) {
            match self.door {
                Door::Command => ui::warn(notice),
                Door::Hook => ui::hook_note(notice),
                Door::Proxy => {}
            }
        }
    }

    /// The change that makes `active` the environment, for `purpose`.
    pub fn environment(&self, active: &ActiveSet, purpose: Purpose) -> Result<Change, StoreError> {
        let registry = self.registry();
        if matches!(purpose, Purpose::Command | Purpose::Hook) {
            let names = active.toolchains.iter().map(|t| t.name.as_str());
            ensure_views(&self.home, registry, names)?;
        }
        let lmfiles = self.ctx.var(vars::_LMFILES_);
        // The file's `[env]` is empty until it is trusted (`ProjectFile::env`).
        let with_env = env::ForProject {
            facts: &self.facts,
            platform: self.platform().ok(),
        };
        let mut change = change_for(active, registry, &self.home, Some(with_env), lmfiles);
        // The proxy runs compilers, which load none of the wheels' libraries, and reads as
        // few files as it can.
        let mut shims_off = false;
        if purpose != Purpose::Proxy {
            shims_off = self.for_run_time(active, &mut change);
            self.for_conda(active, &mut change);
            self.for_compat(active, &mut change);
            if let Some(jobs) = self.build_jobs(active) {
                // A user's own value stays: any value there is theirs.
                let n: OsString = jobs.value.to_string().into();
                for var in [vars::MAX_JOBS, vars::CMAKE_BUILD_PARALLEL_LEVEL] {
                    change.ops.push(Op::Unless(var.into(), n.clone()));
                }
            }
        }
        // The shims stay ahead of toolchain bins, so nvcc and hipcc always pass the guard.
        if purpose == Purpose::Hook && !change.ops.is_empty() && !shims_off {
            change.ops.push(Op::Prepend(
                vars::PATH.into(),
                vec![self.home.shims().into_os_string()],
            ));
        }
        Ok(change)
    }

    /// `environment` applied to the context's current values: what to exec with.
    pub fn applied(
        &self,
        active: &ActiveSet,
        purpose: Purpose,
    ) -> Result<env::Applied, StoreError> {
        let change = self.environment(active, purpose)?;
        Ok(change.apply(&|k| self.ctx.var_os(k).map(ToOwned::to_owned)))
    }
}

/// This process's user, for the owner rules on other homes.
fn owner_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// A refused data copy, said as a warning with its hint.
pub fn warn_refused(refused: &crate::facts::copies::Refused) {
    ui::warn_with_hints(refused, crate::diagnostic::Diagnostic::hints(refused));
}

/// Where PyTorch's wheel indexes are for this process (`facts::wheel_base`): the variable,
/// the user's own settings (never an upstream's), the site config. The site config is read
/// only when neither of the others names a mirror.
pub fn use_index_base(
    ctx: &Context,
    own: &Registry,
) -> Result<(), crate::facts::wheel_base::BadIndexUrl> {
    let var = ctx.var_nonempty(vars::GPUENV_TORCH_INDEX_URL);
    let site = match (var, &own.torch.index_url) {
        (None, None) => upstream::site_index_url(ctx),
        _ => None,
    };
    let base =
        crate::facts::wheel_base::choose(var, own.torch.index_url.as_deref(), site.as_deref())?;
    crate::facts::wheel_base::set(base);
    Ok(())
}

/// Each of `names` whose view is missing (an upstream's toolchain, when the upstream has
/// none) gets one in the user's own home, under the state lock, so `CUDA_HOME` points at a
/// guarded nvcc.
pub fn ensure_views<'a>(
    home: &Home,
    registry: &Registry,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<(), StoreError> {
    for name in names {
        let Some(entry) = registry.toolchains.get(name) else {
            continue;
        };
        if !view::exists(home, name) {
            let _locked = Registry::lock(home)?;
            if !view::exists(home, name) {
                let proxy = shims::install_proxy(home, &shims::proxy_source()?)?;
                view::create(home, name, entry, &proxy)?;
            }
        }
    }
    Ok(())
}

/// The environment plan of `active` with the module step: the toolkits loaded modules
/// name (`lmfiles`, the value of `_LMFILES_`) count as other toolkits, so switching drops
/// them too. `with_env`: the data in effect where the project's `[env]` and `[torch] index`
/// may apply (once trusted). A module file, read by other shells on other nodes, gets
/// `None` and `None` (`gpuenv module`).
pub fn change_for(
    active: &ActiveSet,
    registry: &Registry,
    home: &Home,
    with_env: Option<env::ForProject>,
    lmfiles: Option<&str>,
) -> Change {
    let mut change = env::plan(active, registry, home, with_env);
    module::count_loaded_as_foreign(&mut change, lmfiles);
    change
}

/// Replaces this process with `exec`'s program (its exit status and signals are then the
/// program's own); returns only when that failed.
pub fn exec(exec: &Exec) -> std::io::Error {
    let mut cmd = Command::new(&exec.program);
    cmd.args(&exec.args);
    for (k, v) in &exec.env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.exec()
}

/// `exec` with the variables of an applied change (`None` unsets).
pub fn exec_with(program: OsString, args: Vec<OsString>, applied: &env::Applied) -> std::io::Error {
    exec(&Exec {
        program: program.into(),
        args,
        env: applied.after.clone().into_iter().collect(),
    })
}
