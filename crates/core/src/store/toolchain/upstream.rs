//! Upstreams: other gpuenv homes (a site's shared store) whose toolchains a user sees and
//! uses read-only. They are named by `GPUENV_UPSTREAMS` (colon-separated), `upstreams = […]`
//! in the user's settings, and the system config (`/etc/gpuenv/config.toml`, or
//! `GPUENV_SYSTEM_CONFIG`). Lookups go through the user's own home first, then each upstream
//! in that order. Nothing here writes: an upstream is only ever read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::registry::{Registry, StateError};
use super::toolchains::Upstream;
use crate::context::{vars, Context};
use crate::store::home::Home;
use crate::{fsutil, outside, ui};

pub const DEFAULT_SYSTEM_CONFIG: &str = "/etc/gpuenv/config.toml";

/// The system-wide config an admin writes for every user of a machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemConfig {
    #[serde(default)]
    pub upstreams: Vec<PathBuf>,
    /// `[build]`: the site's compiler cache and shared store, below the user's settings.
    #[serde(default)]
    pub build: super::registry::BuildSettings,
    /// `[torch]`: the site's mirror of PyTorch's wheel indexes, below the user's settings.
    #[serde(default)]
    pub torch: super::registry::TorchSettings,
    /// `[rocm]`: the site's mirror of AMD's ROCm wheels, below the user's settings.
    #[serde(default)]
    pub rocm: super::registry::RocmSettings,
}

#[derive(Debug, thiserror::Error)]
#[error("the system config {}: {message}", crate::ui::printable(&path.to_string_lossy()))]
pub struct SystemConfigError {
    pub path: PathBuf,
    pub message: String,
}

impl crate::diagnostic::Diagnostic for SystemConfigError {
    fn hints(&self) -> Vec<String> {
        vec!["the system config takes `upstreams = [\"/path/to/site/gpuenv\"]`, a `[build]` table (`cache`, `shared`), a `[torch]` table (`index-url`) and a `[rocm]` table (`index-url`); fix the file or point GPUENV_SYSTEM_CONFIG at another".into()]
    }
}

/// The system config file: `GPUENV_SYSTEM_CONFIG`, else `/etc/gpuenv/config.toml`.
pub fn system_config_path(ctx: &Context) -> PathBuf {
    PathBuf::from(
        ctx.var_nonempty(vars::GPUENV_SYSTEM_CONFIG)
            .unwrap_or(DEFAULT_SYSTEM_CONFIG),
    )
}

/// A missing file is an empty config; a broken one is an error naming the file and line.
pub fn read_system_config(path: &Path) -> Result<SystemConfig, SystemConfigError> {
    let text = match outside::read_text(path, outside::Kind::SystemConfig) {
        Ok(t) => t,
        Err(e) if e.is_missing() => return Ok(SystemConfig::default()),
        Err(e) => {
            return Err(SystemConfigError {
                path: path.to_path_buf(),
                message: e.why.to_string(),
            })
        }
    };
    toml::from_str(&text).map_err(|e| {
        let at = e.span().map(|s| fsutil::line_col(&text, s.start));
        SystemConfigError {
            path: path.to_path_buf(),
            message: match at {
                Some((l, c)) => format!("line {l}, column {c}: {}", ui::toml_message(e.message())),
                None => ui::toml_message(e.message()),
            },
        }
    })
}

/// The site config's `[build]`: empty when there is none. A broken file is reported by the
/// commands that read it for upstreams, and here means no site default.
pub fn site_build(ctx: &Context) -> super::registry::BuildSettings {
    read_system_config(&system_config_path(ctx))
        .map(|c| c.build)
        .unwrap_or_default()
}

/// The site config's `[torch] index-url`, if it has one (a broken file: none, as above).
pub fn site_index_url(ctx: &Context) -> Option<String> {
    read_system_config(&system_config_path(ctx))
        .ok()
        .and_then(|c| c.torch.index_url)
}

/// The site config's `[rocm] index-url`, if it has one (a broken file: none, as above).
pub fn site_rocm_index_url(ctx: &Context) -> Option<String> {
    read_system_config(&system_config_path(ctx))
        .ok()
        .and_then(|c| c.rocm.index_url)
}

/// The upstreams the environment and the system config name, in search order, and why
/// the system config could not be used (a warning, never an error). The user's settings
/// add theirs in [`layered`].
pub fn from_context(ctx: &Context) -> (Vec<PathBuf>, Option<SystemConfigError>) {
    let mut out = Vec::new();
    out.extend(crate::path_list::dirs(ctx.var_os(vars::GPUENV_UPSTREAMS)).map(PathBuf::from));
    match read_system_config(&system_config_path(ctx)) {
        Ok(config) => {
            out.extend(config.upstreams);
            (out, None)
        }
        Err(e) => (out, Some(e)),
    }
}

/// The user's own registry with every upstream's toolchains added under it.
#[derive(Debug, Clone, Default)]
pub struct Layered {
    /// Own toolchains, then each upstream's that no earlier layer names. Only for reading:
    /// saving it would copy upstream entries into the user's settings.
    pub registry: Registry,
    /// Upstreams that are gone, unreadable or corrupt (each a warning, never an error).
    pub warnings: Vec<String>,
}

impl Layered {
    /// The upstream home `name` comes from; `None` for the own home's.
    pub fn upstream_of(&self, name: &str) -> Option<&Path> {
        let upstream = self.registry.toolchains.upstream_of(name)?;
        Some(&upstream.root)
    }

    /// Upstream toolchains whose upstream has no view: their view belongs in the own home.
    /// A stat of each, so asked by `reshim`, never on every call.
    pub fn missing_views(&self, home: &Home) -> Vec<String> {
        self.registry
            .toolchains
            .from_upstreams()
            .filter(|(name, _)| home.upstream_view(name).is_none())
            .map(|(name, _)| name.to_string())
            .collect()
    }
}

/// Every upstream root, the own home excluded, without duplicates.
pub fn roots(home: &Home, own: &Registry) -> Vec<PathBuf> {
    let own_root = home
        .root
        .canonicalize()
        .unwrap_or_else(|_| home.root.clone());
    let mut out: Vec<PathBuf> = Vec::new();
    for root in home.upstreams.iter().chain(&own.upstreams) {
        let real = root.canonicalize().unwrap_or_else(|_| root.clone());
        if real != own_root && !out.contains(root) {
            out.push(root.clone());
        }
    }
    out
}

fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Why an upstream may not steer this user's compiles, if so. Whoever may write its
/// directory or settings decides what every compile of its users runs, so only a store of
/// root's or the user's own, that no other user may write (a sticky directory excepted), is
/// used; its settings file passes the one rule for every file that steers gpuenv
/// ([`outside::owner_and_mode`], checked as it is opened).
pub fn not_safe(upstream: &Home, me: u32) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let ours = |uid: u32| uid == me || uid == 0;
    let dir = fs_err::metadata(&upstream.root).ok()?;
    if !ours(dir.uid()) {
        return Some(format!(
            "the directory belongs to uid {}, not to you or root",
            dir.uid()
        ));
    }
    if dir.mode() & 0o002 != 0 && dir.mode() & 0o1000 == 0 {
        return Some(format!(
            "every user may write to it (mode {:04o})",
            dir.mode() & 0o7777
        ));
    }
    match outside::open(&upstream.settings(), outside::Kind::Settings) {
        Err(e) if !e.is_missing() => Some(e.to_string()),
        _ => None,
    }
}

/// Adds the upstreams' toolchains to `own` and records in `home` where their views are.
pub fn layered(home: &mut Home, own: Registry) -> Layered {
    let mine = Home::new(&home.root);
    layered_in(home, own, &mine)
}

/// `layered`, with the upstreams' compact copies kept in `mine`, the reading user's own
/// home (`home` may be an upstream's, for the proxy started as an upstream's view).
pub fn layered_in(home: &mut Home, own: Registry, mine: &Home) -> Layered {
    let roots = roots(home, &own);
    let mut layered = Layered {
        registry: own,
        ..Layered::default()
    };
    for root in roots {
        let upstream = Home::new(&root);
        if !root.is_absolute() {
            layered.warnings.push(format!(
                "ignoring the upstream {}: an upstream must be an absolute path",
                root.display()
            ));
            continue;
        }
        if !root.is_dir() {
            layered.warnings.push(format!(
                "the upstream {} is gone or not a directory; its toolchains are not available",
                root.display()
            ));
            continue;
        }
        if let Some(why) = not_safe(&upstream, current_uid()) {
            layered.warnings.push(format!(
                "the upstream {} cannot be used: {why}",
                root.display()
            ));
            continue;
        }
        // Its compact copy is kept in the own home, keyed by the upstream's file.
        let registry = match Registry::load_cached(&upstream, mine) {
            Ok(r) => r,
            Err(
                e @ (StateError::Corrupt { .. }
                | StateError::BadValue { .. }
                | StateError::Unreadable { .. }),
            ) => {
                let first = e.to_string();
                let first = first.lines().next().unwrap_or_default().to_string();
                layered.warnings.push(format!(
                    "the upstream {} cannot be used: {first}",
                    root.display()
                ));
                continue;
            }
            Err(e) => {
                layered.warnings.push(e.to_string());
                continue;
            }
        };
        // Every upstream in use, wherever it was named (this registry is never saved): what
        // a store says about a toolchain it no longer has is read from there.
        if !layered.registry.upstreams.contains(&root) {
            layered.registry.upstreams.push(root.clone());
        }
        let views: Arc<Path> = upstream.views().into();
        // Merged in one pass of the two name-ordered lists, each of theirs remembering its
        // upstream: a site's hundreds are neither decoded nor inserted one by one.
        layered
            .registry
            .toolchains
            .layer_under(registry.toolchains, Upstream { root, views });
    }
    home.upstream_views = Some(Arc::new(layered.registry.toolchains.clone()));
    layered
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::toolchain::registry::{Entry, Source};
    use crate::store::toolchain::Kind;

    fn entry(root: &Path) -> Entry {
        Entry {
            kind: Kind::Cuda,
            version: "12.4.1".parse().unwrap(),
            root: root.to_path_buf(),
            source: Source::Installed,
            version_from: "version.json".into(),
            include_dir: root.join("include"),
            lib_dir: root.join("lib64"),
            collectives: None,
            system: None,
        }
    }

    #[test]
    fn own_toolchains_shadow_upstream_ones_of_the_same_name() {
        let dir = tempfile::tempdir().unwrap();
        let site = Home::new(dir.path().join("site"));
        Registry::update(&site, |r| {
            r.toolchains
                .insert("cuda-12.4.1".into(), entry(Path::new("/site/cuda")));
            r.toolchains
                .insert("cuda-11.8".into(), entry(Path::new("/site/cuda-11.8")));
            Ok::<_, StateError>(())
        })
        .unwrap();

        let mut own_reg = Registry::default();
        own_reg
            .toolchains
            .insert("cuda-12.4.1".into(), entry(Path::new("/mine/cuda")));
        let mut home = Home::new(dir.path().join("own"));
        home.upstreams = vec![site.root.clone(), dir.path().join("gone")];
        let l = layered(&mut home, own_reg);
        assert_eq!(
            l.registry.toolchains["cuda-12.4.1"].root,
            PathBuf::from("/mine/cuda")
        );
        assert_eq!(l.upstream_of("cuda-11.8"), Some(site.root.as_path()));
        assert_eq!(l.upstream_of("cuda-12.4.1"), None);
        assert_eq!(l.missing_views(&home), ["cuda-11.8"]);
        assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
        assert!(l.warnings[0].contains("gone"), "{:?}", l.warnings);
    }

    #[test]
    fn a_broken_system_config_names_its_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        fs_err::write(&path, "upstreams = [\"/a\"]\nmirror = 1\n").unwrap();
        let err = read_system_config(&path).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("line 2"), "{err}");
        assert_eq!(
            read_system_config(&dir.path().join("none")).unwrap(),
            SystemConfig::default()
        );
    }

    #[test]
    fn the_system_config_sets_the_sites_build_cache_and_shared_store() {
        use crate::facts::build_cache::BuildCache;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let text = "[build]\ncache = \"ccache\"\nshared = \"file:///shared/ccache\"\n";
        fs_err::write(&path, text).unwrap();
        let build = read_system_config(&path).unwrap().build;
        assert_eq!(build.cache, Some(BuildCache::Ccache));
        assert_eq!(build.shared.unwrap().to_string(), "file:///shared/ccache");
        fs_err::write(&path, "[build]\nshared = \"/shared/ccache\"\n").unwrap();
        let err = read_system_config(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 2") && err.contains("file:///absolute/dir"),
            "{err}"
        );
    }
}
