//! What a build directory records about the toolkit it was configured with, read from the
//! files CMake and PyTorch's extension builder write there. Pure parsing of text that
//! gpuenv did not write: any bytes parse, lines past [`MAX_LINE`] are skipped, and nothing
//! here opens, runs or writes a path it reads.

use std::collections::BTreeMap;

/// Lines longer than this are skipped: no setting gpuenv reads is near it.
pub const MAX_LINE: usize = 64 * 1024;

/// One value and the 1-based line it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub value: String,
    pub line: usize,
}

pub type Settings = BTreeMap<String, Setting>;

/// The lines of `text` worth parsing, numbered from 1, trimmed.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.len() <= MAX_LINE)
        .map(|(i, l)| (i + 1, l.trim()))
}

/// `CMakeCache.txt`: `KEY:TYPE=VALUE` lines (also `KEY=VALUE`); comments (`#`, `//`) and
/// blank lines skipped. The last of a repeated key wins, as in CMake.
pub fn cmake_cache(text: &str) -> Settings {
    lines(text)
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#') && !l.starts_with("//"))
        .filter_map(|(line, l)| {
            let (key, value) = l.split_once('=')?;
            let key = key.split_once(':').map_or(key, |(k, _)| k);
            let value = value.to_string();
            Some((key.to_string(), Setting { value, line }))
        })
        .collect()
}

/// `CMakeFiles/<version>/CMakeCUDACompiler.cmake`: `set(NAME "VALUE")` or `set(NAME VALUE)`
/// lines at the start of a line; anything else (`if(…)`, indented `set` in a block) skipped.
pub fn cmake_sets(text: &str) -> Settings {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.len() <= MAX_LINE)
        .filter_map(|(i, l)| {
            let inner = l.strip_prefix("set(")?.trim_end().strip_suffix(')')?;
            let (name, value) = inner.split_once(' ')?;
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            let setting = Setting {
                value: value.to_string(),
                line: i + 1,
            };
            Some((name.to_string(), setting))
        })
        .collect()
}

/// A `build.ninja`'s top-level variables (`name = value`): what PyTorch's extension builder
/// writes first (`nvcc = …`, `cuda_cflags = …`). Rules, builds and their indented
/// bindings are skipped.
pub fn ninja_vars(text: &str) -> Settings {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.len() <= MAX_LINE && !l.starts_with([' ', '\t', '#']))
        .filter_map(|(i, l)| {
            let (name, value) = l.split_once('=')?;
            let name = name.trim();
            let simple = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
            let setting = Setting {
                value: value.trim().to_string(),
                line: i + 1,
            };
            simple.then(|| (name.to_string(), setting))
        })
        .collect()
}

/// The words of a ninja or shell command value, with `'…'` and `"…"` quotes taken off
/// (what `shlex.quote` puts around a path with a space); no other shell syntax is read.
pub fn words(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in value.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        out.push(word);
    }
    out
}

/// The directories named by `-I<dir>`, `-I <dir>` and `-isystem <dir>` in a flags value.
pub fn include_dirs(flags: &str) -> Vec<String> {
    let words = words(flags);
    let mut out = Vec::new();
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if w == "-I" || w == "-isystem" {
            out.extend(it.next().cloned());
        } else if let Some(dir) = w.strip_prefix("-I").filter(|d| !d.is_empty()) {
            out.push(dir.to_string());
        }
    }
    out
}

/// CMake's false constants, and `…-NOTFOUND`.
pub fn is_false(value: &str) -> bool {
    let v = value.trim().to_ascii_uppercase();
    matches!(
        v.as_str(),
        "" | "0" | "OFF" | "NO" | "FALSE" | "N" | "IGNORE" | "NOTFOUND"
    ) || v.ends_with("-NOTFOUND")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::captured;

    #[test]
    fn a_cpu_build_cache_reads_as_use_cuda_off_and_no_toolkit() {
        let text = captured("cmakecache-cpu-build.txt");
        let cache = cmake_cache(&text);
        assert_eq!(cache["USE_CUDA"].value, "OFF");
        assert!(is_false(&cache["USE_CUDA"].value));
        assert!(is_false(&cache["USE_ROCM"].value));
        assert_eq!(cache["CMAKE_BUILD_TYPE"].value, "Release");
        assert!(
            is_false(&cache["CUDA_TOOLKIT_ROOT_DIR"].value),
            "…-NOTFOUND is false"
        );
        assert!(!cache.contains_key("# This is the CMakeCache file."));
        let line = text
            .lines()
            .position(|l| l.starts_with("USE_CUDA:"))
            .unwrap();
        assert_eq!(cache["USE_CUDA"].line, line + 1);
    }

    #[test]
    fn cmake_truth_values() {
        for f in ["OFF", "off", "0", "NO", "FALSE", "N", "", "X-NOTFOUND"] {
            assert!(is_false(f), "{f}");
        }
        for t in ["ON", "1", "YES", "TRUE", "/usr/local/cuda"] {
            assert!(!is_false(t), "{t}");
        }
    }

    #[test]
    fn the_compiler_file_gives_the_version_and_toolkit_root_cmake_found() {
        let text = "set(CMAKE_CUDA_COMPILER \"/h/views/cuda-13.0.88/bin/nvcc\")\n\
                    set(CMAKE_CUDA_COMPILER_VERSION \"13.0.88\")\n\
                    set(CMAKE_CUDA_COMPILER_LOADED 1)\n\
                    if(CMAKE_CUDA_SIZEOF_DATA_PTR)\n  set(CMAKE_SIZEOF_VOID_P \"8\")\nendif()\n\
                    set(CMAKE_CUDA_COMPILER_TOOLKIT_ROOT \"/opt/cuda 13\")\n";
        let sets = cmake_sets(text);
        assert_eq!(
            sets["CMAKE_CUDA_COMPILER"].value,
            "/h/views/cuda-13.0.88/bin/nvcc"
        );
        assert_eq!(sets["CMAKE_CUDA_COMPILER_VERSION"].value, "13.0.88");
        assert_eq!(sets["CMAKE_CUDA_COMPILER_LOADED"].value, "1");
        assert_eq!(
            sets["CMAKE_CUDA_COMPILER_TOOLKIT_ROOT"].value,
            "/opt/cuda 13"
        );
        assert_eq!(sets["CMAKE_CUDA_COMPILER_TOOLKIT_ROOT"].line, 7);
        assert!(!sets.contains_key("CMAKE_SIZEOF_VOID_P"), "inside an if()");
    }

    #[test]
    fn torchs_build_ninja_gives_nvcc_and_the_include_dirs() {
        let text = "ninja_required_version = 1.3\ncxx = c++\n\
                    nvcc = /usr/bin/ccache '/h/views/cuda 13/bin/nvcc'\n\
                    cuda_cflags = -DX -I/v/torch/include -I /h/views/cuda-13/include -isystem /usr/include/python3.11\n\
                    rule cuda_compile\n  command = $nvcc $cuda_cflags -c $in -o $out\n\
                    build a.o: cuda_compile /src/a.cu\n";
        let vars = ninja_vars(text);
        assert_eq!(
            words(&vars["nvcc"].value),
            ["/usr/bin/ccache", "/h/views/cuda 13/bin/nvcc"]
        );
        assert_eq!(vars["nvcc"].line, 3);
        assert_eq!(
            include_dirs(&vars["cuda_cflags"].value),
            [
                "/v/torch/include",
                "/h/views/cuda-13/include",
                "/usr/include/python3.11"
            ]
        );
        assert!(!vars.contains_key("command"), "a rule's binding");
        assert!(!vars.contains_key("build a.o: cuda_compile /src/a.cu"));
    }
}
