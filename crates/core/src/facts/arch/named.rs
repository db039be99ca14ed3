//! `TORCH_CUDA_ARCH_LIST` as PyTorch reads it (`torch/utils/cpp_extension.py`,
//! `_get_cuda_arch_flags`): spaces become `;`, named archs are expanded, then each entry
//! must be an arch. Commas are not separators there.

use super::cuda::{CudaArch, CudaArchError, Suffix};

/// PyTorch's `named_arches` as torch 2.15 has them (combined names first, as there). Older
/// torch stops earlier (Turing, Ampere, Hopper, Blackwell); Blackwell was
/// `10.0;10.3;12.0+PTX` in 2.7.
pub const NAMED_ARCHES: &[(&str, &str)] = &[
    ("Kepler+Tesla", "3.7"),
    ("Kepler", "3.5+PTX"),
    ("Maxwell+Tegra", "5.3"),
    ("Maxwell", "5.0;5.2+PTX"),
    ("Pascal", "6.0;6.1+PTX"),
    ("Volta+Tegra", "7.2"),
    ("Volta", "7.0+PTX"),
    ("Turing", "7.5+PTX"),
    ("Ampere+Tegra", "8.7"),
    ("Ampere", "8.0;8.6+PTX"),
    ("Ada", "8.9+PTX"),
    ("Hopper", "9.0+PTX"),
    ("Blackwell+Tegra", "11.0"),
    ("Blackwell", "10.0;10.3;12.0;12.1+PTX"),
    ("Rubin", "10.7+PTX"),
];

/// Whether `torch.utils.cpp_extension` takes the arch: its `supported_arches` (torch 2.15)
/// has `a` targets but no family-specific (`f`) ones, so `10.0f` stops it with "Unknown CUDA
/// arch".
pub fn torch_takes(arch: &CudaArch) -> bool {
    arch.suffix != Suffix::F
}

/// One entry of an arch list, as written and as understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    /// The name it came from (`Hopper`), when it came from one.
    pub name: Option<&'static str>,
    /// What was written (the expansion's entry for a name).
    pub text: String,
    pub arch: Result<CudaArch, CudaArchError>,
}

/// The archs a named arch stands for (`Ampere` -> 8.0, 8.6+PTX).
pub fn named(name: &str) -> Option<Vec<CudaArch>> {
    let (_, list) = NAMED_ARCHES.iter().find(|(n, _)| *n == name)?;
    Some(
        list.split(';')
            .map(|a| CudaArch::parse(a).expect("PyTorch's named archs are archs"))
            .collect(),
    )
}

/// A `TORCH_CUDA_ARCH_LIST` value, entry by entry (empty entries skipped).
pub fn parse_torch_list(list: &str) -> Vec<ListEntry> {
    list.split([';', ' '])
        .filter(|t| !t.is_empty())
        .flat_map(
            |token| match NAMED_ARCHES.iter().find(|(n, _)| *n == token) {
                Some((name, expansion)) => expansion
                    .split(';')
                    .map(|a| ListEntry {
                        name: Some(name),
                        text: a.to_string(),
                        arch: CudaArch::parse(a),
                    })
                    .collect(),
                None => vec![ListEntry {
                    name: None,
                    text: token.to_string(),
                    arch: CudaArch::parse(token),
                }],
            },
        )
        .collect()
}

/// The `TORCH_CUDA_ARCH_LIST` spelling of a list of archs.
pub fn torch_list(archs: &[CudaArch]) -> String {
    let shown: Vec<String> = archs.iter().map(CudaArch::to_string).collect();
    shown.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_arch_expands_blackwell_included() {
        for (name, _) in NAMED_ARCHES {
            assert!(!named(name).unwrap().is_empty(), "{name}");
        }
        let shown = |n| torch_list(&named(n).unwrap());
        assert_eq!(shown("Blackwell"), "10.0;10.3;12.0;12.1+PTX");
        assert_eq!(shown("Blackwell+Tegra"), "11.0");
        assert_eq!(shown("Hopper"), "9.0+PTX");
        assert_eq!(shown("Rubin"), "10.7+PTX");
        assert_eq!(named("Feynman"), None);
        assert!(torch_takes(&CudaArch::parse("10.0a").unwrap()));
        assert!(!torch_takes(&CudaArch::parse("10.0f").unwrap()));
    }

    #[test]
    fn lists_split_on_semicolons_and_spaces_and_expand_names() {
        let entries = parse_torch_list("7.5 8.0;Ampere;;9.0a");
        let texts: Vec<&str> = entries.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, ["7.5", "8.0", "8.0", "8.6+PTX", "9.0a"]);
        assert_eq!(entries[2].name, Some("Ampere"));
        assert!(entries.iter().all(|e| e.arch.is_ok()));
        // PyTorch raises "Unknown CUDA arch (8.0,8.6)" for a comma list.
        let entries = parse_torch_list("8.0,8.6");
        assert_eq!(entries.len(), 1);
        assert!(entries[0].arch.is_err());
    }
}
