//! The registered toolkit a torch matches: what `cuda = "torch"` picks, and what the
//! guard's refusal names (instead of an install) when there is one; else the install, when
//! a source has that release.

use std::path::Path;

use crate::facts::torch_headers;
use crate::plan::install_hint;
use crate::project::TorchCheck;
use crate::store::toolchain::registry::{Entry, Registry};
use crate::store::toolchain::{Kind, Spec, Version};

use super::TorchVersion;

/// For a `"torch"` pin, among the toolkits `spec` matches: the one made for this torch's
/// venv (`gpuenv install torch`: its headers are the venv's), else the newest with every
/// header torch's own CUDA headers include; `None` leaves the choice to `Registry::find`.
pub fn for_torch<'r>(
    registry: &'r Registry,
    spec: &Spec,
    torch_dir: &Path,
) -> Option<(&'r str, &'r Entry)> {
    let site = torch_dir.parent()?;
    let site = site.canonicalize().unwrap_or_else(|_| site.to_path_buf());
    let matching: Vec<(&str, &Entry, Spec)> = registry
        .toolchains
        .iter()
        .filter(|(_, e)| e.kind == spec.kind)
        .filter_map(|(name, e)| {
            let n: Spec = name.parse().ok()?;
            spec.matches(&n).then_some((name, e, n))
        })
        .collect();
    let of_venv = |e: &Entry| {
        torch_headers::NEEDED.iter().any(|h| {
            e.include_dir
                .join(h)
                .canonicalize()
                .is_ok_and(|p| p.starts_with(&site))
        })
    };
    let newest = |list: Vec<&(&'r str, &'r Entry, Spec)>| {
        list.into_iter()
            .max_by(|a, b| {
                (&a.2.version, std::cmp::Reverse(a.0)).cmp(&(&b.2.version, std::cmp::Reverse(b.0)))
            })
            .map(|(name, e, _)| (*name, *e))
    };
    newest(matching.iter().filter(|(_, e, _)| of_venv(e)).collect()).or_else(|| {
        newest(
            matching
                .iter()
                .filter(|(_, e, _)| torch_headers::missing(&e.include_dir).is_empty())
                .collect(),
        )
    })
}

/// The spec a `"torch"` pin stands for: the major.minor torch was built for.
pub fn torch_spec(kind: Kind, torch: &TorchVersion) -> Option<Spec> {
    Some(Spec {
        kind,
        version: torch.built_for(kind)?,
        label: None,
    })
}

/// A registered toolkit torch's build matches under a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matching<'r> {
    pub name: &'r str,
    /// `cuda = "torch"` would pick it (it is of torch's major.minor).
    pub pinned_by_torch: bool,
}

/// The registered toolkit of `kind` that torch matches under `policy`: the one a `"torch"`
/// pin picks, else (policy `major`) the highest of torch's major; `None` when none does.
pub fn registered<'r>(
    registry: &'r Registry,
    kind: Kind,
    torch: &TorchVersion,
    policy: TorchCheck,
) -> Option<Matching<'r>> {
    let spec = torch_spec(kind, torch)?;
    if let Some((name, _)) = for_torch(registry, &spec, &torch.dir).or_else(|| registry.find(&spec))
    {
        return Some(Matching {
            name,
            pinned_by_torch: true,
        });
    }
    if policy != TorchCheck::Major {
        return None;
    }
    let major = Spec {
        version: spec.version.truncated(1),
        ..spec
    };
    registry.find(&major).map(|(name, _)| Matching {
        name,
        pinned_by_torch: false,
    })
}

/// The way to the toolkit torch was built for: a registered one that matches, else an
/// install when a source has that release, else what can get it.
pub(super) fn hint(
    registry: &Registry,
    kind: Kind,
    built: &Version,
    torch: &TorchVersion,
    policy: TorchCheck,
) -> String {
    let pin_torch = format!("`{kind} = \"torch\"` under [toolchain] in gpuenv.toml");
    match registered(registry, kind, torch, policy) {
        Some(m) if m.pinned_by_torch => format!(
            "use {n}, the registered toolkit torch was built for: `gpuenv use {n}` in this shell, `gpuenv pin {n}` for this project (or {pin_torch}, which follows torch)",
            n = m.name
        ),
        Some(m) => format!(
            "use {n}, a registered toolkit of {kind} {} (the policy is major): `gpuenv use {n}` in this shell, `gpuenv pin {n}` for this project",
            built.major(),
            n = m.name
        ),
        None => {
            let wanted = Spec {
                kind,
                version: built.clone(),
                label: None,
            };
            match install_hint::install_command(&wanted) {
                Some(install) => format!(
                    "use the toolkit torch was built for: `{install}`, and pin it with {pin_torch}"
                ),
                None => format!(
                    "no registered toolkit is of {kind} {built}, the one torch was built for; {}",
                    install_hint::install_or_link(&wanted)
                ),
            }
        }
    }
}
