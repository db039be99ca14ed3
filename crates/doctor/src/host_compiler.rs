//! FM-10: the host compiler nvcc will use, compared with the GCC range the active CUDA
//! release supports (`unsupported GNU version! gcc versions later than 11 are not
//! supported!`). The compiler is the `-ccbin` in NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS, else
//! NVCC_CCBIN, else the one gpuenv's proxy passes (the `host-compiler` pin, or a `g++-N` the
//! toolkit accepts when the default is too new), else `gcc` on PATH.

use std::path::{Path, PathBuf};

use super::{Check, Finding, Inputs, Machine, Notes, Status};
use gpuenv_core::diagnostic::Diagnostic;
use gpuenv_core::facts::{self, lookup, release_name, GccRange};
use gpuenv_core::host_compiler::{parse_gcc_version, user_choice, Choice, HostCompilerProblem};
use gpuenv_core::install_hint;
use gpuenv_core::toolchain::Kind;

pub const CHECK: Check = Check {
    id: "FM-10",
    name: "host-compiler",
};

/// The host compiler nvcc runs and what chose it; `Err` when a `-ccbin` names a compiler
/// that does not exist (nvcc will fail on it), `Ok(None)` when there is no gcc at all.
fn host_compiler(
    m: &Machine,
    gpuenv: Option<&Choice>,
) -> Result<Option<(PathBuf, String)>, HostCompilerProblem> {
    let Some((value, from)) = user_choice(|k| m.var(k)) else {
        return match gpuenv {
            Some(Choice::Use { compiler, why }) => Ok(Some((
                compiler.clone(),
                format!("passed by gpuenv as -ccbin: {why}"),
            ))),
            Some(problem @ Choice::PinMissing { .. }) => {
                Err(problem.problem().expect("a missing pin is a problem"))
            }
            _ => Ok(m.which("gcc").map(|gcc| (gcc, "gcc on PATH".into()))),
        };
    };
    let p = PathBuf::from(&value);
    let exe = if p.is_dir() {
        Some(p.join("gcc"))
    } else if value.contains('/') {
        Some(p).filter(|p| p.is_file())
    } else {
        m.which(&value)
    };
    match exe {
        Some(exe) => Ok(Some((exe, from))),
        None => Err(HostCompilerProblem::NoSuchCompiler { from, value }),
    }
}

/// Whether nvcc picks its host compiler itself (no -ccbin anywhere, no NVCC_CCBIN).
fn chose_default(m: &Machine, gpuenv: Option<&Choice>) -> bool {
    user_choice(|k| m.var(k)).is_none() && !matches!(gpuenv, Some(Choice::Use { .. }))
}

/// The command that installs g++ on this machine's distribution (from /etc/os-release).
fn install_gxx(m: &Machine) -> String {
    let release = m.read("/etc/os-release").unwrap_or_default();
    let ids: Vec<String> = release
        .lines()
        .filter_map(|l| l.strip_prefix("ID=").or_else(|| l.strip_prefix("ID_LIKE=")))
        .flat_map(|v| {
            v.trim_matches('"')
                .split(' ')
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let is = |names: &[&str]| ids.iter().any(|id| names.contains(&id.as_str()));
    if is(&["debian", "ubuntu"]) {
        "install g++: sudo apt-get install g++".into()
    } else if is(&["fedora", "rhel", "centos"]) {
        "install g++: sudo dnf install gcc-c++".into()
    } else if is(&["suse", "opensuse"]) {
        "install g++: sudo zypper install gcc-c++".into()
    } else if is(&["arch"]) {
        "install g++: sudo pacman -S gcc".into()
    } else if is(&["alpine"]) {
        "install g++: apk add g++".into()
    } else {
        "install g++ (Debian/Ubuntu: sudo apt-get install g++; Fedora/RHEL: sudo dnf install gcc-c++; without root: conda install -c conda-forge gxx)".into()
    }
}

pub fn run(inputs: &Inputs) -> Finding {
    let Some(t) = inputs.active(Kind::Cuda) else {
        return CHECK.skip("no CUDA toolchain is active here");
    };
    let m = &inputs.machine;
    let chosen = host_compiler(m, inputs.active.host_compiler.as_ref());
    // nvcc compiles CUDA sources as C++: without -ccbin it needs g++ (gcc's C++ front end),
    // and without it every compile stops at "Failed to preprocess host compiler properties".
    if chose_default(m, inputs.active.host_compiler.as_ref()) && m.which("g++").is_none() {
        let mut notes = Notes::default();
        let have_gcc = if m.which("gcc").is_some() {
            "gcc is on PATH but g++ is not"
        } else {
            "neither g++ nor gcc is on PATH"
        };
        notes.problem(
            Status::Error,
            format!(
                "{have_gcc}: {}'s nvcc has no host compiler and stops with \"Failed to preprocess host compiler properties\"",
                t.name
            ),
        );
        notes.hint(install_gxx(m));
        if let Some(row) = lookup::gcc(&inputs.facts, t.entry.version.release()).known() {
            notes.hint(format!(
                "CUDA {} supports gcc <= {}: if your distribution's g++ is newer, install g++-{} and build with `export NVCC_PREPEND_FLAGS='-ccbin g++-{}'`",
                release_name(row.release),
                row.value.max,
                row.value.max,
                row.value.max
            ));
        }
        return notes.finish(CHECK, "");
    }
    let (cc, from) = match chosen {
        Ok(Some(found)) => found,
        Ok(None) => return CHECK.skip("no host compiler found (no gcc on PATH, no -ccbin)"),
        Err(problem) => {
            let mut notes = Notes::default();
            notes.problem(Status::Error, problem.to_string());
            for hint in problem.hints() {
                notes.hint(hint);
            }
            return notes.finish(CHECK, "");
        }
    };
    // Asked afresh, not through the proxy's cache (`host_compiler::cache`): the doctor is
    // what a user runs when a build fails, so it reports a compiler that fails or hangs on
    // `--version` (the cache keeps only answers that succeeded), runs it with the machine's
    // environment and a timeout, and checks a user's -ccbin the proxy never asks about.
    // Once per doctor run, its cost does not matter.
    let text = match m.run(&cc, &["--version"]) {
        Ok(t) => t,
        Err(e) => return CHECK.skip(e.to_string()),
    };
    let Some(version) = parse_gcc_version(&text) else {
        return CHECK.skip(format!(
            "{} is not GCC; only GCC ranges are checked",
            cc.display()
        ));
    };
    let cuda = &t.entry.version;
    let header = t.entry.include_dir.join(facts::tree::HOST_CONFIG);
    let (range, exact, rel) = match (
        facts::tree::gcc_max(&t.entry.include_dir),
        lookup::gcc(&inputs.facts, cuda.release()).known(),
    ) {
        (Some(max), row) => (
            GccRange {
                min: row.and_then(|r| r.value.min),
                max,
            },
            true,
            cuda.truncated(2).to_string(),
        ),
        (None, Some(row)) => (*row.value, row.exact, release_name(row.release)),
        (None, None) => {
            let why = match gpuenv_core::host_compiler::gcc_range(&inputs.facts, cuda, None) {
                Err(why) => why.to_string(),
                Ok(_) => format!("gpuenv's data does not cover CUDA {cuda}"),
            };
            return CHECK.skip(why);
        }
    };
    let mut notes = Notes::default();
    notes.seen(format!("{} ({from}): gcc {version}", cc.display()));
    if header.is_file() && exact {
        notes.seen(format!(
            "{} accepts gcc <= {} ({})",
            t.name,
            range.max,
            header.display()
        ));
    } else if !exact {
        notes.seen(format!(
            "CUDA {cuda} has no row of its own in gpuenv's data: compared with CUDA {rel}'s range"
        ));
    }
    let major = version.major();
    let name = Path::new(&cc)
        .file_name()
        .map_or("gcc".into(), |n| n.to_string_lossy().into_owned());
    if major > range.max {
        let status = if exact { Status::Error } else { Status::Warn };
        notes.problem(
            status,
            format!(
                "{name} {version} is newer than {} supports (gcc <= {}): nvcc stops with \"unsupported GNU version! gcc versions later than {} are not supported!\"",
                t.name, range.max, range.max
            ),
        );
        notes.hint(format!(
            "install g++-{max} and build with it: export NVCC_PREPEND_FLAGS='-ccbin g++-{max}' (CMake: CUDAHOSTCXX=g++-{max})",
            max = range.max
        ));
        if let Some(newer) = lookup::first_cuda_for_gcc(&inputs.facts, major) {
            let newer = release_name(newer);
            notes.hint(format!(
                "or use a toolkit that supports gcc {major}: {} and `gpuenv pin cuda-{newer}`",
                install_hint::get_cuda(&newer)
            ));
        }
    } else if let Some(min) = range.min.filter(|min| major < *min) {
        notes.problem(
            Status::Error,
            format!(
                "{name} {version} is older than {} supports (gcc >= {min})",
                t.name
            ),
        );
        notes.hint(format!(
            "install a newer g++ (>= {min}) and build with it: export NVCC_PREPEND_FLAGS='-ccbin g++-{}'",
            range.max
        ));
    }
    let span = match range.min {
        Some(min) => format!("{min} to {}", range.max),
        None => format!("<= {}", range.max),
    };
    notes.finish(
        CHECK,
        format!("{name} {version} ({from}) is within what CUDA {rel} supports (gcc {span})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A captured real output in tests/captured.
    fn captured(name: &str) -> String {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/captured");
        fs_err::read_to_string(format!("{dir}/{name}")).unwrap()
    }

    #[test]
    fn the_captured_nvcc_error_names_the_table_limit() {
        let text = captured("gcc12-vs-cuda11.8-error.txt");
        let max = lookup::gcc(facts::Facts::embedded(), (11, 8))
            .known()
            .unwrap()
            .value
            .max;
        assert!(text.contains(&format!("gcc versions later than {max} are not supported")));
    }
}
