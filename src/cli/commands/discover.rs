//! `gpuenv discover`: toolchains found in the standard places, registered with `--register`.

use crate::cli::support;
use std::path::PathBuf;

use anyhow::Result;

use gpuenv_core::context::{vars, Context};
use gpuenv_core::module;
use gpuenv_core::path_list;
use gpuenv_core::toolchain::detect;
use gpuenv_core::toolchain::discover::{self, Found, Places};
use gpuenv_core::toolchain::registry::{Entry, Registry, Source};
use gpuenv_core::toolchain::Spec;
use gpuenv_core::ui;

/// Find toolchains in the standard places (and register them with --register)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Register what is found (names: <kind>-<version>, with -conda/-debian/-module/-venv labels)
    #[arg(long)]
    register: bool,
    /// Look instead at the roots the module files on MODULEPATH name (read, never run)
    #[arg(long)]
    modules: bool,
    /// Machine-readable output on stdout: one object per tree found
    #[arg(long)]
    json: bool,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let prefixes = match ctx.var_os(vars::GPUENV_DISCOVER_ROOTS) {
            Some(roots) => path_list::dirs(Some(roots)).map(PathBuf::from).collect(),
            None => vec![PathBuf::from("/")],
        };
        let places = Places {
            prefixes,
            conda_envs_file: ctx.home_dir().map(|h| h.join(".conda/environments.txt")),
            conda_prefix: ctx.path_var(vars::CONDA_PREFIX),
            venv: ctx.path_var(vars::VIRTUAL_ENV),
        };
        let found = if self.modules {
            from_modules(ctx)
        } else {
            discover::discover(&places)
        };
        if found.is_empty() {
            let places = if self.modules {
                "the module files on MODULEPATH"
            } else {
                "the standard places"
            };
            ui::info(format!("found no CUDA Toolkit or ROCm tree in {places}"));
            if self.json {
                println!("[]");
            }
            return Ok(());
        }
        let store = support::store(ctx)?;
        let registry = Registry::load(&home)?;
        // Naming a tree asks the data (which release ships its nvcc): a newer copy counts.
        let in_effect = home
            .facts_in_effect()
            .saying_refused(gpuenv_core::session::warn_refused);
        let facts = in_effect.facts();
        support::notice(&registry);
        let mut to_register: Vec<(String, Entry)> = Vec::new();
        let mut rows = Vec::new();
        let skipped = |rows: &mut Vec<serde_json::Value>, root: &std::path::Path, why: &str| {
            if self.json {
                rows.push(serde_json::json!({"root": root, "status": "skipped", "why": why}));
            } else {
                println!("  skipped  {}: {why}", ui::shown(root));
            }
        };
        for f in &found {
            let d = match &f.result {
                Ok(d) => d,
                Err(why) => {
                    skipped(&mut rows, &f.root, &why.to_string());
                    continue;
                }
            };
            if let Err(why) = store.admissible(&f.root, Source::Discovered) {
                let why = why.to_string();
                skipped(&mut rows, &f.root, why.lines().next().unwrap_or_default());
                continue;
            }
            // Named after the release (version.json's), never nvcc's build number.
            let name = Spec {
                kind: d.kind,
                version: d.release(facts),
                label: f.label().map(str::to_string),
            }
            .to_string();
            let already = registry
                .toolchains
                .iter()
                .find(|(_, e)| same_dir(&e.root, &f.root));
            // Two roots of one version and label (two module files, two conda
            // environments) would be one name: the first keeps it, the other is said.
            let found_before = to_register
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, e)| e.root.clone());
            let (state, registered_as, status) = match already {
                Some((n, _)) => ("registered", Some(n), format!("registered as {n}")),
                None if registry.toolchains.contains_key(&name) => (
                    "name-taken",
                    None,
                    format!("not registered: the name {name} is taken by another root"),
                ),
                None if found_before.is_some() => {
                    let first = found_before.unwrap_or_default();
                    let why = format!(
                        "not registered: the name {name} goes to {}, found first",
                        ui::shown(&first)
                    );
                    ui::warn_with_hints(
                        format!("{}: {why}", ui::shown(&f.root)),
                        [format!(
                            "`gpuenv link {}-{}-<label> {}` registers it under a name of its own",
                            d.kind,
                            d.version,
                            f.root.display()
                        )],
                    );
                    ("name-taken", None, why)
                }
                None => {
                    to_register.push((name.clone(), d.clone()));
                    if self.register {
                        (
                            "registering",
                            Some(name.as_str()),
                            format!("registering as {name}"),
                        )
                    } else {
                        ("new", None, format!("new: would be {name}"))
                    }
                }
            };
            if self.json {
                rows.push(serde_json::json!({
                    "root": f.root,
                    "kind": d.kind,
                    "version": d.version.to_string(),
                    "name": name,
                    "status": state,
                    "registered_as": registered_as,
                }));
                continue;
            }
            println!(
                "{} {:<8} {:<10} {}  ({status})",
                d.kind,
                "",
                d.version,
                ui::shown(&f.root)
            );
        }
        if self.json {
            println!("{}", serde_json::to_string_pretty(&rows)?);
        }
        if !self.register {
            if !to_register.is_empty() {
                let modules = if self.modules { " --modules" } else { "" };
                ui::info(format!(
                    "run `gpuenv discover{modules} --register` to register the new ones"
                ));
            }
            return Ok(());
        }
        let n = to_register.len();
        let changed = store.register(to_register)?;
        support::warn_unshimmed(&changed.shims);
        ui::info(format!(
            "registered {n} toolchain(s); {} in all",
            changed.registry.toolchains.len()
        ));
        Ok(())
    }
}

fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// The roots module files on MODULEPATH name, detected like any other tree; what cannot be
/// read without running a module file is a warning naming the file and line.
fn from_modules(ctx: &Context) -> Vec<Found> {
    let Some(modulepath) = ctx.var_nonempty(vars::MODULEPATH) else {
        ui::warn_with_hints(
            "MODULEPATH is not set, so there are no module files to read",
            ["load your module system first (`module avail` works), or set MODULEPATH to the module directories"],
        );
        return Vec::new();
    };
    let scan = module::scan_modulepath(modulepath);
    for w in &scan.warnings {
        ui::warn(w);
    }
    scan.roots
        .into_iter()
        .filter_map(|r| {
            // Read, never run: the module file, not the user, named this tree.
            let d = match detect::detect_with(&r.root, Source::Discovered, detect::Run::Never) {
                Ok(d) => d,
                Err(why) => {
                    ui::warn(format!(
                        "{}:{} names {}, which is not a toolchain: {why}",
                        r.file.display(),
                        r.line,
                        r.root.display()
                    ));
                    return None;
                }
            };
            // The variable says what the module sets up: `CUDA_HOME=/usr` on a machine
            // with Debian's hipcc is not a ROCm toolchain to register.
            if d.kind != r.kind {
                ui::warn(format!(
                    "{}:{} names {} as its {} root, but the tree there is {} {}: skipped",
                    r.file.display(),
                    r.line,
                    r.root.display(),
                    r.kind,
                    d.kind,
                    d.version
                ));
                return None;
            }
            Some(Found {
                root: r.root,
                origin: "module",
                result: Ok(d),
            })
        })
        .collect()
}
