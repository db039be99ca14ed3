//! The init code `gpuenv hook <shell>` prints: the scripts in `shell/`, with the gpuenv
//! binary and the shims dir filled in (quoted for the shell).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{quote, Shell};

const BASH: &str = include_str!("../../../shell/gpuenv.bash");
const ZSH: &str = include_str!("../../../shell/gpuenv.zsh");
const FISH: &str = include_str!("../../../shell/gpuenv.fish");

pub fn init_code(shell: Shell, gpuenv: &Path, shims: &Path) -> Vec<u8> {
    let q = |p: &Path| match shell {
        Shell::Bash | Shell::Zsh => quote::posix(p.as_os_str().as_bytes()),
        Shell::Fish => quote::fish(p.as_os_str().as_bytes()),
    };
    let template = match shell {
        Shell::Bash => BASH,
        Shell::Zsh => ZSH,
        Shell::Fish => FISH,
    };
    let (gpuenv, shims) = (q(gpuenv), q(shims));
    let mut out = Vec::with_capacity(template.len() + 4 * gpuenv.len());
    let mut rest = template;
    // The placeholders are ASCII; everything between them is copied as it is.
    while let Some(at) = rest.find('@') {
        out.extend_from_slice(&rest.as_bytes()[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("@GPUENV@") {
            out.extend_from_slice(&gpuenv);
            rest = after;
        } else if let Some(after) = tail.strip_prefix("@SHIMS@") {
            out.extend_from_slice(&shims);
            rest = after;
        } else {
            out.push(b'@');
            rest = &tail[1..];
        }
    }
    out.extend_from_slice(rest.as_bytes());
    out
}
