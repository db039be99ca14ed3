//! Which project a compile belongs to when torch's `load()` runs it. `load()` runs ninja in
//! `TORCH_EXTENSIONS_DIR`, which gpuenv sets to `$GPUENV_HOME/torch-extensions/<toolchain>`:
//! no toolchain file is found walking up from there, so the env plan names the project's
//! directory in `GPUENV_PROJECT_DIR` and the proxy starts the walk from it instead.
//!
//! Only inside the user's own torch-extensions directory, which only gpuenv and the user
//! write: anywhere else the variable is not read, so a value planted in an environment
//! cannot make an ordinary build take another project's settings. What the named directory's
//! file may do is then decided as for any file found walking up (owner, trust).

use std::path::{Path, PathBuf};

use crate::context::{vars, Context};

/// The directory to look for the toolchain file from, when it is not the working directory.
pub fn project_dir(ctx: &Context) -> Option<PathBuf> {
    let dir = ctx.path_var(vars::GPUENV_PROJECT_DIR)?;
    if !dir.is_absolute() {
        return None;
    }
    let extensions = ctx.own_home().ok()?.torch_extensions();
    inside(&ctx.cwd, &extensions).then_some(dir)
}

/// Whether `cwd` (the kernel's spelling, links resolved) is under `dir`, which may be
/// spelled through a link.
fn inside(cwd: &Path, dir: &Path) -> bool {
    cwd.starts_with(dir) || dir.canonicalize().is_ok_and(|d| cwd.starts_with(d))
}

/// `ctx` as seen from the project's directory, when a compile in the torch-extensions
/// directory names one: the same variables, another working directory.
pub fn from_project(ctx: &Context) -> Option<Context> {
    let dir = project_dir(ctx)?;
    Some(Context {
        cwd: dir,
        vars: ctx.vars.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(home: &Path, cwd: &Path, project: &str) -> Context {
        let mut c = Context {
            cwd: cwd.to_path_buf(),
            ..Context::default()
        };
        c.vars
            .insert(vars::GPUENV_HOME.into(), home.as_os_str().to_owned());
        c.vars
            .insert(vars::GPUENV_PROJECT_DIR.into(), project.into());
        c
    }

    #[test]
    fn the_project_dir_counts_only_inside_gpuenvs_torch_extensions() {
        let home = Path::new("/h/gpuenv");
        let jit = home.join("torch-extensions/cuda-13.0/twice");
        assert_eq!(
            project_dir(&ctx(home, &jit, "/work/proj")),
            Some(PathBuf::from("/work/proj"))
        );
        // An ordinary build directory, or one merely named alike, ignores it.
        for cwd in [
            "/work/other/build",
            "/h/gpuenv-torch-extensions",
            "/h/gpuenv",
        ] {
            assert_eq!(project_dir(&ctx(home, Path::new(cwd), "/work/proj")), None);
        }
        // A relative or empty value is not a place.
        assert_eq!(project_dir(&ctx(home, &jit, "proj")), None);
        assert_eq!(project_dir(&ctx(home, &jit, "")), None);
    }
}
