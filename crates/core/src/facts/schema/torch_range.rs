//! Torch releases in the data: `2.9` parsed, and a torch index row's `torch-first`/
//! `torch-last` checked.

use super::*;

/// Why a row's `torch-first`/`torch-last` is refused (the row's own error names the row).
pub(super) struct BadRange(pub(super) String);

/// `torch-first`/`torch-last` as torch releases (`2.9`), first at or below last.
pub(super) fn torch_range(
    first: &Option<String>,
    last: &Option<String>,
) -> Result<TorchRange, BadRange> {
    let parse = |field: &str, v: &Option<String>| match v {
        None => Ok(None),
        Some(s) => parse_release(s).map(Some).ok_or_else(|| {
            BadRange(format!(
                "{field} = {s:?} is not a torch release such as \"2.9\""
            ))
        }),
    };
    let (first, last) = (parse("torch-first", first)?, parse("torch-last", last)?);
    if let (Some(f), Some(l)) = (first, last) {
        if f > l {
            return Err(BadRange("torch-first is after torch-last".into()));
        }
    }
    Ok((first, last))
}

/// `12.4` -> `(12, 4)`; majors 1..=99, minors 0..=99.
pub fn parse_release(s: &str) -> Option<(u64, u64)> {
    let (a, b) = s.split_once('.')?;
    let num = |p: &str| -> Option<u64> {
        (!p.is_empty() && p.len() <= 2 && p.bytes().all(|c| c.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    let (major, minor) = (num(a)?, num(b)?);
    (major >= 1).then_some((major, minor))
}
