//! The toolkit's decisions (its cuda-elf-header_test.go cases) on notes as the reader
//! returns them; reading notes from real ELF libraries built with cc is in
//! tests/it/forward_compat.rs (the core starts no programs of its own in its tests).

use super::*;

fn note(cuda: &str, driver: &[u64]) -> Option<CompatNote> {
    Some(CompatNote {
        format: 1,
        cuda: cuda.into(),
        driver: driver.to_vec(),
        device: vec![1, 2, 7, 8, 9, 10, 11, 12, 13, 14],
    })
}

#[test]
fn the_decision_is_the_container_toolkits() {
    let n575 = note("12.9", &[535, 550, 560, 565, 570, 575]);
    let yes = |c: &str, h: &str| decide(n575.as_ref(), Some(c), Some(h), None).use_compat;
    assert!(!yes("575.57.08", "590.44.01"));
    assert!(yes("575.57.08", "570.211.01"));
    assert!(yes("575.57.08", "575.10.10"));
    assert!(!yes("575.57.08", "575.57.08"));
    assert!(!yes("575.57.08", "575.99.99"));
    let by_cuda = |cuda: &str| decide(n575.as_ref(), None, None, Some(cuda)).use_compat;
    assert!(by_cuda("12.8") && !by_cuda("12.9") && !by_cuda("12.10"));
    assert!(!decide(None, Some("590.44.01"), Some("580.126.16"), Some("13.0")).use_compat);
    assert!(decide(None, Some("590.44.01"), Some("580.126.16"), None).use_compat);
}
