//! PyTorch's CUDA wheel index (`…/whl/cu128`) for a machine: the one built for the active
//! toolkit's major.minor (what the guard demands), that the driver can run, and whose
//! wheels carry kernels for every GPU here. uv's `--torch-backend=auto` looks at the
//! driver only; a wheel without the GPU's arch fails at run time with "no kernel image is
//! available for execution on the device", and a wheel for another toolkit is refused by
//! the guard at the first extension build.

use super::lookup::{driver_key, major_floor};
use super::{release_name, Fact, Facts, TorchIndex, Unknown};

/// What the choice looks at; each part optional (no toolkit active, no driver, no GPU).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Machine {
    /// The active CUDA toolkit's major.minor.
    pub toolkit: Option<(u64, u64)>,
    /// The NVIDIA driver, as it reports itself (`575.57.08`).
    pub driver: Option<String>,
    /// Compute capabilities × 10 (`86` for 8.6), one per kind of GPU.
    pub gpus: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub index: &'static TorchIndex,
    /// Why this one, and what was set aside, in words.
    pub why: Vec<String>,
}

/// Why no index fits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoIndex {
    #[error(transparent)]
    Unknown(#[from] Unknown),
    #[error("PyTorch publishes no CUDA wheel index for CUDA {toolkit} (gpuenv's data from {date} has {have})")]
    ForToolkit {
        toolkit: String,
        have: String,
        date: &'static str,
        /// The indexes of the same major, for the hint.
        near: Vec<&'static TorchIndex>,
    },
    #[error("{}", lines.join("; "))]
    Excluded { lines: Vec<String> },
}

impl crate::diagnostic::Diagnostic for NoIndex {
    fn hints(&self) -> Vec<String> {
        match self {
            NoIndex::Unknown(u) => crate::diagnostic::Diagnostic::hints(u),
            NoIndex::ForToolkit { near, .. } if !near.is_empty() => {
                let names: Vec<String> = near
                    .iter()
                    .map(|i| format!("cuda-{}", release_name(i.cuda)))
                    .collect();
                vec![format!(
                    "pin a toolkit PyTorch builds wheels for ({}): `gpuenv pin {}`",
                    names.join(", "),
                    names.last().cloned().unwrap_or_default()
                )]
            }
            NoIndex::ForToolkit { .. } => {
                vec!["pin a toolkit of a release PyTorch builds wheels for (`gpuenv torch index --list`)".into()]
            }
            NoIndex::Excluded { .. } => vec![
                "update the driver, or pin another toolkit; `gpuenv torch index --list` shows every index and its archs".into(),
            ],
        }
    }
}

/// The index built for exactly this major.minor.
pub fn for_release(facts: &Facts, release: (u64, u64)) -> Option<&'static TorchIndex> {
    let rows: &'static [TorchIndex] = facts.torch;
    rows.iter().find(|i| i.cuda == release)
}

/// The index of a local version or index name (`cu128`).
pub fn by_name(facts: &Facts, name: &str) -> Option<&'static TorchIndex> {
    let rows: &'static [TorchIndex] = facts.torch;
    rows.iter().find(|i| i.name == name)
}

/// Whether wheels with these archs run on a GPU of compute capability `cc` (× 10): a
/// kernel for the same major and a minor at or below it, or PTX at or below it.
pub fn covers(archs: &[(u32, bool)], cc: u32) -> bool {
    archs
        .iter()
        .any(|&(a, ptx)| a <= cc && (a / 10 == cc / 10 || ptx))
}

fn shown_cc(cc: u32) -> String {
    format!("{}.{}", cc / 10, cc % 10)
}

/// The index for `machine`, newest first among those that fit.
pub fn choose(facts: &Facts, machine: &Machine) -> Result<Pick, NoIndex> {
    let rows: &'static [TorchIndex] = facts.torch;
    let mut why = Vec::new();
    let mut candidates: Vec<&'static TorchIndex> = rows.iter().collect();
    if let Some(tk) = machine.toolkit {
        let newest = rows.iter().map(|i| i.cuda).max();
        if newest.is_some_and(|n| tk > n) {
            return Err(NoIndex::Unknown(Unknown {
                release: release_name(tk),
                fact: Fact::TorchIndex,
                last: newest.map(release_name).unwrap_or_default(),
                date: facts.date,
            }));
        }
        candidates.retain(|i| i.cuda == tk);
        if candidates.is_empty() {
            let have: Vec<&str> = rows.iter().map(|i| i.name).collect();
            return Err(NoIndex::ForToolkit {
                toolkit: release_name(tk),
                have: have.join(", "),
                date: facts.date,
                near: rows.iter().filter(|i| i.cuda.0 == tk.0).collect(),
            });
        }
        why.push(format!(
            "built for CUDA {}, the active toolkit's release (the guard compares major.minor)",
            release_name(tk)
        ));
    }
    let mut excluded = Vec::new();
    if let Some(driver) = machine.driver.as_deref() {
        let have = driver_key(driver);
        candidates.retain(|i| {
            let floor = major_floor(facts, i.cuda.0);
            let runs = match (floor.and_then(driver_key), have) {
                (Some(need), Some(have)) => have >= need,
                _ => false,
            };
            if !runs {
                excluded.push((
                    i.cuda,
                    match floor {
                        Some(f) => format!(
                            "{} needs driver {f} or newer, this machine has {driver}",
                            i.name
                        ),
                        None => format!(
                        "{}: the driver CUDA {} needs is not known to this gpuenv (data from {})",
                        i.name, i.cuda.0, facts.date
                    ),
                    },
                ));
            }
            runs
        });
        if !candidates.is_empty() {
            why.push(format!("runs on driver {driver}"));
        }
    }
    if !machine.gpus.is_empty() {
        let gpus: Vec<String> = machine.gpus.iter().map(|c| shown_cc(*c)).collect();
        candidates.retain(|i| match i.archs {
            Some(archs) => {
                let missing: Vec<String> = machine
                    .gpus
                    .iter()
                    .filter(|cc| !covers(archs, **cc))
                    .map(|c| shown_cc(*c))
                    .collect();
                if !missing.is_empty() {
                    excluded.push((
                        i.cuda,
                        format!(
                            "{} wheels carry no kernels for compute capability {}",
                            i.name,
                            missing.join(", ")
                        ),
                    ));
                }
                missing.is_empty()
            }
            None => {
                excluded.push((
                    i.cuda,
                    format!(
                        "{}: the archs its wheels carry are not known to this gpuenv (data from {})",
                        i.name, facts.date
                    ),
                ));
                false
            }
        });
        if !candidates.is_empty() {
            why.push(format!(
                "its wheels carry kernels for compute capability {}",
                gpus.join(", ")
            ));
        }
    }
    let Some(index) = candidates.into_iter().max_by_key(|i| i.cuda) else {
        return Err(NoIndex::Excluded {
            lines: excluded.into_iter().map(|(_, line)| line).collect(),
        });
    };
    if machine.toolkit.is_none() {
        why.push("the newest index that fits (no CUDA toolkit is active here)".into());
    }
    // Only what would have been chosen instead is worth saying.
    why.extend(
        excluded
            .into_iter()
            .filter(|(cuda, _)| *cuda > index.cuda)
            .map(|(_, e)| format!("newer, set aside: {e}")),
    );
    Ok(Pick { index, why })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e() -> &'static Facts {
        Facts::embedded()
    }

    fn pick(
        toolkit: Option<(u64, u64)>,
        driver: Option<&str>,
        gpus: &[u32],
    ) -> Result<&'static str, NoIndex> {
        choose(
            e(),
            &Machine {
                toolkit,
                driver: driver.map(str::to_string),
                gpus: gpus.to_vec(),
            },
        )
        .map(|p| p.index.name)
    }

    #[test]
    fn the_toolkit_decides_the_index() {
        assert_eq!(pick(Some((12, 4)), None, &[]).unwrap(), "cu124");
        assert_eq!(
            pick(Some((13, 2)), Some("580.65.06"), &[]).unwrap(),
            "cu132"
        );
    }

    #[test]
    fn a_toolkit_pytorch_builds_no_wheels_for_is_said_with_the_neighbours() {
        let e = pick(Some((13, 1)), None, &[]).unwrap_err();
        assert!(
            e.to_string().contains("no CUDA wheel index for CUDA 13.1"),
            "{e}"
        );
        let hints = crate::diagnostic::Diagnostic::hints(&e).join("\n");
        assert!(
            hints.contains("cuda-13.0") && hints.contains("cuda-13.2"),
            "{hints}"
        );
        let e = pick(Some((14, 0)), None, &[]).unwrap_err();
        assert!(e.to_string().contains("not known to this gpuenv"), "{e}");
    }

    #[test]
    fn without_a_toolkit_the_driver_and_the_gpus_decide_unlike_uv() {
        // uv picks by driver alone: a 580 driver gets a CUDA 13 index even for a Pascal
        // GPU (6.1), whose kernels CUDA 13 wheels no longer carry.
        assert_eq!(pick(None, Some("580.65.06"), &[]).unwrap(), "cu132");
        assert_eq!(pick(None, Some("580.65.06"), &[120]).unwrap(), "cu130");
        assert_eq!(pick(None, Some("580.65.06"), &[61]).unwrap(), "cu126");
        assert_eq!(pick(None, Some("535.104.05"), &[90]).unwrap(), "cu129");
        assert_eq!(pick(None, Some("520.61.05"), &[]).unwrap(), "cu118");
        let e = pick(Some((12, 8)), None, &[61]).unwrap_err();
        assert!(
            e.to_string()
                .contains("cu128 wheels carry no kernels for compute capability 6.1"),
            "{e}"
        );
    }

    #[test]
    fn ptx_reaches_newer_gpus_and_sass_only_its_own_major() {
        assert!(covers(&[(90, false)], 90));
        assert!(covers(&[(80, false)], 86));
        assert!(!covers(&[(90, false)], 100));
        assert!(covers(&[(120, true)], 121));
        assert!(!covers(&[(86, false)], 80));
    }
}
