//! The two arch forms an audit compares, kept minimal and in this one file so that a shared
//! arch-forms type can replace it: CUDA's `sm_XY` with its `a` (this GPU only) and `f`
//! (this family) variants, and AMD's target IDs (`gfx90a:xnack-`).

use std::fmt;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    Plain,
    /// `sm_90a`: runs on compute capability 9.0 only.
    Specific,
    /// `sm_100f`: runs on the family (same major, minor at least this one).
    Family,
}

/// A compute capability as nvcc spells it: `sm_80`, `sm_90a`, `sm_100f`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaArch {
    /// 10 × major + minor: 80, 90, 100, 120.
    pub sm: u32,
    pub variant: Variant,
}

impl CudaArch {
    pub fn new(sm: u32, variant: Variant) -> CudaArch {
        CudaArch { sm, variant }
    }

    pub fn major(self) -> u32 {
        self.sm / 10
    }

    pub fn minor(self) -> u32 {
        self.sm % 10
    }

    /// A pin or list entry: `8.6`, `9.0+PTX`, `9.0a`, `10.0f`, `sm_86`, `compute_90`, `86`.
    /// The bool says whether PTX was asked for too (`+PTX`).
    pub fn parse(text: &str) -> Option<(CudaArch, bool)> {
        let t = text.trim();
        let (t, ptx) = match t.strip_suffix("+PTX") {
            Some(rest) => (rest, true),
            None => (t, false),
        };
        let (t, variant) = match t.as_bytes().last()? {
            b'a' => (&t[..t.len() - 1], Variant::Specific),
            b'f' => (&t[..t.len() - 1], Variant::Family),
            _ => (t, Variant::Plain),
        };
        let sm = if let Some((major, minor)) = t.split_once('.') {
            let (major, minor): (u32, u32) = (digits(major)?, digits(minor)?);
            (minor < 10).then_some(major.checked_mul(10)?.checked_add(minor)?)?
        } else {
            let n = t
                .strip_prefix("sm_")
                .or_else(|| t.strip_prefix("compute_"))
                .unwrap_or(t);
            digits(n)?
        };
        (10..10_000)
            .contains(&sm)
            .then_some((CudaArch::new(sm, variant), ptx))
    }

    /// Whether machine code (SASS) built for `self` runs on a GPU of compute capability `gpu`.
    pub fn sass_runs_on(self, gpu: CudaArch) -> bool {
        match self.variant {
            Variant::Specific => self.sm == gpu.sm,
            Variant::Plain | Variant::Family => {
                self.major() == gpu.major() && self.minor() <= gpu.minor()
            }
        }
    }

    /// Whether the driver can compile PTX built for `self` for a GPU of capability `gpu`.
    pub fn ptx_jits_for(self, gpu: CudaArch) -> bool {
        match self.variant {
            Variant::Plain => self.sm <= gpu.sm,
            Variant::Specific | Variant::Family => self.sass_runs_on(gpu),
        }
    }

    /// `9.0`, as nvidia-smi and TORCH_CUDA_ARCH_LIST spell a capability.
    pub fn capability(self) -> String {
        format!("{}.{}", self.major(), self.minor())
    }

    fn suffix(self) -> &'static str {
        match self.variant {
            Variant::Plain => "",
            Variant::Specific => "a",
            Variant::Family => "f",
        }
    }

    /// `compute_90a`: how nvcc names PTX for this arch.
    pub fn compute(self) -> String {
        format!("compute_{}{}", self.sm, self.suffix())
    }
}

impl fmt::Display for CudaArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.sm, self.suffix())
    }
}

fn digits(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 4 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// An AMD target ID: a processor and the features it was built with or without.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GfxTarget {
    pub processor: String,
    /// `("xnack", false)` for `xnack-`; a feature not named works either way.
    pub features: Vec<(String, bool)>,
}

impl GfxTarget {
    /// `gfx90a`, `gfx90a:xnack-`, `gfx90a:sramecc+:xnack-`.
    pub fn parse(text: &str) -> Option<GfxTarget> {
        let mut parts = text.trim().split(':');
        let processor = parts.next()?;
        let id_ok = processor.len() > 3
            && processor.len() <= 16
            && processor.starts_with("gfx")
            && processor[3..].bytes().all(|b| b.is_ascii_alphanumeric());
        if !id_ok {
            return None;
        }
        let mut features = Vec::new();
        for f in parts {
            let (name, on) = match f.as_bytes().last()? {
                b'+' => (&f[..f.len() - 1], true),
                b'-' => (&f[..f.len() - 1], false),
                _ => return None,
            };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return None;
            }
            features.push((name.to_string(), on));
        }
        Some(GfxTarget {
            processor: processor.to_string(),
            features,
        })
    }

    /// Whether a code object built for `self` loads on `gpu`: the same processor, and no
    /// feature set one way in the code and the other way on the GPU.
    pub fn runs_on(&self, gpu: &GfxTarget) -> bool {
        self.processor == gpu.processor
            && self.features.iter().all(|(name, on)| {
                gpu.features
                    .iter()
                    .find(|(n, _)| n == name)
                    .is_none_or(|(_, gpu_on)| gpu_on == on)
            })
    }
}

impl fmt::Display for GfxTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        for (name, on) in &self.features {
            write!(f, ":{name}{}", if *on { '+' } else { '-' })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm(text: &str) -> CudaArch {
        CudaArch::parse(text).unwrap().0
    }

    #[test]
    fn every_spelling_of_a_capability() {
        assert_eq!(sm("8.6"), CudaArch::new(86, Variant::Plain));
        assert_eq!(CudaArch::parse("9.0+PTX"), Some((sm("sm_90"), true)));
        assert_eq!(sm("9.0a"), CudaArch::new(90, Variant::Specific));
        assert_eq!(sm("10.0f"), CudaArch::new(100, Variant::Family));
        assert_eq!(sm("compute_120"), CudaArch::new(120, Variant::Plain));
        assert_eq!(sm("sm_100a").to_string(), "sm_100a");
        for bad in ["", "Ampere", "8.10", "sm_", "9.0b", "+PTX", "99999", "8.x"] {
            assert_eq!(CudaArch::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn sass_runs_within_its_major_ptx_on_anything_newer() {
        assert!(sm("sm_80").sass_runs_on(sm("8.6")));
        assert!(!sm("sm_86").sass_runs_on(sm("8.0")));
        assert!(!sm("sm_80").sass_runs_on(sm("9.0")));
        assert!(sm("sm_90a").sass_runs_on(sm("9.0")));
        assert!(!sm("sm_100a").sass_runs_on(sm("10.3")));
        assert!(sm("sm_100f").sass_runs_on(sm("10.3")));
        assert!(sm("sm_80").ptx_jits_for(sm("12.0")));
        assert!(!sm("sm_90").ptx_jits_for(sm("8.6")));
        assert!(!sm("sm_90a").ptx_jits_for(sm("10.0")));
    }

    #[test]
    fn target_ids_and_their_features() {
        let code = GfxTarget::parse("gfx90a:xnack-").unwrap();
        assert_eq!(code.to_string(), "gfx90a:xnack-");
        assert!(code.runs_on(&GfxTarget::parse("gfx90a:sramecc+:xnack-").unwrap()));
        assert!(code.runs_on(&GfxTarget::parse("gfx90a").unwrap()));
        assert!(!code.runs_on(&GfxTarget::parse("gfx90a:xnack+").unwrap()));
        assert!(!code.runs_on(&GfxTarget::parse("gfx942").unwrap()));
        for bad in ["gfx", "sm_90", "gfx90a:xnack", "gfx9 0a", "gfx90a:+"] {
            assert_eq!(GfxTarget::parse(bad), None, "{bad}");
        }
    }
}
