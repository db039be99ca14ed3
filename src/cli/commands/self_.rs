//! `gpuenv self info` and `self uninstall` (in their own files), `gpuenv self data` (which copy of the compatibility data is in effect, how old, what it
//! covers) and `gpuenv self update-data` (a newer copy in the home, from NVIDIA's redist
//! manifests and the CUDA toolkits registered here).

use crate::cli::support;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};
use serde_json::{json, Value};

use gpuenv_core::context::{vars, Context};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::{self, release_name, schema, update, Facts};
use gpuenv_core::fsutil;
use gpuenv_core::outside;
use gpuenv_core::session::Session;
use gpuenv_core::toolchain::{Kind, Version};
use gpuenv_core::ui;
use gpuenv_install::{Fetcher, NVIDIA_MIRROR};

/// gpuenv itself: how it was installed, removing it, its compatibility data
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Which copy of the compatibility data is in effect, how old it is, what it covers
    Data {
        /// Machine-readable output on stdout
        #[arg(long)]
        json: bool,
    },
    /// Refresh the compatibility data: minimum drivers and nvcc builds from NVIDIA's redist
    /// manifests (GPUENV_CUDA_MIRROR), GCC limits and archs from the CUDA toolkits
    /// registered here, the torch releases and platforms of PyTorch's indexes from their
    /// pages (GPUENV_TORCH_INDEX_URL)
    UpdateData {
        /// Use only the manifests fetched before
        #[arg(long)]
        offline: bool,
    },
    /// How this copy of gpuenv was installed (cargo, a wheel with pip, uv or pipx) and how
    /// to upgrade it
    Info,
    /// Say the command that upgrades this copy of gpuenv the way it was installed (`uv tool
    /// upgrade gpuenv`, `pipx upgrade gpuenv`, `pip install --upgrade gpuenv`, cargo); the
    /// proxy in GPUENV_HOME is replaced by the new one at its first command
    Update,
    /// Remove what gpuenv made in GPUENV_HOME and the documented shell hook lines (asks first)
    Uninstall {
        /// Do not ask
        #[arg(short = 'y', long)]
        yes: bool,
        /// Keep the toolchains, the download cache and the settings that register them
        #[arg(long)]
        keep_toolchains: bool,
    },
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        match self.command {
            Sub::Data { json } => show(ctx, json),
            Sub::UpdateData { offline } => update_data(ctx, offline),
            Sub::Info => support::self_info::run(ctx),
            Sub::Update => support::self_info::update(),
            Sub::Uninstall {
                yes,
                keep_toolchains,
            } => support::self_uninstall::run(ctx, yes, keep_toolchains),
        }
    }
}

/// The newest release each fact reaches.
fn reach(f: &Facts) -> [(&'static str, Option<(u64, u64)>); 3] {
    let last = |pick: fn(&facts::ReleaseFacts) -> bool| {
        f.releases
            .iter()
            .filter(|r| pick(r))
            .map(|r| r.release)
            .max()
    };
    [
        ("driver", last(|r| r.driver.is_some())),
        ("gcc", last(|r| r.gcc.is_some())),
        ("archs", last(|r| r.archs.is_some())),
    ]
}

/// What a registered CUDA toolkit's own tree says, beside the data's row for its release.
struct TreeCheck {
    name: String,
    release: (u64, u64),
    tree_gcc: Option<u64>,
    data_gcc: Option<u64>,
    tree_archs: Option<Vec<u32>>,
    data_archs: Option<Vec<u32>>,
}

fn tree_checks(session: &Session) -> Vec<TreeCheck> {
    let (home, registry, data) = (session.home(), session.registry(), session.facts());
    let mut out = Vec::new();
    for (name, e) in &registry.toolchains {
        if e.kind != Kind::Cuda {
            continue;
        }
        let release = (e.version.major(), e.version.minor().unwrap_or(0));
        out.push(TreeCheck {
            name: name.to_string(),
            release,
            tree_gcc: facts::tree::gcc_max(&e.include_dir),
            data_gcc: facts::lookup::gcc(data, release)
                .known()
                .filter(|f| f.exact)
                .map(|f| f.value.max),
            tree_archs: e.tool("nvcc").and_then(|nvcc| {
                gpuenv_core::toolchain::gpu_archs::gpu_archs(&nvcc, &home.tree_facts())
            }),
            data_archs: facts::lookup::archs(data, release)
                .known()
                .filter(|f| f.exact)
                .map(|f| f.value.to_vec()),
        });
    }
    out
}

fn show(ctx: &Context, json: bool) -> Result<()> {
    let session = support::session(ctx)?;
    let checks = tree_checks(&session);
    let loaded = session.facts_in_effect().loaded();
    let f = &loaded.facts;
    let origin = loaded
        .origin
        .as_ref()
        .map_or("embedded in this gpuenv".to_string(), |p| {
            p.display().to_string()
        });
    let torch: Vec<&str> = f.torch.iter().map(|t| t.name).collect();
    if json {
        let reach: serde_json::Map<String, Value> = reach(f)
            .iter()
            .map(|(k, r)| (k.to_string(), json!(r.map(release_name))))
            .collect();
        let out = json!({
            "date": f.date,
            "origin": origin,
            "embedded_date": Facts::embedded().date,
            "newest": reach,
            "torch_indexes": torch,
            "refused": loaded.refused.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
            "toolkits": checks.iter().map(|c| json!({
                "name": c.name,
                "release": release_name(c.release),
                "tree_gcc_max": c.tree_gcc,
                "data_gcc_max": c.data_gcc,
                "tree_archs": c.tree_archs,
                "data_archs": c.data_archs,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!("data from {} ({origin})", f.date);
    for (what, r) in reach(f) {
        println!(
            "  {what:<7} up to CUDA {}",
            r.map_or("-".into(), release_name)
        );
    }
    println!("  torch   {}", torch.join(" "));
    for (path, date) in &loaded.older {
        println!("  not used: {} (from {date}, older)", ui::shown(path));
    }
    for c in &checks {
        let said = |tree: Option<String>, data: Option<String>| match (tree, data) {
            (Some(t), Some(d)) if t == d => format!("{t} (tree and data agree)"),
            (Some(t), Some(d)) => format!("{t} from its tree, which wins (data: {d})"),
            (Some(t), None) => format!("{t} from its tree (not in the data)"),
            (None, Some(d)) => format!("{d} from the data"),
            (None, None) => "not known".into(),
        };
        let archs = |a: &Option<Vec<u32>>| {
            a.as_ref().map(|a| {
                a.iter()
                    .map(|n| format!("sm_{n}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        };
        println!(
            "{} (CUDA {}): gcc <= {}; archs {}",
            c.name,
            release_name(c.release),
            said(
                c.tree_gcc.map(|g| g.to_string()),
                c.data_gcc.map(|g| g.to_string())
            ),
            said(archs(&c.tree_archs), archs(&c.data_archs))
        );
    }
    Ok(())
}

fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    update::date_of(secs)
}

fn update_data(ctx: &Context, offline: bool) -> Result<()> {
    let (home, layered, facts) = support::session(ctx)?.into_parts();
    let registry = layered.registry;
    let mut data = update::to_checked(facts.facts());
    let mut said = Vec::new();

    // NVIDIA: the first manifest of each major.minor (its GA) names the driver it ships.
    let fetcher = support::install_from::fetcher(ctx, &home, offline)?;
    let mirror = ctx
        .var_nonempty(vars::GPUENV_CUDA_MIRROR)
        .unwrap_or(NVIDIA_MIRROR);
    let root = gpuenv_install::location(&ctx.cwd, mirror, true)?;
    let listing = fetcher
        .page(&root, "text/html", outside::Kind::IndexPage)
        .with_context(|| format!("listing the CUDA releases at {root}"))?;
    let mut firsts: Vec<Version> = Vec::new();
    for v in gpuenv_install::nvidia_releases(&listing.text()) {
        if !firsts.iter().any(|f| same_minor(f, &v)) {
            firsts.push(v);
        }
    }
    for v in &firsts {
        let release = (v.major(), v.minor().unwrap_or(0));
        let has = data
            .releases
            .iter()
            .any(|r| r.release == release && r.driver.is_some());
        if has {
            continue;
        }
        let url = root.join(&format!("redistrib_{v}.json"))?;
        match manifest(&fetcher, &url).and_then(|m| manifest_driver(&m, &url)) {
            Ok(Some(driver)) => said.extend(update::add_driver(
                &mut data,
                release,
                &driver,
                url.as_str(),
            )),
            Ok(None) => ui::verbose(format!("{url} names no nvidia_driver")),
            Err(e) => ui::warn(format!("{e:#}")),
        }
    }

    // NVIDIA: the nvcc build of each release the data has none for, in the majors its
    // [[nvcc-build]] rows cover (older ones keep naming their trees by major.minor).
    let first_major = data.nvcc_builds.iter().map(|b| b.release[0]).min();
    for v in gpuenv_install::nvidia_releases(&listing.text()) {
        let release = match *v.parts() {
            [a, b, c] if first_major.is_some_and(|m| a >= m) => [a, b, c],
            _ => continue,
        };
        if data.nvcc_builds.iter().any(|b| b.release == release) {
            continue;
        }
        let url = root.join(&format!("redistrib_{v}.json"))?;
        let nvcc = manifest(&fetcher, &url).map(|m| {
            m.pointer("/cuda_nvcc/version")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        match nvcc {
            Ok(Some(nvcc)) => match update::add_nvcc_build(&mut data, release, &nvcc, url.as_str()) {
                Some(line) => said.push(line),
                None => ui::warn(format!(
                    "{url}: cuda_nvcc.version {nvcc:?} is not a build of {v} such as \"13.0.88\"; not used"
                )),
            },
            Ok(None) => ui::verbose(format!("{url} names no cuda_nvcc")),
            Err(e) => ui::warn(format!("{e:#}")),
        }
    }

    // Toolkits here: their own headers and nvcc.
    for (name, e) in &registry.toolchains {
        if e.kind != Kind::Cuda {
            continue;
        }
        let release = (e.version.major(), e.version.minor().unwrap_or(0));
        let gcc = facts::tree::gcc_max(&e.include_dir);
        let archs = e.tool("nvcc").and_then(|nvcc| {
            gpuenv_core::toolchain::gpu_archs::gpu_archs(&nvcc, &home.tree_facts())
        });
        let root = format!("{name} ({})", e.root.display());
        said.extend(update::add_tree(&mut data, release, gcc, archs, &root));
    }

    // PyTorch: which torch releases and platforms each index's page lists wheels for.
    said.extend(torch_pages(ctx, &fetcher, &mut data));

    data.date = today();
    let text = update::render(&data);
    // What is written must read back: the same checks as any copy.
    schema::check(&text).map_err(|e| {
        anyhow::anyhow!(
            "the data to write is not valid (line {}: {}); nothing was written",
            e.line,
            e.message
        )
    })?;
    write(&home.facts_file(), &text)?;
    for line in &said {
        ui::info(format!("added {line}"));
    }
    ui::info(format!(
        "wrote {} (data from {}; {} new value{})",
        home.facts_file().display(),
        data.date,
        said.len(),
        if said.len() == 1 { "" } else { "s" }
    ));
    Ok(())
}

/// The torch page (`<base>/<index>/torch/`) of each of PyTorch's indexes in the data, read
/// for the releases and platforms it holds wheels of; an index page that cannot be read is
/// left as it was (a mirror need not hold every index).
fn torch_pages(ctx: &Context, fetcher: &Fetcher, data: &mut schema::Checked) -> Vec<String> {
    let names: Vec<String> = data
        .torch
        .iter()
        .filter(|t| t.url.is_none())
        .map(|t| t.name.clone())
        .chain(data.rocm_torch.iter().map(|t| t.name.clone()))
        .collect();
    let mut pages = Vec::new();
    let mut unread = Vec::new();
    for name in names {
        let text = format!("{}/{name}/torch/", facts::wheel_base::base());
        let page = gpuenv_install::location(&ctx.cwd, &text, true)
            .map_err(anyhow::Error::from)
            .and_then(|url| {
                fetcher
                    .page(&url, "text/html", outside::Kind::IndexPage)
                    .map_err(anyhow::Error::from)
            });
        match page {
            Ok(p) => {
                let wheels = facts::update_index::wheels(&p.text(), &name);
                pages.push((name, text, wheels));
            }
            Err(e) => {
                ui::verbose(format!("{text}: {e:#}"));
                unread.push(name);
            }
        }
    }
    if !unread.is_empty() {
        ui::warn(format!(
            "the torch pages of {} could not be read at {} (`-v` says why); their rows stay as they were",
            unread.join(", "),
            facts::wheel_base::base()
        ));
    }
    facts::update_index::add_pages(data, &pages)
}

fn same_minor(a: &Version, b: &Version) -> bool {
    a.major() == b.major() && a.minor() == b.minor()
}

/// A redist manifest, as JSON.
fn manifest(fetcher: &Fetcher, url: &gpuenv_install::Url) -> Result<Value> {
    let page = fetcher.page(url, "application/json", outside::Kind::Manifest)?;
    serde_json::from_slice(&page.body)
        .with_context(|| format!("{url} is not a JSON redist manifest"))
}

/// `nvidia_driver.version` of a redist manifest, checked like any driver in the data.
fn manifest_driver(json: &Value, url: &gpuenv_install::Url) -> Result<Option<String>> {
    let Some(version) = json.pointer("/nvidia_driver/version") else {
        return Ok(None);
    };
    match version.as_str().filter(|d| schema::valid_driver(d)) {
        Some(d) => Ok(Some(d.to_string())),
        None => Err(Hinted::new(format!(
            "{url}: nvidia_driver.version {version} is not a driver version such as \"580.65.06\"; not used"
        ))
        .into()),
    }
}

/// Written as the user's own file, readable by all, writable by none else (what
/// `facts::copies` demands of a copy it reads).
fn write(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("/"));
    fs_err::create_dir_all(dir)?;
    fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    fsutil::write_atomic(path, text.as_bytes())?;
    Ok(())
}
