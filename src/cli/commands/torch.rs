//! `gpuenv torch index`: PyTorch's CUDA wheel index for this machine — the one built for
//! the active toolkit's release, that the driver runs, whose wheels carry kernels for the
//! GPUs here (uv's `--torch-backend=auto` looks at the driver only).

use crate::cli::support;
use anyhow::Result;
use serde_json::json;

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Diagnostic;
use gpuenv_core::driver;
use gpuenv_core::facts::{release_name, schema, torch_index, Facts};
use gpuenv_core::plan::native;
use gpuenv_core::session::Session;
use gpuenv_core::toolchain::Kind;
use gpuenv_core::ui;

use support::Exit;

/// PyTorch builds for this machine
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// The PyTorch wheel index (…/whl/cuXYZ) that matches the active toolkit, the driver
    /// and the GPUs here; the URL on stdout
    Index(IndexArgs),
}

#[derive(Debug, clap::Args)]
struct IndexArgs {
    /// Every index gpuenv's data knows, with its CUDA release and archs
    #[arg(long)]
    list: bool,
    /// Machine-readable output on stdout
    #[arg(long)]
    json: bool,
    /// The driver version to choose for (default: this machine's)
    #[arg(long, value_name = "VERSION")]
    driver: Option<String>,
    /// A GPU's compute capability to choose for, e.g. 8.6 (repeatable; default: this machine's)
    #[arg(long = "gpu", value_name = "CC")]
    gpus: Vec<String>,
    /// Choose by driver and GPUs only, whatever toolkit is active
    #[arg(long)]
    any_toolkit: bool,
    /// Write the pinned toolkit's index into this project's pyproject.toml, for `uv lock`
    /// and `uv sync`: an explicit [[tool.uv.index]] named `pytorch` and [tool.uv.sources]
    /// for torch, torchvision and torchaudio (comments and order kept)
    #[arg(long, conflicts_with_all = ["list", "json", "driver", "gpus", "any_toolkit"])]
    write_pyproject: bool,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let Sub::Index(a) = self.command;
        // The session's home also names the copies of the data to look at.
        let mut session = support::session(ctx)?;
        if a.list {
            return list(session.facts(), a.json);
        }
        if a.write_pyproject {
            let active = support::resolve_here(&mut session, &[], None)?;
            return support::pyproject::write(session.facts(), &active, &ctx.cwd);
        }
        let machine = machine(&mut session, &a)?;
        let facts = session.facts();
        match torch_index::choose(facts, &machine) {
            Ok(pick) => {
                let url = pick.index.url();
                let pip = format!("pip install torch --index-url {url}");
                if a.json {
                    let out = json!({
                        "index": pick.index.name,
                        "url": url,
                        "cuda": release_name(pick.index.cuda),
                        "why": pick.why,
                        "pip": pip,
                        "uv_torch_backend": pick.index.name,
                        "data_date": facts.date,
                    });
                    println!("{}", serde_json::to_string_pretty(&out)?);
                } else {
                    println!("{url}");
                    for why in &pick.why {
                        ui::info(format!("{}: {why}", pick.index.name));
                    }
                    ui::info(format!(
                        "install with `{pip}` (uv: `uv pip install --torch-backend={} torch`)",
                        pick.index.name
                    ));
                }
                Ok(())
            }
            Err(why) => {
                ui::warn_with_hints(&why, why.hints());
                Err(Exit(1).into())
            }
        }
    }
}

fn list(f: &Facts, json: bool) -> Result<()> {
    let shown = |archs: Option<&[(u32, bool)]>| {
        archs.map_or("(archs not known)".to_string(), |a| {
            a.iter()
                .map(|(cc, ptx)| {
                    format!("{}.{}{}", cc / 10, cc % 10, if *ptx { "+PTX" } else { "" })
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    if json {
        let rows: Vec<_> = f
            .torch
            .iter()
            .map(|t| json!({"index": t.name, "url": t.url(), "cuda": release_name(t.cuda), "archs": t.archs.map(|_| shown(t.archs)), "source": t.source}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    for t in f.torch {
        println!(
            "{:<6} CUDA {:<5} {}",
            t.name,
            release_name(t.cuda),
            shown(t.archs)
        );
    }
    Ok(())
}

/// What the choice looks at: the active CUDA toolkit, the driver, the GPUs (flags first).
fn machine(session: &mut Session, a: &IndexArgs) -> Result<torch_index::Machine> {
    let ctx = session.ctx();
    let toolkit = if a.any_toolkit {
        None
    } else {
        let active = support::resolve_here(session, &[], None)?;
        if let (None, Some(rocm)) = (active.get(Kind::Cuda), active.get(Kind::Rocm)) {
            // Its indexes are CUDA's; a ROCm project would be sent to a wheel it cannot use.
            anyhow::bail!(gpuenv_core::diagnostic::Hinted::new(format!(
                "`gpuenv torch index` chooses among PyTorch's CUDA wheel indexes, but {} (ROCm {}) is active here ({})",
                rocm.name, rocm.entry.version, rocm.reason
            ))
            .hint("PyTorch publishes ROCm wheels for some ROCm releases only (https://pytorch.org/get-started/locally/ lists them); `--any-toolkit` chooses a CUDA index by the driver and GPUs alone"));
        }
        active.get(Kind::Cuda).map(|t| {
            (
                t.entry.version.major(),
                t.entry.version.minor().unwrap_or(0),
            )
        })
    };
    let driver = match &a.driver {
        Some(d) if schema::valid_driver(d) => Some(d.clone()),
        Some(d) => anyhow::bail!(gpuenv_core::diagnostic::Hinted::new(format!(
            "--driver {d} is not a driver version"
        ))
        .hint("give it as nvidia-smi shows it, e.g. --driver 575.57.08")),
        None => driver::read_proc_version(&ctx.system_root()),
    };
    let caps: Vec<String> = if a.gpus.is_empty() {
        native::native_archs(ctx).cuda
    } else {
        a.gpus.clone()
    };
    let mut gpus = Vec::new();
    for cap in &caps {
        match schema::parse_torch_arch(cap) {
            Some((cc, false)) => gpus.push(cc),
            _ => anyhow::bail!(gpuenv_core::diagnostic::Hinted::new(format!(
                "--gpu {cap} is not a compute capability"
            ))
            .hint("give it as nvidia-smi --query-gpu=compute_cap shows it, e.g. --gpu 8.6")),
        }
    }
    gpus.sort_unstable();
    gpus.dedup();
    if driver.is_none() {
        ui::verbose("no NVIDIA driver found: the driver is not part of the choice");
    }
    Ok(torch_index::Machine {
        toolkit,
        driver,
        gpus,
    })
}
