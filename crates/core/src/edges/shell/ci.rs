//! `gpuenv env --shell github` and `--shell dockerfile`: the environment in the formats a
//! GitHub Actions runner and a Dockerfile read. Both refuse what they cannot hold (a name
//! that is not a plain variable name, a newline in a Dockerfile value, a carriage return or
//! bytes that are not UTF-8) instead of writing something that reads back otherwise.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::facts::vars;
use crate::quote::{self, Unquotable};

/// One variable: its value before (the environment gpuenv ran in) and after (`None` = unset).
pub type Change<'a> = (&'a str, Option<&'a OsStr>, Option<&'a OsStr>);

#[derive(Debug, thiserror::Error)]
pub enum CiError {
    #[error("`{name}` is not a variable name {format} can set (letters, digits and `_`, not starting with a digit)")]
    BadName { name: String, format: &'static str },
    #[error("{name}'s value cannot be written for {format}: {why}")]
    BadValue {
        name: String,
        format: &'static str,
        why: Unquotable,
    },
}

impl crate::diagnostic::Diagnostic for CiError {
    fn hints(&self) -> Vec<String> {
        vec!["change the value (a toolchain file's [env] table, or the variable in this environment), or use `--shell json`, which holds any text".into()]
    }
}

const GITHUB: &str = "GitHub's environment files";
const DOCKERFILE: &str = "a Dockerfile";

fn plain_name(name: &str, format: &'static str) -> Result<(), CiError> {
    let ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(CiError::BadName {
            name: name.to_string(),
            format,
        })
    }
}

/// The entries put in front of `before` when `after` is `added:before` (a list that only
/// grew at the front); `None` otherwise.
pub fn prepended<'a>(before: Option<&OsStr>, after: &'a OsStr) -> Option<&'a [u8]> {
    let before = before.map(OsStr::as_bytes).filter(|b| !b.is_empty())?;
    let after = after.as_bytes();
    let cut = after.len().checked_sub(before.len() + 1)?;
    (after.ends_with(before) && after[cut] == b':').then(|| &after[..cut])
}

/// What a step appends to `$GITHUB_ENV` and to `$GITHUB_PATH`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GithubFiles {
    pub env: Vec<u8>,
    pub path: Vec<u8>,
    /// How many variables `env` sets.
    pub set: usize,
}

/// GitHub's file formats: `NAME=value`, or `NAME<<DELIM` … `DELIM` for a value with a
/// newline (a delimiter found nowhere in it). PATH entries added at the front go to
/// `$GITHUB_PATH`, one per line, last first: the runner puts each line it reads in front of
/// the ones before it. A PATH that lost entries is set whole in `$GITHUB_ENV`. An unset
/// variable is set empty (the files cannot unset).
pub fn github(vars: &[Change]) -> Result<GithubFiles, CiError> {
    let mut files = GithubFiles::default();
    for &(name, before, after) in vars {
        plain_name(name, GITHUB)?;
        let bad = |why| CiError::BadValue {
            name: name.to_string(),
            format: GITHUB,
            why,
        };
        let value = after.map_or(Ok(""), |v| v.to_str().ok_or(bad(Unquotable::NotUtf8)))?;
        if value.contains('\r') {
            return Err(bad(Unquotable::CarriageReturn));
        }
        if name == vars::PATH {
            if let Some(added) = after.and_then(|a| prepended(before, a)) {
                let added = std::str::from_utf8(added).expect("a part of UTF-8 text split at ':'");
                if added.contains('\n') {
                    return Err(bad(Unquotable::Newline));
                }
                for dir in added.split(':').rev().filter(|d| !d.is_empty()) {
                    files.path.extend_from_slice(dir.as_bytes());
                    files.path.push(b'\n');
                }
                continue;
            }
        }
        let line = if value.contains('\n') {
            let delim = quote::heredoc_delimiter(value);
            format!("{name}<<{delim}\n{value}\n{delim}\n")
        } else {
            format!("{name}={value}\n")
        };
        files.env.extend_from_slice(line.as_bytes());
        files.set += 1;
    }
    Ok(files)
}

/// Whether a Dockerfile leaves `name` out: what depends on the machine or the user the
/// image runs on, not on the image. `CONDA_OVERRIDE_CUDA` is set only where no driver is
/// seen, as during a build, but the image runs with one; the per-user JIT dirs
/// (`TORCH_EXTENSIONS_DIR`, the kernel caches) would be the building user's (root's), where
/// each tool's own default follows the running user.
pub fn not_for_images(name: &str) -> bool {
    use crate::context::vars;
    // The job counts are sized from the building machine's cores and memory, not the
    // machine the image runs on.
    [
        vars::CONDA_OVERRIDE_CUDA,
        vars::MAX_JOBS,
        vars::CMAKE_BUILD_PARALLEL_LEVEL,
    ]
    .contains(&name)
        || crate::edges::module_export::user_dir(name, "").is_some()
}

/// Dockerfile `ENV` lines, values in double quotes. A list that only grew at the front is
/// written as `added:${NAME}`, so what the base image or the container runtime put there
/// (the NVIDIA Container Toolkit's driver directories) stays. An unset variable is set empty.
/// What [`not_for_images`] names is left out.
pub fn dockerfile(vars: &[Change]) -> Result<String, CiError> {
    let mut out = String::new();
    for &(name, before, after) in vars.iter().filter(|(n, _, _)| !not_for_images(n)) {
        plain_name(name, DOCKERFILE)?;
        let bad = |why| CiError::BadValue {
            name: name.to_string(),
            format: DOCKERFILE,
            why,
        };
        let value = match after {
            Some(after) => match prepended(before, after) {
                Some(added) => {
                    let q = quote::dockerfile(added).map_err(bad)?;
                    format!("{}:${{{name}}}\"", &q[..q.len() - 1])
                }
                None => quote::dockerfile(after.as_bytes()).map_err(bad)?,
            },
            None => "\"\"".to_string(),
        };
        out.push_str(&format!("ENV {name}={value}\n"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> &OsStr {
        OsStr::new(s)
    }

    #[test]
    fn a_list_that_grew_at_the_front_is_told_apart_from_one_that_changed() {
        let after = os("/v/bin:/usr/bin:/bin");
        assert_eq!(
            prepended(Some(os("/usr/bin:/bin")), after),
            Some(&b"/v/bin"[..])
        );
        assert_eq!(prepended(Some(os("/bin")), os("/v/bin:/x/bin")), None);
        assert_eq!(prepended(None, after), None);
        assert_eq!(prepended(Some(os("")), after), None);
        // Not a whole entry: `in` is a suffix of `/v/bin` but not after a ':'.
        assert_eq!(prepended(Some(os("in")), os("/v/bin")), None);
    }

    #[test]
    fn github_puts_path_additions_in_github_path_last_first() {
        let files = github(&[
            ("CUDA_HOME", None, Some(os("/v/cuda"))),
            (
                "PATH",
                Some(os("/usr/bin")),
                Some(os("/a/bin:/b/bin:/usr/bin")),
            ),
        ])
        .unwrap();
        assert_eq!(String::from_utf8(files.env).unwrap(), "CUDA_HOME=/v/cuda\n");
        assert_eq!(String::from_utf8(files.path).unwrap(), "/b/bin\n/a/bin\n");
    }

    #[test]
    fn github_sets_a_path_that_lost_entries_whole() {
        let files = github(&[(
            "PATH",
            Some(os("/usr/local/cuda-11/bin:/usr/bin")),
            Some(os("/a/bin:/usr/bin")),
        )])
        .unwrap();
        assert_eq!(
            String::from_utf8(files.env).unwrap(),
            "PATH=/a/bin:/usr/bin\n"
        );
        assert!(files.path.is_empty());
    }

    #[test]
    fn github_writes_a_multi_line_value_with_a_delimiter_not_in_it() {
        let value = "a=b \"q\" 'q'\nghadelimiter_gpuenv\nEOF";
        let files = github(&[("X", None, Some(os(value)))]).unwrap();
        let text = String::from_utf8(files.env).unwrap();
        let (head, rest) = text.split_once('\n').unwrap();
        let delim = head.strip_prefix("X<<").unwrap();
        assert!(!value.contains(delim));
        assert_eq!(rest, format!("{value}\n{delim}\n"));
    }

    #[test]
    fn github_refuses_what_the_runner_would_read_otherwise() {
        let refused = |name: &str, value: &[u8]| {
            github(&[(name, None, Some(OsStr::from_bytes(value)))]).unwrap_err()
        };
        assert!(matches!(refused("A=B", b"x"), CiError::BadName { .. }));
        assert!(matches!(refused("A\nB", b"x"), CiError::BadName { .. }));
        assert!(matches!(refused("1A", b"x"), CiError::BadName { .. }));
        assert!(matches!(
            refused("A", b"x\ry"),
            CiError::BadValue {
                why: Unquotable::CarriageReturn,
                ..
            }
        ));
        assert!(matches!(
            refused("A", b"caf\xe9"),
            CiError::BadValue {
                why: Unquotable::NotUtf8,
                ..
            }
        ));
        // A newline in a PATH entry added to $GITHUB_PATH would become two entries.
        let err = github(&[("PATH", Some(os("/bin")), Some(os("/a\nb:/bin")))]).unwrap_err();
        assert!(matches!(
            err,
            CiError::BadValue {
                why: Unquotable::Newline,
                ..
            }
        ));
    }

    #[test]
    fn dockerfile_keeps_what_the_image_has_after_the_added_entries() {
        let text = dockerfile(&[
            ("CUDA_HOME", None, Some(os("/opt/g/views/cuda-13.0.2"))),
            (
                "LD_LIBRARY_PATH",
                Some(os("/usr/local/nvidia/lib64")),
                Some(os("/v/lib64:/usr/local/nvidia/lib64")),
            ),
            ("Q", None, Some(os("a \"b\" $c \\d"))),
            ("GONE", Some(os("x")), None),
        ])
        .unwrap();
        assert_eq!(
            text,
            "ENV CUDA_HOME=\"/opt/g/views/cuda-13.0.2\"\n\
             ENV LD_LIBRARY_PATH=\"/v/lib64:${LD_LIBRARY_PATH}\"\n\
             ENV Q=\"a \\\"b\\\" \\$c \\\\d\"\n\
             ENV GONE=\"\"\n"
        );
    }

    #[test]
    fn dockerfile_refuses_a_newline_and_bytes_that_are_not_utf8() {
        let err = dockerfile(&[("A", None, Some(os("x\ny")))]).unwrap_err();
        assert!(
            err.to_string()
                .contains("A's value cannot be written for a Dockerfile: it has a newline"),
            "{err}"
        );
        let err = dockerfile(&[("A", None, Some(OsStr::from_bytes(b"\xff")))]).unwrap_err();
        assert!(matches!(
            err,
            CiError::BadValue {
                why: Unquotable::NotUtf8,
                ..
            }
        ));
        assert!(dockerfile(&[("A B", None, Some(os("x")))]).is_err());
    }
}
