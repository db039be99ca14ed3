//! The shape of the facts file (`facts/cuda.toml`) and the checks every copy passes: the
//! embedded one at build time (build.rs includes this file) and an override at run time.
//! Only std, serde and toml here, so the build script can share it.

use serde::Deserialize;
use toml::Spanned;

// A path both crates resolve alike: build.rs includes this file by its path.
#[path = "schema/torch_range.rs"]
mod torch_range;
pub use torch_range::parse_release;
use torch_range::torch_range;

/// The one format this gpuenv reads; a newer gpuenv may write another.
pub const FORMAT: u32 = 1;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawFile {
    format: Spanned<u32>,
    date: Spanned<String>,
    #[serde(default)]
    minor_compat: Vec<Spanned<RawMinor>>,
    #[serde(default)]
    release: Vec<Spanned<RawRelease>>,
    #[serde(default)]
    nvcc_build: Vec<Spanned<RawNvccBuild>>,
    #[serde(default)]
    torch_index: Vec<Spanned<RawTorch>>,
    #[serde(default)]
    torch_rocm_index: Vec<Spanned<RawRocmTorch>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawNvccBuild {
    release: String,
    nvcc: String,
    source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawMinor {
    major: u64,
    driver: String,
    source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawRelease {
    cuda: String,
    driver: Option<String>,
    gcc_min: Option<u64>,
    gcc_max: Option<u64>,
    archs: Option<Vec<u32>>,
    source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawTorch {
    name: String,
    cuda: String,
    url: Option<String>,
    platforms: Option<Vec<String>>,
    archs: Option<Vec<String>>,
    sbsa_archs: Option<Vec<String>>,
    torch_first: Option<String>,
    torch_last: Option<String>,
    source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawRocmTorch {
    name: String,
    rocm: String,
    gfx: Option<Vec<String>>,
    torch_first: Option<String>,
    torch_last: Option<String>,
    source: String,
}

/// The platform keys a `[[torch-index]]` row's `platforms` may name (`facts::platform`).
pub const PLATFORM_KEYS: [&str; 4] = ["linux-x86_64", "linux-sbsa", "jetpack6", "jetpack7"];

/// A checked copy, owned. `(major, minor)` releases; drivers as NVIDIA writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub date: String,
    pub minor_compat: Vec<(u64, String, String)>,
    pub releases: Vec<CheckedRelease>,
    pub nvcc_builds: Vec<CheckedNvccBuild>,
    pub torch: Vec<CheckedTorch>,
    pub rocm_torch: Vec<CheckedRocmTorch>,
}

/// One release and the nvcc build it ships, as `major.minor.patch` numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedNvccBuild {
    pub release: [u64; 3],
    pub nvcc: [u64; 3],
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedRelease {
    pub release: (u64, u64),
    pub driver: Option<String>,
    pub gcc: Option<(Option<u64>, u64)>,
    pub archs: Option<Vec<u32>>,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedTorch {
    pub name: String,
    pub cuda: (u64, u64),
    /// Another host than PyTorch's (`None`: `<wheel base>/<name>`).
    pub url: Option<String>,
    /// Keys of [`PLATFORM_KEYS`] it has wheels for.
    pub platforms: Vec<String>,
    /// `(compute capability × 10, with PTX)` of its x86_64 and JetPack 6 wheels.
    pub archs: Option<Vec<(u32, bool)>>,
    /// The same for its Linux aarch64 (SBSA) wheels, which JetPack 7 installs too.
    pub sbsa_archs: Option<Vec<(u32, bool)>>,
    /// The first and last torch release (major, minor) it carries; `None` not recorded (first)
    /// or still built (last).
    pub torch: TorchRange,
    pub source: String,
}

/// One `[[torch-rocm-index]]` row: PyTorch's `…/whl/rocmX.Y`, Linux x86_64 only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedRocmTorch {
    pub name: String,
    pub rocm: (u64, u64),
    /// The gfx targets its wheels carry (`gfx942`); `None` not known.
    pub gfx: Option<Vec<String>>,
    pub torch: TorchRange,
    pub source: String,
}

/// The first and last torch release `(major, minor)` an index carries: `None` not recorded
/// (first) or still built (last).
pub type TorchRange = (Option<(u64, u64)>, Option<(u64, u64)>);

/// What is wrong, and on which line (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub line: usize,
    pub message: String,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

/// `13.0.2`, `12.4.131` -> `[13, 0, 2]`: a release's three numbers (major 1..=99, minor
/// 0..=99, the third at most 6 digits).
pub fn parse_full(s: &str) -> Option<[u64; 3]> {
    let (mm, third) = s.rsplit_once('.')?;
    let (major, minor) = parse_release(mm)?;
    if third.is_empty() || third.len() > 6 || !third.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some([major, minor, third.parse().ok()?])
}

/// `550.54.14`, `570.26`: two or three numbers, the first 100..=9999.
pub fn valid_driver(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|c| c.is_ascii_digit()))
        && parts[0]
            .parse::<u32>()
            .is_ok_and(|m| (100..=9999).contains(&m))
}

/// `8.6`, `9.0+PTX` (TORCH_CUDA_ARCH_LIST's form) -> `(86, false)`, `(90, true)`.
pub fn parse_torch_arch(s: &str) -> Option<(u32, bool)> {
    let (cc, ptx) = match s.strip_suffix("+PTX") {
        Some(cc) => (cc, true),
        None => (s, false),
    };
    let (major, minor) = parse_release(cc)?;
    (minor <= 9).then_some(((major * 10 + minor) as u32, ptx))
}

/// `YYYY-MM-DD`, a day that exists (no 2026-13-45, no 2025-02-29).
fn valid_date(s: &str) -> bool {
    let b = s.as_bytes();
    let shaped = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shaped {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
    let (year, month, day) = (num(0..4), num(5..7), num(8..10));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    year >= 1 && (1..=days).contains(&day)
}

fn valid_text(s: &str) -> bool {
    !s.trim().is_empty() && s.len() <= 1000 && !s.chars().any(|c| c.is_control())
}

/// Parses and checks a facts file: every value in range, every row with a source, no
/// release twice.
pub fn check(text: &str) -> Result<Checked, SchemaError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| SchemaError {
        line: line_of(text, e.span().map_or(0, |s| s.start)),
        message: e.message().trim().to_string(),
    })?;
    let err = |offset: usize, message: String| SchemaError {
        line: line_of(text, offset),
        message,
    };
    if *raw.format.get_ref() != FORMAT {
        return Err(err(
            raw.format.span().start,
            format!(
                "format = {}: this gpuenv reads format {FORMAT}",
                raw.format.get_ref()
            ),
        ));
    }
    if !valid_date(raw.date.get_ref()) {
        return Err(err(
            raw.date.span().start,
            format!(
                "date = {:?} is not a YYYY-MM-DD date that exists",
                raw.date.get_ref()
            ),
        ));
    }
    let mut out = Checked {
        date: raw.date.into_inner(),
        minor_compat: Vec::new(),
        releases: Vec::new(),
        nvcc_builds: Vec::new(),
        torch: Vec::new(),
        rocm_torch: Vec::new(),
    };
    for row in raw.minor_compat {
        let at = row.span().start;
        let m = row.into_inner();
        if !(1..=99).contains(&m.major) || !valid_driver(&m.driver) || !valid_text(&m.source) {
            return Err(err(at, format!("[[minor-compat]] major = {}: needs a major 1..=99, a driver such as \"525.60.13\" and a source", m.major)));
        }
        out.minor_compat.push((m.major, m.driver, m.source));
    }
    for row in raw.release {
        let at = row.span().start;
        let r = row.into_inner();
        let Some(release) = parse_release(&r.cuda) else {
            return Err(err(
                at,
                format!(
                    "[[release]] cuda = {:?} is not a release such as \"12.4\"",
                    r.cuda
                ),
            ));
        };
        let bad = |what: String| err(at, format!("[[release]] cuda = \"{}\": {what}", r.cuda));
        if out.releases.iter().any(|o| o.release == release) {
            return Err(bad("listed twice".into()));
        }
        if !valid_text(&r.source) {
            return Err(bad(
                "needs a source: where its values come from, on one line".into(),
            ));
        }
        if let Some(d) = &r.driver {
            if !valid_driver(d) {
                return Err(bad(format!(
                    "driver = {d:?} is not a driver version such as \"550.54.14\""
                )));
            }
        }
        let gcc = match (r.gcc_min, r.gcc_max) {
            (_, None) if r.gcc_min.is_some() => return Err(bad("gcc-min without gcc-max".into())),
            (_, None) => None,
            (min, Some(max)) => {
                if !(1..=99).contains(&max) || min.is_some_and(|m| m == 0 || m > max) {
                    return Err(bad(format!(
                        "gcc-min/gcc-max = {min:?}/{max} is not a GCC major range within 1..=99"
                    )));
                }
                Some((min, max))
            }
        };
        if let Some(archs) = &r.archs {
            if archs.is_empty()
                || archs.iter().any(|a| !(10..=999).contains(a))
                || archs.windows(2).any(|w| w[0] == w[1])
            {
                return Err(bad(
                    "archs must be compute capabilities such as 86 (for sm_86), each once".into(),
                ));
            }
        }
        out.releases.push(CheckedRelease {
            release,
            driver: r.driver,
            gcc,
            archs: r.archs,
            source: r.source,
        });
    }
    for row in raw.nvcc_build {
        let at = row.span().start;
        let b = row.into_inner();
        let bad = |what: &str| {
            err(
                at,
                format!("[[nvcc-build]] release = {:?}: {what}", b.release),
            )
        };
        let (Some(release), Some(nvcc)) = (parse_full(&b.release), parse_full(&b.nvcc)) else {
            return Err(bad(
                "needs a release such as \"13.0.2\" and the nvcc build it ships such as \"13.0.88\"",
            ));
        };
        if release[..2] != nvcc[..2] {
            return Err(bad(&format!(
                "nvcc = {:?} is not of the same major.minor",
                b.nvcc
            )));
        }
        if out.nvcc_builds.iter().any(|o| o.release == release) {
            return Err(bad("listed twice"));
        }
        if !valid_text(&b.source) {
            return Err(bad(
                "needs a source: where the pair comes from, on one line",
            ));
        }
        out.nvcc_builds.push(CheckedNvccBuild {
            release,
            nvcc,
            source: b.source,
        });
    }
    for row in raw.torch_index {
        let at = row.span().start;
        let t = row.into_inner();
        let bad = |what: String| err(at, format!("[[torch-index]] name = {:?}: {what}", t.name));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
        let cu_ok = |n: &str| n.strip_prefix("cu").is_some_and(digits);
        // `cu128`, or a Jetson index's `jp6/cu126`.
        let name_ok = t.name.len() <= 16
            && match t.name.split_once('/') {
                None => cu_ok(&t.name),
                Some((jp, cu)) => jp.strip_prefix("jp").is_some_and(digits) && cu_ok(cu),
            };
        let cuda = parse_release(&t.cuda);
        let Some(cuda) = cuda.filter(|_| name_ok) else {
            return Err(bad(
                "needs a name such as \"cu128\" (or \"jp6/cu126\") and cuda such as \"12.8\""
                    .into(),
            ));
        };
        if !valid_text(&t.source) {
            return Err(bad("needs a source".into()));
        }
        if let Some(url) = &t.url {
            if !url.starts_with("https://") || !valid_text(url) || url.contains(char::is_whitespace)
            {
                return Err(bad(format!("url = {url:?} is not an https:// URL")));
            }
        }
        let platforms = t
            .platforms
            .clone()
            .unwrap_or_else(|| vec!["linux-x86_64".into()]);
        if platforms.is_empty()
            || platforms
                .iter()
                .any(|p| !PLATFORM_KEYS.contains(&p.as_str()))
            || (1..platforms.len()).any(|i| platforms[..i].contains(&platforms[i]))
        {
            return Err(bad(format!(
                "platforms are some of {}, each once",
                PLATFORM_KEYS.join(", ")
            )));
        }
        let arch_list =
            |list: &Option<Vec<String>>| -> Result<Option<Vec<(u32, bool)>>, SchemaError> {
                match list {
                    None => Ok(None),
                    Some(list) if list.is_empty() => Err(bad(
                        "an arch list is never empty (leave it out when not known)".into(),
                    )),
                    Some(list) => list
                        .iter()
                        .map(|a| parse_torch_arch(a))
                        .collect::<Option<Vec<_>>>()
                        .map(Some)
                        .ok_or_else(|| {
                            bad(
                                "archs are compute capabilities such as \"8.6\" or \"9.0+PTX\""
                                    .into(),
                            )
                        }),
                }
            };
        let archs = arch_list(&t.archs)?;
        let sbsa_archs = arch_list(&t.sbsa_archs)?;
        if sbsa_archs.is_some() && !platforms.iter().any(|p| p == "linux-sbsa") {
            return Err(bad("sbsa-archs without linux-sbsa in platforms".into()));
        }
        let torch = torch_range(&t.torch_first, &t.torch_last).map_err(|e| bad(e.0))?;
        if out.torch.iter().any(|o| o.name == t.name) {
            return Err(bad("listed twice".into()));
        }
        out.torch.push(CheckedTorch {
            name: t.name,
            cuda,
            url: t.url,
            platforms,
            archs,
            sbsa_archs,
            torch,
            source: t.source,
        });
    }
    for row in raw.torch_rocm_index {
        let at = row.span().start;
        let t = row.into_inner();
        let bad = |what: String| {
            err(
                at,
                format!("[[torch-rocm-index]] name = {:?}: {what}", t.name),
            )
        };
        let rocm = parse_release(&t.rocm).filter(|_| t.name == format!("rocm{}", t.rocm));
        let Some(rocm) = rocm else {
            return Err(bad(
                "needs rocm such as \"7.2\" and the name rocm<that> (\"rocm7.2\")".into(),
            ));
        };
        if !valid_text(&t.source) {
            return Err(bad("needs a source".into()));
        }
        if let Some(gfx) = &t.gfx {
            let ok = |g: &String| {
                g.len() <= 12
                    && g.strip_prefix("gfx").is_some_and(|r| {
                        !r.is_empty()
                            && r.bytes()
                                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
                    })
            };
            if gfx.is_empty() || !gfx.iter().all(ok) {
                return Err(bad(
                    "gfx are AMD targets such as \"gfx942\" (leave it out when not known)".into(),
                ));
            }
        }
        let torch = torch_range(&t.torch_first, &t.torch_last).map_err(|e| bad(e.0))?;
        if out.rocm_torch.iter().any(|o| o.name == t.name) {
            return Err(bad("listed twice".into()));
        }
        out.rocm_torch.push(CheckedRocmTorch {
            name: t.name,
            rocm,
            gfx: t.gfx,
            torch,
            source: t.source,
        });
    }
    out.releases.sort_by_key(|r| r.release);
    out.nvcc_builds.sort_by_key(|b| b.release);
    out.torch.sort_by_key(|t| t.cuda);
    out.rocm_torch.sort_by_key(|t| t.rocm);
    Ok(out)
}
