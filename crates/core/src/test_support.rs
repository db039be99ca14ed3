//! Helpers for the unit tests: the captured real outputs in tests/captured.

/// The text of a captured file, e.g. `nvcc-version-12.4.txt`.
pub fn captured(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/captured");
    fs_err::read_to_string(format!("{path}/{name}")).unwrap()
}
