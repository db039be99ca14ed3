//! Stale build directories: a CMake tree or PyTorch extension build configured for one CUDA
//! toolkit (or none) that now compiles while another is active. CMake keeps the compiler,
//! its version and include and link directories from the first configure, so the build
//! would mix two toolkits or fail far from the cause; the proxy refuses before compiling.

use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::facts::build_files::Setting;
use crate::plan::resolve::Active;
use crate::store::home::Home;
use crate::store::toolchain::registry::Registry;
use crate::ui::{printable, shell_word};

pub mod find;

/// What one line of a build file says about the toolkit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// The nvcc the build runs.
    Compiler,
    /// The toolkit's root.
    Root,
    /// nvcc's version.
    Version,
    /// An include directory passed to nvcc (only a toolkit's own counts).
    IncludeDir,
    /// Configured without CUDA (`USE_CUDA=OFF`, no CUDA compiler found).
    CudaOff,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    pub file: PathBuf,
    pub line: usize,
    pub key: String,
    pub value: String,
    pub what: What,
}

impl Evidence {
    fn of(file: &Path, key: &str, s: &Setting, what: What) -> Evidence {
        Evidence::at(file, key, s.value.clone(), s.line, what)
    }

    fn at(file: &Path, key: &str, value: String, line: usize, what: What) -> Evidence {
        Evidence {
            file: file.to_path_buf(),
            line,
            key: key.to_string(),
            value,
            what,
        }
    }

    fn place(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }
}

/// A build directory and what it recorded, in the order it is weighed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub dir: PathBuf,
    pub evidence: Vec<Evidence>,
}

impl Recorded {
    fn new(dir: &Path, evidence: Vec<Evidence>) -> Option<Recorded> {
        (!evidence.is_empty()).then(|| Recorded {
            dir: dir.to_path_buf(),
            evidence,
        })
    }
}

/// Whether the check is on: `GPUENV_STALE_CHECK` unset, empty or `on`; `off` turns it off.
pub fn enabled(var: Option<&str>) -> Result<bool, BadVar> {
    match var.map(str::trim) {
        None | Some("" | "on") => Ok(true),
        Some("off") => Ok(false),
        Some(other) => Err(BadVar(other.to_string())),
    }
}

#[derive(Debug, thiserror::Error)]
#[error("GPUENV_STALE_CHECK={} is not `on` or `off`", printable(.0))]
pub struct BadVar(pub String);

impl Diagnostic for BadVar {
    fn hints(&self) -> Vec<String> {
        vec!["unset GPUENV_STALE_CHECK (the check is on), or set it to `off` to compile in a build directory configured for another toolkit".into()]
    }
}

/// A toolchain as the message names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub name: String,
    pub version: String,
}

/// The build directory was configured for another toolkit than the active one.
#[derive(Debug, thiserror::Error)]
#[error(
    "the build directory {} was configured {}, but {} ({}) is active here: {}",
    dir.display(), configured, active.name, active.version, why
)]
pub struct StaleBuild {
    pub dir: PathBuf,
    /// "with CUDA 13.0.88 at /opt/cuda (nvcc …), read from <file>:<line>".
    pub configured: String,
    /// The registered toolchain it was configured with, when it is one.
    pub configured_as: Option<Named>,
    pub active: Named,
    /// Why the active toolchain is active (the pin, the variable).
    pub why: String,
    /// A CMake tree (`cmake --fresh` applies).
    pub cmake: bool,
    /// A CMake tree's source directory (its cache's `CMAKE_HOME_DIRECTORY`), read only once
    /// refused ([`find::source_dir`]): the hint's `cmake --fresh` needs `-S`, or run from the
    /// project root it configures the wrong tree.
    pub source_dir: Option<PathBuf>,
    /// A CMake tree's generator ([`find::generator`]), kept by the hint's `cmake --fresh`.
    pub generator: Option<String>,
    /// The nvcc the tree runs by a path of its own (configured outside gpuenv), not through
    /// gpuenv's views or shims: its builds never reach the proxy, and a fresh configure
    /// must not name it again.
    pub direct: Option<String>,
}

impl Diagnostic for StaleBuild {
    fn hints(&self) -> Vec<String> {
        let dir = shell_word(&self.dir);
        let mut hints = vec![
            if let (true, Some(source)) = (self.cmake, &self.source_dir) {
                let generator = self
                    .generator
                    .as_ref()
                    .map(|g| format!(" -G {}", shell_word(Path::new(g))))
                    .unwrap_or_default();
                let options = if self.direct.is_some() {
                    "with your other options but not -DCMAKE_CUDA_COMPILER, so gpuenv's CUDACXX names the nvcc"
                } else {
                    "with your other options"
                };
                format!(
                "configure it afresh for {}: `cmake --fresh -S {} -B {dir}{generator}` ({options}), or `rm -rf {dir}` and configure again",
                self.active.name,
                shell_word(source)
            )
            } else if self.cmake {
                format!(
                    "configure it afresh for {}: `rm -rf {dir}` and configure again",
                    self.active.name
                )
            } else {
                format!(
                    "start it afresh for {}: `rm -rf {dir}`, then build again",
                    self.active.name
                )
            },
        ];
        if let Some(old) = &self.configured_as {
            hints.push(format!(
                "or build it with the toolkit it was configured with: `gpuenv use {}` (this shell) or `gpuenv pin {}`",
                old.name, old.name
            ));
        }
        hints.push("GPUENV_STALE_CHECK=off compiles anyway, when you know the build directory does not depend on the toolkit".into());
        hints
    }
}

/// The toolchains a path can belong to: the registered ones and their views.
pub struct Toolchains<'a> {
    pub home: &'a Home,
    pub registry: &'a Registry,
}

/// What an evidence path names.
enum Owner {
    /// A registered toolchain (by its view, or its root).
    Toolchain(String),
    /// A gpuenv shim: it resolves whatever is active, so it says nothing.
    Shim,
    /// A view of a toolchain no longer registered, or a toolkit gpuenv does not know.
    Other(PathBuf),
}

impl Toolchains<'_> {
    /// Who owns `path`; `root` says whether it is a toolkit root (else a file or a directory
    /// inside one: `<root>/bin/nvcc`, `<root>/include`).
    fn owner(&self, path: &Path, root: bool) -> Owner {
        if path.starts_with(self.home.shims()) {
            return Owner::Shim;
        }
        let views = std::iter::once(self.home.views()).chain(
            self.home
                .upstream_view_dirs()
                .into_iter()
                .map(|v| v.to_path_buf()),
        );
        for views in views {
            if let Ok(rest) = path.strip_prefix(&views) {
                return match rest.components().next() {
                    Some(name) => Owner::Toolchain(name.as_os_str().to_string_lossy().into_owned()),
                    None => Owner::Other(path.to_path_buf()),
                };
            }
        }
        let root_of = if root {
            Some(path)
        } else {
            path.parent().and_then(Path::parent)
        };
        let Some(candidate) = root_of else {
            return Owner::Other(path.to_path_buf());
        };
        let canon = |p: &Path| fs_err::canonicalize(p).ok();
        let candidate_canon = canon(candidate);
        for (name, entry) in &self.registry.toolchains {
            if entry.root == candidate
                || candidate_canon.is_some() && canon(&entry.root) == candidate_canon
            {
                return Owner::Toolchain(name.to_string());
            }
        }
        Owner::Other(candidate.to_path_buf())
    }

    /// Whether `nvcc` is gpuenv's (a shim, or a view's, which run the proxy).
    fn runs_the_proxy(&self, nvcc: &Path) -> bool {
        nvcc.starts_with(self.home.shims())
            || nvcc.starts_with(self.home.views())
            || self
                .home
                .upstream_view_dirs()
                .iter()
                .any(|views| nvcc.starts_with(views))
    }

    fn named(&self, name: &str) -> Option<Named> {
        let entry = self.registry.toolchains.get(name)?;
        Some(Named {
            name: name.to_string(),
            version: entry.version.to_string(),
        })
    }
}

/// Whether `recorded` contradicts `active` (the toolchain active here, with `why`); the
/// refusal when it does. The most telling line decides: one naming a registered toolchain
/// (its view or root) or CUDA off, else nvcc's version, else a toolkit gpuenv does not know.
pub fn compare(
    recorded: &Recorded,
    active: &Active,
    why: &str,
    known: &Toolchains,
) -> Option<StaleBuild> {
    let version = active.entry.version.to_string();
    let major_minor = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    let same_root = |root: &Path| {
        let canon = |p: &Path| fs_err::canonicalize(p).ok();
        root == active.entry.root
            || canon(root).is_some() && canon(root) == canon(&active.entry.root)
    };
    // (rank, differs, the toolchain it names)
    let verdict = |e: &Evidence| -> Option<(u8, bool, Option<String>)> {
        let owner = match e.what {
            What::CudaOff => return Some((0, true, None)),
            What::Version => {
                return Some((1, major_minor(&e.value) != major_minor(&version), None))
            }
            What::Compiler | What::Root => known.owner(Path::new(&e.value), e.what == What::Root),
            // Only a toolkit's own `include` counts; other directories say nothing.
            What::IncludeDir => {
                let dir = Path::new(&e.value);
                dir.file_name().filter(|n| *n == "include")?;
                match known.owner(dir.parent()?, true) {
                    Owner::Other(_) => return None,
                    owner => owner,
                }
            }
        };
        match owner {
            Owner::Shim => None,
            Owner::Toolchain(name) => Some((0, name != active.name, Some(name))),
            Owner::Other(root) => Some((2, !same_root(&root), None)),
        }
    };
    let (evidence, (_, differs, name)) = recorded
        .evidence
        .iter()
        .filter_map(|e| Some((e, verdict(e)?)))
        .min_by_key(|(_, v)| v.0)?;
    if !differs {
        return None;
    }
    let configured_as = name.as_deref().and_then(|n| known.named(n));
    Some(StaleBuild {
        dir: recorded.dir.clone(),
        configured: describe(recorded, evidence, configured_as.as_ref()),
        configured_as,
        active: Named {
            name: active.name.clone(),
            version,
        },
        why: why.to_string(),
        cmake: evidence
            .file
            .components()
            .any(|c| c.as_os_str() == "CMakeFiles" || c.as_os_str() == find::CMAKE_CACHE),
        source_dir: None,
        generator: None,
        direct: recorded
            .evidence
            .iter()
            .find(|e| e.what == What::Compiler)
            .filter(|e| !known.runs_the_proxy(Path::new(&e.value)))
            .map(|e| e.value.clone()),
    })
}

/// "with cuda-13.0.88 (CUDA 13.0.88 at /root, nvcc /v/bin/nvcc; read from <file>:<line>)".
fn describe(recorded: &Recorded, conflict: &Evidence, name: Option<&Named>) -> String {
    if conflict.what == What::CudaOff {
        return format!(
            "without CUDA ({}={} at {})",
            conflict.key,
            printable(&conflict.value),
            conflict.place()
        );
    }
    let get = |what: What| {
        recorded
            .evidence
            .iter()
            .find(|e| e.what == what)
            .map(|e| printable(&e.value).into_owned())
    };
    let mut parts = Vec::new();
    match (get(What::Version), get(What::Root)) {
        (Some(v), Some(r)) => parts.push(format!("CUDA {v} at {r}")),
        (Some(v), None) => parts.push(format!("CUDA {v}")),
        (None, Some(r)) => parts.push(format!("the toolkit at {r}")),
        (None, None) => {}
    }
    if let Some(c) = get(What::Compiler) {
        parts.push(format!("nvcc {c}"));
    }
    if conflict.what == What::IncludeDir {
        parts.push(format!("-I{}", printable(&conflict.value)));
    }
    let what = parts.join(", ");
    let place = format!("read from {}", conflict.place());
    match name {
        Some(n) => format!("with {} ({what}; {place})", n.name),
        None => format!("with {what} ({place})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::toolchain::registry::Entry;

    fn entry(version: &str) -> Entry {
        Entry::linked_cuda(format!("/opt/cuda-{version}"), version)
    }

    struct World {
        home: Home,
        registry: Registry,
    }

    fn world() -> World {
        let mut registry = Registry::default();
        for (name, version) in [("cuda-11.8", "11.8.89"), ("cuda-13.0", "13.0.88")] {
            registry.toolchains.insert(name.into(), entry(version));
        }
        World {
            home: Home::new("/h"),
            registry,
        }
    }

    fn active(w: &World, name: &str) -> Active {
        Active {
            name: name.into(),
            entry: w.registry.toolchains[name].clone(),
            reason: crate::plan::resolve::Reason::Override(name.parse().unwrap()),
        }
    }

    fn recorded(lines: &[(What, &str)]) -> Recorded {
        let file = PathBuf::from("/p/build/CMakeFiles/3.25.1/CMakeCUDACompiler.cmake");
        let evidence = lines
            .iter()
            .enumerate()
            .map(|(i, (what, value))| Evidence::at(&file, "KEY", value.to_string(), i + 1, *what))
            .collect();
        Recorded::new(Path::new("/p/build"), evidence).unwrap()
    }

    fn check(w: &World, rec: &Recorded, name: &str) -> Option<StaleBuild> {
        let known = Toolchains {
            home: &w.home,
            registry: &w.registry,
        };
        compare(rec, &active(w, name), "pinned", &known)
    }

    #[test]
    fn a_view_path_names_its_toolchain_whatever_else_is_recorded() {
        let w = world();
        let rec = recorded(&[
            (What::Compiler, "/h/views/cuda-13.0/bin/nvcc"),
            // What CMake derives for a scattered toolkit: not the registered root.
            (What::Root, "/somewhere/else"),
            (What::Version, "13.0.88"),
        ]);
        assert!(check(&w, &rec, "cuda-13.0").is_none());
        let stale = check(&w, &rec, "cuda-11.8").unwrap();
        assert_eq!(stale.configured_as.unwrap().name, "cuda-13.0");
        assert!(stale.cmake);
        assert!(
            stale
                .configured
                .starts_with("with cuda-13.0 (CUDA 13.0.88 at /somewhere/else, nvcc /h/views/cuda-13.0/bin/nvcc; read from /p/build/CMakeFiles/3.25.1/CMakeCUDACompiler.cmake:1)"),
            "{}",
            stale.configured
        );
    }

    #[test]
    fn through_a_shim_the_recorded_root_or_version_decides() {
        let w = world();
        let shim = (What::Compiler, "/h/shims/nvcc");
        let rec = recorded(&[shim, (What::Root, "/opt/cuda-11.8.89")]);
        assert!(check(&w, &rec, "cuda-11.8").is_none());
        let stale = check(&w, &rec, "cuda-13.0").unwrap();
        assert_eq!(stale.configured_as.unwrap().name, "cuda-11.8");

        // nvcc's own patch version differs from the toolkit's: major.minor is compared.
        let rec = recorded(&[shim, (What::Version, "11.8.99")]);
        assert!(check(&w, &rec, "cuda-11.8").is_none());
        assert!(check(&w, &rec, "cuda-13.0").is_some());
    }

    #[test]
    fn a_toolkit_gpuenv_does_not_know_differs_and_other_include_dirs_say_nothing() {
        let w = world();
        let rec = recorded(&[(What::Compiler, "/usr/local/cuda-12.1/bin/nvcc")]);
        let stale = check(&w, &rec, "cuda-13.0").unwrap();
        assert!(stale.configured_as.is_none());
        assert!(stale
            .configured
            .contains("nvcc /usr/local/cuda-12.1/bin/nvcc"));

        let rec = recorded(&[
            (What::IncludeDir, "/venv/torch/include"),
            (What::IncludeDir, "/usr/include"),
        ]);
        assert!(check(&w, &rec, "cuda-13.0").is_none());
        let rec = recorded(&[(What::IncludeDir, "/h/views/cuda-11.8/include")]);
        assert!(check(&w, &rec, "cuda-13.0").is_some());
    }

    #[test]
    fn configured_without_cuda_is_stale_for_any_toolkit() {
        let w = world();
        let rec = recorded(&[(What::CudaOff, "OFF")]);
        let stale = check(&w, &rec, "cuda-13.0").unwrap();
        assert!(stale.configured.starts_with("without CUDA (KEY=OFF at "));
    }

    #[test]
    fn the_check_is_on_unless_turned_off() {
        assert!(enabled(None).unwrap());
        assert!(enabled(Some("")).unwrap());
        assert!(enabled(Some("on")).unwrap());
        assert!(!enabled(Some("off")).unwrap());
        assert!(enabled(Some("no")).is_err());
    }
}
