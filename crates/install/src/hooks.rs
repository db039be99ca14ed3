//! Checkpoints for crash tests: `GPUENV_TEST_HANG_AT=<stage>:<marker file>` makes a debug
//! build stop at `stage` (download, extract, assemble, register), create the marker file and
//! wait to be killed. Release builds ignore the variable.

use std::path::PathBuf;

use gpuenv_core::context::{vars, Context};

#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hang_at: Option<(String, PathBuf)>,
}

impl Hooks {
    pub fn from_ctx(ctx: &Context) -> Hooks {
        if !cfg!(debug_assertions) {
            return Hooks::default();
        }
        let hang_at = ctx
            .var_nonempty(vars::GPUENV_TEST_HANG_AT)
            .and_then(|v| v.split_once(':'))
            .map(|(stage, marker)| (stage.to_string(), ctx.cwd.join(marker)));
        Hooks { hang_at }
    }

    pub fn checkpoint(&self, stage: &str) {
        if let Some((at, marker)) = &self.hang_at {
            if at == stage {
                let _ = fs_err::write(marker, stage);
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
        }
    }
}
