//! Each index judged against the machine: which of its rules (platform, GPUs, driver,
//! torch release) rule it out, and why, in words.

use super::*;

pub(super) fn cc_text(cc: u32) -> String {
    format!("{}.{}", cc / 10, cc % 10)
}

pub(super) fn rel(r: TorchRelease) -> String {
    format!("{}.{}", r.0, r.1)
}

/// Whether an index carrying `first..=last` has a torch `want` allows.
pub(super) fn carries(
    name: &str,
    (first, last): (Option<TorchRelease>, Option<TorchRelease>),
    want: &TorchWanted,
) -> Option<(Rule, String)> {
    if want.is_any() {
        return None;
    }
    let carried = releases_text(first, last);
    if let (Some(last), Some(min)) = (last, want.min) {
        if min > last {
            return Some((
                Rule::Torch,
                format!("{name} ends at torch {} ({want} is wanted)", rel(last)),
            ));
        }
    }
    match (first, want.max) {
        (Some(first), Some(max)) if max < first => Some((
            Rule::Torch,
            format!("{name} has no {want} in gpuenv's data ({carried})"),
        )),
        (None, Some(_)) => Some((
            Rule::Unknown,
            format!("which torch releases {name} carries is not known to this gpuenv"),
        )),
        _ => None,
    }
}

/// Every reason `i` does not fit `m`; empty when it does.
pub(super) fn judge_cuda(
    facts: &Facts,
    i: &super::super::TorchIndex,
    m: &Machine,
) -> Vec<(Rule, String)> {
    let mut out = Vec::new();
    if let Some(Toolkit::Cuda(tk)) = m.toolkit {
        if i.cuda != tk {
            out.push((
                Rule::Toolkit,
                format!("{} is built for CUDA {}", i.name, release_name(i.cuda)),
            ));
        }
    }
    if let Some(Toolkit::Rocm(_)) = m.toolkit {
        out.push((Rule::Toolkit, format!("{} is a CUDA build", i.name)));
    }
    if !i.has(m.platform) {
        out.push((
            Rule::Platform,
            format!("{} has no wheels for {}", i.name, m.platform),
        ));
    }
    out.extend(carries(i.name, i.torch, &m.torch));
    if let Some(driver) = m.driver.as_deref() {
        match major_floor(facts, i.cuda.0).and_then(|f| Some((f, driver_key(f)?))) {
            None => out.push((
                Rule::Unknown,
                format!(
                    "the driver CUDA {} needs is not known to this gpuenv (data from {})",
                    i.cuda.0, facts.date
                ),
            )),
            Some((floor, need)) => {
                if driver_key(driver).is_none_or(|have| have < need) {
                    out.push((
                        Rule::Driver,
                        format!(
                            "{} needs driver {floor} or newer, this machine has {driver}",
                            i.name
                        ),
                    ));
                }
            }
        }
    }
    if !m.gpus.is_empty() && i.has(m.platform) {
        match i.archs_on(m.platform) {
            None => out.push((
                Rule::Unknown,
                format!(
                    "the archs {}'s wheels for {} carry are not known to this gpuenv (data from {})",
                    i.name, m.platform, facts.date
                ),
            )),
            Some(archs) => {
                let missing: Vec<String> = m
                    .gpus
                    .iter()
                    .filter(|cc| !covers(archs, **cc))
                    .map(|c| cc_text(*c))
                    .collect();
                if !missing.is_empty() {
                    out.push((
                        Rule::Gpu,
                        format!(
                            "{} wheels carry no kernels for compute capability {}",
                            i.name,
                            missing.join(", ")
                        ),
                    ));
                }
            }
        }
    }
    out
}

pub(super) fn judge_rocm(
    facts: &Facts,
    i: &super::super::RocmTorchIndex,
    m: &Machine,
) -> Vec<(Rule, String)> {
    let mut out = Vec::new();
    match m.toolkit {
        Some(Toolkit::Rocm(tk)) if i.rocm != tk => out.push((
            Rule::Toolkit,
            format!("{} is built for ROCm {}", i.name, release_name(i.rocm)),
        )),
        Some(Toolkit::Cuda(_)) => out.push((Rule::Toolkit, format!("{} is a ROCm build", i.name))),
        _ => {}
    }
    if m.platform != Platform::LinuxX86_64 {
        out.push((
            Rule::Platform,
            format!("{} has no wheels for {}", i.name, m.platform),
        ));
    }
    out.extend(carries(i.name, i.torch, &m.torch));
    if !m.amd_gpus.is_empty() {
        match i.gfx {
            None => out.push((
                Rule::Unknown,
                format!(
                    "the AMD targets {}'s wheels carry are not known to this gpuenv (data from {})",
                    i.name, facts.date
                ),
            )),
            Some(gfx) => {
                // `gfx90a:sramecc+:xnack-` runs code built for `gfx90a`.
                let missing: Vec<&str> = m
                    .amd_gpus
                    .iter()
                    .map(|g| g.split(':').next().unwrap_or(g))
                    .filter(|g| !gfx.contains(g))
                    .collect();
                if !missing.is_empty() {
                    out.push((
                        Rule::Gpu,
                        format!(
                            "{} wheels carry no kernels for {}",
                            i.name,
                            missing.join(", ")
                        ),
                    ));
                }
            }
        }
    }
    out
}

/// Whether the answer comes from the ROCm indexes: a ROCm toolkit, or AMD GPUs and no
/// NVIDIA ones with no toolkit.
pub(super) fn rocm_family(m: &Machine) -> bool {
    match m.toolkit {
        Some(Toolkit::Rocm(_)) => true,
        Some(Toolkit::Cuda(_)) => false,
        None => m.gpus.is_empty() && !m.amd_gpus.is_empty(),
    }
}
