//! What a session adds to a toolchain's environment for the machine it runs on: forward
//! compatibility's directories, conda's virtual package, the run-time libraries, and the
//! build job count from the cores and memory.

use super::*;

impl Session<'_> {
    /// A forward-compatibility directory on `LD_LIBRARY_PATH` stays unless the NVIDIA
    /// Container Toolkit's rule says this kernel driver cannot use its `libcuda`
    /// (`facts::compat_note`): then it goes, for the driver's own (first on the path, it
    /// gives error 803 and no devices). Nothing is decided without a kernel driver to compare.
    pub(super) fn for_compat(&self, active: &ActiveSet, change: &mut Change) {
        if active.get(Kind::Cuda).is_none() {
            return;
        }
        let entries = crate::path_list::split(self.ctx.var_os(vars::LD_LIBRARY_PATH));
        let compat: Vec<&std::ffi::OsString> = entries
            .iter()
            .filter(|e| {
                crate::facts::driver_dirs::is_driver_dir(e)
                    && std::path::Path::new(e).components().any(|c| {
                        let c = c.as_os_str().to_string_lossy();
                        c.starts_with("compat") || c.ends_with("-compat")
                    })
            })
            .collect();
        if compat.is_empty() {
            return;
        }
        let Some(driver) = crate::facts::driver::read_proc_version(&self.ctx.system_root()) else {
            return;
        };
        let stale: std::collections::BTreeSet<std::ffi::OsString> = compat
            .into_iter()
            .filter(|dir| {
                crate::facts::compat_note::for_dir(std::path::Path::new(dir), &driver)
                    .is_some_and(|(_, d)| !d.use_compat)
            })
            .cloned()
            .collect();
        if !stale.is_empty() {
            change.ops.push(Op::Remove(
                vars::LD_LIBRARY_PATH.into(),
                crate::plan::env::Foreign {
                    dirs: std::sync::Arc::new(stale),
                    ..Default::default()
                },
            ));
        }
    }

    /// The job count a build here runs with where the user sets none (`MAX_JOBS`,
    /// `CMAKE_BUILD_PARALLEL_LEVEL`): `None` when no toolchain is active, or the machine's
    /// memory cannot be read and nothing sets it.
    pub fn build_jobs(&self, active: &ActiveSet) -> Option<build_jobs::Chosen> {
        if active.toolchains.is_empty() {
            return None;
        }
        let file = active.project.as_ref();
        let targets = file.map_or(1, |f| {
            build_jobs::pinned_targets(&f.cuda_arch).max(f.rocm_arch.len() as u32)
        });
        let site = upstream::site_build(self.ctx);
        let machine = self.machine();
        build_jobs::jobs(
            machine.as_ref(),
            targets,
            file,
            &self.registry().build,
            &site,
        )
    }

    /// This machine as a build sees it (see [`build_jobs::Machine`]).
    pub fn machine(&self) -> Option<build_jobs::Machine> {
        machine(self.ctx)
    }

    /// conda and pixi refuse CUDA packages where they see no `__cuda` virtual package (CI
    /// runners, `docker build`): where no driver is found, the pinned toolkit's major.minor
    /// stands in. Where a driver is seen, conda's own reading of it is the truth.
    pub(super) fn for_conda(&self, active: &ActiveSet, change: &mut Change) {
        let Some(cuda) = active.get(Kind::Cuda) else {
            return;
        };
        let proc_version = self
            .ctx
            .system_root()
            .join(crate::facts::driver::PROC_VERSION.trim_start_matches('/'));
        if fs_err::symlink_metadata(&proc_version).is_ok() {
            return;
        }
        let v = &cuda.entry.version;
        change.ops.push(Op::Set(
            vars::CONDA_OVERRIDE_CUDA.into(),
            format!("{}.{}", v.major(), v.minor().unwrap_or(0)).into(),
        ));
    }

    /// What keeps programs working: the active Python environment's NVIDIA wheels are not
    /// shadowed, and where no CUDA toolchain is active, `CUDA_HOME` (unless the user set
    /// one) is what torch would guess without gpuenv's shims first on PATH. Where it would
    /// guess nothing, the shims leave PATH (true is returned): torch, CMake and every
    /// `which nvcc` then find what they would without gpuenv, never a dir in its home.
    pub(super) fn for_run_time(&self, active: &ActiveSet, change: &mut Change) -> bool {
        let ctx = self.ctx;
        let prefixes = runtime::python_prefixes(
            ctx.path_var(vars::VIRTUAL_ENV).as_deref(),
            ctx.path_var(vars::CONDA_PREFIX).as_deref(),
            ctx.var_os(vars::PATH),
        );
        // Found once, when first needed: it reads each environment's `lib/` (for a system
        // python3, all of /usr/lib), and the hook does this at every prompt after a `cd`.
        let found = std::cell::OnceCell::new();
        let sites = || found.get_or_init(|| runtime::site_packages(&prefixes));
        if !self.toolkit_libs {
            let wheels = runtime::wheel_libs_in(sites());
            for dir in runtime::leave_wheels_unshadowed(change, &wheels) {
                ui::verbose(format!(
                    "{} is left off LD_LIBRARY_PATH: it holds libraries the Python environment's NVIDIA wheels ship",
                    dir.display()
                ));
            }
        }
        let Some(cuda) = active.get(Kind::Cuda) else {
            let mut ours = vec![self.home.root.clone()];
            ours.extend(self.home.upstreams.iter().cloned());
            match runtime::torch_cuda_home(ctx.var_os(vars::PATH), &ours) {
                Some(guess) => change.ops.push(Op::Default(
                    vars::CUDA_HOME.into(),
                    guess.into_os_string(),
                    self.home.root.clone(),
                )),
                None => {
                    change.ops.push(runtime::without_shims(self.home.shims()));
                    return true;
                }
            }
            return false;
        };
        // Triton's bundled ptxas against the pinned archs (read only where both exist).
        let pins = active.project.as_ref().map(|p| p.cuda_arch.as_slice());
        let Some(pins) = pins.filter(|p| !p.is_empty()) else {
            return false;
        };
        if let Some(bin) = jit::triton_bin(sites()) {
            let ptxas = view::paths(&self.home, &cuda.name, &cuda.entry)
                .bin
                .join("ptxas");
            if ptxas.is_file() {
                let cache = self.home.ptxas_releases();
                for (var, path) in jit::triton_ptxas(
                    self.facts(),
                    &bin,
                    pins,
                    &cuda.entry.version,
                    &ptxas,
                    &cache,
                ) {
                    change.ops.push(Op::Default(
                        var.into(),
                        path.into_os_string(),
                        self.home.views(),
                    ));
                }
            }
        }
        false
    }
}

/// The cores this process may use and the memory under `ctx`'s system root.
pub fn machine(ctx: &Context) -> Option<build_jobs::Machine> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    build_jobs::Machine::read(&ctx.system_root(), u32::try_from(cores).unwrap_or(u32::MAX))
}
