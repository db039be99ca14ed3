//! An object's GPU code and runtime needs against what is asked of it: each arch that a pin,
//! an arch-list variable or a GPU present names needs code that runs there (SASS of the same
//! major and a minor no higher, exact for `a`; else PTX the driver can compile), and the
//! runtime it needs should be the active toolchain's.

use crate::arch::{CudaArch, GfxTarget, ImageArch, Suffix};
use crate::fatbin::{Image, ImageKind};
use crate::runtime::{classify, Runtime};
use crate::Object;
use gpuenv_core::facts::{ptx, Facts};

pub use crate::finding::{Finding, Status};
pub use crate::want::{ActiveToolchain, Arch, Inputs, Source, ToolKind, Want};

/// The findings, in report order: device code, each arch asked for, the runtime.
pub fn compare(object: &Object, inputs: &Inputs) -> Vec<Finding> {
    let mut out = Vec::new();
    let has_cuda = !object.cuda.is_empty();
    let has_hip = !object.hip.is_empty() || object.hip_compressed > 0;
    if !has_cuda && !has_hip {
        out.push(Finding::new(
            "device-code",
            Status::Warn,
            "no GPU code in it: no CUDA fatbinary (.nv_fatbin, __nv_relfatbin) and no HIP offload bundle (.hip_fatbin)",
        ));
    }
    if object.hip_compressed > 0 {
        out.push(Finding::new(
            "code-object",
            Status::Warn,
            format!(
                "{} compressed offload bundle(s) not read: their gfx targets are not checked",
                object.hip_compressed
            ),
        ));
    }
    let wants = dedup(&inputs.wants);
    let (mut cuda_wants, mut rocm_wants) = (0, 0);
    for want in &wants {
        match &want.arch {
            Arch::Cuda(arch) if has_cuda => {
                cuda_wants += 1;
                out.extend(cuda_want(
                    &object.cuda,
                    arch,
                    &want.source,
                    inputs.driver.as_deref(),
                    &inputs.facts,
                ));
            }
            Arch::Rocm(target) if !object.hip.is_empty() => {
                rocm_wants += 1;
                out.push(rocm_want(&object.hip, target, &want.source));
                if let Some((name, carried)) = &inputs.rocm_device_wheels {
                    out.extend(device_wheel(name, carried, target, &want.source));
                }
            }
            _ => {}
        }
    }
    if !inputs.gpus_found && (has_cuda || has_hip) {
        out.push(Finding::new(
            "gpus",
            Status::Skip,
            format!(
                "no GPU found here ({}): compared with the pins and arch lists only",
                inputs.no_gpu.join("; ")
            ),
        ));
    }
    let nothing = |kind: &str, flag: &str| {
        Finding::new(
            "kernel-image",
            Status::Skip,
            format!("nothing to compare its {kind} code with: no {flag} pin, no arch list, no GPU found"),
        )
        .hint(format!("pin the archs it must run on: `gpuenv pin --arch {}`", if kind == "CUDA" { "8.0,9.0" } else { "gfx90a" }))
    };
    if has_cuda && cuda_wants == 0 {
        out.push(nothing("CUDA", "cuda-arch"));
    }
    if !object.hip.is_empty() && rocm_wants == 0 {
        out.push(nothing("HIP", "rocm-arch"));
    }
    out.extend(runtime(object, inputs));
    out
}

/// The first of each arch (GPUs come first), so a GPU's finding names the GPU.
fn dedup(wants: &[Want]) -> Vec<&Want> {
    let mut seen: Vec<&Want> = Vec::new();
    for w in wants {
        let same = |o: &Want| match (&o.arch, &w.arch) {
            (Arch::Cuda(a), Arch::Cuda(b)) => a.sm() == b.sm(),
            (a, b) => a == b,
        };
        match seen.iter_mut().find(|o| same(o)) {
            // A later `+PTX` for the same arch still asks for PTX.
            Some(first) if matches!(&w.arch, Arch::Cuda(a) if a.has_ptx()) => {
                if matches!(&first.arch, Arch::Cuda(a) if !a.has_ptx()) {
                    *first = w;
                }
            }
            Some(_) => {}
            None => seen.push(w),
        }
    }
    seen
}

fn list(images: &[&Image]) -> String {
    if images.is_empty() {
        return "none".into();
    }
    let names: Vec<String> = images
        .iter()
        .map(|i| match i.kind {
            ImageKind::Sass => i.arch.to_string(),
            ImageKind::Ptx => i.arch.compute(),
        })
        .collect();
    names.join(", ")
}

fn cuda_want(
    images: &[Image],
    want: &CudaArch,
    from: &Source,
    driver: Option<&str>,
    facts: &Facts,
) -> Vec<Finding> {
    // The GPU the arch stands for: what runs there does not depend on the suffix asked.
    let gpu = CudaArch::new(want.major, want.minor);
    let sm = want.sm();
    let cap = format!("{}.{}", want.major, want.minor);
    let compute = format!("compute_{sm}{}", want.suffix.letter());
    let name = want.sm_name();
    let of = |kind| -> Vec<&Image> { images.iter().filter(|i| i.kind == kind).collect() };
    let (sass, ptxs) = (of(ImageKind::Sass), of(ImageKind::Ptx));
    let runs: Vec<&Image> = sass
        .iter()
        .copied()
        .filter(|i| i.arch.sass_runs_on(&gpu))
        .collect();
    let jits: Vec<&Image> = ptxs
        .iter()
        .copied()
        .filter(|i| i.arch.ptx_jits_for(&gpu))
        .collect();
    let mut out = Vec::new();
    if !runs.is_empty() {
        out.push(Finding::new(
            "kernel-image",
            Status::Ok,
            format!("{name} ({from}): runs SASS {}", list(&runs)),
        ));
    } else if let Some((best, too_new)) = driver.and_then(|d| {
        // Every PTX that would JIT for it is newer than the driver here can compile.
        let each: Option<Vec<_>> = jits
            .iter()
            .map(|i| Some((*i, ptx_too_new(facts, i, d)?)))
            .collect();
        each?.into_iter().max_by_key(|(i, _)| i.arch.sm)
    }) {
        let isa = too_new.isa;
        out.push(
            Finding::new(
                "kernel-image",
                Status::Error,
                format!(
                    "no kernel image for {name} ({from}) that this driver can load: no SASS, and its {} PTX (ISA {}.{}) needs {}; the driver here is {}: launches fail with error 222 (the provided PTX was compiled with an unsupported toolchain)",
                    best.arch.compute(),
                    isa.0,
                    isa.1,
                    too_new.driver_needed(),
                    driver.unwrap_or_default()
                ),
            )
            .hint(format!("build SASS for it so no JIT is needed: `-gencode arch=compute_{sm},code=sm_{sm}` (or {cap} in TORCH_CUDA_ARCH_LIST/CUDAARCHS); or update the driver (it needs {})", too_new.driver_needed())),
        );
    } else if let Some(best) = jits.iter().max_by_key(|i| i.arch.sm) {
        out.push(
            Finding::new(
                "kernel-image",
                Status::Warn,
                format!(
                    "no SASS for {name} ({from}): the driver compiles {} PTX at every first load (slower start)",
                    best.arch.compute()
                ),
            )
            .hint(format!("add {cap} to the arch list it was built with (`-gencode arch=compute_{sm},code=sm_{sm}`)")),
        );
    } else {
        out.push(
            Finding::new(
                "kernel-image",
                Status::Error,
                format!(
                    "no kernel image for {name} ({from}): it has SASS {} and PTX {}",
                    list(&sass),
                    list(&ptxs)
                ),
            )
            .hint(rebuild_hint(&cap, sm, from)),
        );
    }
    let has_own_ptx = ptxs
        .iter()
        .any(|i| i.arch == ImageArch::new(sm, Suffix::None));
    if want.has_ptx() && !has_own_ptx {
        let older = ptxs
            .iter()
            .filter(|i| i.arch.suffix == Suffix::None && i.arch.sm < sm)
            .max_by_key(|i| i.arch.sm);
        let newer = match older {
            Some(i) => format!(
                "GPUs newer than {cap} fall back to its {} PTX",
                i.arch.compute()
            ),
            None => format!("GPUs newer than {cap} get no code they can run"),
        };
        out.push(
            Finding::new(
                "ptx",
                Status::Warn,
                format!("{cap}+PTX ({from}) asks for {compute} PTX, which it lacks: {newer}"),
            )
            .hint(format!(
                "rebuild with `-gencode arch=compute_{sm},code=[sm_{sm},compute_{sm}]`"
            )),
        );
    }
    out
}

/// How to rebuild with an arch: the exported lists reach a build that sets no arch flags of
/// its own; one that passes `-gencode` (a setup.py's, a CMake target's
/// `CUDA_ARCHITECTURES`) ignores them, and there the flag or `[build] archs = "add"` does it.
/// An arch pinned already is not pinned again: the build did not take the pin.
fn rebuild_hint(cap: &str, sm: u32, from: &Source) -> String {
    let gencode = format!("`-gencode arch=compute_{sm},code=sm_{sm}`");
    match from {
        Source::Pin { .. } => format!(
            "{cap} is {from}, but this was built without it: built before the pin, or by a build that passes its own arch flags (a setup.py's, a CMake target's CUDA_ARCHITECTURES), which ignores the TORCH_CUDA_ARCH_LIST and CUDAARCHS gpuenv exports; set `[build] archs = \"add\"` in gpuenv.toml so gpuenv adds {gencode} to such a build, and rebuild"
        ),
        _ => format!(
            "rebuild with {gencode}: pin {cap} (`gpuenv pin --arch {cap}`) and set `[build] archs = \"add\"` in gpuenv.toml, and gpuenv adds it to a build that passes its own arch flags; a build that passes none takes it from TORCH_CUDA_ARCH_LIST or CUDAARCHS, which gpuenv exports from the pin"
        ),
    }
}

/// Why the driver cannot compile this PTX image, if it cannot.
fn ptx_too_new(facts: &Facts, image: &Image, driver: &str) -> Option<ptx::PtxTooNew> {
    ptx::driver_loads(facts, image.ptx_isa?, driver).err()
}

fn rocm_want(have: &[GfxTarget], want: &GfxTarget, from: &Source) -> Finding {
    let names: Vec<String> = have.iter().map(ToString::to_string).collect();
    let runs: Vec<String> = have
        .iter()
        .filter(|t| t.runs_on(want))
        .map(ToString::to_string)
        .collect();
    if runs.is_empty() {
        Finding::new(
            "code-object",
            Status::Error,
            format!(
                "no code object for {want} ({from}): it has {}",
                names.join(", ")
            ),
        )
        .hint(format!(
            "rebuild with `--offload-arch={}` (gpuenv exports a `rocm-arch` pin as PYTORCH_ROCM_ARCH, GPU_TARGETS and HCC_AMDGPU_TARGET)",
            want.processor
        ))
    } else {
        Finding::new(
            "code-object",
            Status::Ok,
            format!("{want} ({from}): has {}", runs.join(", ")),
        )
    }
}

/// A GPU it is built for whose device wheel the active ROCm (AMD's wheels) lacks: its own
/// kernels run, rocBLAS, hipBLASLt, MIOpen… find none of theirs.
fn device_wheel(
    name: &str,
    carried: &[String],
    want: &GfxTarget,
    from: &Source,
) -> Option<Finding> {
    if carried.contains(&want.processor) {
        return None;
    }
    Some(
        Finding::new(
            "device-wheels",
            Status::Warn,
            format!(
                "{want} ({from}): the active {name} carries no device wheel for it (it has {}): rocBLAS, hipBLASLt and MIOpen find no kernels for it",
                if carried.is_empty() { "none".into() } else { carried.join(", ") }
            ),
        )
        .hint(format!(
            "gpuenv install {name} --component device-{}",
            want.processor
        )),
    )
}

/// The CUDA or HIP runtime it needs against the active toolchain, and (for an extension
/// that needs PyTorch) against torch's CUDA release.
fn runtime(object: &Object, inputs: &Inputs) -> Vec<Finding> {
    let mut out = Vec::new();
    for soname in &object.needed {
        let (kind, major) = match classify(soname) {
            Some(Runtime::Cudart { major }) => (ToolKind::Cuda, major),
            Some(Runtime::Hip { major }) => (ToolKind::Rocm, major),
            _ => continue,
        };
        let needs = format!(
            "needs {soname} ({})",
            classify(soname).expect("classified").describe()
        );
        if let Some(t) = inputs.active.iter().find(|t| t.kind == kind) {
            out.push(if t.major == major {
                Finding::new(
                    "runtime",
                    Status::Ok,
                    format!("{needs}: the active {} provides it", t.name),
                )
            } else {
                let spec = match kind {
                    ToolKind::Cuda => format!("cuda-{major}"),
                    ToolKind::Rocm => format!("rocm-{major}"),
                };
                Finding::new(
                    "runtime",
                    Status::Warn,
                    format!("{needs}, but the toolchain active here is {} (release {}): its libraries do not provide it", t.name, t.major),
                )
                .hint(format!("run it with a {major}.x toolchain: `gpuenv pin {spec}` (or rebuild it with {})", t.name))
            });
        }
        if kind == ToolKind::Cuda && needs_torch(object) {
            let torch_major = inputs
                .torch_cuda
                .as_deref()
                .and_then(|v| v.split('.').next()?.parse::<u32>().ok());
            if let Some(tm) = torch_major.filter(|tm| *tm != major) {
                out.push(
                    Finding::new(
                        "runtime",
                        Status::Warn,
                        format!(
                            "{needs}, but the active Python's torch is a CUDA {} build (CUDA {tm})",
                            inputs.torch_cuda.as_deref().unwrap_or_default()
                        ),
                    )
                    .hint(format!("rebuild it with a CUDA {tm} toolchain: `cuda = \"torch\"` in gpuenv.toml pins the one matching torch")),
                );
            }
        }
    }
    out
}

fn needs_torch(object: &Object) -> bool {
    object
        .needed
        .iter()
        .any(|n| matches!(classify(n), Some(Runtime::Torch { .. })))
}

#[cfg(test)]
mod tests;
