//! Checkpoints for crash and race tests, in debug builds only (release builds ignore the
//! variables): at a stage (download, extract, assemble, register),
//! `GPUENV_TEST_HANG_AT=<stage>:<marker file>` creates the marker file and waits to be
//! killed; `GPUENV_TEST_PAUSE_AT=<stage>:<marker file>` creates it and goes on once the test
//! deletes it.

use std::path::PathBuf;

use gpuenv_core::context::{vars, Context};

#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hang_at: Option<(String, PathBuf)>,
    pause_at: Option<(String, PathBuf)>,
}

impl Hooks {
    pub fn from_ctx(ctx: &Context) -> Hooks {
        if !cfg!(debug_assertions) {
            return Hooks::default();
        }
        let read = |var| {
            ctx.var_nonempty(var)
                .and_then(|v| v.split_once(':'))
                .map(|(stage, marker)| (stage.to_string(), ctx.cwd.join(marker)))
        };
        Hooks {
            hang_at: read(vars::GPUENV_TEST_HANG_AT),
            pause_at: read(vars::GPUENV_TEST_PAUSE_AT),
        }
    }

    pub fn checkpoint(&self, stage: &str) {
        let at = |hook: &Option<(String, PathBuf)>| {
            hook.as_ref()
                .filter(|(s, _)| s == stage)
                .map(|(_, marker)| marker.clone())
        };
        if let Some(marker) = at(&self.hang_at) {
            let _ = fs_err::write(&marker, stage);
            loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        }
        if let Some(marker) = at(&self.pause_at) {
            let _ = fs_err::write(&marker, stage);
            while marker.exists() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}
