//! A value that becomes one component of a path: a toolchain name names a directory under
//! `views/` and a module file, a component a directory under `share/doc/`. Such values come
//! from manifests, index pages, an upstream store's settings and module files, so every one
//! is checked by [`part`] where it is read, before anything touches the disk: no file can
//! name `../../.bashrc` as a toolchain.

/// A value that cannot be one path component.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {what} `{value}` cannot name a file: {why}")]
pub struct UnsafePart {
    pub what: &'static str,
    pub value: String,
    pub why: &'static str,
}

/// `value` as one path component: a name, a version or a file name (`what` says which, for
/// the message). Empty, `.`, anything with `/`, `..` or NUL is refused.
pub fn part<'a>(what: &'static str, value: &'a str) -> Result<&'a str, UnsafePart> {
    let why = if value.is_empty() {
        "it is empty"
    } else if value.contains('/') {
        "it contains `/`"
    } else if value.contains("..") || value == "." {
        "it is or contains `..`"
    } else if value.contains('\0') {
        "it contains a NUL byte"
    } else {
        return Ok(value);
    };
    Err(UnsafePart {
        what,
        value: crate::ui::value(value),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_never_leaves_its_directory() {
        for good in ["cuda_nvcc", "cuda-12.4.1", "x.whl", "a.b"] {
            assert_eq!(part("name", good), Ok(good));
        }
        for bad in ["", ".", "..", "../x", "a/b", "a..b", "/etc", "x\0y"] {
            assert!(part("name", bad).is_err(), "{bad:?}");
        }
        let e = part("component", "../../x").unwrap_err().to_string();
        assert!(
            e.contains("component `../../x`") && e.contains("`/`"),
            "{e}"
        );
    }
}
