//! Is the installed toolkit newer than the machine's NVIDIA driver supports? Pure: the
//! caller reads `/proc/driver/nvidia/version`.

use gpuenv_core::toolchain::Version;

/// The driver version in the first line of `/proc/driver/nvidia/version`.
pub fn parse_proc_version(text: &str) -> Option<Version> {
    Version::find_in(text.lines().next()?)
}

/// The oldest Linux driver that runs programs of a CUDA major release (minor version
/// compatibility), from NVIDIA's CUDA release notes.
fn min_driver_for_major(major: u64) -> Option<&'static str> {
    Some(match major {
        13 => "580.65.06",
        12 => "525.60.13",
        11 => "450.80.02",
        10 => "440.33",
        _ => return None,
    })
}

/// A warning when `driver` is too old for toolkits of `cuda`'s major release; `None` when
/// it is new enough or the release is unknown.
pub fn check(cuda: &Version, driver: &Version) -> Option<String> {
    let need = min_driver_for_major(cuda.major())?;
    (driver < &need.parse().ok()?).then(|| {
        format!(
            "CUDA {cuda} needs NVIDIA driver {need} or newer, and this machine has {driver}: programs built with it will fail with cudaErrorInsufficientDriver\nhint: update the driver, or install a toolkit this driver supports"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn reads_both_banner_styles() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/captured");
        let open =
            fs_err::read_to_string(format!("{dir}/proc-driver-nvidia-version-open.txt")).unwrap();
        let prop =
            fs_err::read_to_string(format!("{dir}/proc-driver-nvidia-version-proprietary.txt"))
                .unwrap();
        assert_eq!(parse_proc_version(&open), Some(v("575.57.08")));
        assert_eq!(parse_proc_version(&prop), Some(v("515.76")));
    }

    #[test]
    fn warns_only_when_the_driver_is_too_old() {
        assert!(check(&v("13.0.2"), &v("575.57.08"))
            .unwrap()
            .contains("580.65.06"));
        assert_eq!(check(&v("12.4.1"), &v("575.57.08")), None);
        assert!(check(&v("12.4.1"), &v("515.76")).is_some());
        assert_eq!(check(&v("11.8"), &v("515.76")), None);
        assert_eq!(check(&v("9.2"), &v("100.0")), None);
    }
}
