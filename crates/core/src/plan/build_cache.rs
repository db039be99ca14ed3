//! The compiler cache the nvcc/hipcc proxy compiles through: `[build] cache` in the
//! toolchain file, `GPUENV_BUILD_CACHE`, or the user's default in settings.
//!
//! The proxy runs `ccache <real compiler> <args>`: the cache sees the real compiler's path
//! and file (ccache's `compiler_check` is its size and modification time), never the
//! proxy's, so another toolkit's nvcc misses and switching back hits.

use crate::facts::vars;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::facts::build_cache::{BuildCache, SharedStore, UnknownBuildCache};

use crate::diagnostic::Diagnostic;
use crate::plan::exec::Exec;
use crate::plan::guard::find_on_path;
use crate::project::ProjectFile;
use crate::store::toolchain::registry::{BuildSettings, Registry};

/// The cache in effect and what chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub cache: BuildCache,
    pub from: String,
    /// The store shared with other machines, and what named it.
    pub shared: Option<(SharedStore, String)>,
}

#[derive(Debug, thiserror::Error)]
#[error("GPUENV_BUILD_CACHE={value}: {message}")]
pub struct BadVar {
    value: String,
    message: String,
}

impl Diagnostic for BadVar {
    fn hints(&self) -> Vec<String> {
        vec!["set it to ccache, sccache or off, or unset it".into()]
    }
}

/// `GPUENV_BUILD_CACHE`, else the toolchain file's `[build] cache`, else the settings'
/// default, else the site config's, else off. The shared store comes from the settings, else
/// the site config: never from a toolchain file, whose author would choose where the
/// user's compiles are written.
pub fn choose(
    var: Option<&str>,
    file: Option<&ProjectFile>,
    registry: &Registry,
    site: &BuildSettings,
) -> Result<Choice, BadVar> {
    let mut choice = choose_cache(var, file, registry, site)?;
    choice.shared = match (&registry.build.shared, &site.shared) {
        (Some(s), _) => Some((s.clone(), SETTINGS.into())),
        (None, Some(s)) => Some((s.clone(), SITE.into())),
        (None, None) => None,
    };
    Ok(choice)
}

const SETTINGS: &str = "[build] in gpuenv's settings.toml";
const SITE: &str = "[build] in the site config";

fn choose_cache(
    var: Option<&str>,
    file: Option<&ProjectFile>,
    registry: &Registry,
    site: &BuildSettings,
) -> Result<Choice, BadVar> {
    if let Some(v) = var.filter(|v| !v.is_empty()) {
        let cache = v.parse().map_err(|e: UnknownBuildCache| BadVar {
            value: v.to_string(),
            message: e.to_string(),
        })?;
        return Ok(Choice {
            cache,
            from: vars::GPUENV_BUILD_CACHE.into(),
            shared: None,
        });
    }
    if let Some((cache, at)) = file.and_then(|f| f.build_cache()) {
        return Ok(Choice {
            cache,
            from: at.to_string(),
            shared: None,
        });
    }
    let (cache, from) = match (registry.build.cache, site.cache) {
        (Some(cache), _) => (cache, SETTINGS),
        (None, Some(cache)) => (cache, SITE),
        (None, None) => (BuildCache::Off, "the default"),
    };
    Ok(Choice {
        cache,
        from: from.into(),
        shared: None,
    })
}

/// The chosen cache's program is not installed: a warning, and the compiler runs without it.
#[derive(Debug, thiserror::Error)]
#[error("the build cache is {program} ({from}), but {program} is not on PATH: compiling without a cache")]
pub struct NotInstalled {
    program: &'static str,
    from: String,
}

impl Diagnostic for NotInstalled {
    fn hints(&self) -> Vec<String> {
        let program = self.program;
        let cargo = if program == "sccache" {
            ", `cargo install sccache`"
        } else {
            ""
        };
        vec![format!(
            "install it (`apt-get install {program}`{cargo}), or set `cache = \"off\"`"
        )]
    }
}

/// Where the chosen cache's program is: `Ok(None)` when the cache is off, `Err` when it is
/// on but not installed.
pub fn locate(choice: &Choice, path: Option<&OsStr>) -> Result<Option<PathBuf>, NotInstalled> {
    let Some(program) = choice.cache.program() else {
        return Ok(None);
    };
    find_on_path(path, program)
        .map(Some)
        .ok_or_else(|| NotInstalled {
            program,
            from: choice.from.clone(),
        })
}

/// `exec` run through the cache program at `cache`: the real compiler becomes its first
/// argument. A shared store is passed in the cache's own variable, unless the user's
/// environment already sets that variable (`user_set`).
pub fn wrap(exec: Exec, cache: &Path, choice: &Choice, user_set: impl Fn(&str) -> bool) -> Exec {
    let mut args: Vec<OsString> = Vec::with_capacity(exec.args.len() + 1);
    args.push(exec.program.into_os_string());
    args.extend(exec.args);
    let mut env = exec.env;
    if let Some((var, value)) = choice
        .shared
        .as_ref()
        .and_then(|(s, _)| s.variable(choice.cache))
        .filter(|(var, _)| !user_set(var))
    {
        env.push((var.to_string(), Some(value.into())));
    }
    Exec {
        program: cache.to_path_buf(),
        args,
        env,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_beats_the_file_which_beats_the_settings() {
        let mut registry = Registry::default();
        registry.build.cache = Some(BuildCache::Sccache);
        let mut file =
            crate::project::parse(Path::new("/p/gpuenv.toml"), "[build]\ncache = \"ccache\"\n")
                .unwrap();
        let site = BuildSettings::default();
        // An untrusted file's cache program is not run: the settings' default is.
        assert_eq!(
            choose(None, Some(&file), &registry, &site).unwrap().cache,
            BuildCache::Sccache
        );
        let mut trusting = registry.clone();
        crate::project::trust::trust(&mut trusting, &file);
        crate::project::trust::settle(&trusting, &mut file);
        let pick = |var, file| choose(var, file, &registry, &site).unwrap();
        assert_eq!(pick(Some("off"), Some(&file)).cache, BuildCache::Off);
        let from_file = pick(None, Some(&file));
        assert_eq!(from_file.cache, BuildCache::Ccache);
        assert_eq!(from_file.from, "/p/gpuenv.toml:2:9");
        assert_eq!(pick(None, None).cache, BuildCache::Sccache);
        assert_eq!(
            choose(None, None, &Registry::default(), &site)
                .unwrap()
                .cache,
            BuildCache::Off
        );
        let err = choose(Some("distcc"), None, &registry, &site).unwrap_err();
        assert!(!err.hints().is_empty(), "{err}");
    }

    #[test]
    fn the_real_compiler_is_the_caches_first_argument() {
        let exec = Exec {
            program: "/t/cuda-13.0/bin/nvcc".into(),
            args: vec!["-c".into(), "k.cu".into()],
            env: vec![("CUDA_HOME".into(), Some("/v".into()))],
        };
        let choice = Choice {
            cache: BuildCache::Ccache,
            from: "x".into(),
            shared: None,
        };
        let wrapped = wrap(exec, Path::new("/usr/bin/ccache"), &choice, |_| false);
        assert_eq!(wrapped.program, Path::new("/usr/bin/ccache"));
        assert_eq!(wrapped.args, ["/t/cuda-13.0/bin/nvcc", "-c", "k.cu"]);
        assert_eq!(wrapped.env.len(), 1);
    }

    #[test]
    fn the_site_config_is_below_the_users_settings_and_names_the_shared_store() {
        let site = BuildSettings {
            cache: Some(BuildCache::Ccache),
            shared: Some("file:///shared/ccache".to_string().try_into().unwrap()),
            ..Default::default()
        };
        let mut registry = Registry::default();
        let choice = choose(None, None, &registry, &site).unwrap();
        assert_eq!(choice.cache, BuildCache::Ccache);
        assert_eq!(choice.from, SITE);
        assert_eq!(choice.shared.as_ref().unwrap().1, SITE);
        let exec = || Exec {
            program: "/t/bin/nvcc".into(),
            args: Vec::new(),
            env: Vec::new(),
        };
        let wrapped = wrap(exec(), Path::new("/usr/bin/ccache"), &choice, |_| false);
        assert_eq!(
            wrapped.env,
            [(
                "CCACHE_REMOTE_STORAGE".to_string(),
                Some("file:/shared/ccache|umask=002".into())
            )]
        );
        // The user's own variable wins.
        let wrapped = wrap(exec(), Path::new("/usr/bin/ccache"), &choice, |v| {
            v == "CCACHE_REMOTE_STORAGE"
        });
        assert!(wrapped.env.is_empty());
        // The user's settings win over the site's.
        registry.build.cache = Some(BuildCache::Off);
        let choice = choose(None, None, &registry, &site).unwrap();
        assert_eq!(choice.cache, BuildCache::Off);
        assert_eq!(choice.from, SETTINGS);
    }
}
