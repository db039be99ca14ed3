//! FM-07: a ROCm environment that compiles and targets this machine's GPUs:
//! `hip/hip_runtime.h` reachable (CPATH, HIP_PATH, ROCM_PATH), and the arch list
//! (PYTORCH_ROCM_ARCH or the `rocm-arch` pin) covering every gfx name `rocminfo` reports.

use std::path::Path;

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::context::vars;
use gpuenv_core::facts::arch::{device_libs, device_wheels, RocmTarget};
use gpuenv_core::toolchain::{system, Kind};

pub const CHECK: Check = Check {
    id: "FM-07",
    name: "rocm-env",
};

const HEADER: &str = "hip/hip_runtime.h";

pub use gpuenv_core::plan::native::parse_rocminfo;

/// `gfx90a:xnack-` and `gfx90a` target the same GPU.
fn base(arch: &str) -> String {
    match RocmTarget::parse(arch) {
        Ok(t) => t.processor,
        Err(_) => arch.to_string(),
    }
}

pub fn run(inputs: &Inputs) -> Finding {
    let Some(t) = inputs.active(Kind::Rocm) else {
        return CHECK.skip("no ROCm toolchain is active here");
    };
    let m = &inputs.machine;
    let mut notes = Notes::default();
    let fix_env = "eval \"$(gpuenv env)\" sets ROCM_PATH, HIP_PATH, CPATH and LD_LIBRARY_PATH for the active ROCm";

    let in_tree = t.entry.include_dir.join(HEADER);
    if !in_tree.is_file() {
        notes.problem(
            Status::Error,
            format!("{} has no {}", t.name, in_tree.display()),
        );
        notes.hint(format!(
            "install ROCm's HIP development files into {} (hip-dev), then `gpuenv link {} {}` again",
            t.entry.root.display(),
            t.name,
            t.entry.root.display()
        ));
    } else {
        let mut places: Vec<String> = m.path_list(vars::CPATH);
        for var in [vars::HIP_PATH, vars::ROCM_PATH] {
            if let Some(v) = m.var(var) {
                places.push(format!("{v}/include"));
            }
        }
        // Debian's ROCm puts it in /usr/include, which every compiler searches anyway.
        if system::is_default_dir(&t.entry.include_dir) {
            places.push(t.entry.include_dir.display().to_string());
        }
        match places.iter().find(|d| Path::new(d).join(HEADER).is_file()) {
            Some(d) => notes.seen(format!("{HEADER} found in {d}")),
            None => {
                notes.problem(
                    Status::Error,
                    format!("{HEADER} is not reachable: no CPATH entry, HIP_PATH or ROCM_PATH leads to it (\"fatal error: {HEADER}: No such file or directory\")"),
                );
                notes.hint(fix_env);
            }
        }
    }

    // The arch list the build will use.
    let (archs, from): (Vec<String>, String) = match m.var(vars::PYTORCH_ROCM_ARCH) {
        Some(v) => (
            v.split([';', ',', ' '])
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect(),
            vars::PYTORCH_ROCM_ARCH.into(),
        ),
        None => match &inputs.active.project {
            Some(p) if !p.rocm_arch.is_empty() => (
                p.rocm_arch.iter().map(RocmTarget::to_string).collect(),
                format!("rocm-arch in {}", p.path.display()),
            ),
            _ => (Vec::new(), String::new()),
        },
    };
    // Targets the toolkit cannot compile for: no device library for them.
    let targets: Vec<RocmTarget> = archs
        .iter()
        .filter_map(|a| RocmTarget::parse(a).ok())
        .collect();
    if let Some(libs) = device_libs(&t.entry.root) {
        let missing: Vec<&str> = libs
            .missing(&targets)
            .iter()
            .map(|t| t.processor.as_str())
            .collect();
        if missing.is_empty() {
            if !targets.is_empty() {
                notes.seen(format!(
                    "device libraries in {} for every target",
                    libs.dir.display()
                ));
            }
        } else {
            notes.problem(
                Status::Error,
                format!(
                    "{from} = {} names {}, which {} ({}) has no device library for (no oclc_isa_version_*.bc in {}): hipcc fails to compile for it",
                    archs.join(";"),
                    missing.join(", "),
                    t.name,
                    t.entry.version,
                    libs.dir.display()
                ),
            );
            let has: Vec<&str> = libs.processors.iter().map(String::as_str).collect();
            notes.hint(format!(
                "pin targets {} has device libraries for ({}), or a newer ROCm",
                t.name,
                has.join(", ")
            ));
        }
    }
    // AMD's wheels: the libraries' kernels come in one device wheel per ISA.
    if let Some(carried) = device_wheels(&t.entry.root) {
        let lacking: Vec<&str> = targets
            .iter()
            .map(|t| t.processor.as_str())
            .filter(|p| !carried.contains(*p))
            .collect();
        let has: Vec<&str> = carried.iter().map(String::as_str).collect();
        if lacking.is_empty() {
            notes.seen(format!(
                "{} carries device code for {}",
                t.name,
                if has.is_empty() {
                    "no GPU".into()
                } else {
                    has.join(", ")
                }
            ));
        } else {
            notes.problem(
                Status::Warn,
                format!(
                    "{from} = {} names {}, for which {} carries no device wheel (it has {}): rocBLAS, hipBLASLt and MIOpen find no kernels for it at run time",
                    archs.join(";"),
                    lacking.join(", "),
                    t.name,
                    if has.is_empty() { "none".into() } else { has.join(", ") }
                ),
            );
            let add: Vec<String> = lacking
                .iter()
                .map(|p| format!("--component device-{p}"))
                .collect();
            notes.hint(format!("gpuenv install {} {}", t.name, add.join(" ")));
        }
    }
    let gpus = match m.run_tool("rocminfo", &[]) {
        None => {
            notes.seen("no rocminfo on PATH: the GPUs' archs were not checked");
            Vec::new()
        }
        Some(Err(e)) => {
            notes.seen(format!("rocminfo failed: {e}"));
            Vec::new()
        }
        Some(Ok(text)) => parse_rocminfo(&text),
    };
    if !gpus.is_empty() {
        notes.seen(format!("rocminfo: {}", gpus.join(", ")));
        let pin = |list: &[String]| format!("gpuenv pin --arch {}", list.join(","));
        if archs.is_empty() {
            notes.problem(
                Status::Warn,
                format!(
                    "no arch list (PYTORCH_ROCM_ARCH, rocm-arch): builds target every arch and take far longer; this machine has {}",
                    gpus.join(", ")
                ),
            );
            notes.hint(pin(&gpus));
        } else {
            let missing: Vec<&String> = gpus
                .iter()
                .filter(|g| !archs.iter().any(|a| base(a) == base(g)))
                .collect();
            if !missing.is_empty() {
                let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
                notes.problem(
                    Status::Error,
                    format!(
                        "{from} = {} does not cover this machine's {} (rocminfo): its kernels fail with \"invalid device function\"",
                        archs.join(";"),
                        names.join(", ")
                    ),
                );
                let mut all = archs.clone();
                all.extend(missing.into_iter().cloned());
                notes.hint(pin(&all));
            }
        }
    }
    let covered = if archs.is_empty() || gpus.is_empty() {
        String::new()
    } else {
        format!("; {} covers {}", from, gpus.join(", "))
    };
    notes.finish(
        CHECK,
        format!("{HEADER} of {} is reachable{covered}", t.name),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocminfo_gpu_agents_not_isas_or_cpus() {
        let text = "*******\nAgent 1\n*******\n  Name:                    AMD EPYC 7763 64-Core Processor\n  Marketing Name:          AMD EPYC 7763 64-Core Processor\n*******\nAgent 2\n*******\n  Name:                    gfx90a\n  Marketing Name:          AMD Instinct MI250X\nISA Info:\n  ISA 1\n    Name:                    amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-\n*******\nAgent 3\n*******\n  Name:                    gfx90a\n";
        assert_eq!(parse_rocminfo(text), ["gfx90a"]);
        assert_eq!(base("gfx90a:xnack-"), "gfx90a");
    }
}
