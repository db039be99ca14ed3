//! FM-10: the host compiler nvcc will use, compared with the GCC range the active CUDA
//! release supports (`unsupported GNU version! gcc versions later than 11 are not
//! supported!`). The compiler is the `-ccbin` in NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS, else
//! NVCC_CCBIN, else the one gpuenv's proxy passes (the `host-compiler` pin, or a `g++-N` the
//! toolkit accepts when the default is too new), else `gcc` on PATH.

use std::path::{Path, PathBuf};

use super::{Check, Finding, Inputs, Machine, Notes, Status};
use gpuenv_core::cuda_tables::{self as tables, release_name};
use gpuenv_core::host_compiler::{parse_gcc_version, user_choice, Choice};
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
) -> Result<Option<(PathBuf, String)>, String> {
    let Some((value, from)) = user_choice(|k| m.var(k)) else {
        return match gpuenv {
            Some(Choice::Use { compiler, why }) => Ok(Some((
                compiler.clone(),
                format!("passed by gpuenv as -ccbin: {why}"),
            ))),
            Some(problem @ Choice::PinMissing { .. }) => Err(problem.problem().unwrap_or_default()),
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
        None => Err(format!(
            "{from} names {value}, which does not exist or is not on PATH"
        )),
    }
}

pub fn run(inputs: &Inputs) -> Finding {
    let Some(t) = inputs.active(Kind::Cuda) else {
        return Finding::skip(CHECK, "no CUDA toolchain is active here");
    };
    let m = &inputs.machine;
    let (cc, from) = match host_compiler(m, inputs.active.host_compiler.as_ref()) {
        Ok(Some(found)) => found,
        Ok(None) => {
            return Finding::skip(CHECK, "no host compiler found (no gcc on PATH, no -ccbin)")
        }
        Err(problem) => {
            let mut notes = Notes::default();
            let (problem, hint) = problem.split_once("\nhint: ").unwrap_or((
                &problem,
                "install that compiler, or fix the -ccbin / NVCC_CCBIN setting to name one that exists",
            ));
            notes.problem(Status::Error, problem);
            notes.hint(hint);
            return notes.finish(CHECK, "");
        }
    };
    let text = match m.run(&cc, &["--version"]) {
        Ok(t) => t,
        Err(e) => return Finding::skip(CHECK, e.to_string()),
    };
    let Some(version) = parse_gcc_version(&text) else {
        return Finding::skip(
            CHECK,
            format!("{} is not GCC; only GCC ranges are checked", cc.display()),
        );
    };
    let cuda = &t.entry.version;
    let Some(row) = tables::host_gcc(cuda) else {
        return Finding::skip(
            CHECK,
            format!("gpuenv's host compiler table does not cover CUDA {cuda}"),
        );
    };
    let rel = release_name(row.release);
    let range = row.value;
    let mut notes = Notes::default();
    notes.seen(format!("{} ({from}): gcc {version}", cc.display()));
    if !row.exact {
        notes.seen(format!(
            "CUDA {cuda} is newer than gpuenv's table: compared with CUDA {rel}'s range"
        ));
    }
    let major = version.major();
    let name = Path::new(&cc)
        .file_name()
        .map_or("gcc".into(), |n| n.to_string_lossy().into_owned());
    if major > range.max {
        let status = if row.exact {
            Status::Error
        } else {
            Status::Warn
        };
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
        if let Some(newer) = tables::first_cuda_for_gcc(major) {
            let newer = release_name(newer);
            notes.hint(format!(
                "or use a toolkit that supports gcc {major}: `gpuenv install cuda-{newer}` and `gpuenv pin cuda-{newer}`"
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
    use gpuenv_core::test_support::captured;

    #[test]
    fn the_captured_nvcc_error_names_the_table_limit() {
        let text = captured("gcc12-vs-cuda11.8-error.txt");
        let max = tables::host_gcc(&"11.8.89".parse().unwrap())
            .unwrap()
            .value
            .max;
        assert!(text.contains(&format!("gcc versions later than {max} are not supported")));
    }
}
