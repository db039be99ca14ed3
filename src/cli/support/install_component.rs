//! `gpuenv install NAME --component X` when NAME is installed: adds the components to it
//! from the source that installed it, fetching only theirs (`gpuenv_install::add`). A
//! toolkit `install torch` made is planned again for the venv its record names.

use anyhow::{bail, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::named::Named;
use gpuenv_core::toolchain::registry::{Entry, Source as Origin};
use gpuenv_core::toolchain::Spec;
use gpuenv_core::ui;
use gpuenv_install::record;
use gpuenv_install::{recorded_component, Choice};
use gpuenv_install::{torch, Job, Selection};

/// What an add is asked for, and where from.
pub struct Ask<'a> {
    pub components: &'a [String],
    pub choice: Choice,
    pub manifest: Option<&'a str>,
}

/// Adds `ask.components` to the registered `name`. True when something was added.
pub fn run(ctx: &Context, job: &Job, name: &str, entry: &Entry, ask: &Ask) -> Result<bool> {
    let list = ask.components.join(" --component ");
    if entry.source != Origin::Installed {
        bail!(Hinted::new(format!(
            "{name} is a {} toolchain at {}: gpuenv adds components only to toolchains it installed",
            entry.source.as_str(),
            entry.root.display()
        ))
        .hint(format!(
            "add them to that tree the way it was installed, or `gpuenv unlink {name}` and then `gpuenv install {name} --component {list}` installs gpuenv's own with them"
        )));
    }
    let spec: Spec = name.parse()?;
    let rec = record::read(&entry.root);
    let torch = gpuenv_core::install_hint::by_install_torch(name);
    if torch && rec.as_ref().is_none_or(|r| r.linked.is_empty()) {
        // Part of its tree is links into a venv's wheels, and nothing says which.
        bail!(Hinted::new(format!(
            "{name} was made by an older `gpuenv install torch`, which kept no record of the Python environment it links into, so nothing can be added to it in place"
        ))
        .hint(format!(
            "with that environment active: `gpuenv uninstall {name}`, then `gpuenv install torch --component {list}`"
        )));
    }
    let Some(rec) = rec else {
        bail!(Hinted::new(format!(
            "{name} was installed by an older gpuenv, which kept no record of its archives, so nothing can be added to it"
        ))
        .hint(format!(
            "`gpuenv uninstall {name}`, then `gpuenv install {name} --component {list}` (with the --profile it had)"
        )));
    };
    let choice = match (ask.choice, ask.manifest, rec.from.as_str()) {
        (Choice::Auto, None, "nvidia") => Choice::Nvidia,
        (Choice::Auto, None, "pypi") => Choice::Pypi,
        (Choice::Auto, None, "amd") => Choice::Amd,
        (Choice::Auto, None, _) => bail!(Hinted::new(format!(
            "{name} came from a gpuenv manifest, whose toolchains have no components to add"
        ))
        .hint(format!(
            "add the archive to the manifest, then `gpuenv uninstall {name}` and {}",
            record::reinstall_command(&name.parse()?, Some(&rec))
        ))),
        (c, None, from) if c.name() != from => bail!(Hinted::new(format!(
            "{name} came from the {from} source; components are added from the source that installed it, not --source {}",
            c.name()
        ))
        .hint(format!("drop --source: `gpuenv install {name} --component {list}`"))),
        (c, ..) => c,
    };
    let mut sel: Selection = rec.selection();
    for c in ask.components {
        let c = recorded_component(c);
        if !sel.components.contains(&c) {
            sel.components.push(c);
        }
    }
    let sources = super::install_from::sources(ctx, job.fetcher, choice, ask.manifest)?;
    let plan = if rec.linked.is_empty() {
        gpuenv_install::plan(&sources, &spec, &sel)?
    } else {
        linked_plan(&sources, name, &spec, &rec, &sel)?
    };
    if plan.name != name {
        bail!(Hinted::new(format!(
            "the {} source has {}, not {name}, so nothing can be added to {name}",
            plan.source, plan.name
        ))
        .hint(format!("`gpuenv install {} --component {list}`", plan.name)));
    }
    let added = job.add(&plan, &rec, &sel)?;
    super::interrupt::installed_one();
    if added.is_empty() {
        ui::info(format!("{name} already has {}", ask.components.join(", ")));
        return Ok(false);
    }
    ui::info(format!(
        "added {} to {name} (from {}, {} downloaded)",
        added.join(", "),
        plan.source,
        indicatif::HumanBytes(
            job.fetcher
                .fetched
                .load(std::sync::atomic::Ordering::Relaxed)
        )
    ));
    Ok(true)
}

/// The plan of `name`, a toolkit `install torch` made, with the selection `sel`: the
/// release's, without what the venv its record names has (as when it was made). Wheels of
/// that venv in another version than the release's are said, as there.
fn linked_plan(
    sources: &[Box<dyn gpuenv_install::Source + '_>],
    name: &str,
    spec: &Spec,
    rec: &record::Record,
    sel: &Selection,
) -> Result<gpuenv_install::Plan> {
    if spec.kind == gpuenv_core::toolchain::Kind::Rocm {
        // AMD's wheels of the venv: planned for the plain release, then made the venv's.
        let rocm = gpuenv_install::torch_rocm::rocm_of_linked(name, &rec.linked)?;
        let plain = Spec {
            label: None,
            ..spec.clone()
        };
        return Ok(gpuenv_install::torch_rocm::for_venv(
            gpuenv_install::plan(sources, &plain, sel)?,
            &rocm,
        ));
    }
    let [linked] = rec.linked.as_slice() else {
        bail!(Hinted::new(format!(
            "the install record of {name} names {} Python environments; `gpuenv install torch` links one",
            rec.linked.len()
        ))
        .hint(format!(
            "`gpuenv uninstall {name}`, then `gpuenv install torch --component …` with that environment active"
        )));
    };
    let cuda = torch::cuda_of_linked(name, linked, &spec.version)?;
    let release = Spec {
        label: None,
        ..spec.clone()
    };
    let (plan, mismatches) = torch::for_venv(gpuenv_install::plan(sources, &release, sel)?, &cuda);
    // Those of the components it has were said when it was made.
    for m in mismatches.iter().filter(|m| {
        let c = recorded_component(&m.component);
        !rec.archives
            .iter()
            .any(|a| recorded_component(&a.component) == c)
    }) {
        ui::warn(m.warning(&cuda));
    }
    Ok(plan)
}
