//! Where installs come from: the download cache, the fetcher over it, and the sources
//! `--source` and `--manifest` select (shared by install, update, cache and self).

use anyhow::{bail, Result};

use gpuenv_core::context::{vars, Context};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::facts::sources;
use gpuenv_core::home::Home;
use gpuenv_install::{
    Amd, Cache, Choice, Fetcher, Hooks, ManifestSource, Net, Nvidia, Pypi, Source, NVIDIA_MIRROR,
    PYPI_INDEX,
};

/// The download cache: `GPUENV_DOWNLOAD_CACHE`, else `$GPUENV_HOME/downloads`.
pub fn cache(ctx: &Context, home: &Home) -> Result<Cache> {
    Ok(match ctx.absolute_dir(vars::GPUENV_DOWNLOAD_CACHE)? {
        Some(dir) => Cache::new(dir),
        None => Cache::new(home.downloads()),
    })
}

pub fn fetcher(ctx: &Context, home: &Home, offline: bool) -> Result<Fetcher> {
    let mut fetcher = Fetcher::new(
        Net::from_ctx(ctx),
        cache(ctx, home)?,
        offline,
        Hooks::from_ctx(ctx),
    );
    fetcher.keep_archives = ctx.flag(vars::GPUENV_KEEP_ARCHIVES)?;
    Ok(fetcher)
}

/// The sources `choice` and `--manifest` select, in the order `auto` tries them.
pub fn sources<'a>(
    ctx: &Context,
    fetcher: &'a Fetcher,
    choice: Choice,
    manifest: Option<&str>,
) -> Result<Vec<Box<dyn Source + 'a>>> {
    if let Some(m) = manifest {
        if !matches!(choice, Choice::Auto | Choice::Manifest) {
            bail!(Hinted::new(format!(
                "--manifest goes with --source manifest, not --source {choice:?}"
            ))
            .hint("drop one of them"));
        }
        let url = gpuenv_install::location(&ctx.cwd, m, false)?;
        return Ok(vec![Box::new(ManifestSource { fetcher, url })]);
    }
    let mirror = ctx
        .var_nonempty(vars::GPUENV_CUDA_MIRROR)
        .unwrap_or(NVIDIA_MIRROR);
    let index = ctx
        .var_nonempty(vars::GPUENV_PYPI_URL)
        .or_else(|| ctx.var_nonempty(vars::PIP_INDEX_URL))
        .unwrap_or(PYPI_INDEX);
    let nvidia = || -> Result<Box<dyn Source + 'a>> {
        Ok(Box::new(Nvidia {
            fetcher,
            root: gpuenv_install::location(&ctx.cwd, mirror, true)?,
        }))
    };
    let pypi = || -> Result<Box<dyn Source + 'a>> {
        Ok(Box::new(Pypi {
            fetcher,
            index: gpuenv_install::location(&ctx.cwd, index, true)?,
        }))
    };
    // The variable, the user's settings, the site config, AMD's release index.
    let rocm_index = match ctx.var_nonempty(vars::GPUENV_ROCM_INDEX_URL) {
        Some(v) => v.to_string(),
        None => ctx
            .gpuenv_home()
            .ok()
            .and_then(|home| gpuenv_core::toolchain::registry::Registry::load(&home).ok())
            .and_then(|r| r.rocm.index_url)
            .or_else(|| gpuenv_core::toolchain::upstream::site_rocm_index_url(ctx))
            .unwrap_or_else(|| sources::ROCM_WHEEL_INDEX.to_string()),
    };
    let amd = || -> Result<Box<dyn Source + 'a>> {
        Ok(Box::new(Amd {
            fetcher,
            index: gpuenv_install::location(&ctx.cwd, &rocm_index, true)?,
        }))
    };
    Ok(match choice {
        Choice::Auto => {
            let mut all: Vec<Box<dyn Source + 'a>> = sources::AUTO
                .iter()
                .map(|s| match s {
                    sources::Source::Nvidia => nvidia(),
                    sources::Source::Pypi => pypi(),
                })
                .collect::<Result<_>>()?;
            all.push(amd()?);
            all
        }
        Choice::Nvidia => vec![nvidia()?],
        Choice::Pypi => vec![pypi()?],
        Choice::Amd => vec![amd()?],
        Choice::Manifest => {
            bail!(Hinted::new("--source manifest needs --manifest <path|url>")
                .hint("gpuenv install rocm-6.2 --manifest ./toolchains.toml"))
        }
    })
}
