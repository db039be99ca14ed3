//! Parsing a toolchain file's text into a [`ProjectFile`], every error at
//! file:line:column; [`load`] reads the file once, so what is parsed is what trust hashes.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{ArchPolicy, Location, Pin, PinValue, ProjectError, ProjectFile, TorchCheck};
use crate::facts::arch;
use crate::facts::build_cache::UnknownBuildCache;
use crate::facts::reserved;
use crate::fsutil::line_col;
use crate::outside;
use crate::store::toolchain::{Kind, Spec};
use crate::ui::printable;

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a toolchain file: a [toolchain] table, and optional [build], [torch] and [env] tables"
)]
struct RawFile {
    toolchain: Option<RawToolchain>,
    build: Option<RawBuild>,
    torch: Option<RawTorch>,
    env: Option<BTreeMap<String, Spanned<toml::Value>>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a [build] table, such as `[build]` then `cache = \"ccache\"`"
)]
#[serde(rename_all = "kebab-case")]
struct RawBuild {
    cache: Option<Spanned<String>>,
    archs: Option<Spanned<String>>,
    jobs: Option<Spanned<i64>>,
    nvcc_threads: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    rename_all = "kebab-case",
    expecting = "a [toolchain] table, such as `[toolchain]` then `cuda = \"12.4\"`"
)]
struct RawToolchain {
    cuda: Option<Spanned<String>>,
    rocm: Option<Spanned<String>>,
    cuda_arch: Option<Vec<Spanned<String>>>,
    rocm_arch: Option<Vec<Spanned<String>>>,
    host_compiler: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a [torch] table, such as `[torch]` then `check = \"minor\"` or `index = \"auto\"`"
)]
struct RawTorch {
    check: Option<TorchCheck>,
    index: Option<Spanned<String>>,
}

/// Reads and parses a toolchain file. The bytes are read once: what is parsed is what is
/// hashed for trust.
pub fn load(path: &Path) -> Result<ProjectFile, ProjectError> {
    let bytes = outside::read(path, outside::Kind::ToolchainFile).map_err(|e| match e.why {
        outside::Why::NotRegular(what) => ProjectError::NotRegular {
            path: path.to_path_buf(),
            what,
        },
        why => ProjectError::Unreadable {
            path: path.to_path_buf(),
            message: why.to_string(),
        },
    })?;
    let text = std::str::from_utf8(&bytes).map_err(|e| ProjectError::Invalid {
        at: Location::of_bad_utf8(path, &bytes, &e),
        message: "the file is not UTF-8 text".to_string(),
    })?;
    parse(path, text)
}

/// A number where a string belongs (`cuda = 13.0`, `cuda-arch = [8.0]`), written as the
/// string it stood for: `cuda = "13.0"` for a whole `key = value` line, else `"8.0"`.
fn quoted(text: &str, span: std::ops::Range<usize>, message: &str) -> Option<String> {
    let number = message.starts_with("invalid type: floating point")
        || message.starts_with("invalid type: integer");
    if !number || !message.contains("expected a string") {
        return None;
    }
    let value = text.get(span.clone())?.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[span.end..]
        .find('\n')
        .map_or(text.len(), |i| span.end + i);
    let line = &text[line_start..line_end];
    let simple = line.split_once('=').and_then(|(key, v)| {
        let key = key.trim();
        let ok = v.trim() == value
            && !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        ok.then(|| format!("{key} = \"{value}\""))
    });
    Some(simple.unwrap_or_else(|| format!("\"{value}\"")))
}

/// Parses the text of a toolchain file; `path` is only used in messages.
pub fn parse(path: &Path, text: &str) -> Result<ProjectFile, ProjectError> {
    let at = |offset: usize| {
        let (line, column) = line_col(text, offset);
        Location {
            path: path.to_path_buf(),
            line,
            column,
        }
    };
    let invalid = |offset: usize, message: String| ProjectError::Invalid {
        at: at(offset),
        message,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        ProjectError::Syntax {
            at: at(offset),
            message: crate::ui::toml_message(e.message()),
            quoted: e.span().and_then(|span| quoted(text, span, e.message())),
        }
    })?;

    let (torch_check, torch_index) = match raw.torch {
        Some(t) => (t.check, t.index),
        None => (None, None),
    };
    let torch_index = match torch_index {
        None => None,
        Some(v) if v.get_ref() == "auto" => Some(at(v.span().start)),
        Some(v) => {
            let shown = printable(&format!("{:?}", v.get_ref())).into_owned();
            return Err(invalid(
                v.span().start,
                format!("[torch] index = {shown}: the one value is \"auto\" (the index of the active toolkit, from gpuenv's data)"),
            ));
        }
    };
    let mut file = ProjectFile {
        path: path.to_path_buf(),
        pins: Vec::new(),
        cuda_arch: Vec::new(),
        rocm_arch: Vec::new(),
        cuda_arch_at: Vec::new(),
        rocm_arch_at: Vec::new(),
        torch_check,
        torch_index,
        build_cache: None,
        build_archs: None,
        build_jobs: None,
        nvcc_threads: None,
        host_compiler: None,
        env: BTreeMap::new(),
        text: text.to_string(),
        trusted: false,
    };
    let (cache, archs, jobs, threads) = match raw.build {
        Some(b) => (b.cache, b.archs, b.jobs, b.nvcc_threads),
        None => (None, None, None, None),
    };
    for (value, key, slot) in [
        (jobs, "jobs", &mut file.build_jobs),
        (threads, "nvcc-threads", &mut file.nvcc_threads),
    ] {
        let Some(value) = value else { continue };
        let start = value.span().start;
        let max = crate::facts::build_jobs::MAX_PARALLEL;
        match u32::try_from(*value.get_ref()) {
            Ok(n) if (1..=max).contains(&n) => *slot = Some((n, at(start))),
            _ => {
                return Err(invalid(
                    start,
                    format!(
                        "[build] {key} = {}: a count from 1 to {max}",
                        value.get_ref()
                    ),
                ))
            }
        }
    }
    if let Some(archs) = archs {
        let start = archs.span().start;
        let value = match archs.get_ref().as_str() {
            "warn" => ArchPolicy::Warn,
            "add" => ArchPolicy::Add,
            "off" => ArchPolicy::Off,
            other => {
                let shown = printable(&format!("{other:?}")).into_owned();
                return Err(invalid(
                    start,
                    format!("[build] archs = {shown}: one of \"warn\" (the default), \"add\" or \"off\""),
                ));
            }
        };
        file.build_archs = Some((value, at(start)));
    }
    if let Some(cache) = cache {
        let start = cache.span().start;
        let value = cache
            .get_ref()
            .parse()
            .map_err(|e: UnknownBuildCache| invalid(start, e.to_string()))?;
        file.build_cache = Some((value, at(start)));
    }
    if let Some(tc) = raw.toolchain {
        for (kind, value) in [(Kind::Cuda, tc.cuda), (Kind::Rocm, tc.rocm)] {
            let Some(value) = value else { continue };
            let start = value.span().start;
            let pin_value = if value.get_ref() == "torch" {
                PinValue::Torch
            } else {
                Spec::parse_for_kind(kind, value.get_ref())
                    .map(PinValue::Spec)
                    .map_err(|e| {
                        let shown = printable(&format!("{:?}", value.get_ref())).into_owned();
                        invalid(
                            start,
                            format!("{kind} = {shown}: {}", printable(&e.to_string())),
                        )
                    })?
            };
            file.pins.push(Pin {
                kind,
                value: pin_value,
                at: at(start),
            });
        }
        for a in tc.cuda_arch.unwrap_or_default() {
            let parsed = arch::cuda_pin(a.get_ref())
                .map_err(|e| invalid(a.span().start, printable(&e.to_string()).into_owned()))?;
            // An entry named twice counts once, where it is first written.
            if !file.cuda_arch.contains(&parsed) {
                file.cuda_arch_at.push(at(a.span().start));
                file.cuda_arch.push(parsed);
            }
        }
        if let Some(cc) = tc.host_compiler {
            let start = cc.span().start;
            if cc.get_ref().trim().is_empty() {
                return Err(invalid(
                    start,
                    "host-compiler is empty: give a command such as \"g++-11\" or a path".into(),
                ));
            }
            file.host_compiler = Some((cc.into_inner(), at(start)));
        }
        for a in tc.rocm_arch.unwrap_or_default() {
            let parsed = arch::rocm_pin(a.get_ref())
                .map_err(|e| invalid(a.span().start, printable(&e.to_string()).into_owned()))?;
            if !file.rocm_arch.contains(&parsed) {
                file.rocm_arch_at.push(at(a.span().start));
                file.rocm_arch.push(parsed);
            }
        }
    }
    for (key, value) in raw.env.unwrap_or_default() {
        let start = value.span().start;
        if !is_env_name(&key) {
            return Err(invalid(
                start,
                format!(
                    "[env] key `{}` is not a valid environment variable name",
                    printable(&key)
                ),
            ));
        }
        if let Some(why) = reserved::why(&key) {
            return Err(ProjectError::Reserved {
                at: at(start),
                key,
                why,
            });
        }
        let text = match value.into_inner() {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Float(f) => f.to_string(),
            other => {
                return Err(invalid(
                    start,
                    format!(
                        "[env] {key} must be a string, number or boolean, not {}",
                        other.type_str()
                    ),
                ))
            }
        };
        if text.contains('\0') {
            return Err(invalid(
                start,
                format!(
                    "[env] {key} contains a NUL character, which no environment variable can hold"
                ),
            ));
        }
        file.env.insert(key, text);
    }
    Ok(file)
}

pub fn is_env_name(key: &str) -> bool {
    !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> ProjectFile {
        parse(Path::new("/p/gpuenv.toml"), text).unwrap()
    }

    fn parse_err(text: &str) -> String {
        parse(Path::new("/p/gpuenv.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn reads_every_section_of_the_design_example() {
        let f = parse_ok(
            r#"# gpuenv.toml at the project root
[toolchain]
cuda = "12.1"
rocm = "6.2"
cuda-arch = ["8.0", "8.6", "9.0+PTX"]
rocm-arch = ["gfx90a", "gfx942"]
host-compiler = "g++-11"

[torch]
check = "minor"

[env]
NCCL_DEBUG = "INFO"
"#,
        );
        let cuda = f.pin(Kind::Cuda).unwrap();
        assert_eq!(cuda.value, PinValue::Spec("cuda-12.1".parse().unwrap()));
        assert_eq!((cuda.at.line, cuda.at.column), (3, 8));
        assert_eq!(
            f.pin(Kind::Rocm).unwrap().value,
            PinValue::Spec("rocm-6.2".parse().unwrap())
        );
        assert_eq!(f.cuda_arch, ["8.0", "8.6", "9.0+PTX"]);
        assert_eq!(f.rocm_arch, ["gfx90a", "gfx942"]);
        let lines = |at: &[Location]| at.iter().map(|a| (a.line, a.column)).collect::<Vec<_>>();
        assert_eq!(lines(&f.cuda_arch_at), [(5, 14), (5, 21), (5, 28)]);
        assert_eq!(lines(&f.rocm_arch_at), [(6, 14), (6, 24)]);
        assert_eq!(f.torch_check, Some(TorchCheck::Minor));
        let (cc, at) = f.host_compiler.unwrap();
        assert_eq!((cc.as_str(), at.line), ("g++-11", 7));
        assert_eq!(f.env["NCCL_DEBUG"], "INFO");
    }

    #[test]
    fn torch_is_a_pin_value_of_its_own() {
        let f = parse_ok("[toolchain]\ncuda = \"torch\"\n");
        assert_eq!(f.pin(Kind::Cuda).unwrap().value, PinValue::Torch);
    }

    #[test]
    fn errors_carry_file_line_and_column() {
        let e = parse_err("[toolchain]\ncuda = \"12.1\"\ncompiler = \"gcc\"\n");
        assert!(e.starts_with("/p/gpuenv.toml:3:1: "), "{e}");
        assert!(e.contains("unknown field `compiler`"), "{e}");

        let e = parse_err("[toolchain]\ncuda = \"twelve\"\n");
        assert!(e.starts_with("/p/gpuenv.toml:2:8: "), "{e}");

        let e = parse_err("[toolchain]\ncuda-arch = [\"8.0\", \"sm_86\"]\n");
        assert!(e.starts_with("/p/gpuenv.toml:2:21: "), "{e}");
        assert!(e.contains("sm_86"), "{e}");

        let e = parse_err("[torch]\nindex = \"cu999\"\n");
        assert!(
            e.starts_with("/p/gpuenv.toml:2:9: ") && e.contains("auto"),
            "{e}"
        );
        let f = parse_ok("[torch]\nindex = \"auto\"\n");
        assert_eq!(f.torch_index.map(|at| at.line), Some(2));

        let e = parse_err("[build]\narchs = \"sometimes\"\n");
        assert!(
            e.starts_with("/p/gpuenv.toml:2:9: ") && e.contains("\"add\""),
            "{e}"
        );

        let e = parse_err("[torch]\ncheck = \"sometimes\"\n");
        assert!(e.starts_with("/p/gpuenv.toml:2:"), "{e}");

        let e = parse_err("[toolchain\ncuda = \"12.1\"\n");
        assert!(e.starts_with("/p/gpuenv.toml:1:"), "{e}");

        let e = parse_err("[env]\n\"BAD-NAME\" = \"x\"\n");
        assert!(e.contains("BAD-NAME"), "{e}");
    }
}
