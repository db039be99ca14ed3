//! `gpuenv torch index`: PyTorch's CUDA wheel index for this machine — the one built for
//! the active toolkit's release, that the driver runs, whose wheels carry kernels for the
//! GPUs here (uv's `--torch-backend=auto` looks at the driver only).

use crate::cli::support;
use anyhow::Result;
use serde_json::json;

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Diagnostic;
use gpuenv_core::driver;
use gpuenv_core::facts::{release_name, schema, tegra, torch_choose, torch_index, Facts, Platform};
use gpuenv_core::plan::native;
use gpuenv_core::session::Session;
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
    /// The torch release wanted, e.g. 2.14 or a requirement such as "torch>=2.9,<2.12"
    /// (default: the newest an index carries)
    #[arg(long, value_name = "RELEASE")]
    torch: Option<String>,
    /// The platform to choose for: linux-x86_64, linux-sbsa, jetpack6, jetpack7 (default:
    /// this machine's)
    #[arg(long, value_name = "PLATFORM")]
    platform: Option<String>,
    /// Write the pinned toolkit's index into this project's pyproject.toml, for `uv lock`
    /// and `uv sync`: an explicit [[tool.uv.index]] named `pytorch` and [tool.uv.sources]
    /// for torch, torchvision and torchaudio (comments and order kept)
    #[arg(long, conflicts_with_all = ["list", "json", "driver", "gpus", "any_toolkit", "torch", "platform"])]
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
            let platform = session.platform()?;
            return support::pyproject::write(session.facts(), &active, &ctx.cwd, platform);
        }
        let machine = machine(&mut session, &a)?;
        let facts = session.facts();
        let answer = torch_choose::choose(facts, &machine);
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&answer_json(facts, &machine, &answer))?
            );
            return match answer {
                Ok(_) => Ok(()),
                Err(_) => Err(Exit(1).into()),
            };
        }
        match answer {
            Ok(pick) => {
                let url = pick.index.url();
                let pip = format!("pip install torch --index-url {url}");
                println!("{url}");
                for why in &pick.why {
                    ui::info(format!("{}: {why}", pick.index.name()));
                }
                match pick.index.uv_backend() {
                    Some(b) => ui::info(format!(
                        "install with `{pip}` (uv: `uv pip install --torch-backend={b} torch`)"
                    )),
                    None => ui::info(format!("install with `{pip}`")),
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
        let mut rows: Vec<_> = f
            .torch
            .iter()
            .map(|t| {
                let platforms: Vec<_> = t
                    .platforms
                    .iter()
                    .map(|p| json!({"platform": p.key(), "archs": t.archs_on(*p).map(|a| shown(Some(a)))}))
                    .collect();
                json!({"index": t.name, "url": t.url(), "cuda": release_name(t.cuda), "archs": t.archs.map(|_| shown(t.archs)), "platforms": platforms, "torch": torch_index::releases_text(t.torch.0, t.torch.1), "source": t.source})
            })
            .collect();
        rows.extend(f.rocm_torch.iter().map(|t| {
            json!({"index": t.name, "url": t.url(), "rocm": release_name(t.rocm), "gfx": t.gfx, "platforms": [{"platform": "linux-x86_64", "archs": t.gfx.map(|g| g.join(" "))}], "torch": torch_index::releases_text(t.torch.0, t.torch.1), "source": t.source})
        }));
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    for t in f.torch {
        for p in t.platforms {
            println!(
                "{:<10} CUDA {:<5} {:<13} {:<26} {}",
                t.name,
                release_name(t.cuda),
                p.key(),
                torch_index::releases_text(t.torch.0, t.torch.1),
                shown(t.archs_on(*p))
            );
        }
    }
    for t in f.rocm_torch {
        println!(
            "{:<10} ROCm {:<5} {:<13} {:<26} {}",
            t.name,
            release_name(t.rocm),
            "linux-x86_64",
            torch_index::releases_text(t.torch.0, t.torch.1),
            t.gfx.map_or("(targets not known)".into(), |g| g.join(" "))
        );
    }
    Ok(())
}

/// What the choice looks at: the active toolkit, the torch wanted, the platform, the
/// driver, the GPUs (flags first).
fn machine(session: &mut Session, a: &IndexArgs) -> Result<torch_index::Machine> {
    let ctx = session.ctx();
    let toolkit = if a.any_toolkit {
        None
    } else {
        let active = support::resolve_here(session, &[], None)?;
        gpuenv_core::plan::torch_pick::toolkit(&active)
    };
    let torch = match a.torch.as_deref() {
        // What the project's pyproject.toml asks for, as the environment takes it.
        None if a.any_toolkit => torch_index::TorchWanted::default(),
        None => {
            let active = support::resolve_here(session, &[], None)?;
            gpuenv_core::plan::torch_pick::pyproject_torch(&active)
        }
        Some(t) => torch_index::TorchWanted::of_version(t)
            .filter(|_| !t.contains(['<', '>', '=', '~', '!']))
            .or_else(|| torch_index::TorchWanted::of_requirement(t))
            .or_else(|| torch_index::TorchWanted::of_requirement(&format!("torch{t}")))
            .ok_or_else(|| {
                gpuenv_core::diagnostic::Hinted::new(format!(
                    "--torch {t} is neither a torch release nor a requirement on torch"
                ))
                .hint("give a release such as --torch 2.14 or a requirement such as --torch \"torch>=2.9,<2.12\"")
            })?,
    };
    // A Jetson says which it is under the system root (a test root in tests); an Arm
    // server or an x86_64 machine is known by its CPU.
    let arch = std::env::consts::ARCH;
    let board = (arch == "aarch64")
        .then(|| tegra::detect(&ctx.system_root()))
        .flatten();
    let platform = match a.platform.as_deref() {
        None => match &board {
            Some(b) => {
                let p = b.platform()?;
                ui::verbose(format!("{}: {p}", b.describe()));
                p
            }
            None => Platform::for_arch(arch).unwrap_or(Platform::LinuxX86_64),
        },
        Some(p) => Platform::from_key(p).ok_or_else(|| {
            gpuenv_core::diagnostic::Hinted::new(format!(
                "--platform {p} is not a platform gpuenv knows"
            ))
            .hint("one of linux-x86_64, linux-sbsa, jetpack6, jetpack7")
        })?,
    };
    let driver = match &a.driver {
        Some(d) if schema::valid_driver(d) => Some(d.clone()),
        Some(d) => anyhow::bail!(gpuenv_core::diagnostic::Hinted::new(format!(
            "--driver {d} is not a driver version"
        ))
        .hint("give it as nvidia-smi shows it, e.g. --driver 575.57.08")),
        None => driver::read_proc_version(&ctx.system_root()),
    };
    let (caps, amd): (Vec<String>, Vec<String>) = if a.gpus.is_empty() {
        let mut native = native::native_archs(ctx);
        // A Jetson's integrated GPU is its SoC's (JetPack 6 has no nvidia-smi to ask).
        if let Some(soc) = board.as_ref().and_then(|b| b.soc) {
            if native.cuda.is_empty() {
                native.cuda.push(format!("{}.{}", soc.cc / 10, soc.cc % 10));
            }
        }
        (native.cuda, native.rocm)
    } else {
        a.gpus.iter().cloned().partition(|g| !g.starts_with("gfx"))
    };
    let mut gpus = Vec::new();
    for cap in &caps {
        match schema::parse_torch_arch(cap) {
            Some((cc, false)) => gpus.push(cc),
            _ => anyhow::bail!(gpuenv_core::diagnostic::Hinted::new(format!(
                "--gpu {cap} is not a compute capability"
            ))
            .hint("give it as nvidia-smi --query-gpu=compute_cap shows it, e.g. --gpu 8.6 (or an AMD target, --gpu gfx942)")),
        }
    }
    gpus.sort_unstable();
    gpus.dedup();
    let mut amd_gpus: Vec<String> = amd
        .iter()
        .map(|g| g.split(':').next().unwrap_or(g).to_string())
        .collect();
    amd_gpus.sort();
    amd_gpus.dedup();
    if driver.is_none() {
        ui::verbose("no NVIDIA driver found: the driver is not part of the choice");
    }
    Ok(torch_index::Machine {
        toolkit,
        torch,
        platform,
        driver,
        gpus,
        amd_gpus,
    })
}

/// `torch index --json`: the answer and the inputs it was chosen from (docs/json.md).
fn answer_json(
    facts: &Facts,
    m: &torch_index::Machine,
    answer: &Result<torch_choose::Pick, torch_choose::NoIndex>,
) -> serde_json::Value {
    let inputs = json!({
        "toolkit": m.toolkit.map(|t| match t {
            torch_index::Toolkit::Cuda(r) => format!("cuda-{}", release_name(r)),
            torch_index::Toolkit::Rocm(r) => format!("rocm-{}", release_name(r)),
        }),
        "torch": (!m.torch.is_any()).then(|| m.torch.to_string()),
        "platform": m.platform.key(),
        "driver": m.driver,
        "gpus": m.gpus.iter().map(|c| format!("{}.{}", c / 10, c % 10)).chain(m.amd_gpus.iter().cloned()).collect::<Vec<_>>(),
    });
    match answer {
        Ok(pick) => json!({
            "schema": gpuenv_core::report_schema::VERSION,
            "command": "torch index",
            "ok": true,
            "index": pick.index.name(),
            "url": pick.index.url(),
            "built_for": pick.index.built_for(),
            "cuda": match pick.index { torch_index::Chosen::Cuda(i) => Some(release_name(i.cuda)), _ => None },
            "torch_releases": pick.index.torch_releases(),
            "why": pick.why,
            "pip": format!("pip install torch --index-url {}", pick.index.url()),
            "uv_torch_backend": pick.index.uv_backend(),
            "inputs": inputs,
            "data_date": facts.date,
        }),
        Err(no) => json!({
            "schema": gpuenv_core::report_schema::VERSION,
            "command": "torch index",
            "ok": false,
            "error": no.to_string(),
            "ruled_out_by": no.rules().iter().map(|r| r.key()).collect::<Vec<_>>(),
            "hints": no.hints(),
            "inputs": inputs,
            "data_date": facts.date,
        }),
    }
}
