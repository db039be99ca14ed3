//! "Did you mean": the spec a mistyped one was meant to be (`cuda13.0`, `13.0`,
//! `cuda 13.0`, `cdua-13.0` → `cuda-13.0`), so a typo gets the command that works.

use gpuenv_core::toolchain::{Kind, Spec};

/// The spec `typed` most likely meant, when it can tell; `next` is the argument after it
/// (`gpuenv install cuda 13.0` typed as two).
pub fn meant(typed: &str, next: Option<&str>) -> Option<String> {
    let joined;
    let typed = match next {
        Some(next) if Kind::ALL.iter().any(|k| k.as_str() == typed.trim()) => {
            joined = format!("{typed}-{next}");
            joined.as_str()
        }
        _ => typed,
    };
    let norm: String = typed
        .trim()
        .to_ascii_lowercase()
        .split(|c: char| c.is_whitespace() || c == '_')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let (word, rest) = match norm.find(|c: char| !c.is_ascii_alphabetic()) {
        Some(at) => norm.split_at(at),
        None => (norm.as_str(), ""),
    };
    let version = rest.trim_start_matches('-');
    if version.is_empty() || !version.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let kind = if word.is_empty() {
        // A version alone: CUDA's are what most people type.
        Kind::Cuda
    } else {
        *Kind::ALL
            .iter()
            .find(|k| strsim::damerau_levenshtein(word, k.as_str()) <= 2)?
    };
    let spec = format!("{}-{version}", kind.as_str());
    spec.parse::<Spec>().ok().map(|s| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::meant;

    #[test]
    fn typos_get_the_spec_they_meant() {
        for (typed, next, want) in [
            ("cuda13.0", None, "cuda-13.0"),
            ("13.0", None, "cuda-13.0"),
            ("cuda 13.0", None, "cuda-13.0"),
            ("cuda", Some("13.0"), "cuda-13.0"),
            ("cdua-13.0", None, "cuda-13.0"),
            ("CUDA_12.4", None, "cuda-12.4"),
            ("rcom-6.2", None, "rocm-6.2"),
            ("rocm6.2.4", None, "rocm-6.2.4"),
        ] {
            assert_eq!(meant(typed, next).as_deref(), Some(want), "{typed}");
        }
    }

    #[test]
    fn what_is_no_spec_gets_no_guess() {
        for typed in ["torch", "hello-13.0", "cuda", "cuda-", "cuda-x", ""] {
            assert_eq!(meant(typed, None), None, "{typed}");
        }
    }
}
