//! The host compiler nvcc gets (prevents FM-10, `unsupported GNU version! gcc versions
//! later than 11 are not supported!`): the project's `host-compiler` pin; else, when the
//! default `g++` is newer than the toolkit accepts, the newest `g++-N` on PATH it does
//! accept. The choice is pure given a probe of PATH; the proxy passes it as `-ccbin` and
//! the environment as `CUDAHOSTCXX`.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::context::vars;
use crate::facts::{self, lookup, Coverage, Facts, GccRange};
use crate::project::Location;
use crate::store::toolchain::Version;

pub mod cache;

/// What the choice needs to know about this machine.
pub trait Probe {
    /// The executable `command` names: itself when it has a `/`, else the first on PATH.
    fn which(&self, command: &str) -> Option<PathBuf>;
    /// The GCC version of a compiler; `None` for clang and anything unreadable.
    fn gcc_version(&self, compiler: &Path) -> Option<Version>;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// nvcc's own default is fine (or nothing better can be decided): nothing is passed.
    Default { why: String },
    /// This compiler is passed as `-ccbin` and `CUDAHOSTCXX`.
    Use { compiler: PathBuf, why: String },
    /// The pinned compiler is not there.
    PinMissing { command: String, at: Location },
    /// No `g++` on PATH and none pinned: nvcc would stop with "Failed to preprocess host
    /// compiler properties".
    NoCompiler { toolchain: String },
    /// The default g++ is too new and no `g++-N` the toolkit accepts is on PATH.
    NoneFits {
        toolchain: String,
        default: Version,
        max: u64,
    },
}

impl Choice {
    /// The compiler to pass, if any.
    pub fn compiler(&self) -> Option<&Path> {
        match self {
            Choice::Use { compiler, .. } => Some(compiler),
            _ => None,
        }
    }

    /// An error to report before nvcc fails on its own, if there is one.
    pub fn problem(&self) -> Option<HostCompilerProblem> {
        match self {
            Choice::PinMissing { command, at } => Some(HostCompilerProblem::PinMissing {
                command: command.clone(),
                at: at.to_string(),
            }),
            Choice::NoCompiler { toolchain } => Some(HostCompilerProblem::NoCompiler {
                toolchain: toolchain.clone(),
            }),
            Choice::NoneFits {
                toolchain,
                default,
                max,
            } => Some(HostCompilerProblem::NoneFits {
                toolchain: toolchain.clone(),
                default: default.clone(),
                max: *max,
            }),
            _ => None,
        }
    }
}

/// A host compiler nvcc would stop on, found before it runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostCompilerProblem {
    #[error("{at}: host-compiler = {command:?} does not exist or is not on PATH")]
    PinMissing { command: String, at: String },
    #[error("no host compiler: {toolchain}'s nvcc compiles the host code with g++, and there is no g++ on PATH (nvcc would stop with \"Failed to preprocess host compiler properties\")")]
    NoCompiler { toolchain: String },
    #[error("the default g++ is gcc {default}, newer than {toolchain} supports (gcc <= {max}), and no g++-{max} or older is on PATH: nvcc would stop with \"unsupported GNU version! gcc versions later than {max} are not supported!\"")]
    NoneFits {
        toolchain: String,
        default: Version,
        max: u64,
    },
    /// A `-ccbin` or `NVCC_CCBIN` the user set names nothing.
    #[error("{from} names {value}, which does not exist or is not on PATH")]
    NoSuchCompiler { from: String, value: String },
}

impl crate::diagnostic::Diagnostic for HostCompilerProblem {
    fn hints(&self) -> Vec<String> {
        vec![match self {
            HostCompilerProblem::PinMissing { command, .. } => {
                format!("install it ({}), or change the pin", package_hint(command))
            }
            HostCompilerProblem::NoCompiler { .. } => "install one (Debian/Ubuntu: `sudo apt-get install g++`; Fedora/RHEL: `sudo dnf install gcc-c++`), or name one on PATH with host-compiler = \"g++-N\" under [toolchain] in gpuenv.toml".into(),
            HostCompilerProblem::NoneFits { max, .. } => format!("apt-get install g++-{max} (gpuenv then passes it to nvcc as -ccbin), or pin one with host-compiler = \"g++-{max}\" under [toolchain] in gpuenv.toml"),
            HostCompilerProblem::NoSuchCompiler { .. } => "install that compiler, or fix the -ccbin / NVCC_CCBIN setting to name one that exists".into(),
        }]
    }
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Choice::Default { why } => write!(f, "nvcc's default ({why})"),
            Choice::Use { compiler, why } => write!(f, "{} ({why})", compiler.display()),
            Choice::PinMissing { command, at } => {
                write!(f, "{command} pinned in {at}, but it is not on PATH")
            }
            Choice::NoCompiler { .. } => write!(f, "none: no g++ on PATH"),
            Choice::NoneFits {
                toolchain,
                default,
                max,
            } => write!(
                f,
                "none fits: g++ is gcc {default}, {toolchain} accepts gcc <= {max}"
            ),
        }
    }
}

/// `apt-get install g++-11` for a `g++-N` command, else a general word.
fn package_hint(command: &str) -> String {
    let name = Path::new(command)
        .file_name()
        .map_or(command.into(), |n| n.to_string_lossy().into_owned());
    if name.starts_with("g++-") || name.starts_with("gcc-") {
        format!("apt-get install {name}")
    } else {
        "with the system's package manager".into()
    }
}

/// The host compiler for CUDA toolchain `toolchain` (version `cuda`), given the project's
/// `host-compiler` pin, from the data's GCC range for the release.
pub fn choose(
    facts: &Facts,
    toolchain: &str,
    cuda: &Version,
    pin: Option<(&str, &Location)>,
    probe: &dyn Probe,
) -> Choice {
    choose_in(facts, toolchain, cuda, None, pin, probe)
}

/// Why the GCC range of a CUDA release is not known.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RangeUnknown {
    #[error("{0}; run `{refresh}`", refresh = facts::REFRESH)]
    Newer(facts::Unknown),
    #[error("gpuenv's data does not cover CUDA {0}")]
    Older(Version),
}

/// The newest GCC `cuda` accepts: its own `host_config.h` (under `include_dir`) when it
/// says, else the data; `Err` says why neither knows.
pub fn gcc_range(
    facts: &Facts,
    cuda: &Version,
    include_dir: Option<&Path>,
) -> Result<GccRange, RangeUnknown> {
    let table = lookup::gcc(facts, (cuda.major(), cuda.minor().unwrap_or(0)));
    if let Some(max) = include_dir.and_then(facts::tree::gcc_max) {
        let min = table.known().and_then(|f| f.value.min);
        return Ok(GccRange { min, max });
    }
    match table {
        Coverage::Known(f) => Ok(*f.value),
        Coverage::Newer(u) => Err(RangeUnknown::Newer(u)),
        Coverage::Older => Err(RangeUnknown::Older(cuda.clone())),
    }
}

/// [`choose`], reading the toolkit's own limits from its headers in `include_dir` first.
pub fn choose_in(
    facts: &Facts,
    toolchain: &str,
    cuda: &Version,
    include_dir: Option<&Path>,
    pin: Option<(&str, &Location)>,
    probe: &dyn Probe,
) -> Choice {
    if let Some((command, at)) = pin {
        return match probe.which(command) {
            Some(compiler) => Choice::Use {
                compiler,
                why: format!("host-compiler = {command:?} in {at}"),
            },
            None => Choice::PinMissing {
                command: command.to_string(),
                at: at.clone(),
            },
        };
    }
    let Some(default) = probe.which("g++") else {
        return Choice::NoCompiler {
            toolchain: toolchain.to_string(),
        };
    };
    let range = match gcc_range(facts, cuda, include_dir) {
        Ok(range) => range,
        Err(why) => {
            return Choice::Default {
                why: why.to_string(),
            }
        }
    };
    let max = range.max;
    let Some(version) = probe.gcc_version(&default) else {
        return Choice::Default {
            why: format!("{} is not GCC", default.display()),
        };
    };
    if version.major() <= max {
        return Choice::Default {
            why: format!("g++ is gcc {version}, which {toolchain} accepts (gcc <= {max})"),
        };
    }
    let min = range.min.unwrap_or(1);
    for n in (min..=max).rev() {
        let command = format!("g++-{n}");
        if let Some(compiler) = probe.which(&command) {
            return Choice::Use {
                compiler,
                why: format!(
                    "g++ is gcc {version}, newer than {toolchain} accepts (gcc <= {max}); {command} is the newest it accepts on PATH"
                ),
            };
        }
    }
    Choice::NoneFits {
        toolchain: toolchain.to_string(),
        default: version,
        max,
    }
}

/// The `-ccbin X` / `--compiler-bindir=X` value in a flags variable or an argument list.
pub fn ccbin_in<'a>(words: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut words = words.into_iter();
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

/// A host compiler the user gave nvcc through its variables (then gpuenv passes none:
/// nvcc refuses a second `-ccbin`): the value and where it is.
pub fn user_choice<'a>(var: impl Fn(&str) -> Option<&'a str>) -> Option<(String, String)> {
    [vars::NVCC_PREPEND_FLAGS, vars::NVCC_APPEND_FLAGS]
        .iter()
        .find_map(|name| {
            let value = ccbin_in(var(name)?.split_whitespace())?;
            Some((value, format!("-ccbin in {name}")))
        })
        .or_else(|| Some((var(vars::NVCC_CCBIN)?.to_string(), vars::NVCC_CCBIN.into())))
}

/// `gcc (Debian 12.2.0-14) 12.2.0` -> 12.2.0; `None` for clang and the like.
pub fn parse_gcc_version(text: &str) -> Option<Version> {
    let first = text.lines().next()?;
    if first.contains("clang") {
        return None;
    }
    Version::find_in(first).or_else(|| first.trim().parse().ok())
}

/// The probe of the real machine: PATH from the context, versions from `--version`.
pub struct PathProbe<'a> {
    pub path: Option<&'a std::ffi::OsStr>,
    /// Told of a compiler that did not answer in time (the edge that made the probe says
    /// it; nothing here prints).
    pub timed_out: fn(&crate::ask::AskError),
}

/// A `timed_out` that says nothing (tests, and callers that report no warnings).
pub fn quietly(_: &crate::ask::AskError) {}

impl Probe for PathProbe<'_> {
    fn which(&self, command: &str) -> Option<PathBuf> {
        if command.contains('/') {
            let p = PathBuf::from(command);
            return p.is_file().then_some(p);
        }
        crate::plan::guard::find_on_path(self.path, command)
    }

    fn gcc_version(&self, compiler: &Path) -> Option<Version> {
        parse_gcc_version(&version_output(compiler, self.timed_out)?.0)
    }
}

/// What `compiler --version` printed on stdout, and whether it exited successfully. One
/// that does not answer in time is told to `timed_out` and counts as unreadable.
fn version_output(compiler: &Path, timed_out: fn(&crate::ask::AskError)) -> Option<(String, bool)> {
    let out = match crate::ask::output(std::process::Command::new(compiler).arg("--version")) {
        Ok(out) => out,
        Err(e @ crate::ask::AskError::TimedOut { .. }) => {
            timed_out(&e);
            return None;
        }
        Err(_) => return None,
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Some((text, out.status.success()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Diagnostic;

    /// A PATH holding these compilers (command, gcc major).
    struct Fake(&'static [(&'static str, u64)]);

    impl Probe for Fake {
        fn which(&self, command: &str) -> Option<PathBuf> {
            self.0
                .iter()
                .any(|(c, _)| *c == command)
                .then(|| PathBuf::from("/usr/bin").join(command))
        }
        fn gcc_version(&self, compiler: &Path) -> Option<Version> {
            let name = compiler.file_name()?.to_str()?;
            let (_, major) = self.0.iter().find(|(c, _)| *c == name)?;
            Some(Version::new(&[*major, 2, 0]))
        }
    }

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    fn at() -> Location {
        Location {
            path: "/p/gpuenv.toml".into(),
            line: 4,
            column: 17,
        }
    }

    #[test]
    fn a_default_gcc_the_toolkit_accepts_is_left_alone() {
        let c = choose(
            Facts::embedded(),
            "cuda-12.4",
            &v("12.4.131"),
            None,
            &Fake(&[("g++", 12)]),
        );
        assert!(matches!(c, Choice::Default { .. }), "{c:?}");
        assert_eq!(c.compiler(), None);
    }

    #[test]
    fn a_too_new_default_gives_way_to_the_newest_accepted_g_plus_plus_n() {
        let path = Fake(&[("g++", 12), ("g++-12", 12), ("g++-11", 11), ("g++-10", 10)]);
        let c = choose(
            Facts::embedded(),
            "cuda-11.8-debian",
            &v("11.8.89"),
            None,
            &path,
        );
        assert_eq!(c.compiler(), Some(Path::new("/usr/bin/g++-11")));
        assert!(c
            .to_string()
            .contains("newer than cuda-11.8-debian accepts (gcc <= 11)"));
    }

    #[test]
    fn when_none_fits_the_problem_names_the_limit_and_the_package() {
        let c = choose(
            Facts::embedded(),
            "cuda-11.8",
            &v("11.8.89"),
            None,
            &Fake(&[("g++", 12), ("g++-12", 12)]),
        );
        let problem = c.problem().unwrap();
        let problem = format!("{problem}\n{}", problem.hints().join("\n"));
        assert!(problem.contains("gcc <= 11"), "{problem}");
        assert!(problem.contains("apt-get install g++-11"), "{problem}");
    }

    #[test]
    fn no_g_plus_plus_on_path_is_a_problem_naming_the_packages_and_the_pin() {
        let c = choose(
            Facts::embedded(),
            "cuda-13.0.3",
            &v("13.0.3"),
            None,
            &Fake(&[("g++-11", 11)]),
        );
        let problem = c.problem().unwrap();
        let problem = format!("{problem}\n{}", problem.hints().join("\n"));
        assert!(problem.contains("no g++ on PATH"), "{problem}");
        assert!(
            problem.contains("Failed to preprocess host compiler properties"),
            "{problem}"
        );
        assert!(problem.contains("apt-get install g++"), "{problem}");
        assert!(problem.contains("dnf install gcc-c++"), "{problem}");
        assert!(problem.contains("host-compiler = "), "{problem}");
        // A pinned one on PATH is enough.
        let c = choose(
            Facts::embedded(),
            "cuda-13.0.3",
            &v("13.0.3"),
            Some(("g++-11", &at())),
            &Fake(&[("g++-11", 11)]),
        );
        assert_eq!(c.compiler(), Some(Path::new("/usr/bin/g++-11")));
    }

    #[test]
    fn a_pin_wins_and_a_missing_pin_says_where_it_is() {
        let path = Fake(&[("g++", 12), ("g++-11", 11), ("g++-10", 10)]);
        let c = choose(
            Facts::embedded(),
            "cuda-11.8",
            &v("11.8.89"),
            Some(("g++-10", &at())),
            &path,
        );
        assert_eq!(c.compiler(), Some(Path::new("/usr/bin/g++-10")));
        let c = choose(
            Facts::embedded(),
            "cuda-11.8",
            &v("11.8.89"),
            Some(("g++-9", &at())),
            &path,
        );
        let problem = c.problem().unwrap();
        let problem = format!("{problem}\n{}", problem.hints().join("\n"));
        assert!(problem.starts_with("/p/gpuenv.toml:4:17: "), "{problem}");
        assert!(problem.contains("apt-get install g++-9"), "{problem}");
    }

    #[test]
    fn ccbin_from_nvcc_flag_variables() {
        let words = |s: &'static str| s.split_whitespace();
        assert_eq!(
            ccbin_in(words("-ccbin g++-11 -O2")).as_deref(),
            Some("g++-11")
        );
        assert_eq!(
            ccbin_in(words("--compiler-bindir=/opt/gcc11/bin")).as_deref(),
            Some("/opt/gcc11/bin")
        );
        assert_eq!(ccbin_in(words("-O2")), None);
        let vars = |k: &str| (k == "NVCC_APPEND_FLAGS").then_some("-O2 -ccbin=clang++");
        assert_eq!(
            user_choice(vars),
            Some(("clang++".into(), "-ccbin in NVCC_APPEND_FLAGS".into()))
        );
    }

    #[test]
    fn gcc_banners_of_distributions() {
        let g = |s: &str| parse_gcc_version(s).map(|v| v.to_string());
        assert_eq!(
            g("gcc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright"),
            Some("12.2.0".into())
        );
        assert_eq!(
            g("g++ (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0"),
            Some("11.4.0".into())
        );
        assert_eq!(
            g("gcc (GCC) 13.2.1 20231011 (Red Hat 13.2.1-4)"),
            Some("13.2.1".into())
        );
        assert_eq!(g("Apple clang version 15.0.0 (clang-1500.1.0.2.5)"), None);
    }
}
