//! Pinned archs against a compile's own arch flags. A build that passes its own `-gencode`
//! (a setup.py, CMake's `CUDA_ARCHITECTURES`) or `--offload-arch` makes PyTorch and CMake
//! ignore `TORCH_CUDA_ARCH_LIST` and `CUDAARCHS`, and the proxy adds nothing to a command line
//! that names archs: without this a pinned arch could be left out of the binary silently.
//!
//! `[build] archs = "warn"` (the default) says which pinned archs are missing and where they
//! are pinned; `"add"` (trusted files only) appends them to the compile, and to nvcc's device
//! link (`-dlink`, or a link of `-rdc` objects), which makes a separable build's loadable
//! image; `"off"` says nothing. Only a compile that makes device code from GPU sources is looked at
//! (`compiles_device_code`).
//!
//! Once per build: a build runs the compiler hundreds of times and has no id the proxy could
//! read (make and ninja start each compile through a shell). So the proxy keeps one empty
//! marker file per toolchain file, kind and missing set under `$GPUENV_HOME/cache/arch-notices`:
//! the message is said when there is none, or when it is older than [`QUIET`]; each compile
//! that would say it again renews the marker. A build is then a run of such compiles with
//! no gap of `QUIET`: one stat and one small write per compile, and a changed set of missing
//! archs (the flags were fixed, or another target of the build) is said at once. A marker
//! that cannot be written only means the message is said again.
//!
//! A compile whose output a frontend hides (pip, uv: [`audience`]) does not use up that
//! marker: it says the notice once per build on a marker of its own, to stderr and on the
//! terminal (`/dev/tty`) when there is one, and the next compile someone sees says it too.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::audience::{self, Audience};
use crate::context::Context;
use crate::facts::arch::{
    compiles_device_code, device_links, hipcc_missing, missing_name, nvcc_missing,
};
use crate::fsutil;
use crate::project::{ArchPolicy, Location, ProjectFile};
use crate::store::toolchain::Kind;
use crate::ui;

/// How long without a compile that misses the same archs before it is said again.
pub const QUIET: Duration = Duration::from_secs(30 * 60);

/// The pinned archs a compile misses: how they are named, where each is pinned, and the
/// arguments that would add them.
struct Missing {
    names: Vec<String>,
    pinned_at: Vec<Location>,
    flags: Vec<OsString>,
}

fn missing(kind: Kind, file: &ProjectFile, args: &[OsString]) -> Option<Missing> {
    let mut m = Missing {
        names: Vec::new(),
        pinned_at: Vec::new(),
        flags: Vec::new(),
    };
    match kind {
        Kind::Cuda => {
            for (i, arch) in nvcc_missing(args, &file.cuda_arch)? {
                m.names.push(missing_name(&arch));
                m.pinned_at.extend(file.cuda_arch_at.get(i).cloned());
                for code in arch.gencode() {
                    m.flags.push("-gencode".into());
                    m.flags.push(code.into());
                }
            }
        }
        Kind::Rocm => {
            for (i, target) in hipcc_missing(args, &file.rocm_arch)? {
                m.names.push(target.to_string());
                m.pinned_at.extend(file.rocm_arch_at.get(i).cloned());
                m.flags.push(format!("--offload-arch={target}").into());
            }
        }
    }
    (!m.names.is_empty()).then_some(m)
}

/// `args` as the project's `[build] archs` has them: unchanged, said about once per build,
/// or with the missing pinned archs appended.
pub fn reach(
    ctx: &Context,
    tool: &str,
    kind: Kind,
    file: Option<&ProjectFile>,
    mut args: Vec<OsString>,
) -> Vec<OsString> {
    let Some(file) = file else { return args };
    let (policy, policy_at) = file.archs_policy();
    if policy == ArchPolicy::Add && kind == Kind::Cuda && device_links(&args) {
        // The compiles said what they leave out; the device link only gets the same targets,
        // or a separable build's loadable image lacks what its objects hold.
        if let Some(m) = missing(kind, file, &args) {
            args.extend(m.flags);
        }
        return args;
    }
    if policy == ArchPolicy::Off || !compiles_device_code(kind == Kind::Cuda, &args) {
        return args;
    }
    let Some(m) = missing(kind, file, &args) else {
        return args;
    };
    let names = m.names.join(", ");
    let pinned: Vec<String> = m.pinned_at.iter().map(ToString::to_string).collect();
    let flags: Vec<String> = m
        .flags
        .iter()
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    let add = policy == ArchPolicy::Add;
    let key = format!("{}\0{kind}\0{names}\0{add}", file.path.to_string_lossy());
    // A build whose output a frontend hides (pip, uv) keeps the build's marker for the next
    // compile someone sees, and says it once on its own marker: to stderr (`pip -v`, a
    // failed build's log) and on the terminal.
    let hidden = audience::of(ctx) == Audience::Hidden;
    let marker = if hidden {
        format!("{key}\0hidden")
    } else {
        key
    };
    if first_in_build(ctx, &marker, SystemTime::now()) {
        if hidden {
            let line = format!(
                "gpuenv: {tool} in a build whose output is hidden: its own arch flags leave out {names}, pinned at {}; {}",
                pinned.join(", "),
                if add {
                    format!("gpuenv adds {}", flags.join(" "))
                } else {
                    "its binaries will have no code for them (said again at the next compile you see)".to_string()
                }
            );
            audience::to_terminal(&format!("{}\n", ui::printable(&line)));
        }
        if add {
            let at = policy_at.map(|a| format!(" at {a}")).unwrap_or_default();
            ui::info(format!(
                "{tool}: this build's own arch flags leave out {names} (pinned at {}); gpuenv adds {} to its compiles ([build] archs = \"add\"{at})",
                pinned.join(", "),
                flags.join(" ")
            ));
        } else {
            let file_name = ui::printable(&file.path.to_string_lossy()).into_owned();
            // An untrusted file's `add` is held back: say so, or the hint reads as a fix.
            let once = if file.is_trusted() {
                ""
            } else {
                " (applied once you `gpuenv trust` it)"
            };
            ui::warn_with_hints(
                format!(
                    "{tool}: this build's own arch flags leave out {names}, pinned at {}: its binaries will have no code for {}",
                    pinned.join(", "),
                    if m.names.len() == 1 { "that arch" } else { "those archs" }
                ),
                [
                    format!("add `{}` to the build's flags, or set `[build] archs = \"add\"` in {file_name}{once} and gpuenv adds them", flags.join(" ")),
                    format!("said once per build (again after {} minutes without such a compile); `[build] archs = \"off\"` silences it", QUIET.as_secs() / 60),
                ],
            );
        }
    }
    if add {
        args.extend(m.flags);
    }
    args
}

/// Whether no compile said this in the last [`QUIET`]; renews the marker either way.
fn first_in_build(ctx: &Context, key: &str, now: SystemTime) -> bool {
    let Ok(home) = ctx.own_home() else {
        return true;
    };
    let dir = home.arch_notices();
    let marker = dir.join(&fsutil::content_hash(key.as_bytes())[..32]);
    let recent = fs_err::symlink_metadata(&marker)
        .ok()
        .filter(|m| m.is_file())
        .and_then(|m| m.modified().ok())
        .and_then(|t| now.duration_since(t).ok())
        .is_some_and(|age| age < QUIET);
    renew(&dir, &marker);
    !recent
}

fn renew(dir: &Path, marker: &Path) {
    if fs_err::create_dir_all(dir).is_ok() {
        let _ = fsutil::write_atomic(marker, b"");
    }
}
