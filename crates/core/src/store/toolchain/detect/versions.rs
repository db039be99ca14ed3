//! What a tree's version files and its tools' `--version` say: pure parsers of the texts
//! `detect` reads.

use super::Version;

/// What is wrong with a `version.json`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VersionJsonError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("no cuda.version or cuda_nvcc.version")]
    NoVersion,
}

/// `share/hip/version` of Debian's packages: `HIP_VERSION_MAJOR=5` / `HIP_VERSION_MINOR=2`
/// lines (the patch is a build number, as in `hipconfig --version`).
pub fn parse_hip_version_file(text: &str) -> Option<Version> {
    let value = |key: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))?
            .trim()
            .parse()
            .ok()
    };
    Some(Version::new(&[
        value("HIP_VERSION_MAJOR")?,
        value("HIP_VERSION_MINOR")?,
    ]))
}

/// version.json's `cuda.version` when it is a release (11.x writes a date there).
pub(super) fn cuda_json_release(text: &str) -> Option<Version> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let v: Version = json.get("cuda")?.get("version")?.as_str()?.parse().ok()?;
    v.parts().get(2).is_none_or(|p| *p < 1_000_000).then_some(v)
}

/// `version.json` of CUDA 11.1+. 11.x writes a build date as the third component of
/// `cuda.version` (`11.8.20220929`), so the nvcc component's version is used there; newer
/// releases write the plain release label (`12.4.1`).
pub fn parse_cuda_version_json(text: &str) -> Result<Version, VersionJsonError> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| VersionJsonError::Json(e.to_string()))?;
    let field = |component: &str| -> Option<Version> {
        json.get(component)?.get("version")?.as_str()?.parse().ok()
    };
    let sdk = field("cuda");
    match sdk {
        Some(v) if v.parts().get(2).is_none_or(|p| *p < 1_000_000) => Ok(v),
        Some(v) => Ok(field("cuda_nvcc").unwrap_or_else(|| v.truncated(2))),
        None => field("cuda_nvcc").ok_or(VersionJsonError::NoVersion),
    }
}

/// `#define CUDA_VERSION 12040` in `cuda.h`: major * 1000 + minor * 10 (no patch).
pub fn parse_cuda_h(text: &str) -> Option<Version> {
    let n: u64 = text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next()? == "#define" && words.next()? == "CUDA_VERSION")
            .then(|| words.next()?.parse().ok())?
    })?;
    (n >= 1000).then(|| Version::new(&[n / 1000, (n % 1000) / 10]))
}

/// `CUDA Version 10.2.89` (10.2 and older).
pub fn parse_cuda_version_txt(text: &str) -> Option<Version> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("CUDA Version "))
        .and_then(|v| v.trim().parse().ok())
}

/// `nvcc --version`: the line `Cuda compilation tools, release 12.4, V12.4.131`. 10.2 has no
/// `Build` line after it, 11+ does; only this line matters.
pub fn parse_nvcc_version(text: &str) -> Option<Version> {
    let line = text
        .lines()
        .find(|l| l.starts_with("Cuda compilation tools, release "))?;
    let full = line
        .split(", ")
        .find_map(|part| part.trim().strip_prefix('V'))
        .and_then(|v| v.parse().ok());
    full.or_else(|| {
        let release = line.strip_prefix("Cuda compilation tools, release ")?;
        release.split(',').next()?.trim().parse().ok()
    })
}

/// ROCm's `.info/version`: `6.2.4` or `6.2.4-120` (the build number is dropped).
pub fn parse_rocm_info_version(text: &str) -> Option<Version> {
    let first = text.lines().next()?.trim();
    first.split('-').next()?.parse().ok()
}

/// `hipconfig --version` (`6.2.41133-dd7f95766`) or hipcc's `HIP version: …` line. HIP's third
/// component is a build number, not ROCm's patch, so only major.minor is kept.
pub fn parse_hip_version(text: &str) -> Option<Version> {
    let line = text.lines().map(|l| l.trim()).find(|l| !l.is_empty())?;
    let line = line.strip_prefix("HIP version:").unwrap_or(line).trim();
    let v: Version = line.split('-').next()?.parse().ok()?;
    (v.parts().len() >= 2).then(|| v.truncated(2))
}

/// `#define HIP_VERSION_MAJOR 6` / `HIP_VERSION_MINOR 2` in `include/hip/hip_version.h`.
pub fn parse_hip_version_h(text: &str) -> Option<Version> {
    let define = |name: &str| -> Option<u64> {
        text.lines().find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next()? == "#define" && words.next()? == name)
                .then(|| words.next()?.parse().ok())
                .flatten()
        })
    };
    Some(Version::new(&[
        define("HIP_VERSION_MAJOR")?,
        define("HIP_VERSION_MINOR")?,
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Facts;
    use crate::store::toolchain::entry::{Entry, Source, FROM_NVCC, FROM_VERSION_JSON};
    use crate::store::toolchain::Kind;
    use crate::test_support::captured;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    /// `Entry::release` of a tree of `kind` whose `version` was read from `from`, by the
    /// built-in data.
    fn release(kind: Kind, version: &Version, from: &str) -> Version {
        release_by(Facts::embedded(), kind, version, from)
    }

    fn release_by(facts: &Facts, kind: Kind, version: &Version, from: &str) -> Version {
        Entry {
            kind,
            version: version.clone(),
            root: "/t".into(),
            source: Source::Linked,
            version_from: from.into(),
            include_dir: "/t/include".into(),
            lib_dir: "/t/lib".into(),
            collectives: None,
            system: None,
        }
        .release(facts)
    }

    #[test]
    fn version_json_of_11_8_uses_the_nvcc_component_not_the_build_date() {
        assert_eq!(
            parse_cuda_version_json(&captured("cuda-version.json-11.8")),
            Ok(v("11.8.89"))
        );
        // Which is nvcc's build number: the release is 11.8.
        assert_eq!(cuda_json_release(&captured("cuda-version.json-11.8")), None);
        assert_eq!(
            release(Kind::Cuda, &v("11.8.89"), "version.json (cuda_nvcc)"),
            v("11.8")
        );
    }

    #[test]
    fn the_release_is_version_jsons_else_the_one_release_the_data_gives_nvccs_build() {
        let rel = |version: &str, from: &str| release(Kind::Cuda, &v(version), from);
        assert_eq!(rel("13.0.2", FROM_VERSION_JSON), v("13.0.2"));
        // version.json wins over the data, whatever nvcc says.
        assert_eq!(rel("13.0.3", FROM_VERSION_JSON), v("13.0.3"));
        assert_eq!(rel("13.2.86", FROM_NVCC), v("13.2.2"));
        assert_eq!(rel("12.4.131", FROM_NVCC), v("12.4.1"));
        // 13.0.88 ships in 13.0.1, 13.0.2 and 13.0.3: never guessed.
        assert_eq!(rel("13.0.88", FROM_NVCC), v("13.0"));
        // A build past the data, cuda.h, version.txt: major.minor.
        assert_eq!(rel("13.9.12", FROM_NVCC), v("13.9"));
        assert_eq!(rel("12.4", "include/cuda.h"), v("12.4"));
        assert_eq!(rel("10.2.89", "version.txt"), v("10.2"));
        assert_eq!(
            release(Kind::Rocm, &v("6.2.4"), ".info/version"),
            v("6.2.4")
        );
    }

    #[test]
    fn a_newer_copy_of_the_data_can_name_a_build_the_built_in_one_does_not_know() {
        let text = include_str!("../../../facts/cuda.toml").replace(
            "# PyTorch's CUDA wheel indexes",
            "[[nvcc-build]]\nrelease = \"13.9.0\"\nnvcc = \"13.9.12\"\nsource = \"a test\"\n\n# PyTorch's CUDA wheel indexes",
        );
        let copy = Facts::from_checked(crate::facts::schema::check(&text).unwrap());
        assert_eq!(
            release_by(&copy, Kind::Cuda, &v("13.9.12"), FROM_NVCC),
            v("13.9.0")
        );
    }

    #[test]
    fn version_json_with_a_plain_release_label() {
        let text = r#"{"cuda": {"name": "CUDA SDK", "version": "12.4.1"},
                       "cuda_nvcc": {"name": "CUDA NVCC", "version": "12.4.131"}}"#;
        assert_eq!(parse_cuda_version_json(text), Ok(v("12.4.1")));
        assert_eq!(cuda_json_release(text), Some(v("12.4.1")));
        assert!(parse_cuda_version_json("{")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON"));
        assert!(parse_cuda_version_json("{}").is_err());
    }

    #[test]
    fn version_txt_of_10_2() {
        assert_eq!(
            parse_cuda_version_txt(&captured("cuda-version.txt-10.2")),
            Some(v("10.2.89"))
        );
        assert_eq!(parse_cuda_version_txt("garbage"), None);
    }

    #[test]
    fn cuda_h_gives_major_and_minor() {
        let text = "#ifndef __cuda_cuda_h__\n#define CUDA_VERSION 12040\n";
        assert_eq!(parse_cuda_h(text), Some(v("12.4")));
        assert_eq!(parse_cuda_h("#define CUDA_VERSION 11080"), Some(v("11.8")));
        assert_eq!(parse_cuda_h("#define CUDA_VERSION_X 1"), None);
        assert_eq!(parse_cuda_h("#define CUDA_VERSION 12"), None);
    }

    #[test]
    fn nvcc_version_output_of_every_captured_release() {
        for (file, want) in [
            ("nvcc-version-10.2.txt", "10.2.89"),
            ("nvcc-version-11.8.txt", "11.8.89"),
            ("nvcc-version-12.4.txt", "12.4.131"),
            ("nvcc-version-13.2.txt", "13.2.86"),
        ] {
            assert_eq!(parse_nvcc_version(&captured(file)), Some(v(want)), "{file}");
        }
        assert_eq!(parse_nvcc_version("nvcc: command not found"), None);
    }

    #[test]
    fn rocm_versions_from_info_hipconfig_and_header() {
        assert_eq!(
            parse_rocm_info_version(&captured("rocm-info-version-6.2.0")),
            Some(v("6.2.0"))
        );
        assert_eq!(parse_rocm_info_version("6.2.4-120\n"), Some(v("6.2.4")));
        assert_eq!(
            parse_hip_version(&captured("hipcc-version-6.2.txt")),
            Some(v("6.2"))
        );
        assert_eq!(parse_hip_version("6.2.41133-dd7f95766"), Some(v("6.2")));
        let header = "#define HIP_VERSION_MAJOR 6\n#define HIP_VERSION_MINOR 2\n#define HIP_VERSION_PATCH 41133\n";
        assert_eq!(parse_hip_version_h(header), Some(v("6.2")));
        assert_eq!(parse_hip_version_h("#define HIP_VERSION_MAJOR 6\n"), None);
        let debian = "# Auto-generated by cmake\nHIP_PACKAGING_VERSION_PATCH=0\nHIP_VERSION_MAJOR=5\nHIP_VERSION_MINOR=2\nHIP_VERSION_PATCH=21153\n";
        assert_eq!(parse_hip_version_file(debian), Some(v("5.2")));
        assert_eq!(parse_hip_version_file("HIP_VERSION_MAJOR=5\n"), None);
    }
}
