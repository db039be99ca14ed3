//! `gpuenv audit FILE`: the GPU archs and runtime a built object holds, against the arch pins,
//! TORCH_CUDA_ARCH_LIST and the GPUs here.

use crate::cli::support;
use fs_err::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::Result;

use gpuenv_audit::arch::{CudaArch, GfxTarget};
use gpuenv_audit::compare::{self, ActiveToolchain, Arch, Inputs, Source, ToolKind, Want};
use gpuenv_audit::finding::Finding;
use gpuenv_audit::report::{self, Report};
use gpuenv_audit::runtime::{classify, Runtime};
use gpuenv_audit::symbols;
use gpuenv_audit::{AuditError, Object};
use gpuenv_core::context::{vars, Context};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::plan::native;
use gpuenv_core::project::ProjectFile;
use gpuenv_core::resolve::ActiveSet;
use gpuenv_core::toolchain::Kind;
use gpuenv_core::{fsutil, guard, project, ui};

use support::Exit;

/// Check a built object (.so, .o, program) before a job runs it: the GPU archs its CUDA
/// fatbinary or HIP bundle covers, the runtime it needs, against the arch pins,
/// TORCH_CUDA_ARCH_LIST and the GPUs here (exit 1 on "no kernel image")
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The ELF object to audit
    file: PathBuf,
    /// Machine-readable report on stdout
    #[arg(long)]
    json: bool,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let path = ctx.cwd.join(&self.file);
        let object = read(&path)?;
        // One session: the toolchains active here and the toolchain file in effect (another
        // user's is passed over, as everywhere), resolved once.
        let mut session = support::session(ctx)?;
        let resolved = session.resolve::<anyhow::Error>(&[], &Kind::ALL, None);
        let file = match &resolved {
            Ok(active) => active.project.clone(),
            // A pin that does not resolve still leaves the file's arch pins to compare.
            Err(_) => gpuenv_core::trust::in_effect(&ctx.cwd, session.registry())?.file,
        };
        let (wants, no_gpu, gpus_found) = wants(ctx, &object, file.as_ref());
        // A ROCm of AMD's wheels: which GPUs' device wheels it carries.
        let rocm_device_wheels = match &resolved {
            Ok(active) if !object.hip.is_empty() => active
                .toolchains
                .iter()
                .find(|t| t.entry.kind == Kind::Rocm)
                .and_then(|t| {
                    let carried = gpuenv_core::facts::arch::device_wheels(&t.entry.root)?;
                    Some((t.name.clone(), carried.into_iter().collect()))
                }),
            _ => None,
        };
        let inputs = Inputs {
            wants: wants.clone(),
            active: if needs_runtime(&object) {
                active_toolchains(resolved)
            } else {
                Vec::new()
            },
            no_gpu,
            gpus_found,
            torch_cuda: needs_torch(&object)
                .then(|| guard::locate_torch(ctx, None).ok()?.cuda)
                .flatten(),
            driver: has_ptx(&object)
                .then(|| native::driver_version(ctx))
                .flatten(),
            facts: *session.facts(),
            rocm_device_wheels,
        };
        let mut findings = compare::compare(&object, &inputs);
        if needs_torch(&object) {
            findings.push(torch_symbols(ctx, &path));
        }
        let report = Report {
            file: self.file,
            findings,
            object,
            compared: wants,
        };
        if self.json {
            print!("{}", report::render_json(&report));
        } else {
            anstream::print!("{}", report::render_text(&report));
        }
        if report.has_errors() {
            Err(Exit(1).into())
        } else {
            Ok(())
        }
    }
}

/// Reads the object: a regular file, opened without blocking (a FIFO does not hang), read
/// through a cache so only its headers and GPU sections are loaded.
fn read(path: &Path) -> Result<Object> {
    let shown = path.display();
    let file = open_regular(path).map_err(|why| {
        Hinted::new(why.to_string())
            .hint("give the path of a built object: an extension's .so, a .o or a program")
    })?;
    gpuenv_audit::read_file(file).map_err(|e| {
        let hint = match e {
            AuditError::NotElf { .. } => {
                "gpuenv audit reads ELF objects: an extension's .so, a .o or a program"
            }
            _ => "rebuild it: a file cut short (a full disk, an interrupted copy) or changed since the build reads like this",
        };
        Hinted::new(format!("cannot audit {shown}: {e}"))
            .hint(hint)
            .into()
    })
}

/// A file opened without blocking (a FIFO does not hang) that is a regular file, or why not.
fn open_regular(path: &Path) -> Result<std::fs::File> {
    let shown = path.display();
    let file = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot read {shown}: {}", fsutil::io_reason(&e)))?;
    let meta = file
        .metadata()
        .map_err(|e| anyhow::anyhow!("cannot read {shown}: {}", fsutil::io_reason(&e)))?;
    if let Some(what) = fsutil::not_regular(&meta) {
        anyhow::bail!("{shown} is {what}, not an ELF object");
    }
    Ok(file.into_parts().0)
}

/// The symbols the extension takes from torch's libraries against those the installed
/// torch's `lib/` defines (dynamic symbol tables only: a 1 GB libtorch_cuda costs its
/// `.dynsym`).
fn torch_symbols(ctx: &Context, path: &Path) -> Finding {
    let torch = match guard::locate_torch(ctx, None) {
        Ok(t) => t,
        Err(e) => return symbols::skipped(format!("no torch to compare its symbols with: {e}")),
    };
    let version = torch
        .version
        .clone()
        .unwrap_or_else(|| "(version unknown)".into());
    let shown = format!("{version} at {}", torch.dir.display());
    let read_undefined =
        || -> Result<Vec<String>> { Ok(symbols::undefined_in_file(open_regular(path)?)?) };
    let undefined = match read_undefined() {
        Ok(u) => u,
        Err(why) => return symbols::skipped(why.to_string()),
    };
    let mut defines = std::collections::HashSet::new();
    let lib = torch.dir.join("lib");
    let mut found = 0;
    for name in symbols::TORCH_LIBS {
        let file = lib.join(name);
        if fs_err::symlink_metadata(&file).is_err() {
            continue;
        }
        let read = open_regular(&file).and_then(|f| {
            symbols::defined_in_file(f, &mut defines)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))
        });
        match read {
            Ok(()) => found += 1,
            Err(why) => return symbols::unreadable(why.to_string()),
        }
    }
    if found == 0 {
        return symbols::skipped(format!(
            "torch {shown} has none of its libraries ({}) in {}",
            symbols::TORCH_LIBS.join(", "),
            lib.display()
        ));
    }
    symbols::check(&undefined, &shown, &defines)
}

/// The archs the object must cover, GPUs first (their findings then name the GPU), then
/// the toolchain file's pins, then the arch-list variables; and, when no GPU is found,
/// what was asked.
fn wants(
    ctx: &Context,
    object: &Object,
    file: Option<&ProjectFile>,
) -> (Vec<Want>, Vec<String>, bool) {
    let mut wants = Vec::new();
    let cuda = |arch: CudaArch, source: Source| Want {
        arch: Arch::Cuda(arch),
        source,
    };
    let rocm = |text: &str, source: Source| {
        GfxTarget::parse(text).map(|t| Want {
            arch: Arch::Rocm(t),
            source,
        })
    };
    let has_code = !object.cuda.is_empty() || !object.hip.is_empty();
    let (mut no_gpu, mut gpus_found) = (Vec::new(), false);
    if has_code {
        let found = native::native_archs(ctx);
        gpus_found = !found.cuda.is_empty() || !found.rocm.is_empty();
        let gpu = |tool: &str| Source::Gpu { tool: tool.into() };
        wants.extend(
            found
                .cuda
                .iter()
                .filter_map(|a| CudaArch::parse_any(a).ok())
                .map(|a| cuda(a, gpu("nvidia-smi"))),
        );
        wants.extend(found.rocm.iter().filter_map(|a| rocm(a, gpu("rocminfo"))));
        // Each tool's own words (a traceback, colour codes) stay out of the one-line finding.
        no_gpu = found
            .asked
            .iter()
            .map(|a| match a.split_once(": ") {
                Some((tool, "not on PATH")) => format!("{tool}: not on PATH"),
                Some((tool, _)) => format!("{tool}: no GPU listed"),
                None => a.clone(),
            })
            .collect();
    }
    if let Some(file) = file {
        let pin = |at: &project::Location| Source::Pin {
            file: at.path.clone(),
            line: at.line,
        };
        for (a, at) in file.cuda_arch.iter().zip(&file.cuda_arch_at) {
            wants.push(cuda(*a, pin(at)));
        }
        for (a, at) in file.rocm_arch.iter().zip(&file.rocm_arch_at) {
            wants.extend(rocm(&a.to_string(), pin(at)));
        }
    }
    let var = |name: &str| Source::Var { name: name.into() };
    if let Some(list) = ctx.var_nonempty(vars::TORCH_CUDA_ARCH_LIST) {
        let entries = gpuenv_core::facts::arch::parse_torch_list(list);
        wants.extend(
            entries
                .iter()
                .filter_map(|e| e.arch.clone().ok())
                .map(|a| cuda(a, var(vars::TORCH_CUDA_ARCH_LIST))),
        );
    }
    if let Some(list) = ctx.var_nonempty(vars::PYTORCH_ROCM_ARCH) {
        wants.extend(
            list.split([';', ',', ' '])
                .filter_map(|a| rocm(a, var(vars::PYTORCH_ROCM_ARCH))),
        );
    }
    (wants, no_gpu, gpus_found)
}

/// The toolchains active here, for the runtime check; a pin that does not resolve is said
/// once and leaves that check out.
fn active_toolchains(resolved: Result<ActiveSet>) -> Vec<ActiveToolchain> {
    let active = match resolved {
        Ok(a) => a,
        Err(e) => {
            ui::warn(format!(
                "the runtime it needs is not compared with a toolchain: {}",
                ui::Report::of(e.as_ref(), support::FIND).inline()
            ));
            return Vec::new();
        }
    };
    active
        .toolchains
        .iter()
        .map(|t| ActiveToolchain {
            name: t.name.clone(),
            kind: match t.entry.kind {
                Kind::Cuda => ToolKind::Cuda,
                Kind::Rocm => ToolKind::Rocm,
            },
            major: u32::try_from(t.entry.version.major()).unwrap_or(u32::MAX),
        })
        .collect()
}

/// A CUDA or HIP runtime library among what it needs (the one thing compared with the
/// active toolchains).
fn needs_runtime(object: &Object) -> bool {
    object.needed.iter().any(|n| {
        matches!(
            classify(n),
            Some(Runtime::Cudart { .. } | Runtime::Hip { .. })
        )
    })
}

fn has_ptx(object: &Object) -> bool {
    object
        .cuda
        .iter()
        .any(|i| i.kind == gpuenv_audit::fatbin::ImageKind::Ptx)
}

fn needs_torch(object: &Object) -> bool {
    object
        .needed
        .iter()
        .any(|n| matches!(classify(n), Some(Runtime::Torch { .. })))
}
