//! Every environment variable gpuenv reads or sets, with who does and one line on what it
//! is: the one list the env plan, the proxy, the doctor and `docs/variables.md` (generated
//! from it) use. Each name is a constant spelled as the variable, so a variable gpuenv
//! handles cannot be left out of the list. Bottom layer: imports nothing from the crate.

/// Whether gpuenv reads a variable, sets it, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    Read,
    Set,
    Both,
}

impl Use {
    pub fn as_str(self) -> &'static str {
        match self {
            Use::Read => "read",
            Use::Set => "set",
            Use::Both => "read, set",
        }
    }
}

/// One variable: its name, whether gpuenv reads or sets it, which parts do, and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Var {
    pub name: &'static str,
    pub uses: Use,
    pub by: &'static str,
    pub doc: &'static str,
    /// The heading it is listed under in `docs/variables.md`.
    pub section: &'static str,
    /// A yes/no variable: [`YES`] or [`NO`] (any case), anything else is an error.
    pub yes_no: bool,
}

/// The words a yes/no variable takes for yes, and for no (any case; empty is unset). What
/// uv's boolish variables take; any other value is an error naming the variable, as uv's
/// is, never a silent "no".
pub const YES: [&str; 6] = ["1", "true", "yes", "on", "y", "t"];
pub const NO: [&str; 6] = ["0", "false", "no", "off", "n", "f"];

/// `NAME: Use, "by", "doc";` under section headings (`NAME: Use yes/no, …` for a yes/no
/// variable): a constant per variable (its doc line is the constant's doc) and [`ALL`], in
/// the order given.
macro_rules! registry {
    (@yes_no) => { false };
    (@yes_no $yes:ident) => { true };
    ($($section:literal { $($name:ident: $uses:ident $($yes:ident/no)?, $by:literal, $doc:literal;)* })*) => {
        $($(
            #[doc = $doc]
            #[allow(non_upper_case_globals)]
            pub const $name: &str = stringify!($name);
        )*)*
        /// Every variable gpuenv reads or sets, by section.
        pub const ALL: &[Var] = &[$($(Var {
            name: stringify!($name),
            uses: Use::$uses,
            by: $by,
            doc: $doc,
            section: $section,
            yes_no: registry!(@yes_no $($yes)?),
        },)*)*];
    };
}

registry! {
    "gpuenv's own settings" {
        GPUENV_HOME: Read, "every command, the proxy", "gpuenv's state directory (default `$XDG_DATA_HOME/gpuenv`, else `~/.local/share/gpuenv`); an absolute path, a relative one is refused.";
        XDG_DATA_HOME: Read, "every command, the proxy", "Where the default `GPUENV_HOME` is (`$XDG_DATA_HOME/gpuenv`); a relative path is ignored, as the XDG spec says.";
        HOME: Read, "every command, the proxy", "The account's home (without it, the password database's: a SLURM step with `--export=NONE`).";
        GPUENV_TOOLCHAIN: Both, "resolution; set by `gpuenv use`", "Comma-separated specs active in this shell: above the toolchain file, below `+spec` and `gpuenv run`.";
        GPUENV_UPSTREAMS: Read, "the registry", "Other gpuenv homes (a site's shared store), colon-separated, used read-only.";
        GPUENV_SYSTEM_CONFIG: Read, "the registry", "The system config naming upstreams (default `/etc/gpuenv/config.toml`).";
        GPUENV_DISCOVER_ROOTS: Read, "`gpuenv discover`", "Roots to search instead of `/`, colon-separated.";
        GPUENV_TORCH_CHECK: Read, "the proxy, `check`, `doctor`", "The torch guard's policy: `minor` (default), `major` or `off`; over `[torch] check`.";
        GPUENV_STALE_CHECK: Read, "the proxy", "`off`: compile in a build directory (CMake tree, PyTorch extension build) configured for another CUDA toolkit than the active one, instead of refusing (default `on`).";
        GPUENV_TORCH_INDEX_URL: Read, "the env plan, the guard, `torch index`, the doctor", "Where PyTorch's wheel indexes live (a mirror of `https://download.pytorch.org/whl`); over `[torch] index-url` in the settings and the site config. Every index gpuenv names or exports is under it.";
        GPUENV_BUILD_CACHE: Read, "the proxy, `show`", "The compiler cache the proxy compiles through: `ccache`, `sccache` or `off`; over `[build] cache`.";
        GPUENV_AUTO_INSTALL: Read yes/no, "the proxy, the shell hook", "Yes: a shim or the shell hook installs a pinned toolkit that is missing instead of failing.";
        GPUENV_PROLOG_INSTALL: Read, "`env --shell slurm` (the TaskProlog)", "`locked`: in a project with a gpuenv.lock, the SLURM TaskProlog installs a locked toolchain the node does not have (as `install --locked`: the download cache first, then its source) when the user trusted its gpuenv.toml; unset, it only compares and refuses.";
        GPUENV_PROBE_TIMEOUT: Read, "every command, the proxy, the shell hook", "Seconds a program gpuenv asks something (`g++ --version`, `nvidia-smi`) may take before it is stopped (default 10).";
        GPUENV_LOG: Read, "every command, the proxy", "How much to say: `quiet`, `info` (default) or `verbose`; `-q` and `-v` win over it.";
        NO_COLOR: Read, "every command (through anstream)", "Set and not empty: no colour, even on a terminal.";
        GPUENV_DOCTOR_ROOT: Read, "`doctor`, `torch index`, the build job count", "The root under which `doctor` reads `/proc`, `/dev` and `/.dockerenv`, `torch index` a Jetson's `/etc/nv_tegra_release` and device tree, and the build job count `/proc/meminfo` and the cgroup's `memory.max` (default `/`).";
        GPUENV_SHELL: Both, "the hook scripts; `gpuenv use`", "The shell the hook runs in: `gpuenv use` prints that shell's code.";
        GPUENV_SHIM_DEPTH: Both, "the proxy", "How many gpuenv proxies are running in a chain; the proxy stops at 3.";
        __GPUENV_STATE: Both, "the shell hook", "What the hook changed (each variable's value before and after) and what its result depended on.";
        PWD: Read, "the shell hook", "The shell's directory: the prompt's fast path is armed only where it is the directory resolved.";
    }
    "Installing" {
        GPUENV_CUDA_MIRROR: Read, "`install`", "NVIDIA's redist root: a URL, a `file://` URL or a directory.";
        GPUENV_PYPI_URL: Read, "`install`", "The package index of the `pypi` source; else `PIP_INDEX_URL`; else PyPI.";
        PIP_INDEX_URL: Read, "`install`", "pip's index, used when `GPUENV_PYPI_URL` is unset.";
        GPUENV_ROCM_INDEX_URL: Read, "`install`", "The package index of AMD's ROCm wheels (the `amd` source): a mirror, AMD's nightly or a per-family index; else `[rocm] index-url` in the settings or the site config; else AMD's multi-arch release index.";
        GPUENV_DOWNLOAD_CACHE: Read, "`install`, `cache`", "The download cache (default `$GPUENV_HOME/downloads`); an absolute path, a relative one is refused.";
        GPUENV_KEEP_ARCHIVES: Read yes/no, "`install`", "Yes: keep each archive after it is unpacked (a mirror of what was fetched).";
        GPUENV_HTTP_TIMEOUT: Read, "`install`", "Seconds to wait for data before a download counts as timed out (default 60).";
        HTTPS_PROXY: Read, "`install`", "The proxy for HTTPS downloads.";
        https_proxy: Read, "`install`", "The same as `HTTPS_PROXY`, which wins.";
        HTTP_PROXY: Read, "`install`", "The proxy for HTTP downloads.";
        http_proxy: Read, "`install`", "The same as `HTTP_PROXY`, which wins.";
        ALL_PROXY: Read, "`install`", "The proxy for downloads when no proxy of their scheme is set.";
        all_proxy: Read, "`install`", "The same as `ALL_PROXY`, which wins.";
        NO_PROXY: Read, "`install`", "Hosts reached without a proxy.";
        no_proxy: Read, "`install`", "The same as `NO_PROXY`, which wins.";
        GPUENV_TEST_HANG_AT: Read, "`install` (debug builds only)", "Stop at an install stage, for crash tests: `<stage>:<marker file>`.";
        GPUENV_TEST_PAUSE_AT: Read, "`install` (debug builds only)", "Wait at an install stage until the marker file is deleted.";
    }
    "A toolchain's environment" {
        CUDA_HOME: Both, "the env plan; `doctor`", "The active CUDA toolkit's view (its guarded mirror). Where no CUDA toolchain is active and the user set none: what torch would guess without gpuenv's shims on PATH (`dirname(dirname(which nvcc))` outside gpuenv's home, else `/usr/local/cuda`), so torch never takes gpuenv's home for a toolkit.";
        CUDA_PATH: Both, "the env plan; `doctor`", "The same as `CUDA_HOME`.";
        CUDAToolkit_ROOT: Set, "the env plan", "The same as `CUDA_HOME`, for CMake's `FindCUDAToolkit`.";
        CUDACXX: Set, "the env plan", "The view's `bin/nvcc`, CMake's CUDA compiler.";
        PYTORCH_NVCC: Both, "the env plan", "Never set, so torch runs `$CUDA_HOME/bin/nvcc` (the proxy) behind its own ccache; the user's value is kept, one an older gpuenv set (a view's nvcc) is removed.";
        CUDAHOSTCXX: Set, "the env plan", "The host compiler chosen for nvcc, when one is.";
        NCCL_ROOT: Both, "the env plan; `doctor`", "NCCL in or beside the CUDA toolkit.";
        NCCL_INCLUDE_DIR: Both, "the env plan; `doctor`", "NCCL's headers.";
        NCCL_LIB_DIR: Both, "the env plan; `doctor`", "NCCL's libraries.";
        ROCM_PATH: Both, "the env plan; `doctor`", "The active ROCm tree's view.";
        ROCM_HOME: Both, "the env plan; `doctor`", "The same as `ROCM_PATH`.";
        HIP_PATH: Both, "the env plan; `doctor`", "The same as `ROCM_PATH`.";
        HIP_PLATFORM: Set, "the env plan", "`amd` when a ROCm tree is active.";
        RCCL_HOME: Both, "the env plan; `doctor`", "RCCL in or beside the ROCm tree.";
        TORCH_EXTENSIONS_DIR: Both, "the env plan", "One directory per toolchain for JIT-built torch extensions, unless the user set one: in the own gpuenv home; an exported module file computes `$HOME/.cache/gpuenv/torch-extensions/<toolchain>` when loaded.";
        TRITON_CACHE_DIR: Both, "the env plan", "Triton's kernel cache, one directory per CUDA toolchain (`$GPUENV_HOME/jit/triton/<name>`; an exported module file computes `$HOME/.cache/gpuenv/jit/triton/<name>` when loaded), unless the user set one.";
        CUPY_CACHE_DIR: Both, "the env plan", "CuPy's kernel cache, one directory per CUDA toolchain (`$GPUENV_HOME/jit/cupy/<name>`; an exported module file computes `$HOME/.cache/gpuenv/jit/cupy/<name>` when loaded), unless the user set one.";
        FLASHINFER_WORKSPACE_BASE: Both, "the env plan", "The parent of FlashInfer's JIT cache (`.cache/flashinfer`), one directory per CUDA toolchain (`$GPUENV_HOME/jit/flashinfer/<name>`; an exported module file computes `$HOME/.cache/gpuenv/jit/flashinfer/<name>` when loaded): nothing built with one toolkit is loaded with another (flashinfer#3229). Unless the user set one.";
        TRITON_PTXAS_PATH: Both, "the env plan", "The active toolkit's `ptxas` (its view's), where a pinned arch below sm_90 (any arch, for a Triton without `ptxas-blackwell`) is one Triton's bundled `ptxas` cannot build and the toolkit's can; the bundled one's release is read once per file (`ptxas --version`). Unless the user set one.";
        TRITON_PTXAS_BLACKWELL_PATH: Both, "the env plan", "The same for Triton's `ptxas-blackwell` (Triton 3.9+, sm_90 and newer).";
        GPUENV_PROJECT_DIR: Both, "the env plan; the proxy", "The directory of the toolchain file in effect. The proxy reads it only when it compiles inside gpuenv's own `torch-extensions` directory (torch's `load()`), where no toolchain file is found walking up, so the project's pins and `[build]` settings apply there too.";
        GPUENV_ACTIVE: Set, "the env plan", "The active toolchains' names, comma-separated (for prompts).";
        PIP_EXTRA_INDEX_URL: Set, "the env plan", "The PyTorch wheel index of the pinned toolkit, for pip (a trusted file's `[torch] index = \"auto\"`), put first in the list: the user's own extra indexes stay after it.";
        UV_TORCH_BACKEND: Set, "the env plan", "The same index's name (`cu132`), for uv (a trusted file's `[torch] index = \"auto\"`).";
        UV_INDEX: Set, "the env plan", "The same index, named `pytorch`, for `uv lock`, `uv sync` and `uv add`, which ignore `UV_TORCH_BACKEND` (a trusted file's `[torch] index = \"auto\"`). uv asks it before PyPI and before a project's own `[[tool.uv.index]]`, so torch comes from it, and uv.lock records its URL, so a changed pin re-resolves. Put first in the list: the user's own indexes (a company index) stay after it.";
        CONDA_OVERRIDE_CUDA: Set, "the env plan", "The pinned CUDA toolkit's major.minor, where no NVIDIA driver is found, so conda and pixi see a `__cuda` virtual package (CI runners, `docker build`). Never set where a driver is seen.";
    }
    "Path lists gpuenv edits" {
        PATH: Both, "the env plan, the proxy, `doctor`", "The view's `bin` first; other toolkits' entries removed; the shims dir ahead of all.";
        LD_LIBRARY_PATH: Both, "the env plan, `doctor`", "The toolkit's library dir first, unless it holds a library the active Python environment's NVIDIA wheels ship (`gpuenv run --toolkit-libs` puts it there anyway); other toolkits' entries removed; driver and forward-compatibility dirs (`…/compat*`, `/usr/local/nvidia/lib*`, `/.singularity.d/libs`, `/usr/lib/wsl/lib`) never removed. `doctor` names each wheel library an entry shadows (FM-14).";
        LIBRARY_PATH: Both, "the env plan, `doctor`", "The CUDA toolkit's library dir first, for the linker.";
        CPATH: Both, "the env plan, `doctor`", "The toolkit's `include` first.";
        CMAKE_PREFIX_PATH: Both, "the env plan", "The ROCm tree's view first.";
    }
    "Arch pins" {
        TORCH_CUDA_ARCH_LIST: Both, "the env plan; `doctor`", "The `cuda-arch` pin, `;`-separated, as torch's builds read it.";
        CUDAARCHS: Set, "the env plan", "The `cuda-arch` pin in CMake's spelling (`86-real;90`).";
        PYTORCH_ROCM_ARCH: Both, "the env plan; `doctor`", "The `rocm-arch` pin, `;`-separated.";
        GPU_TARGETS: Set, "the env plan", "The `rocm-arch` pin, for CMake's HIP builds.";
        HCC_AMDGPU_TARGET: Set, "the env plan", "The `rocm-arch` pin, comma-separated, for the hipcc of ROCm 5.x and older.";
    }
    "Build parallelism" {
        MAX_JOBS: Both, "the env plan, the proxy, `show`", "Compile jobs a build runs at once (torch's `cpp_extension`, many `setup.py`s): set from the cores and the memory per job for the pinned archs where the user has not set it; a user's value stays and sizes the proxy's `--threads`.";
        CMAKE_BUILD_PARALLEL_LEVEL: Both, "the env plan, `show`", "CMake's default `--build --parallel` jobs: the same count as `MAX_JOBS`, where the user has not set it.";
        NVCC_THREADS: Read, "the proxy, `show`", "Target archs one nvcc compiles at once: the proxy passes `--threads` with it to a multi-arch compile whose command line has no `--threads`/`-t`.";
    }
    "Read to decide, never set" {
        CONDA_PREFIX: Read, "`discover`, the torch guard", "The active conda environment: searched for toolkits, for torch and for NVIDIA's CUDA wheels.";
        VIRTUAL_ENV: Read, "the torch guard, `torch` pins, `discover`", "The active venv: where torch and NVIDIA's CUDA wheels are looked for first, and the ROCm of AMD's wheels `discover` finds.";
        MODULEPATH: Read, "`discover --modules`", "Directories of module files (Lmod, Environment Modules).";
        _LMFILES_: Read, "the env plan, `doctor`", "The module files loaded now: a loaded toolkit's entries count as another toolkit's.";
        LOADEDMODULES: Read, "`env`, `doctor`", "The names of the modules loaded now, in `_LMFILES_`'s order.";
        NVCC_CCBIN: Read, "the proxy", "A host compiler the user gives nvcc: the proxy then adds no `-ccbin`.";
        NVCC_PREPEND_FLAGS: Read, "the proxy", "Flags nvcc adds in front: a `-ccbin` there is the user's choice.";
        NVCC_APPEND_FLAGS: Read, "the proxy", "Flags nvcc adds at the end: a `-ccbin` there is the user's choice.";
        CUDA_VISIBLE_DEVICES: Read, "`doctor`", "Which GPUs torch sees, for the arch check.";
        PYTHONPATH: Read, "`doctor`", "Searched for a torch that shadows the venv's.";
        SLURM_JOB_ID: Read, "`doctor`", "Set inside a SLURM allocation.";
        SLURMD_NODENAME: Read, "`doctor`", "The node a SLURM task runs on.";
        SLURM_EXPORT_ENV: Read, "`doctor`", "How a SLURM job passes the submitting shell's environment on.";
        SLURM_JOB_NUM_NODES: Read, "`doctor --all-nodes`", "How many nodes the allocation has: one report is expected from each.";
        PIP_BUILD_TRACKER: Read, "the proxy", "Set by pip while it builds a package: the build's output is hidden unless it fails, so the arch-loss notice is not used up there.";
        _PYPROJECT_HOOKS_BUILD_BACKEND: Read, "the proxy", "Set in a PEP 517 build backend run by pip, `build` or another frontend that captures its output: as `PIP_BUILD_TRACKER`.";
        SLURM_STEP_ID: Read, "`env --shell slurm` (the TaskProlog)", "The step a task belongs to: a prolog that would refuse the task asks `scontrol show step` whether the step runs gpuenv itself, which it lets run.";
        SLURM_TIME_FORMAT: Set, "`uninstall`, reaping retired toolchains (asking `squeue`)", "`%s` for `squeue`, so the start times of running jobs come as seconds since the epoch.";
        LC_ALL: Set, "version detection", "`C` for the tools whose output gpuenv parses (`nvcc --version`).";
    }
    "CI runners and installs" {
        GITHUB_ENV: Read, "`env --shell github`", "The file a GitHub Actions step appends `NAME=value` lines to for the next steps.";
        GITHUB_PATH: Read, "`env --shell github`", "The file a GitHub Actions step appends directories to, each put first on the next steps' PATH.";
    }
}

/// The path lists gpuenv edits.
pub const PATH_LISTS: [&str; 5] = [
    PATH,
    LD_LIBRARY_PATH,
    LIBRARY_PATH,
    CPATH,
    CMAKE_PREFIX_PATH,
];

/// The variable `name`, if gpuenv reads or sets it.
pub fn find(name: &str) -> Option<&'static Var> {
    ALL.iter().find(|v| v.name == name)
}

/// `docs/variables.md`: every variable, by section, as one table each.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Environment variables\n\n\
         Every variable gpuenv reads or sets, and which part of it does. Generated from\n\
         `crates/core/src/facts/vars.rs`; after changing that list run\n\
         `UPDATE_DOCS=1 cargo test -p gpuenv-core --lib variables_md`.\n",
    );
    let mut section = "";
    for v in ALL {
        if v.section != section {
            section = v.section;
            out.push_str(&format!(
                "\n## {section}\n\n| Variable | gpuenv | By | What |\n|---|---|---|---|\n"
            ));
        }
        let values = if v.yes_no {
            format!(
                " Yes/no: {} for yes, {} for no (any case); another value is an error.",
                words(&YES),
                words(&NO)
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {}{values} |\n",
            v.name,
            v.uses.as_str(),
            v.by,
            v.doc
        ));
    }
    out
}

/// `` `1`, `true` or `t` ``.
fn words(list: &[&str]) -> String {
    let quoted: Vec<String> = list.iter().map(|w| format!("`{w}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once_with_a_doc_line() {
        for (i, v) in ALL.iter().enumerate() {
            assert!(
                !ALL[..i].iter().any(|w| w.name == v.name),
                "{} twice",
                v.name
            );
            assert!(
                v.doc.ends_with('.') && !v.doc.contains('\n') && !v.by.is_empty(),
                "{v:?}"
            );
        }
        assert_eq!(find("CUDA_HOME").map(|v| v.uses), Some(Use::Both));
        assert_eq!(find("_LMFILES_").map(|v| v.uses), Some(Use::Read));
        assert_eq!(find("NCCL_DEBUG"), None);
    }

    /// `docs/variables.md` is this list, rendered; `UPDATE_DOCS=1` writes it.
    #[test]
    fn docs_variables_md_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/variables.md");
        let want = markdown();
        if std::env::var_os("UPDATE_DOCS").is_some_and(|v| !v.is_empty()) {
            fs_err::write(&path, &want).unwrap();
        }
        let have = fs_err::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/variables.md is not what crates/core/src/facts/vars.rs lists: run \
             `UPDATE_DOCS=1 cargo test -p gpuenv-core --lib variables_md` and commit the file"
        );
    }
}
