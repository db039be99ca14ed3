//! The compiler cache the nvcc/hipcc proxy compiles through: `[build] cache` in the
//! toolchain file, `GPUENV_BUILD_CACHE`, or the user's default in settings.
//!
//! The proxy runs `ccache <real compiler> <args>`: the cache sees the real compiler's path
//! and file (ccache's `compiler_check` is its size and modification time), never the
//! proxy's, so another toolkit's nvcc misses and switching back hits.

use crate::facts::vars;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::facts::build_cache::{BuildCache, UnknownBuildCache};

use crate::diagnostic::Diagnostic;
use crate::plan::exec::Exec;
use crate::plan::guard::find_on_path;
use crate::project::ProjectFile;
use crate::store::toolchain::registry::Registry;

/// The cache in effect and what chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub cache: BuildCache,
    pub from: String,
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
/// default, else off.
pub fn choose(
    var: Option<&str>,
    file: Option<&ProjectFile>,
    registry: &Registry,
) -> Result<Choice, BadVar> {
    if let Some(v) = var.filter(|v| !v.is_empty()) {
        let cache = v.parse().map_err(|e: UnknownBuildCache| BadVar {
            value: v.to_string(),
            message: e.to_string(),
        })?;
        return Ok(Choice {
            cache,
            from: vars::GPUENV_BUILD_CACHE.into(),
        });
    }
    if let Some((cache, at)) = file.and_then(|f| f.build_cache()) {
        return Ok(Choice {
            cache,
            from: at.to_string(),
        });
    }
    if let Some(cache) = registry.build.cache {
        return Ok(Choice {
            cache,
            from: "[build] in gpuenv's settings.toml".into(),
        });
    }
    Ok(Choice {
        cache: BuildCache::Off,
        from: "the default".into(),
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
/// argument.
pub fn wrap(exec: Exec, cache: &Path) -> Exec {
    let mut args: Vec<OsString> = Vec::with_capacity(exec.args.len() + 1);
    args.push(exec.program.into_os_string());
    args.extend(exec.args);
    Exec {
        program: cache.to_path_buf(),
        args,
        env: exec.env,
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
        // An untrusted file's cache program is not run: the settings' default is.
        assert_eq!(
            choose(None, Some(&file), &registry).unwrap().cache,
            BuildCache::Sccache
        );
        let mut trusting = registry.clone();
        crate::project::trust::trust(&mut trusting, &file);
        crate::project::trust::settle(&trusting, &mut file);
        let pick = |var, file| choose(var, file, &registry).unwrap();
        assert_eq!(pick(Some("off"), Some(&file)).cache, BuildCache::Off);
        let from_file = pick(None, Some(&file));
        assert_eq!(from_file.cache, BuildCache::Ccache);
        assert_eq!(from_file.from, "/p/gpuenv.toml:2:9");
        assert_eq!(pick(None, None).cache, BuildCache::Sccache);
        assert_eq!(
            choose(None, None, &Registry::default()).unwrap().cache,
            BuildCache::Off
        );
        let err = choose(Some("distcc"), None, &registry).unwrap_err();
        assert!(!err.hints().is_empty(), "{err}");
    }

    #[test]
    fn the_real_compiler_is_the_caches_first_argument() {
        let exec = Exec {
            program: "/t/cuda-13.0/bin/nvcc".into(),
            args: vec!["-c".into(), "k.cu".into()],
            env: vec![("CUDA_HOME".into(), Some("/v".into()))],
        };
        let wrapped = wrap(exec, Path::new("/usr/bin/ccache"));
        assert_eq!(wrapped.program, Path::new("/usr/bin/ccache"));
        assert_eq!(wrapped.args, ["/t/cuda-13.0/bin/nvcc", "-c", "k.cu"]);
        assert_eq!(wrapped.env.len(), 1);
    }
}
