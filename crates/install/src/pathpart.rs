//! Values that become part of a path: a sha256 names a file in the download cache, a
//! toolchain name a directory under `toolchains/`, a component a directory under
//! `share/doc/`. They come from manifests, index pages and the command line, so every one
//! is checked here, where it is parsed, before anything touches the disk: a mirror must not
//! be able to name `../../.bashrc` as a digest.

use std::fmt;

/// What to do about a value a source sent that cannot be used (the hint of the error that
/// says which value it was).
pub const SOURCE_HINT: &str =
    "the source's metadata is broken or hostile, and nothing was written; tell whoever publishes it";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsafeValue {
    #[error("the sha256 `{0}` is not 64 hex digits")]
    Sha256(String),
    #[error("the {what} `{value}` cannot name a file: {why}")]
    Part {
        what: &'static str,
        value: String,
        why: &'static str,
    },
}

/// A sha256 digest: 64 hex digits, kept lowercase. The only way to build one is
/// [`Sha256::parse`], and the download cache takes nothing else as a file name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct Sha256(String);

impl TryFrom<String> for Sha256 {
    type Error = UnsafeValue;
    fn try_from(value: String) -> Result<Sha256, UnsafeValue> {
        Sha256::parse(&value)
    }
}

impl Sha256 {
    pub fn parse(value: &str) -> Result<Sha256, UnsafeValue> {
        if value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Sha256(value.to_ascii_lowercase()))
        } else {
            Err(UnsafeValue::Sha256(gpuenv_core::ui::value(value)))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for Sha256 {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

/// `value` as one path component (gpuenv_core's one check for every value from outside
/// that names a file).
pub fn part<'a>(what: &'static str, value: &'a str) -> Result<&'a str, UnsafeValue> {
    gpuenv_core::pathpart::part(what, value).map_err(|p| UnsafeValue::Part {
        what: p.what,
        value: p.value,
        why: p.why,
    })
}

/// 64 lowercase hex digits: the names gpuenv gives by sha256.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

pub(crate) fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sha256_is_64_hex_digits_and_nothing_else() {
        let ok = "AB".repeat(32);
        assert_eq!(Sha256::parse(&ok).unwrap().as_str(), "ab".repeat(32));
        for bad in [
            "",
            "abc",
            "../../../../home/u/.bashrc",
            &"g".repeat(64),
            &format!("{}/", "a".repeat(63)),
            &"a".repeat(65),
        ] {
            assert!(Sha256::parse(bad).is_err(), "{bad}");
        }
    }
}
