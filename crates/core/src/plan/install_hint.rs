//! How to get a toolkit nothing registered matches, as the hints say it: `gpuenv install`
//! only when one of the sources it tries by default has that release
//! ([`facts::sources`](crate::facts::sources)), else a manifest or `gpuenv link`.

use crate::facts::sources;
use crate::store::home::Home;
use crate::store::retired;
use crate::store::toolchain::registry::Registry;
use crate::store::toolchain::{Kind, Spec};

/// `gpuenv install <spec>` when that command, with no `--source`, can install it.
pub fn install_command(spec: &Spec) -> Option<String> {
    // Installed toolkits are named by their version alone; a label is a linked one's.
    // A major the data knows nothing of (`cuda-99`) is no release any source has.
    let known_major =
        crate::facts::lookup::major_floor(crate::facts::Facts::embedded(), spec.version.major())
            .is_some();
    let installable = spec.label.is_none()
        && match spec.kind {
            Kind::Cuda => known_major && !sources::auto_for_cuda(&spec.version).is_empty(),
            Kind::Rocm => sources::rocm_wheels_have(&spec.version),
        };
    installable.then(|| format!("gpuenv install {spec}"))
}

/// "`gpuenv install <spec>` installs it" when it can, else the ways to get `spec`.
pub fn installs_it(spec: &Spec) -> String {
    match install_command(spec) {
        Some(install) => format!("`{install}` installs it"),
        None => install_or_link(spec),
    }
}

/// The one command that gets `spec`, quoted, for a hint that goes on to pin it:
/// `gpuenv install` when a source has it, else a manifest (ROCm) or `gpuenv link`.
pub fn get_command(spec: &Spec) -> String {
    match (install_command(spec), spec.kind) {
        (Some(install), _) => format!("`{install}`"),
        (None, Kind::Rocm) => format!("`gpuenv install {spec} --manifest <path|url>`"),
        (None, Kind::Cuda) => format!(
            "`gpuenv link {spec} <path>` (no source of `gpuenv install` has CUDA {})",
            spec.version
        ),
    }
}

/// Where an installed toolkit came from, as its install record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Came<'a> {
    /// A gpuenv manifest: at this location (a path or URL, quoted for a shell) when the
    /// record has it.
    Manifest(Option<&'a str>),
    /// A source `gpuenv install` tries by default, or nothing recorded.
    Elsewhere,
}

/// The label of the toolkits `gpuenv install torch` makes for a venv (`cuda-12.8-torch`).
pub const TORCH_LABEL: &str = "torch";

/// Whether `name` is one `gpuenv install torch` made (its label is [`TORCH_LABEL`]).
pub fn by_install_torch(name: &str) -> bool {
    name.parse::<Spec>()
        .is_ok_and(|s| s.label.as_deref() == Some(TORCH_LABEL))
}

/// The command that installs the uninstalled `spec` again, quoted: `gpuenv install NAME`
/// (which takes the kept record's profile and components), with `--manifest` for one that
/// came from a manifest, `gpuenv install torch` for a venv's; else how to get it.
pub fn reinstall_command(spec: &Spec, came: Came) -> String {
    match came {
        Came::Manifest(Some(manifest)) => {
            format!("`gpuenv install {spec} --manifest {manifest}`")
        }
        Came::Manifest(None) => {
            format!("`gpuenv install {spec} --manifest <path|url>` with the manifest it came from")
        }
        Came::Elsewhere
            if spec.kind == Kind::Cuda && spec.label.as_deref() == Some(TORCH_LABEL) =>
        {
            install_torch_command(&[])
        }
        Came::Elsewhere => get_command(spec),
    }
}

/// `gpuenv install torch` with the `--component`s the toolkit it makes must have (those its
/// record or a lock lists), quoted, and the environment it must run in.
pub fn install_torch_command(components: &[String]) -> String {
    let mut command = "gpuenv install torch".to_string();
    for c in components {
        command.push_str(" --component ");
        command.push_str(&crate::quote::word(c));
    }
    format!("`{command}`, with the Python environment of that torch active")
}

/// [`get_command`] for a CUDA release as the tables name it (`12.4`).
pub fn get_cuda(release: &str) -> String {
    match format!("cuda-{release}").parse::<Spec>() {
        Ok(spec) => get_command(&spec),
        Err(_) => format!("`gpuenv install cuda-{release}`"),
    }
}

/// What a site's store (an upstream) says about `spec`, which nothing registered matches:
/// that the site retired it (its retired record), and the release of the same major.minor
/// the store has instead, with the pin that uses it. `None` when no upstream has a word on
/// it: then the usual ways to get it stand.
pub fn from_store(registry: &Registry, spec: &Spec) -> Option<String> {
    if spec.label.is_some() {
        return None;
    }
    let family = |s: &Spec| {
        s.kind == spec.kind
            && s.label.is_none()
            && s.version.major() == spec.version.major()
            && (spec.version.minor().is_none() || s.version.minor() == spec.version.minor())
    };
    for up in &registry.upstreams {
        let retired = retired::names(&Home::new(up.clone()))
            .into_iter()
            .find(|n| n.parse::<Spec>().is_ok_and(|s| spec.matches(&s)));
        let instead = registry
            .toolchains
            .iter()
            .filter(|(_, e)| e.root.starts_with(up))
            .filter_map(|(n, _)| Some((n.parse::<Spec>().ok()?, n)))
            .filter(|(s, _)| family(s))
            .max_by(|a, b| a.0.version.cmp(&b.0.version))
            .map(|(s, n)| (s, n.to_string()));
        let store = up.display();
        let pin = instead.as_ref().map(|(s, n)| {
            let minor = s.version.minor().unwrap_or(0);
            format!(
                "the store has {n}: `gpuenv pin {}-{}.{minor}` in the project uses it (and the next release the site installs)",
                s.kind,
                s.version.major()
            )
        });
        match (retired, pin) {
            (Some(name), Some(pin)) => {
                return Some(format!(
                    "{name} was retired by the site (the store at {store}); {pin}; if the project needs exactly {name}, ask the site's admins"
                ))
            }
            (Some(name), None) => {
                return Some(format!(
                    "{name} was retired by the site (the store at {store}) and the store has no other {} {}: ask the site's admins which to use",
                    spec.kind, spec.version
                ))
            }
            (None, Some(pin)) => {
                return Some(format!(
                    "the site's store at {store} does not have {spec} (retired, or never installed there); {pin}"
                ))
            }
            (None, None) => {}
        }
    }
    None
}

/// The ways to get `spec`, as one hint.
pub fn install_or_link(spec: &Spec) -> String {
    let link = format!("`gpuenv link {spec} <path>`");
    let manifest = format!("`gpuenv install {spec} --manifest <path|url>`");
    if let Some(install) = install_command(spec) {
        return format!(
            "install it with `{install}`, or register a toolkit already on disk with {link}"
        );
    }
    match spec.kind {
        Kind::Rocm => {
            let (major, minor) = sources::ROCM_WHEELS_FIRST;
            format!(
                "AMD's ROCm wheels start at {major}.{minor}, so ROCm {} comes from a gpuenv manifest: {manifest}; or register a toolkit already on disk with {link}",
                spec.version
            )
        }
        Kind::Cuda if spec.label.is_some() => format!(
            "register a toolkit already on disk with {link} (installed toolkits are named by their version alone)"
        ),
        Kind::Cuda => {
            let first = sources::AUTO
                .iter()
                .map(|s| {
                    let (major, minor) = s.first_cuda();
                    format!("{} from {major}.{minor}", s.name())
                })
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "no source of `gpuenv install` has CUDA {} ({first}): register a toolkit already on disk with {link}, or install it from a gpuenv manifest with {manifest}",
                spec.version
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> Spec {
        s.parse().unwrap()
    }

    #[test]
    fn an_install_is_suggested_only_where_a_source_has_the_release() {
        assert_eq!(
            install_command(&spec("cuda-12.4")).as_deref(),
            Some("gpuenv install cuda-12.4")
        );
        assert_eq!(
            install_command(&spec("cuda-13.2")).as_deref(),
            Some("gpuenv install cuda-13.2")
        );
        assert_eq!(install_command(&spec("cuda-10.2")), None);
        assert_eq!(install_command(&spec("rocm-6.2")), None);
        assert_eq!(install_command(&spec("cuda-13.0-mine")), None);

        let old = install_or_link(&spec("cuda-10.2"));
        assert!(
            old.starts_with(
                "no source of `gpuenv install` has CUDA 10.2 (nvidia from 11.0, pypi from 13.0)"
            ),
            "{old}"
        );
        assert!(old.contains("`gpuenv link cuda-10.2 <path>`"), "{old}");
        assert_eq!(
            get_command(&spec("cuda-11.8")),
            "`gpuenv install cuda-11.8`"
        );
        assert_eq!(
            get_command(&spec("cuda-10.2")),
            "`gpuenv link cuda-10.2 <path>` (no source of `gpuenv install` has CUDA 10.2)"
        );
        assert_eq!(
            reinstall_command(&spec("cuda-12.4.1"), Came::Elsewhere),
            "`gpuenv install cuda-12.4.1`"
        );
        assert_eq!(
            reinstall_command(&spec("rocm-6.2.4"), Came::Manifest(Some("/m/rocm.toml"))),
            "`gpuenv install rocm-6.2.4 --manifest /m/rocm.toml`"
        );
        assert!(
            reinstall_command(&spec("cuda-12.4.1-site"), Came::Manifest(None))
                .starts_with("`gpuenv install cuda-12.4.1-site --manifest <path|url>`")
        );
        assert!(reinstall_command(&spec("cuda-12.8-torch"), Came::Elsewhere)
            .starts_with("`gpuenv install torch`"));
        let rocm = install_or_link(&spec("rocm-6.2"));
        assert!(
            rocm.contains("`gpuenv install rocm-6.2 --manifest <path|url>`"),
            "{rocm}"
        );
        // AMD's wheels have 7.14 on.
        assert_eq!(
            get_command(&spec("rocm-7.14")),
            "`gpuenv install rocm-7.14`"
        );
        assert_eq!(
            install_command(&spec("rocm-7")).as_deref(),
            Some("gpuenv install rocm-7")
        );
        assert_eq!(install_command(&spec("rocm-7.13")), None);
    }
}
