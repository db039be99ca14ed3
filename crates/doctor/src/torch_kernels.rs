//! FM-16: the installed torch's own kernels against the GPUs here. A torch without SASS or
//! PTX for a GPU (a CUDA 13 torch on a Pascal card, an old locked torch on Blackwell) fails
//! at the first CUDA op with "no kernel image is available". `libtorch_cuda.so` is read as
//! `gpuenv audit` reads any object: headers and fatbinary only (0.3 s for 520 MB).

use std::path::Path;

use fs_err::os::unix::fs::OpenOptionsExt as _;

use gpuenv_core::plan::native;

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_audit::arch::CudaArch;
use gpuenv_audit::fatbin::ImageKind;
use gpuenv_core::facts::torch_index;
use gpuenv_core::fsutil;

pub const CHECK: Check = Check {
    id: "FM-16",
    name: "torch-without-kernel",
};

/// Reads an object without following it into a FIFO or a device: opened without blocking,
/// a regular file only.
pub fn read_object(path: &Path) -> Result<gpuenv_audit::Object, ObjectError> {
    let file = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if let Some(what) = fsutil::not_regular(&meta) {
        return Err(ObjectError::NotRegular(what));
    }
    Ok(gpuenv_audit::read_file(file.into_parts().0)?)
}

/// Why torch's library could not be read as an object.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("{}", fsutil::io_reason(.0))]
    Io(#[from] std::io::Error),
    #[error("it is {0}, not a library")]
    NotRegular(&'static str),
    #[error(transparent)]
    Audit(#[from] gpuenv_audit::AuditError),
}

pub fn run(inputs: &Inputs) -> Finding {
    let torch = match &inputs.torch {
        Ok(t) if t.cuda.is_some() => t,
        Ok(_) => return CHECK.skip("the active Python's torch is not a CUDA build"),
        Err(e) => return CHECK.skip(format!("no torch to check: {e}")),
    };
    let found = native::native_archs(&inputs.machine.ctx);
    let gpus: Vec<CudaArch> = found
        .cuda
        .iter()
        .filter_map(|a| CudaArch::parse_any(a).ok())
        .collect();
    if gpus.is_empty() {
        return CHECK.skip(format!(
            "no NVIDIA GPU found here ({})",
            found.asked.join("; ")
        ));
    }
    let lib = torch.dir.join("lib/libtorch_cuda.so");
    let object = match read_object(&lib) {
        Ok(o) => o,
        Err(why) => {
            let mut notes = Notes::default();
            notes.problem(
                Status::Warn,
                format!("cannot read torch's kernels in {}: {why}", lib.display()),
            );
            notes.hint("reinstall torch: a library cut short or replaced reads like this");
            return notes.finish(CHECK, "");
        }
    };
    let mut archs: Vec<String> = object
        .cuda
        .iter()
        .map(|i| match i.kind {
            ImageKind::Sass => i.arch.to_string(),
            ImageKind::Ptx => i.arch.compute(),
        })
        .collect();
    archs.dedup();
    let label = torch.label();
    let mut notes = Notes::default();
    notes.seen(format!(
        "torch {label} ({}) carries {}",
        lib.display(),
        archs.join(" ")
    ));
    let mut fine = Vec::new();
    for gpu in &gpus {
        let runs = object.cuda.iter().any(|i| match i.kind {
            ImageKind::Sass => i.arch.sass_runs_on(gpu),
            ImageKind::Ptx => i.arch.ptx_jits_for(gpu),
        });
        if runs {
            fine.push(format!("{gpu}"));
            continue;
        }
        notes.problem(
            Status::Error,
            format!(
                "torch {label} has no kernel for the GPU here of compute capability {gpu} (it carries {}): its first CUDA op fails with \"no kernel image is available for execution on the device\"",
                archs.join(" ")
            ),
        );
        // The one chooser: the active toolkit, this platform, this GPU.
        let machine = torch_index::Machine {
            toolkit: gpuenv_core::plan::torch_pick::toolkit(&inputs.active),
            gpus: vec![gpu.sm()],
            ..Default::default()
        };
        match gpuenv_core::facts::torch_choose::choose(&inputs.facts, &machine) {
            Ok(pick) => notes.hint(format!(
                "install a torch built for {gpu} from PyTorch's `{}` index ({}; `gpuenv torch index --list` shows each index's archs)",
                pick.index.name(),
                pick.index.url()
            )),
            Err(no) => {
                use gpuenv_core::diagnostic::Diagnostic as _;
                notes.hint(format!(
                    "no PyTorch wheel index fits with what is active here: {no}; {}",
                    no.hints().join("; ")
                ))
            }
        }
    }
    notes.finish(
        CHECK,
        format!(
            "torch {label} has kernels for the GPUs here ({})",
            fine.join(", ")
        ),
    )
}
