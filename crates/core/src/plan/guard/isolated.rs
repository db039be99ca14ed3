//! The refusal's ways out when the torch a build sees is one an isolated build environment
//! installed (pip's, uv's, pypa/build's, [`build_isolation_of`]): neither a `"torch"` pin
//! nor a `pip install` into the user's environment reaches that torch.

use crate::facts::python::build_isolation_of;
use crate::plan::install_hint;
use crate::project::TorchCheck;
use crate::store::toolchain::registry::Registry;
use crate::store::toolchain::{Kind, Spec};

use super::{matching, TorchVersion, Verdict};

/// The hints for a refused build whose torch lies in an isolated build environment; `None`
/// when it does not.
pub(super) fn hints(
    registry: &Registry,
    kind: Kind,
    torch: &TorchVersion,
    verdict: &Verdict,
    policy: TorchCheck,
) -> Option<Vec<String>> {
    let frontend = build_isolation_of(&torch.dir)?;
    let site = torch.dir.parent().unwrap_or(&torch.dir);
    let mut hints = vec![format!(
        "this torch is the one {frontend} installed in an isolated build environment ({}): `{kind} = \"torch\"` and a `pip install` into your environment cannot reach it; build with isolation off, against your environment's torch: `pip install --no-build-isolation <path>` (uv: `uv pip install --no-build-isolation <path>`, or `no-build-isolation-package = [\"<package>\"]` under [tool.uv] for `uv sync`)",
        site.display()
    )];
    if let Verdict::Mismatch { torch: built } = verdict {
        let wanted = Spec {
            kind,
            version: built.clone(),
            label: None,
        };
        let pin = match matching::registered(registry, kind, torch, policy) {
            Some(m) => format!("`gpuenv pin {}`", m.name),
            None => match install_hint::install_command(&wanted) {
                Some(install) => format!("`{install}`, then `gpuenv pin {wanted}`"),
                None => format!(
                    "{}, then `gpuenv pin {wanted}`",
                    install_hint::install_or_link(&wanted)
                ),
            },
        };
        hints.push(format!(
            "or pin the {kind} release that torch was built for, by its version: {pin}"
        ));
    }
    Some(hints)
}
