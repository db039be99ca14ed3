//! One install: fetch every archive of a plan (several at once), unpack and assemble them
//! in a temp dir under `toolchains/`, fix the layout up so the tree describes itself, check
//! it is the toolchain the plan names, rename it into place and register it, under the
//! toolchain's lock.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use crate::error::{Context as _, InstallError, Result};

use crate::fetch::Fetcher;
use crate::{assemble, record, seal, stub};
use crate::{lock_toolchain, writable_home, Archive, Job, Plan, Progress, Selection};
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::fsutil;
use gpuenv_core::toolchain::registry::{Registry, Source as Origin};
use gpuenv_core::toolchain::{detect, Kind, Version};
use gpuenv_core::ui;

/// What an install did.
#[derive(Debug)]
pub struct Installed {
    pub name: String,
    pub kind: Kind,
    pub version: Version,
    pub root: PathBuf,
    pub source: &'static str,
    /// It was already installed; nothing was done.
    pub already: bool,
    pub fetched_bytes: u64,
}

/// Installs what `plan` describes into the store, unless it is installed already; with
/// `sel` the tree gets its [`record`] (what `gpuenv lock` reads).
pub(crate) fn install(job: &Job, plan: &Plan, sel: Option<&Selection>) -> Result<Installed> {
    let Job {
        store,
        fetcher,
        progress,
    } = *job;
    let home = store.home();
    let name = plan.name.clone();
    let root = home.toolchains().join(&name);
    let done = |already| Installed {
        name: name.clone(),
        kind: plan.kind,
        version: plan.version.clone(),
        root: root.clone(),
        source: plan.source,
        already,
        fetched_bytes: fetcher.fetched.load(Ordering::Relaxed),
    };
    writable_home(home)?;
    let _lock = lock_toolchain(home, &name)?;
    if let Some(existing) = Registry::load(home)?.toolchains.get(&name) {
        if existing.source != Origin::Installed {
            return Err(Hinted::new(format!(
                "{name} is already registered as a {} toolchain at {}",
                existing.source.as_str(),
                existing.root.display()
            ))
            .hint(format!(
                "`gpuenv unlink {name}` first if gpuenv should install its own"
            ))
            .into());
        }
        if existing.root.join("bin").is_dir() {
            return Ok(done(true));
        }
    }
    // Leftovers of killed installs and uninstalls of this toolchain: we hold its lock, so
    // nobody is still working on them. A tree that never got registered is one of them.
    crate::dir::remove_leftovers(&home.toolchains(), &name);
    // A retired copy still in use keeps this path; one nothing uses goes with its record.
    crate::retire::clear_for_install(home, &name)?;
    crate::dir::remove_tree(&root)?;

    let dirs = fetch_all(fetcher, &plan.archives, progress)?;
    let tmp = crate::dir::temp_dir(&home.toolchains(), &name).with_context(|| {
        format!(
            "creating a temporary directory in {}",
            home.toolchains().display()
        )
    })?;
    for (a, dir) in plan.archives.iter().zip(&dirs) {
        place_archive(fetcher, a, dir, tmp.path())
            .with_context(|| format!("assembling {name} from {}", a.file_name()))?;
    }
    // What the archives brought is checked before gpuenv adds its own links, which point
    // into the venv on purpose (`install torch`).
    assemble::links_stay_inside(tmp.path()).with_context(|| format!("assembling {name}"))?;
    link_wheel_trees(plan, tmp.path())?;
    finish_tree(plan, &components_of(&plan.archives), tmp.path())?;
    if let Some(sel) = sel {
        let rec = record::Record::of(plan, sel);
        // A venv at a path TOML cannot hold (not UTF-8) goes unrecorded: such a toolkit
        // gets no component in place, as one from before records.
        if rec.linked.iter().all(|l| l.tree.to_str().is_some()) {
            record::write(tmp.path(), &rec)
                .with_context(|| format!("recording how {name} was made"))?;
        }
    }
    // Its files share inodes with the download cache: a write to one would change both.
    seal::read_only(tmp.path())?;
    fetcher.hooks.checkpoint("assemble");
    let detected = detect::detect(tmp.path(), Origin::Installed).map_err(|e| {
        InstallError::msg(format!(
            "the installed tree of {name} is not a working toolchain: {e}"
        ))
    })?;
    if detected.kind != plan.kind || !plan.version.is_prefix_of(&detected.version) {
        return Err(Hinted::new(format!(
            "the archives of {name} hold {} {}, not {} {}",
            detected.kind, detected.version, plan.kind, plan.version
        ))
        .hint("the source's metadata is wrong; report it to whoever publishes it")
        .into());
    }
    fs_err::rename(tmp.keep(), &root)?;
    fetcher.hooks.checkpoint("register");
    let registered = detect::detect(&root, Origin::Installed)
        .with_context(|| format!("reading {}", root.display()))
        .and_then(|entry| Ok(store.register(vec![(name.clone(), entry)])?));
    if let Err(e) = registered {
        // Not registered, so not installed: the tree goes too.
        let _ = crate::dir::remove_tree(&root);
        return Err(e);
    }
    // Installed again: the tree has its own record now.
    record::forget_kept(&home.toolchains(), &name);
    Ok(done(false))
}

/// Fetches and unpacks every archive, several at once.
pub(crate) fn fetch_all(
    fetcher: &Fetcher,
    archives: &[Archive],
    progress: &Progress,
) -> Result<Vec<PathBuf>> {
    let n = archives.len();
    let next = Mutex::new(0usize);
    let results: Vec<Mutex<Option<Result<PathBuf>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let workers = n.clamp(1, 4);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = {
                    let mut next = next.lock().expect("no worker panics holding it");
                    let i = *next;
                    *next += 1;
                    i
                };
                let Some(a) = archives.get(i) else {
                    return;
                };
                let bar = progress.bar(a);
                let r = fetcher.unpacked(a, &bar).with_context(|| {
                    format!("fetching {} {} ({})", a.component, a.version, a.file_name())
                });
                bar.finish_and_clear();
                let failed = r.is_err();
                *results[i].lock().expect("no worker panics holding it") = Some(r);
                if failed {
                    // Stop handing out work; the others finish what they started.
                    *next.lock().expect("no worker panics holding it") = n;
                }
            });
        }
    });
    let mut dirs = Vec::with_capacity(n);
    let mut first_err = None;
    for r in results {
        match r.into_inner().expect("no worker panicked") {
            Some(Ok(d)) => dirs.push(d),
            Some(Err(e)) => {
                first_err.get_or_insert(e);
            }
            None => {}
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(dirs),
    }
}

/// Places one unpacked archive into `root`: file by file as its mapping says, or for
/// TheRock's devel wheel, its `_devel.tar` (unpacked in the cache) over what is there.
pub(crate) fn place_archive(fetcher: &Fetcher, a: &Archive, dir: &Path, root: &Path) -> Result<()> {
    if a.mapping == crate::Mapping::TheRockDevel {
        let site = crate::therock::devel_tree(fetcher, dir, &a.file_name())?;
        return crate::therock::place_devel(&site, root);
    }
    assemble::place(dir, &a.mapping, &a.component, root)?;
    Ok(())
}

/// The venv trees a linked wheel tree brings into a toolkit: the tree itself and, for
/// CUDA, NCCL's wheel beside it (`link_wheel_trees`; `add` skips links into any of them
/// when it copies a toolkit, and links them again).
pub(crate) fn wheel_trees(kind: Kind, tree: &Path) -> Vec<PathBuf> {
    match kind {
        Kind::Cuda => std::iter::once(tree.to_path_buf())
            .chain(gpuenv_core::facts::python::nccl_wheel_beside(tree))
            .collect(),
        Kind::Rocm => vec![tree.to_path_buf()],
    }
}

/// Links the plan's venv wheel trees into `root` where nothing is placed: after every
/// archive, so what is downloaded wins over what is linked. NCCL's wheel beside a CUDA
/// tree (torch's `nvidia/nccl`) is linked too: its headers and library join the toolkit's,
/// where the finished tree gets the `libnccl.so` the wheel lacks (`-lnccl` needs it), in
/// gpuenv's tree, never in the venv.
pub(crate) fn link_wheel_trees(plan: &Plan, root: &Path) -> Result<()> {
    for l in &plan.linked {
        for tree in wheel_trees(plan.kind, &l.tree) {
            match plan.kind {
                Kind::Cuda => assemble::link_wheel_tree(&tree, root),
                Kind::Rocm => assemble::link_rocm_tree(&tree, root),
            }
            .with_context(|| format!("linking {} to {}", plan.name, tree.display()))?;
        }
    }
    Ok(())
}

/// (component, version) of each archive: what version.json lists.
pub(crate) fn components_of(archives: &[Archive]) -> Vec<(String, String)> {
    archives
        .iter()
        .map(|a| (a.component.clone(), a.version.clone()))
        .collect()
}

/// Layout fix-ups and the version file, so the tree describes itself; `components` are
/// what the tree is made of.
pub(crate) fn finish_tree(plan: &Plan, components: &[(String, String)], root: &Path) -> Result<()> {
    match plan.kind {
        Kind::Cuda if plan.cuda_layout => {
            assemble::finish_cuda(root, &plan.version, components)?;
            // NVIDIA's come with cuda_cudart's and cuda_nvml_dev's archives; the wheels have none.
            if stub::driver_stub(root)
                .with_context(|| format!("writing the driver stub of {}", plan.name))?
            {
                ui::verbose(format!(
                    "{}: wrote lib64/stubs/libcuda.so from its cuda.h",
                    plan.name
                ));
            }
            if stub::nvml_stub(root)
                .with_context(|| format!("writing the NVML stub of {}", plan.name))?
            {
                ui::verbose(format!("{}: wrote lib64/stubs/libnvidia-ml.so", plan.name));
            }
            if !root.join("bin/nvcc").is_file() {
                return Err(Hinted::new(format!(
                    "the archives of {} hold no bin/nvcc",
                    plan.name
                ))
                .hint("install it from another source (`--source nvidia`), or register a toolkit you have with `gpuenv link`").into());
            }
        }
        Kind::Cuda => {
            if !root.join("version.json").exists() && !root.join("version.txt").exists() {
                let text = serde_json::json!({"cuda": {"name": "CUDA SDK", "version": plan.version.to_string()}});
                // Never through a (dangling) link an archive put there.
                fsutil::write_atomic(&root.join("version.json"), format!("{text:#}\n").as_bytes())?;
            }
        }
        Kind::Rocm => {
            let info = root.join(".info/version");
            if !info.exists() {
                fsutil::write_atomic(&info, format!("{}\n", plan.version).as_bytes())?;
            }
        }
    }
    Ok(())
}
