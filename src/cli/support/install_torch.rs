//! `gpuenv install torch`: a toolkit for the active Python's torch that reuses the NVIDIA
//! CUDA wheels torch already installed, downloading only what they lack.

use anyhow::Result;
use indicatif::HumanBytes;

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::guard;
use gpuenv_core::toolchain::registry::{Entry, Registry};
use gpuenv_core::toolchain::Spec;
use gpuenv_core::ui;
use gpuenv_install::Choice;
use gpuenv_install::{record, torch, Job, Profile, Selection};

/// `components`: `--component` names, added to the toolkit as to any install (downloaded
/// unless the venv has them), in place when it is installed already; one the source does
/// not have is refused by its plan.
pub fn run(ctx: &Context, job: &Job, components: &[String]) -> Result<()> {
    // ui::info is silent under -q.
    let say = |msg: String| ui::info(msg);
    let found = guard::locate_torch(ctx, None).map_err(|why| {
        Hinted::new(why.to_string()).hint(
            "activate the Python environment that has torch (or set VIRTUAL_ENV), then run `gpuenv install torch` again",
        )
    })?;
    if found.hip.is_some() && found.cuda.is_none() {
        return rocm(ctx, job, &found, components);
    }
    let cuda = torch::cuda_of(&found)?;
    let spec: Spec = format!("cuda-{}", cuda.release).parse()?;
    let sources = super::install_from::sources(ctx, job.fetcher, Choice::Pypi, None)?;
    let sel = Selection {
        profile: Profile::Minimal,
        components: components.to_vec(),
    };
    let (plan, mismatches) = torch::for_venv(gpuenv_install::plan(&sources, &spec, &sel)?, &cuda);
    if !components.is_empty() {
        let registry = Registry::load(job.store.home())?;
        if let Some(entry) = registry.toolchains.get(&plan.name) {
            // Installed already: the components are added to it in place.
            return add(ctx, job, &plan.name, entry, &cuda, components);
        }
    }
    for m in &mismatches {
        ui::warn(m.warning(&cuda));
    }
    let names: Vec<&str> = plan.archives.iter().map(|a| a.component.as_str()).collect();
    let size: u64 = plan.archives.iter().filter_map(|a| a.size).sum();
    say(format!(
        "installing {} for the torch at {}: downloading {} ({}), linking the rest to {}",
        plan.name,
        found.dir.display(),
        names.join(", "),
        HumanBytes(size),
        cuda.tree.display()
    ));
    let done = job.install(&plan, Some(&sel))?;
    super::interrupt::installed_one();
    if done.already {
        say(format!(
            "{} is already installed at {}",
            done.name,
            done.root.display()
        ));
    } else {
        say(format!(
            "installed {} in {} ({} downloaded)",
            done.name,
            done.root.display(),
            HumanBytes(done.fetched_bytes)
        ));
    }
    say(format!(
        "it lives as long as {}: if that environment is removed, `gpuenv uninstall {n}` and install it again from the new one\nuse it with `cuda = \"torch\"` in gpuenv.toml, or `gpuenv pin {n}`",
        cuda.site.display(),
        n = done.name
    ));
    Ok(())
}

/// `install torch --component X` where its toolkit is registered: X is added to it, with a
/// note when it links into another venv than the active one (X goes to it as it is).
fn add(
    ctx: &Context,
    job: &Job,
    name: &str,
    entry: &Entry,
    cuda: &torch::TorchCuda,
    components: &[String],
) -> Result<()> {
    let linked = record::read(&entry.root).and_then(|r| r.linked.into_iter().next());
    if let Some(l) = linked.filter(|l| l.tree != cuda.tree) {
        ui::info(format!(
            "{name} links into {}, not the active {}: the components go to it as it is",
            l.tree.display(),
            cuda.tree.display()
        ));
    }
    let ask = super::install_component::Ask {
        components,
        choice: Choice::Auto,
        manifest: None,
    };
    super::install_component::run(ctx, job, name, entry, &ask)?;
    Ok(())
}

/// `install torch` for a ROCm build: AMD's wheels torch installed (`rocm[libraries]`) are
/// linked, the devel wheel (and device wheels of pinned ISAs the venv lacks) downloaded
/// from AMD's index at the same release: `rocm-<release>-torch`.
fn rocm(
    ctx: &Context,
    job: &Job,
    found: &guard::TorchVersion,
    components: &[String],
) -> Result<()> {
    let rocm = gpuenv_install::torch_rocm::rocm_of(found)?;
    let spec = rocm.spec();
    let sources = super::install_from::sources(ctx, job.fetcher, Choice::Amd, None)?;
    let mut sel = Selection {
        profile: Profile::Minimal,
        components: components.to_vec(),
    };
    for c in super::install_pinned::pinned_rocm_devices(ctx) {
        if !sel.components.contains(&c) {
            sel.components.push(c);
        }
    }
    let plan =
        gpuenv_install::torch_rocm::for_venv(gpuenv_install::plan(&sources, &spec, &sel)?, &rocm);
    if !components.is_empty() {
        let registry = Registry::load(job.store.home())?;
        if let Some(entry) = registry.toolchains.get(&plan.name) {
            // Installed already: the components are added to it in place.
            let ask = super::install_component::Ask {
                components,
                choice: Choice::Auto,
                manifest: None,
            };
            super::install_component::run(ctx, job, &plan.name, entry, &ask)?;
            return Ok(());
        }
    }
    let names: Vec<&str> = plan.archives.iter().map(|a| a.component.as_str()).collect();
    let size: u64 = plan.archives.iter().filter_map(|a| a.size).sum();
    ui::info(format!(
        "installing {} for the torch at {}: downloading {} ({}), linking the rest to {}",
        plan.name,
        found.dir.display(),
        names.join(", "),
        HumanBytes(size),
        rocm.site.display()
    ));
    let done = job.install(&plan, Some(&sel))?;
    super::interrupt::installed_one();
    if done.already {
        ui::info(format!(
            "{} is already installed at {}",
            done.name,
            done.root.display()
        ));
    } else {
        ui::info(format!(
            "installed {} in {} ({} downloaded)",
            done.name,
            done.root.display(),
            HumanBytes(done.fetched_bytes)
        ));
    }
    ui::info(format!(
        "it lives as long as {}: if that environment is removed, `gpuenv uninstall {n}` and install it again from the new one\nuse it with `rocm = \"torch\"` in gpuenv.toml, or `gpuenv pin {n}`",
        rocm.site.display(),
        n = done.name
    ));
    Ok(())
}
