//! PyTorch's CUDA wheel index (`…/whl/cu128`) for a machine: the one built for the active
//! toolkit's major.minor (what the guard demands), that the driver can run, and whose
//! wheels carry kernels for every GPU here. uv's `--torch-backend=auto` looks at the
//! driver only; a wheel without the GPU's arch fails at run time with "no kernel image is
//! available for execution on the device", and a wheel for another toolkit is refused by
//! the guard at the first extension build.

use super::{Facts, Platform, RocmTorchIndex, TorchIndex, TorchRelease};

/// The toolkit pinned or active: its kind and major.minor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolkit {
    Cuda((u64, u64)),
    Rocm((u64, u64)),
}

/// Which torch releases will do: the installed torch (`min == max`), a requirement's bounds,
/// or any (the newest an index carries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TorchWanted {
    pub min: Option<TorchRelease>,
    pub max: Option<TorchRelease>,
}

impl TorchWanted {
    /// Exactly this release.
    pub fn exactly(r: TorchRelease) -> TorchWanted {
        TorchWanted {
            min: Some(r),
            max: Some(r),
        }
    }

    /// A torch version (`2.15.0+cu132`): its major.minor.
    pub fn of_version(v: &str) -> Option<TorchWanted> {
        let mut parts = v.split(['.', '+']);
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(TorchWanted::exactly((major, minor)))
    }

    /// A PEP 508 requirement on torch (`torch>=2.9,<2.12`): the major.minor bounds its
    /// specifiers give (`<2.12` is at most 2.11); `None` for another project or bad text.
    pub fn of_requirement(req: &str) -> Option<TorchWanted> {
        let r = super::pep440::Requirement::parse(req)?;
        if !r.name.eq_ignore_ascii_case("torch") {
            return None;
        }
        let mut w = TorchWanted::default();
        for (op, version) in r.specifier.clauses() {
            let rel = |v: &str| -> Option<TorchRelease> {
                let mut p = v.trim_end_matches(".*").split('.');
                Some((
                    p.next()?.parse().ok()?,
                    p.next().unwrap_or("0").parse().ok()?,
                ))
            };
            let Some(at) = rel(version) else {
                continue;
            };
            let tighten_min = |w: &mut TorchWanted, r: TorchRelease| {
                w.min = Some(w.min.map_or(r, |m| m.max(r)));
            };
            let tighten_max = |w: &mut TorchWanted, r: TorchRelease| {
                w.max = Some(w.max.map_or(r, |m| m.min(r)));
            };
            match op.as_str() {
                ">=" | ">" => tighten_min(&mut w, at),
                // `~=2.14.0` is 2.14.x; `~=2.14` any 2.x from 2.14.
                "~=" => {
                    tighten_min(&mut w, at);
                    if version.split('.').count() > 2 {
                        tighten_max(&mut w, at);
                    }
                }
                "<=" => tighten_max(&mut w, at),
                "<" => {
                    // `<2.12` (and `<2.12.0`) allows 2.11.x at most; `<2.12.1` allows 2.12.0.
                    let patch_zero = version.split('.').nth(2).is_none_or(|p| p == "0");
                    if patch_zero && at.1 > 0 {
                        tighten_max(&mut w, (at.0, at.1 - 1));
                    } else if !patch_zero {
                        tighten_max(&mut w, at);
                    }
                }
                "==" | "===" => {
                    tighten_min(&mut w, at);
                    tighten_max(&mut w, at);
                }
                _ => {}
            }
        }
        Some(w)
    }

    pub fn is_any(&self) -> bool {
        self.min.is_none() && self.max.is_none()
    }
}

impl std::fmt::Display for TorchWanted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = |r: TorchRelease| format!("{}.{}", r.0, r.1);
        match (self.min, self.max) {
            (Some(a), Some(b)) if a == b => write!(f, "torch {}", r(a)),
            (Some(a), Some(b)) => write!(f, "torch {}–{}", r(a), r(b)),
            (Some(a), None) => write!(f, "torch ≥ {}", r(a)),
            (None, Some(b)) => write!(f, "torch ≤ {}", r(b)),
            (None, None) => f.write_str("any torch"),
        }
    }
}

/// What the choice looks at; each part optional but the platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// The pinned or active toolkit.
    pub toolkit: Option<Toolkit>,
    /// The torch releases that will do.
    pub torch: TorchWanted,
    pub platform: Platform,
    /// The NVIDIA driver, as it reports itself (`575.57.08`).
    pub driver: Option<String>,
    /// NVIDIA compute capabilities × 10 (`86` for 8.6), one per kind of GPU.
    pub gpus: Vec<u32>,
    /// AMD targets (`gfx942`), one per kind of GPU.
    pub amd_gpus: Vec<String>,
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            toolkit: None,
            torch: TorchWanted::default(),
            platform: Platform::for_host(),
            driver: None,
            gpus: Vec::new(),
            amd_gpus: Vec::new(),
        }
    }
}

/// An index the chooser answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chosen {
    Cuda(&'static TorchIndex),
    Rocm(&'static RocmTorchIndex),
}

impl Chosen {
    pub fn name(&self) -> &'static str {
        match self {
            Chosen::Cuda(i) => i.name,
            Chosen::Rocm(i) => i.name,
        }
    }

    pub fn url(&self) -> String {
        match self {
            Chosen::Cuda(i) => i.url(),
            Chosen::Rocm(i) => i.url(),
        }
    }

    /// The value of uv's `--torch-backend` (`UV_TORCH_BACKEND`) for it: PyTorch's own
    /// indexes only (uv knows no Jetson index).
    pub fn uv_backend(&self) -> Option<&'static str> {
        match self {
            Chosen::Cuda(i) if i.host_url.is_some() => None,
            c => Some(c.name()),
        }
    }

    /// `CUDA 13.2` / `ROCm 7.2`.
    pub fn built_for(&self) -> String {
        match self {
            Chosen::Cuda(i) => format!("CUDA {}", super::release_name(i.cuda)),
            Chosen::Rocm(i) => format!("ROCm {}", super::release_name(i.rocm)),
        }
    }

    /// The torch releases it carries, in words.
    pub fn torch_releases(&self) -> String {
        let (first, last) = match self {
            Chosen::Cuda(i) => i.torch,
            Chosen::Rocm(i) => i.torch,
        };
        releases_text(first, last)
    }
}

/// `torch 2.6–2.14`, `torch 2.9 and newer`, `torch releases not recorded`.
pub fn releases_text(first: Option<TorchRelease>, last: Option<TorchRelease>) -> String {
    let r = |r: TorchRelease| format!("{}.{}", r.0, r.1);
    match (first, last) {
        (Some(a), Some(b)) if a == b => format!("torch {}", r(a)),
        (Some(a), Some(b)) => format!("torch {}–{}", r(a), r(b)),
        (Some(a), None) => format!("torch {} and newer", r(a)),
        (None, Some(b)) => format!("torch up to {}", r(b)),
        (None, None) => "torch releases not recorded".into(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_reaches_newer_gpus_and_sass_only_its_own_major() {
        assert!(covers(&[(90, false)], 90));
        assert!(covers(&[(80, false)], 86));
        assert!(!covers(&[(90, false)], 100));
        assert!(covers(&[(120, true)], 121));
        assert!(!covers(&[(86, false)], 80));
    }

    #[test]
    fn torch_requirements_become_release_bounds() {
        let w = |s: &str| TorchWanted::of_requirement(s).unwrap();
        assert_eq!(
            w("torch>=2.9,<2.12"),
            TorchWanted {
                min: Some((2, 9)),
                max: Some((2, 11))
            }
        );
        assert_eq!(w("torch==2.8.*"), TorchWanted::exactly((2, 8)));
        assert_eq!(w("torch~=2.14.0"), TorchWanted::exactly((2, 14)));
        assert_eq!(
            w("torch~=2.14"),
            TorchWanted {
                min: Some((2, 14)),
                max: None
            }
        );
        assert_eq!(w("torch"), TorchWanted::default());
        assert_eq!(TorchWanted::of_requirement("numpy>=2"), None);
        assert_eq!(
            TorchWanted::of_version("2.15.0+cu132"),
            Some(TorchWanted::exactly((2, 15)))
        );
    }
}
