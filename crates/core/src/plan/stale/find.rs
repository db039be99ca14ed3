//! Finding the build directory a compile runs in and reading what it recorded. The proxy
//! runs this for every compile, so it costs a few `stat`s on the way up and one small
//! bounded read when a build file is found. Every file here is the user's, or anyone's:
//! read as bytes up to a limit, never followed into, run or written.

use std::path::{Path, PathBuf};

use super::{Evidence, Recorded, What};
use crate::facts::build_files::{self, Settings};
use crate::facts::vars;
use crate::outside::{read_head, Kind};

pub const CMAKE_CACHE: &str = "CMakeCache.txt";
pub const BUILD_NINJA: &str = "build.ninja";
const CMAKE_FILES: &str = "CMakeFiles";
const COMPILER_FILE: &str = "CMakeCUDACompiler.cmake";

// Read limits (`Kind::limit`): the compiler file is a few KiB, the top of PyTorch's
// build.ninja less; a large project's cache is read only when it has no compiler file.

/// What the build directory around `cwd` recorded about its CUDA toolkit: the nearest
/// directory, from `cwd` up to the first of `stops` (or `/`), holding a `CMakeCache.txt` or
/// a `build.ninja`. `None` when there is none, when it records nothing about CUDA, or when
/// `cwd` is inside its `CMakeFiles/` (CMake configuring: it records what it finds then).
pub fn recorded(cwd: &Path, stops: &[&Path]) -> Option<Recorded> {
    for dir in cwd.ancestors() {
        if dir.file_name().is_some_and(|n| n == CMAKE_FILES) {
            return None;
        }
        if is_file(&dir.join(CMAKE_CACHE)) {
            return cmake(dir);
        }
        if is_file(&dir.join(BUILD_NINJA)) {
            return ninja(dir);
        }
        if stops.contains(&dir) {
            return None;
        }
    }
    None
}

fn is_file(path: &Path) -> bool {
    fs_err::metadata(path).is_ok_and(|m| m.is_file())
}

/// A CMake build tree: `CMakeFiles/<version>/CMakeCUDACompiler.cmake` (what CMake found
/// when it enabled CUDA), else the cache's CUDA entries.
fn cmake(dir: &Path) -> Option<Recorded> {
    if let Some(file) = compiler_file(dir) {
        let sets = build_files::cmake_sets(&read_head(&file, Kind::CMakeCompiler)?);
        let evidence = pick(
            &file,
            &sets,
            &[
                ("CMAKE_CUDA_COMPILER", What::Compiler),
                ("CMAKE_CUDA_COMPILER_TOOLKIT_ROOT", What::Root),
                ("CMAKE_CUDA_COMPILER_VERSION", What::Version),
            ],
        );
        return Recorded::new(dir, evidence);
    }
    let file = dir.join(CMAKE_CACHE);
    let cache = build_files::cmake_cache(&read_head(&file, Kind::CMakeCache)?);
    let off = ["USE_CUDA", "CMAKE_CUDA_COMPILER"]
        .into_iter()
        .filter_map(|key| Some((key, cache.get(key)?)))
        .find(|(_, s)| build_files::is_false(&s.value));
    if let Some((key, s)) = off {
        return Recorded::new(dir, vec![Evidence::of(&file, key, s, What::CudaOff)]);
    }
    let evidence = pick(
        &file,
        &cache,
        &[
            ("CMAKE_CUDA_COMPILER", What::Compiler),
            ("CUDAToolkit_NVCC_EXECUTABLE", What::Compiler),
            ("CUDA_NVCC_EXECUTABLE", What::Compiler),
            // The variable gpuenv sets is also FindCUDAToolkit's cache entry.
            (vars::CUDAToolkit_ROOT, What::Root),
            ("CUDA_TOOLKIT_ROOT_DIR", What::Root),
        ],
    );
    Recorded::new(dir, evidence)
}

/// The CMake build trees at `dir` and at most `depth` levels below it, hidden directories
/// skipped: where projects keep them (`build/`, `build/<x>/`, `<subproject>/build/`).
pub fn cmake_trees(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut level = vec![dir.to_path_buf()];
    for d in 0..=depth {
        let mut next = Vec::new();
        for tree in &level {
            if is_file(&tree.join(CMAKE_CACHE)) {
                out.push(tree.clone());
            }
            if d < depth {
                if let Ok(rd) = fs_err::read_dir(tree) {
                    next.extend(
                        rd.flatten()
                            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                            .map(|e| e.path()),
                    );
                }
            }
        }
        level = next;
    }
    out.sort();
    out
}

/// A CMake tree's source directory, as its cache records it (`CMAKE_HOME_DIRECTORY`); read
/// only for a refusal's hint, so a compile that goes ahead never reads a large cache. A
/// relative or empty value is no source directory.
pub fn source_dir(dir: &Path) -> Option<PathBuf> {
    let cache = build_files::cmake_cache(&read_head(&dir.join(CMAKE_CACHE), Kind::CMakeCache)?);
    let source = PathBuf::from(&cache.get("CMAKE_HOME_DIRECTORY")?.value);
    source.is_absolute().then_some(source)
}

/// The generator a CMake tree was configured with (`CMAKE_GENERATOR`: `Ninja`, `Unix
/// Makefiles`): a fresh configure must keep it, or the build tool the user runs next finds
/// the other generator's files.
pub fn generator(dir: &Path) -> Option<String> {
    let cache = build_files::cmake_cache(&read_head(&dir.join(CMAKE_CACHE), Kind::CMakeCache)?);
    let generator = cache.get("CMAKE_GENERATOR")?.value.clone();
    (!generator.is_empty() && !generator.contains(['\n', '\r'])).then_some(generator)
}

/// The evidence `keys` give, in their order; false and empty values say nothing.
fn pick(file: &Path, settings: &Settings, keys: &[(&str, What)]) -> Vec<Evidence> {
    keys.iter()
        .filter_map(|(key, what)| {
            let s = settings
                .get(*key)
                .filter(|s| !build_files::is_false(&s.value))?;
            Some(Evidence::of(file, key, s, *what))
        })
        .collect()
}

/// The compiler file of the newest CMake that configured `dir` (a tree configured by two
/// CMake releases has two).
fn compiler_file(dir: &Path) -> Option<PathBuf> {
    let files = dir.join(CMAKE_FILES);
    let newest = fs_err::read_dir(&files)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let version: Vec<u64> = name
                .split('.')
                .map(|p| p.parse().ok())
                .collect::<Option<_>>()?;
            let file = files.join(&name).join(COMPILER_FILE);
            is_file(&file).then_some((version, file))
        })
        .max_by(|a, b| a.0.cmp(&b.0))?;
    Some(newest.1)
}

/// PyTorch's extension builder (`build/temp.*/`, a JIT extension's directory): the `nvcc`
/// it runs and the include directories it passes.
fn ninja(dir: &Path) -> Option<Recorded> {
    let file = dir.join(BUILD_NINJA);
    let vars = build_files::ninja_vars(&read_head(&file, Kind::NinjaFile)?);
    let mut evidence = Vec::new();
    if let Some(s) = vars.get("nvcc") {
        // `ccache /…/bin/nvcc`: the compiler is the word naming nvcc.
        let nvcc = build_files::words(&s.value)
            .into_iter()
            .rfind(|w| Path::new(w).file_name().is_some_and(|n| n == "nvcc"));
        if let Some(nvcc) = nvcc {
            evidence.push(Evidence::at(&file, "nvcc", nvcc, s.line, What::Compiler));
        }
    }
    for key in ["cuda_cflags", "cuda_post_cflags"] {
        if let Some(s) = vars.get(key) {
            evidence.extend(
                build_files::include_dirs(&s.value)
                    .into_iter()
                    .map(|d| Evidence::at(&file, key, d, s.line, What::IncludeDir)),
            );
        }
    }
    Recorded::new(dir, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fs_err as fs;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, text).unwrap();
        }
        dir
    }

    #[test]
    fn a_makefile_subdirectory_finds_the_build_tree_above_it() {
        let t = tree(&[
            ("b/CMakeCache.txt", "CMAKE_CUDA_COMPILER:FILEPATH=/x/bin/nvcc\n"),
            ("b/CMakeFiles/3.25.1/CMakeCUDACompiler.cmake", "set(CMAKE_CUDA_COMPILER_VERSION \"12.4.131\")\nset(CMAKE_CUDA_COMPILER_TOOLKIT_ROOT \"/opt/cuda-12.4\")\n"),
            ("b/CMakeFiles/3.20.0/CMakeCUDACompiler.cmake", "set(CMAKE_CUDA_COMPILER_VERSION \"11.8.89\")\n"),
            ("b/sub/x", ""),
        ]);
        let rec = recorded(&t.path().join("b/sub"), &[t.path()]).unwrap();
        assert_eq!(rec.dir, t.path().join("b"));
        let got: Vec<(&str, &str)> = rec
            .evidence
            .iter()
            .map(|e| (e.key.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("CMAKE_CUDA_COMPILER_TOOLKIT_ROOT", "/opt/cuda-12.4"),
                ("CMAKE_CUDA_COMPILER_VERSION", "12.4.131")
            ],
            "the newest CMake's file, not the cache"
        );
    }

    #[test]
    fn configure_time_calls_and_trees_above_the_stop_are_left_alone() {
        let t = tree(&[
            ("CMakeCache.txt", "USE_CUDA:BOOL=OFF\n"),
            ("p/b/CMakeCache.txt", "USE_CUDA:BOOL=OFF\n"),
            ("p/b/CMakeFiles/CMakeScratch/TryCompile-x/a", ""),
            ("p/src/a", ""),
        ]);
        let scratch = t.path().join("p/b/CMakeFiles/CMakeScratch/TryCompile-x");
        assert!(recorded(&scratch, &[t.path()]).is_none());
        let p = t.path().join("p");
        assert!(recorded(&t.path().join("p/src"), &[p.as_path()]).is_none());
        let above = recorded(&t.path().join("p/src"), &[]).unwrap();
        assert_eq!(above.dir, t.path());
        assert_eq!(above.evidence[0].what, What::CudaOff);
    }

    #[test]
    fn a_cache_without_cuda_is_evidence_of_no_cuda() {
        let t = tree(&[(
            "b/CMakeCache.txt",
            "# c\n//doc\nCMAKE_CUDA_COMPILER:FILEPATH=CMAKE_CUDA_COMPILER-NOTFOUND\n",
        )]);
        let rec = recorded(&t.path().join("b"), &[]).unwrap();
        assert_eq!(rec.evidence.len(), 1);
        assert_eq!(rec.evidence[0].what, What::CudaOff);
        assert_eq!(rec.evidence[0].line, 3);
    }

    #[test]
    fn a_build_ninja_without_nvcc_records_nothing() {
        let t = tree(&[("b/build.ninja", "cxx = c++\ncflags = -I/usr/include\n")]);
        assert!(recorded(&t.path().join("b"), &[]).is_none());
    }
}
