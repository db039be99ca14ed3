//! FM-10: the host compiler nvcc will use, compared with the GCC range the active CUDA
//! release supports (`unsupported GNU version! gcc versions later than 11 are not
//! supported!`). The compiler is the `-ccbin` in NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS, else
//! NVCC_CCBIN, else `gcc` on PATH, as nvcc itself picks it.

use std::path::{Path, PathBuf};

use super::{Check, Finding, Inputs, Machine, Notes, Status};
use gpuenv_core::context::vars;
use gpuenv_core::cuda_tables::{self as tables, release_name};
use gpuenv_core::toolchain::{Kind, Version};

pub const CHECK: Check = Check {
    id: "FM-10",
    name: "host-compiler",
};

/// The `-ccbin X` / `--compiler-bindir=X` value in a flags variable.
fn ccbin_in(flags: &str) -> Option<String> {
    let mut words = flags.split_whitespace();
    while let Some(w) = words.next() {
        for opt in ["-ccbin", "--compiler-bindir"] {
            if w == opt {
                return words.next().map(str::to_string);
            }
            if let Some(v) = w.strip_prefix(opt).and_then(|r| r.strip_prefix('=')) {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// The host compiler nvcc runs and what chose it; `Err` when a `-ccbin` names a compiler
/// that does not exist (nvcc will fail on it), `Ok(None)` when there is no gcc at all.
fn host_compiler(m: &Machine) -> Result<Option<(PathBuf, String)>, String> {
    let chosen = ["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"]
        .iter()
        .find_map(|var| Some((ccbin_in(m.var(var)?)?, format!("-ccbin in {var}"))))
        .or_else(|| Some((m.var(vars::NVCC_CCBIN)?.to_string(), "NVCC_CCBIN".into())));
    let Some((value, from)) = chosen else {
        return Ok(m.which("gcc").map(|gcc| (gcc, "gcc on PATH".into())));
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

/// `gcc (Debian 12.2.0-14) 12.2.0` -> 12.2.0; `None` for clang and the like.
pub fn parse_gcc_version(text: &str) -> Option<Version> {
    let first = text.lines().next()?;
    if first.contains("clang") {
        return None;
    }
    Version::find_in(first).or_else(|| first.trim().parse().ok())
}

pub fn run(inputs: &Inputs) -> Finding {
    let Some(t) = inputs.active(Kind::Cuda) else {
        return Finding::skip(CHECK, "no CUDA toolchain is active here");
    };
    let m = &inputs.machine;
    let (cc, from) = match host_compiler(m) {
        Ok(Some(found)) => found,
        Ok(None) => {
            return Finding::skip(CHECK, "no host compiler found (no gcc on PATH, no -ccbin)")
        }
        Err(problem) => {
            let mut notes = Notes::default();
            notes.problem(Status::Error, problem);
            notes.hint("install that compiler, or fix the -ccbin / NVCC_CCBIN setting to name one that exists");
            return notes.finish(CHECK, "");
        }
    };
    let text = match m.run(&cc, &["--version"]) {
        Ok(t) => t,
        Err(e) => return Finding::skip(CHECK, e),
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
    fn ccbin_from_nvcc_flag_variables() {
        assert_eq!(ccbin_in("-ccbin g++-11 -O2").as_deref(), Some("g++-11"));
        assert_eq!(
            ccbin_in("--compiler-bindir=/opt/gcc11/bin").as_deref(),
            Some("/opt/gcc11/bin")
        );
        assert_eq!(ccbin_in("-O2"), None);
    }

    #[test]
    fn gcc_banners_of_distributions() {
        let v = |s: &str| parse_gcc_version(s).map(|v| v.to_string());
        assert_eq!(
            v("gcc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright"),
            Some("12.2.0".into())
        );
        assert_eq!(
            v("gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0"),
            Some("11.4.0".into())
        );
        assert_eq!(
            v("gcc (GCC) 13.2.1 20231011 (Red Hat 13.2.1-4)"),
            Some("13.2.1".into())
        );
        assert_eq!(v("Apple clang version 15.0.0 (clang-1500.1.0.2.5)"), None);
    }

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
