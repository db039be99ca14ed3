//! That GPUENV_HOME is writable, checked before an install fetches anything.

use std::path::{Path, PathBuf};

use gpuenv_core::diagnostic::Diagnostic;
use gpuenv_core::home::Home;

#[derive(Debug, thiserror::Error)]
#[error("GPUENV_HOME ({}) is read-only: cannot create a file in {} ({cause})", home.display(), dir.display())]
pub struct ReadOnlyHome {
    pub home: PathBuf,
    pub dir: PathBuf,
    pub cause: std::io::Error,
}

impl Diagnostic for ReadOnlyHome {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "make it writable (`chmod u+w {}`), or set GPUENV_HOME to a directory you can write",
            self.home.display()
        )]
    }
}

/// Checks that installs can write where they must (GPUENV_HOME and its `toolchains/`)
/// before anything is fetched, so a read-only home is said as such.
pub fn writable_home(home: &Home) -> Result<(), ReadOnlyHome> {
    let read_only = |dir: &Path, cause: std::io::Error| ReadOnlyHome {
        home: home.root.clone(),
        dir: dir.to_path_buf(),
        cause,
    };
    for dir in [home.root.clone(), home.toolchains()] {
        let attempt = fs_err::create_dir_all(&dir).and_then(|()| tempfile::tempfile_in(&dir));
        match attempt {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                return Err(read_only(&dir, e))
            }
            // Anything else is reported where it happens, with its own message.
            Err(_) => {}
        }
    }
    Ok(())
}
