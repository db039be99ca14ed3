//! FM-04: is the NVIDIA driver new enough for each active CUDA toolkit and for the CUDA
//! the torch build bundles? The driver version comes from `/proc/driver/nvidia/version`
//! (proprietary and open kernel modules word it differently), else from `nvidia-smi`.

use super::{Check, Finding, Inputs, Machine, Notes, RunError, Status};
use gpuenv_core::driver::{parse_nvidia_smi, parse_proc_version, PROC_VERSION};
use gpuenv_core::facts::{self, lookup, release_name};
use gpuenv_core::install_hint;
use gpuenv_core::toolchain::{Kind, Version};

pub const CHECK: Check = Check {
    id: "FM-04",
    name: "driver-too-old",
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Driver {
    pub version: Version,
    /// As the driver writes it (`575.57.08`; `version` prints `575.57.8`).
    pub text: String,
    pub from: String,
    /// The "CUDA Version" nvidia-smi prints, when it was the source.
    pub max_cuda: Option<Version>,
}

fn driver(text: String, from: &str, max_cuda: Option<Version>) -> Driver {
    Driver {
        version: text.parse().expect("parsers return versions"),
        text,
        from: from.into(),
        max_cuda,
    }
}

/// Why there is no driver version to read.
#[derive(Debug, thiserror::Error)]
pub enum NoDriver {
    #[error("{PROC_VERSION} has no `NVRM version:` line with a version")]
    NoProcVersion,
    #[error("no NVIDIA driver on this machine (no {PROC_VERSION}, no nvidia-smi on PATH)")]
    Absent,
    #[error("no {PROC_VERSION}, and {source}")]
    NvidiaSmi { source: RunError },
    #[error("nvidia-smi printed no `Driver Version:`")]
    NoSmiVersion,
}

/// The driver, or why there is none to read.
pub fn read_driver(m: &Machine) -> Result<Driver, NoDriver> {
    if let Some(text) = m.read(PROC_VERSION) {
        return parse_proc_version(&text)
            .map(|v| driver(v, PROC_VERSION, None))
            .ok_or(NoDriver::NoProcVersion);
    }
    match m.run_tool("nvidia-smi", &[]) {
        None => Err(NoDriver::Absent),
        Some(Err(source)) => Err(NoDriver::NvidiaSmi { source }),
        Some(Ok(text)) => parse_nvidia_smi(&text)
            .map(|(v, max_cuda)| driver(v, "nvidia-smi", max_cuda))
            .ok_or(NoDriver::NoSmiVersion),
    }
}

pub fn run(inputs: &Inputs) -> Finding {
    let driver = match read_driver(&inputs.machine) {
        Ok(d) => d,
        Err(why) => return CHECK.skip(why.to_string()),
    };
    // What needs the driver: each active toolkit, and the CUDA runtime torch bundles.
    let mut needs: Vec<(String, Version)> = Vec::new();
    if let Some(t) = inputs.active(Kind::Cuda) {
        needs.push((t.name.clone(), t.entry.version.clone()));
    }
    if let Ok(torch) = &inputs.torch {
        if let Some(cuda) = torch.built_for(Kind::Cuda) {
            needs.push((format!("torch {}", torch.label()), cuda));
        }
    }

    let newest = lookup::newest_cuda_for_driver(&inputs.facts, &driver.version.to_string());
    let runs = newest.map_or("no CUDA release gpuenv knows".to_string(), |r| {
        format!("CUDA up to {}", release_name(r))
    });
    let mut notes = Notes::default();
    notes.seen(format!("driver {} from {}", driver.text, driver.from));
    if let Some(c) = &driver.max_cuda {
        notes.seen(format!("nvidia-smi reports CUDA Version {c}"));
    }
    let mut fine = Vec::new();
    for (what, cuda) in &needs {
        let Some(need) = lookup::driver_need(&inputs.facts, cuda.release())
            .ok()
            .flatten()
        else {
            let data = &inputs.facts;
            let release = (cuda.major(), cuda.minor().unwrap_or(0));
            let Err(unknown) = lookup::driver_need(data, release) else {
                notes.seen(format!(
                    "{what} is CUDA {cuda}, older than gpuenv's driver data"
                ));
                continue;
            };
            notes.seen(format!("{what}: {unknown}"));
            notes.hint(format!("run `{}` to refresh gpuenv's data", facts::REFRESH));
            // The major's floor is still known: below it nothing of the major runs.
            if let Some(floor) = lookup::major_floor(data, cuda.major()) {
                if lookup::driver_key(&driver.text) < lookup::driver_key(floor) {
                    notes.problem(
                        Status::Error,
                        format!(
                            "driver {} is too old for {what}: nothing built with CUDA {} runs below driver {floor}",
                            driver.text,
                            cuda.major()
                        ),
                    );
                }
            }
            continue;
        };
        let rel = release_name(need.release);
        if !need.exact {
            notes.seen(format!(
                "{what} is CUDA {cuda}, newer than gpuenv's driver table: compared with CUDA {rel}'s minimum"
            ));
        }
        let d = &driver.text;
        if !need.hard_met_by(&driver.version) {
            notes.problem(
                Status::Error,
                format!(
                    "driver {d} is too old for {what}: CUDA {rel} needs driver >= {} (>= {} at the very least)",
                    need.full, need.hard
                ),
            );
        } else if !need.full_met_by(&driver.version) {
            notes.problem(
                Status::Warn,
                format!(
                    "driver {d} is older than CUDA {rel}'s {}: {what} runs only under minor version compatibility (no PTX JIT, no newer driver APIs)",
                    need.full
                ),
            );
        } else {
            fine.push(what.clone());
            continue;
        }
        notes.hint(format!(
            "upgrade the NVIDIA driver to >= {} (CUDA {rel})",
            need.full
        ));
        if let Some(r) = newest {
            let r = release_name(r);
            if what.starts_with("torch") {
                notes.hint(format!(
                    "or install a torch built for CUDA {r} or older (see https://pytorch.org/get-started/locally/)"
                ));
            } else {
                notes.hint(format!(
                    "or use a toolkit this driver runs: {} and `gpuenv pin cuda-{r}`",
                    install_hint::get_cuda(&r)
                ));
            }
        }
    }
    let ok = if needs.is_empty() {
        format!(
            "driver {} ({runs}); nothing active here needs CUDA",
            driver.text
        )
    } else {
        format!(
            "driver {} runs {runs}: enough for {}",
            driver.text,
            fine.join(" and ")
        )
    };
    notes.finish(CHECK, ok)
}
