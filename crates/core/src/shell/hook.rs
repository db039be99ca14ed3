//! The init code `gpuenv hook <shell>` prints: the scripts in `shell/`, with the gpuenv
//! binary and the shims dir filled in (quoted for the shell).

use std::path::Path;

use super::{quote, Shell};

const BASH: &str = include_str!("../../shell/gpuenv.bash");
const ZSH: &str = include_str!("../../shell/gpuenv.zsh");
const FISH: &str = include_str!("../../shell/gpuenv.fish");

pub fn init_code(shell: Shell, gpuenv: &Path, shims: &Path) -> String {
    let q = |p: &Path| {
        let s = p.to_string_lossy();
        match shell {
            Shell::Bash | Shell::Zsh => quote::posix(&s),
            Shell::Fish => quote::fish(&s),
        }
    };
    let template = match shell {
        Shell::Bash => BASH,
        Shell::Zsh => ZSH,
        Shell::Fish => FISH,
    };
    template
        .replace("@GPUENV@", &q(gpuenv))
        .replace("@SHIMS@", &q(shims))
}
