//! The torch guard: is this compiler call a PyTorch extension build, which torch is it for,
//! and does that torch's CUDA/HIP version match the toolchain's under the policy?
//! torch is found and read as text (`torch/version.py`), never imported.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::facts::Facts;
use crate::project::{ProjectFile, TorchCheck};

mod isolated;
mod locate;
pub mod matching;
pub mod sys_path_cache;

use crate::store::toolchain::registry::Registry;
use crate::store::toolchain::{Kind, Version};
pub use locate::{find_on_path, find_torch_in, locate_torch, python_sys_path, LocateError};

/// What `torch/version.py` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchVersion {
    /// The torch package directory (`…/site-packages/torch`).
    pub dir: PathBuf,
    /// `__version__`, e.g. `2.4.1+cu121`.
    pub version: Option<String>,
    /// `cuda`, e.g. `12.1`; `None` for CPU-only and ROCm builds.
    pub cuda: Option<String>,
    /// `hip`, e.g. `6.0.32830-d62f6a171`.
    pub hip: Option<String>,
}

impl TorchVersion {
    /// The version this torch was built against for `kind`, as major.minor.
    pub fn built_for(&self, kind: Kind) -> Option<Version> {
        let raw = match kind {
            Kind::Cuda => self.cuda.as_deref()?,
            Kind::Rocm => self.hip.as_deref()?,
        };
        let v: Version = raw.split(['-', '+']).next()?.parse().ok()?;
        Some(v.truncated(2))
    }

    pub fn label(&self) -> String {
        self.version
            .clone()
            .unwrap_or_else(|| "(unknown version)".into())
    }
}

/// Reads the fields of a `version.py` text: both `cuda = '12.1'` and
/// `cuda: Optional[str] = '12.1'`, and `None`.
pub fn parse_version_py(dir: &Path, text: &str) -> TorchVersion {
    let field = |name: &str| -> Option<String> {
        text.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?;
            let rest = rest.trim_start();
            let rest = match rest.strip_prefix(':') {
                Some(annotated) => annotated.split_once('=')?.1,
                None => rest.strip_prefix('=')?,
            };
            let value = rest.trim();
            let unquoted = value
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')));
            unquoted.map(str::to_string)
        })
    };
    TorchVersion {
        dir: dir.to_path_buf(),
        version: field("__version__"),
        cuda: field("cuda"),
        hip: field("hip"),
    }
}

/// Reads `<dir>/version.py`.
pub fn read_torch(dir: &Path) -> Result<TorchVersion, crate::outside::ReadError> {
    let text =
        crate::outside::read_text(&dir.join("version.py"), crate::outside::Kind::TorchVersion)?;
    Ok(parse_version_py(dir, &text))
}

/// If these compiler arguments build a PyTorch extension, the torch include dir named in
/// them (if any). `-I<d>`, `-I <d>`, `-isystem <d>`, `-isystem=<d>`, `--include-path <d>`.
pub fn torch_extension_build(args: &[String]) -> Option<Option<PathBuf>> {
    let mut include: Option<PathBuf> = None;
    let mut is_ext = false;
    let mut iter = args.iter().peekable();
    while let Some(arg) = iter.next() {
        let dir = if let Some(d) = arg.strip_prefix("-isystem") {
            match d.strip_prefix('=') {
                Some(d) => Some(d.to_string()),
                None if d.is_empty() => iter.next().cloned(),
                None => Some(d.to_string()),
            }
        } else if let Some(d) = arg.strip_prefix("--include-path") {
            match d.strip_prefix('=') {
                Some(d) => Some(d.to_string()),
                None if d.is_empty() => iter.next().cloned(),
                None => None,
            }
        } else if let Some(d) = arg.strip_prefix("-I") {
            if d.is_empty() {
                iter.next().cloned()
            } else {
                Some(d.to_string())
            }
        } else {
            if arg.starts_with("-DTORCH_EXTENSION_NAME=") {
                is_ext = true;
            }
            None
        };
        if let Some(dir) = dir {
            if let Some(torch_include) = torch_include_of(Path::new(&dir)) {
                is_ext = true;
                include.get_or_insert(torch_include);
            }
        }
    }
    is_ext.then_some(include)
}

/// `…/torch/include` for any dir at or below it (`…/torch/include/torch/csrc/api/include`).
fn torch_include_of(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|a| a.ends_with("torch/include"))
        .map(Path::to_path_buf)
}

/// The torch package directory of a `…/torch/include` dir.
pub fn torch_dir_of_include(include: &Path) -> Option<PathBuf> {
    include.parent().map(Path::to_path_buf)
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("GPUENV_TORCH_CHECK={0} is not a policy: use minor, major or off")]
pub struct PolicyError(pub String);

/// The policy in force and where it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub check: TorchCheck,
    pub from: String,
}

impl Policy {
    /// The policy for a project: `GPUENV_TORCH_CHECK` (its value `env`), else the file's
    /// `[torch] check`, else `minor`.
    pub fn for_project(
        env: Option<&str>,
        file: Option<&ProjectFile>,
    ) -> Result<Policy, PolicyError> {
        Policy::choose(
            env,
            file.and_then(|f| Some((f.torch_check()?, f.path.as_path()))),
        )
    }

    /// `GPUENV_TORCH_CHECK` beats `[torch] check` in the toolchain file; default `minor`.
    pub fn choose(
        env: Option<&str>,
        file: Option<(TorchCheck, &Path)>,
    ) -> Result<Policy, PolicyError> {
        if let Some(v) = env.filter(|v| !v.is_empty()) {
            let check = match v {
                "minor" => TorchCheck::Minor,
                "major" => TorchCheck::Major,
                "off" => TorchCheck::Off,
                other => return Err(PolicyError(other.to_string())),
            };
            return Ok(Policy {
                check,
                from: format!("GPUENV_TORCH_CHECK={v}"),
            });
        }
        if let Some((check, path)) = file {
            return Ok(Policy {
                check,
                from: format!("[torch] check in {}", path.display()),
            });
        }
        Ok(Policy {
            check: TorchCheck::Minor,
            from: "the default".into(),
        })
    }
}

impl fmt::Display for TorchCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TorchCheck::Minor => "minor",
            TorchCheck::Major => "major",
            TorchCheck::Off => "off",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Match,
    /// The versions differ beyond what the policy allows.
    Mismatch {
        torch: Version,
    },
    /// torch has no build for this kind (`cuda = None`).
    NotBuiltFor,
    Off,
}

/// Compares the toolchain's version with what torch was built for.
pub fn compare(
    kind: Kind,
    toolchain: &Version,
    torch: &TorchVersion,
    policy: TorchCheck,
) -> Verdict {
    if policy == TorchCheck::Off {
        return Verdict::Off;
    }
    let Some(built) = torch.built_for(kind) else {
        return Verdict::NotBuiltFor;
    };
    let same = match policy {
        TorchCheck::Major => built.major() == toolchain.major(),
        _ => built.truncated(2) == toolchain.truncated(2),
    };
    if same {
        Verdict::Match
    } else {
        Verdict::Mismatch { torch: built }
    }
}

/// The toolchain side of a comparison, for messages.
pub struct Side<'a> {
    pub name: &'a str,
    pub kind: Kind,
    pub version: &'a Version,
    pub root: &'a Path,
    /// Why this toolchain is active (the pin or variable that chose it).
    pub reason: String,
    /// The GPUs the project declares (`plan::torch_pick::declared_gpus`), for the hint's
    /// choice of index.
    pub gpus: (Vec<u32>, Vec<String>),
    /// Where the wheels the hint names must run (a Jetson's JetPack takes its own index).
    pub platform: crate::facts::Platform,
}

/// A refused build: what does not match, and the ways out.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub message: String,
    pub hints: Vec<String>,
}

impl Diagnostic for Refusal {
    fn hints(&self) -> Vec<String> {
        self.hints.clone()
    }
}

/// Whether a build is being stopped (the proxy) or only compared (`check`, `doctor`): the
/// message must not claim a refusal when nothing was being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occasion {
    Building,
    Checking,
}

/// The refusal for a verdict that refuses a build; `None` when the build may go on. The
/// registry is asked for a toolkit that matches torch, which the hint then names.
pub fn refusal(
    facts: &Facts,
    registry: &Registry,
    side: &Side,
    torch: &TorchVersion,
    verdict: &Verdict,
    policy: &Policy,
    occasion: Occasion,
) -> Option<Refusal> {
    let kind = side.kind;
    let (field, value) = match kind {
        Kind::Cuda => ("cuda", &torch.cuda),
        Kind::Rocm => ("hip", &torch.hip),
    };
    let shown = value
        .as_deref()
        .map_or("None".to_string(), |v| format!("'{v}'"));
    let compiler = kind.compiler();
    let tc_short = side.version.truncated(2);
    let lead = match occasion {
        Occasion::Building => "refusing to build a PyTorch extension",
        Occasion::Checking => "a PyTorch extension built here would be refused",
    };
    let headline = match verdict {
        Verdict::Match | Verdict::Off => return None,
        Verdict::Mismatch { torch: built } => format!(
            "{lead}: {compiler} is {kind} {} but torch {} was built for {kind} {built}",
            side.version,
            torch.label()
        ),
        Verdict::NotBuiltFor => format!(
            "{lead}: torch {} has no {kind} build ({field} = None), so a {kind} extension built against it cannot load",
            torch.label()
        ),
    };
    let rule = match policy.check {
        TorchCheck::Major => "the major version must match",
        _ => "major.minor must match",
    };
    let message = format!(
        "{headline}
  toolchain: {} at {} ({})
  torch:     {} (version.py: {field} = {shown})
  policy:    {} ({rule}; {})",
        side.name,
        side.root.display(),
        side.reason,
        torch.dir.display(),
        policy.check,
        policy.from
    );
    let hints_for_venv = || {
        let mut hints = Vec::new();
        if let Verdict::Mismatch { torch: built } = verdict {
            hints.push(matching::hint(registry, kind, built, torch, policy.check));
        }
        let mut m = hint_machine(kind, &tc_short, torch, side.platform);
        (m.gpus, m.amd_gpus) = side.gpus.clone();
        hints.push(torch_for_toolkit(facts, &m, torch.version.as_deref()));
        hints
    };
    let mut hints = isolated::hints(registry, kind, torch, verdict, policy.check)
        .unwrap_or_else(hints_for_venv);
    hints.push("or, to build anyway, set GPUENV_TORCH_CHECK=off (or check = \"off\" under [torch] in gpuenv.toml)".into());
    Some(Refusal { message, hints })
}

/// What the guard's hint asks the chooser: the toolkit, the installed torch's release, the
/// host's platform.
pub fn hint_machine(
    kind: Kind,
    toolkit: &Version,
    torch: &TorchVersion,
    platform: crate::facts::Platform,
) -> crate::facts::torch_index::Machine {
    use crate::facts::torch_index::{Machine, Toolkit, TorchWanted};
    let release = (toolkit.major(), toolkit.minor().unwrap_or(0));
    Machine {
        toolkit: Some(match kind {
            Kind::Cuda => Toolkit::Cuda(release),
            Kind::Rocm => Toolkit::Rocm(release),
        }),
        torch: torch
            .version
            .as_deref()
            .and_then(TorchWanted::of_version)
            .unwrap_or_default(),
        platform,
        ..Default::default()
    }
}

/// The torch that matches a toolkit: the exact `pip install` from the index the one chooser
/// picks for `machine`, or why there is none and what would work. `installed` is the
/// installed torch's version: the command asks for the same release from the new index.
pub fn torch_for_toolkit(
    facts: &Facts,
    machine: &crate::facts::torch_index::Machine,
    installed: Option<&str>,
) -> String {
    use crate::diagnostic::Diagnostic as _;
    use crate::facts::torch_index;
    let kind = match machine.toolkit {
        Some(torch_index::Toolkit::Rocm(r)) => format!("ROCm {}", crate::facts::release_name(r)),
        Some(torch_index::Toolkit::Cuda(r)) => format!("CUDA {}", crate::facts::release_name(r)),
        None => "this machine".into(),
    };
    match crate::facts::torch_choose::choose(facts, machine) {
        Ok(pick) => format!(
            "or install the torch built for {kind}: {}",
            switch_torch(&pick.index, installed)
        ),
        Err(why) => {
            let fixes = why.hints();
            if fixes.is_empty() {
                format!("or install a torch built for {kind}: {why}")
            } else {
                format!(
                    "or install a torch built for {kind}: {why} ({})",
                    fixes.join("; ")
                )
            }
        }
    }
}

/// The command that swaps the installed torch for `index`'s build of the same release and
/// touches nothing else: on PyTorch's indexes every wheel's local version is the index's
/// name, so `torch==2.9.1+cu130` is not met by the installed `2.9.1+cu128` and pip (or uv)
/// replaces torch alone, adding only the dependencies the new build needs; with
/// `--force-reinstall` pip would reinstall all of torch's ~3 GB of dependencies too.
fn switch_torch(index: &crate::facts::torch_index::Chosen, installed: Option<&str>) -> String {
    let url = index.url();
    let release = installed
        .map(|v| v.split('+').next().unwrap_or(v).trim())
        .filter(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_alphanumeric() || c == '.'));
    match (index.uv_backend(), release) {
        (Some(b), Some(r)) => format!(
            "`pip install torch=={r}+{b} --index-url {url}` (uv: `uv pip install --torch-backend={b} torch=={r}+{b}`)"
        ),
        (Some(b), None) => format!(
            "`pip install --force-reinstall torch --index-url {url}` (uv: `uv pip install --torch-backend={b} --reinstall-package torch torch`)"
        ),
        // A Jetson index: its wheels carry no such label, and torch there depends on no
        // CUDA wheels, so reinstalling its dependencies costs little.
        (None, _) => format!("`pip install --force-reinstall torch --index-url {url}`"),
    }
}

#[cfg(test)]
mod tests;
