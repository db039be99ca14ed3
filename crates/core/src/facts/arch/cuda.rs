//! A CUDA arch: a compute capability (`8.6`), an optional `a` (arch-specific) or `f`
//! (family-specific) suffix, and what code a build embeds for it (machine code, PTX, or
//! both). Read from every spelling gpuenv meets, rendered for each consumer.

use std::fmt;

/// `9.0a` (arch-specific: only that GPU runs it) or `10.0f` (family-specific: the GPUs of
/// one family run it); `None` is the portable target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Suffix {
    None,
    A,
    F,
}

impl Suffix {
    pub fn letter(self) -> &'static str {
        match self {
            Suffix::None => "",
            Suffix::A => "a",
            Suffix::F => "f",
        }
    }

    /// What the suffix makes of a target, for messages.
    pub fn kind(self) -> &'static str {
        match self {
            Suffix::A => "arch-specific (`a`)",
            Suffix::F => "family-specific (`f`)",
            Suffix::None => "portable",
        }
    }

    /// The oldest compute capability with this kind of target: `sm_90a` is the first
    /// arch-specific one, `sm_100f` the first family-specific one.
    pub fn first_arch(self) -> (u8, u8) {
        match self {
            Suffix::None => (0, 0),
            Suffix::A => (9, 0),
            Suffix::F => (10, 0),
        }
    }
}

/// What a build embeds for an arch: machine code (`sm_86`, `86-real`), PTX that newer GPUs
/// compile at load time (`compute_86`, `86-virtual`), or both (`8.6+PTX`, plain `86`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    Sass,
    SassAndPtx,
    Ptx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CudaArch {
    /// 1 to 99.
    pub major: u8,
    /// One digit: `sm_XY` has no room for more.
    pub minor: u8,
    pub suffix: Suffix,
    pub code: Code,
}

/// Why a string is not a CUDA arch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaArchError {
    #[error("expected forms like \"8.6\", \"9.0a\", \"10.0f\" or \"9.0+PTX\"")]
    Form,
    #[error("`{given}` is nvcc's or CMake's spelling of \"{dotted}\", which is the form here")]
    OtherSpelling { given: String, dotted: String },
    #[error("it has two suffixes; an arch takes at most one `a` (arch-specific) or `f` (family-specific)")]
    TwoSuffixes,
    #[error("a compute capability is a major from 1 to 99 and a one-digit minor")]
    Range,
    #[error("{} targets start at {}.{}", .0.kind(), .0.first_arch().0, .0.first_arch().1)]
    NoSuchSuffix(Suffix),
    #[error("it is several archs in one (TORCH_CUDA_ARCH_LIST's `;` or a space): name each on its own, as in `--arch {0}` or cuda-arch = [\"{list}\"]", list = .0.replace(',', "\", \""))]
    Joined(String),
}

impl CudaArch {
    pub fn new(major: u8, minor: u8) -> Self {
        CudaArch {
            major,
            minor,
            suffix: Suffix::None,
            code: Code::Sass,
        }
    }

    /// `8.6` -> 86: the number in `sm_86`.
    pub fn sm(&self) -> u32 {
        u32::from(self.major) * 10 + u32::from(self.minor)
    }

    /// `sm_90a`, `sm_100f`, `sm_86`: how nvcc and gpuenv's messages name the target.
    pub fn sm_name(&self) -> String {
        format!("sm_{}{}", self.sm(), self.suffix.letter())
    }

    /// The same arch whatever code is embedded: what a GPU needs, for comparisons.
    pub fn target(&self) -> (u8, u8, Suffix) {
        (self.major, self.minor, self.suffix)
    }

    /// Whether machine code (SASS) built for `(major, minor, suffix)` runs on this GPU: the
    /// same major and a minor no higher (`sm_100` and `sm_100f` run on 10.3); exactly this
    /// GPU for `a`. The one rule for the audit and the proxy's arch notice.
    pub fn runs_sass_of(&self, major: u32, minor: u32, suffix: Suffix) -> bool {
        match suffix {
            Suffix::A => major * 10 + minor == self.sm(),
            Suffix::None | Suffix::F => {
                major == u32::from(self.major) && minor <= u32::from(self.minor)
            }
        }
    }

    pub fn has_ptx(&self) -> bool {
        matches!(self.code, Code::Ptx | Code::SassAndPtx)
    }

    /// An entry of `TORCH_CUDA_ARCH_LIST` and of `cuda-arch`: `8.6`, `9.0a`, `10.0f`,
    /// `9.0+PTX`. PyTorch is case-sensitive about `+PTX`, and so is this.
    pub fn parse(text: &str) -> Result<CudaArch, CudaArchError> {
        let parts: Vec<&str> = text.split([';', ' ']).filter(|p| !p.is_empty()).collect();
        if parts.len() > 1 && parts.iter().all(|p| CudaArch::parse(p).is_ok()) {
            return Err(CudaArchError::Joined(parts.join(",")));
        }
        let (base, ptx) = match text.strip_suffix("+PTX") {
            Some(base) => (base, true),
            None => (text, false),
        };
        let Some((major, rest)) = base.split_once('.') else {
            // Not dotted: say so when it is another tool's spelling of an arch.
            return Err(match parse_other(text) {
                Some(arch) => CudaArchError::OtherSpelling {
                    given: text.to_string(),
                    dotted: arch.to_string(),
                },
                None => CudaArchError::Form,
            });
        };
        let (minor, suffix) = split_suffix(rest)?;
        let mut arch = from_digits(major, minor, suffix)?;
        arch.code = if ptx { Code::SassAndPtx } else { Code::Sass };
        Ok(arch)
    }

    /// Any spelling: the dotted form, `86`, `90a`, `sm_86`, `compute_90a`, `lto_90`, and
    /// CMake's `90-real` / `90-virtual`.
    pub fn parse_any(text: &str) -> Result<CudaArch, CudaArchError> {
        match CudaArch::parse(text) {
            Err(CudaArchError::OtherSpelling { .. }) => {
                parse_other(text).ok_or(CudaArchError::Form)
            }
            other => other,
        }
    }

    /// CMake's `CUDA_ARCHITECTURES` / `CUDAARCHS` entry: `86-real` (machine code only, as
    /// TORCH_CUDA_ARCH_LIST builds it), `90` (machine code and PTX), `90-virtual` (PTX).
    pub fn cmake(&self) -> String {
        let n = format!("{}{}", self.sm(), self.suffix.letter());
        match self.code {
            Code::Sass => format!("{n}-real"),
            Code::SassAndPtx => n,
            Code::Ptx => format!("{n}-virtual"),
        }
    }

    /// nvcc's `-gencode` values: `arch=compute_86,code=sm_86`, and for PTX
    /// `arch=compute_90,code=compute_90` (what PyTorch passes for `9.0+PTX`).
    pub fn gencode(&self) -> Vec<String> {
        let n = format!("{}{}", self.sm(), self.suffix.letter());
        let sass = format!("arch=compute_{n},code=sm_{n}");
        let ptx = format!("arch=compute_{n},code=compute_{n}");
        match self.code {
            Code::Sass => vec![sass],
            Code::SassAndPtx => vec![sass, ptx],
            Code::Ptx => vec![ptx],
        }
    }
}

/// The `TORCH_CUDA_ARCH_LIST` / `cuda-arch` spelling. A PTX-only target has none there; it
/// shows as `+PTX`, the nearest.
impl fmt::Display for CudaArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}{}", self.major, self.minor, self.suffix.letter())?;
        if self.has_ptx() {
            f.write_str("+PTX")?;
        }
        Ok(())
    }
}

/// Lets lists of arches be compared with their spellings (`["8.0", "9.0+PTX"]`).
impl PartialEq<&str> for CudaArch {
    fn eq(&self, other: &&str) -> bool {
        CudaArch::parse(other).is_ok_and(|o| o == *self)
    }
}

/// `86`, `90a`, `sm_86`, `compute_90a`, `lto_90`, `90-real`, `90-virtual`.
fn parse_other(text: &str) -> Option<CudaArch> {
    let (digits, code) = if let Some(r) = text.strip_prefix("sm_") {
        (r, Code::Sass)
    } else if let Some(r) = text.strip_prefix("compute_") {
        (r, Code::Ptx)
    } else if let Some(r) = text.strip_prefix("lto_") {
        (r, Code::Sass)
    } else if let Some(r) = text.strip_suffix("-real") {
        (r, Code::Sass)
    } else if let Some(r) = text.strip_suffix("-virtual") {
        (r, Code::Ptx)
    } else {
        (text, Code::SassAndPtx)
    };
    let (number, suffix) = split_suffix(digits).ok()?;
    if number.len() < 2 {
        return None;
    }
    let (major, minor) = number.split_at(number.len() - 1);
    let mut arch = from_digits(major, minor, suffix).ok()?;
    arch.code = code;
    Some(arch)
}

/// `6a` -> (`6`, A); `0af` is two suffixes.
fn split_suffix(text: &str) -> Result<(&str, Suffix), CudaArchError> {
    let digits = text.trim_end_matches(|c: char| !c.is_ascii_digit());
    let letters = &text[digits.len()..];
    let suffix = match letters {
        "" => Suffix::None,
        "a" => Suffix::A,
        "f" => Suffix::F,
        l if l.len() > 1 && l.chars().all(|c| matches!(c, 'a' | 'f')) => {
            return Err(CudaArchError::TwoSuffixes)
        }
        _ => return Err(CudaArchError::Form),
    };
    Ok((digits, suffix))
}

fn from_digits(major: &str, minor: &str, suffix: Suffix) -> Result<CudaArch, CudaArchError> {
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(major) || !all_digits(minor) {
        return Err(CudaArchError::Form);
    }
    // No leading zeros, a one-digit minor, a major 1..=99.
    if major.len() > 2 || major.starts_with('0') || minor.len() != 1 {
        // `0.x` too: there is no compute capability 0.
        return Err(CudaArchError::Range);
    }
    let arch = CudaArch {
        major: major.parse().map_err(|_| CudaArchError::Range)?,
        minor: minor.parse().map_err(|_| CudaArchError::Range)?,
        suffix,
        code: Code::Sass,
    };
    if (arch.major, arch.minor) < suffix.first_arch() {
        return Err(CudaArchError::NoSuchSuffix(suffix));
    }
    Ok(arch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch(major: u8, minor: u8, suffix: Suffix, code: Code) -> CudaArch {
        CudaArch {
            major,
            minor,
            suffix,
            code,
        }
    }

    #[test]
    fn the_toolchain_file_and_torch_list_forms() {
        use Code::*;
        use Suffix::*;
        for (text, want) in [
            ("8.6", arch(8, 6, None, Sass)),
            ("3.5", arch(3, 5, None, Sass)),
            ("9.0+PTX", arch(9, 0, None, SassAndPtx)),
            ("9.0a", arch(9, 0, A, Sass)),
            ("10.0f", arch(10, 0, F, Sass)),
            ("12.1a+PTX", arch(12, 1, A, SassAndPtx)),
        ] {
            assert_eq!(CudaArch::parse(text), Ok(want), "{text}");
            assert_eq!(want.to_string(), text);
        }
    }

    #[test]
    fn what_is_not_an_arch_and_why() {
        use CudaArchError::*;
        for (text, why) in [
            ("", Form),
            ("8", Form),
            ("8.", Form),
            (".6", Form),
            ("8.6b", Form),
            ("8.6+ptx", Form),
            ("8.6+PTX+PTX", Form),
            ("-8.6", Form),
            ("8.6 ", Form),
            ("8,6", Form),
            ("8.6;9.0", Joined("8.6,9.0".into())),
            ("Ampere", Form),
            ("٨.٦", Form),
            ("9.0af", TwoSuffixes),
            ("9.0aa", TwoSuffixes),
            ("8.10", Range),
            ("08.6", Range),
            ("100.0", Range),
            ("99999999999999999999.0", Range),
            ("0.0", Range),
            ("8.6a", NoSuchSuffix(Suffix::A)),
            ("9.0f", NoSuchSuffix(Suffix::F)),
        ] {
            assert_eq!(CudaArch::parse(text), Err(why), "{text:?}");
        }
        assert_eq!(
            CudaArch::parse("sm_86").unwrap_err().to_string(),
            "`sm_86` is nvcc's or CMake's spelling of \"8.6\", which is the form here"
        );
        assert_eq!(
            CudaArch::parse("8.6a").unwrap_err().to_string(),
            "arch-specific (`a`) targets start at 9.0"
        );
    }

    #[test]
    fn every_other_spelling_of_an_arch() {
        use Code::*;
        use Suffix::*;
        for (text, want) in [
            ("86", arch(8, 6, None, SassAndPtx)),
            ("100f", arch(10, 0, F, SassAndPtx)),
            ("sm_86", arch(8, 6, None, Sass)),
            ("sm_90a", arch(9, 0, A, Sass)),
            ("compute_90a", arch(9, 0, A, Ptx)),
            ("lto_90", arch(9, 0, None, Sass)),
            ("90-real", arch(9, 0, None, Sass)),
            ("120a-real", arch(12, 0, A, Sass)),
            ("90-virtual", arch(9, 0, None, Ptx)),
            ("9.0+PTX", arch(9, 0, None, SassAndPtx)),
        ] {
            assert_eq!(CudaArch::parse_any(text), Ok(want), "{text}");
        }
        for bad in [
            "sm_", "sm_8", "sm_86b", "compute_", "real", "-real", "sm_090",
        ] {
            assert!(CudaArch::parse_any(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn each_consumer_gets_its_spelling() {
        let p = |s| CudaArch::parse(s).unwrap();
        assert_eq!(p("8.0").cmake(), "80-real");
        assert_eq!(p("8.6").cmake(), "86-real");
        assert_eq!(p("9.0+PTX").cmake(), "90");
        assert_eq!(p("9.0a").cmake(), "90a-real");
        assert_eq!(
            CudaArch::parse_any("90-virtual").unwrap().cmake(),
            "90-virtual"
        );
        assert_eq!(p("8.6").gencode(), ["arch=compute_86,code=sm_86"]);
        assert_eq!(p("9.0a").gencode(), ["arch=compute_90a,code=sm_90a"]);
        assert_eq!(p("10.0f").gencode(), ["arch=compute_100f,code=sm_100f"]);
        assert_eq!(
            p("9.0+PTX").gencode(),
            [
                "arch=compute_90,code=sm_90",
                "arch=compute_90,code=compute_90"
            ]
        );
        assert_eq!(p("12.0a").sm_name(), "sm_120a");
        assert_eq!(p("12.0a").sm(), 120);
    }
}
