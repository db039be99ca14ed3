//! The arch forms an audit compares. A CUDA arch asked for (a pin, an arch list, a GPU) is
//! gpuenv-core's [`CudaArch`], read by its one parser; what an image of a fatbinary was
//! built for is an [`ImageArch`], taken from the entry's header as it is (the numbers of a
//! hostile file need not be a real capability). AMD's target IDs (`gfx90a:xnack-`) as code
//! object bundles name them.

use std::fmt;

pub use gpuenv_core::facts::arch::{CudaArch, Suffix};

/// The arch an image was built for: `sm_80`, `sm_90a` (that GPU only), `sm_100f` (its
/// family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ImageArch {
    /// 10 × major + minor: 80, 90, 100, 120.
    pub sm: u32,
    pub suffix: Suffix,
}

impl ImageArch {
    pub fn new(sm: u32, suffix: Suffix) -> ImageArch {
        ImageArch { sm, suffix }
    }

    fn major(self) -> u32 {
        self.sm / 10
    }

    fn minor(self) -> u32 {
        self.sm % 10
    }

    /// Whether machine code (SASS) built for it runs on a GPU of compute capability `gpu`:
    /// the same major and a minor no higher; exactly that GPU for `a`.
    pub fn sass_runs_on(self, gpu: &CudaArch) -> bool {
        gpu.runs_sass_of(self.major(), self.minor(), self.suffix)
    }

    /// Whether the driver can compile PTX built for it for a GPU of capability `gpu`.
    pub fn ptx_jits_for(self, gpu: &CudaArch) -> bool {
        match self.suffix {
            Suffix::None => self.sm <= gpu.sm(),
            Suffix::A | Suffix::F => self.sass_runs_on(gpu),
        }
    }

    /// `compute_90a`: how nvcc names PTX for this arch.
    pub fn compute(self) -> String {
        format!("compute_{}{}", self.sm, self.suffix.letter())
    }
}

impl fmt::Display for ImageArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.sm, self.suffix.letter())
    }
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

    fn image(sm: u32, suffix: Suffix) -> ImageArch {
        ImageArch::new(sm, suffix)
    }

    fn gpu(text: &str) -> CudaArch {
        CudaArch::parse(text).unwrap()
    }

    #[test]
    fn sass_runs_within_its_major_ptx_on_anything_newer() {
        assert!(image(80, Suffix::None).sass_runs_on(&gpu("8.6")));
        assert!(!image(86, Suffix::None).sass_runs_on(&gpu("8.0")));
        assert!(!image(80, Suffix::None).sass_runs_on(&gpu("9.0")));
        assert!(image(90, Suffix::A).sass_runs_on(&gpu("9.0")));
        assert!(!image(100, Suffix::A).sass_runs_on(&gpu("10.3")));
        assert!(image(100, Suffix::F).sass_runs_on(&gpu("10.3")));
        assert!(image(80, Suffix::None).ptx_jits_for(&gpu("12.0")));
        assert!(!image(90, Suffix::None).ptx_jits_for(&gpu("8.6")));
        assert!(!image(90, Suffix::A).ptx_jits_for(&gpu("10.0")));
        assert_eq!(image(100, Suffix::F).to_string(), "sm_100f");
        assert_eq!(image(90, Suffix::A).compute(), "compute_90a");
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
