//! Directories that belong to the NVIDIA driver, not to a toolkit: the forward-compatibility
//! `libcuda` of a CUDA install (`/usr/local/cuda/compat`, NGC's `compat/lib.real`, conda's
//! `cuda-compat`) and the places container runtimes mount the host's driver libraries. A
//! container's entrypoint switches forward compatibility on through exactly these
//! `LD_LIBRARY_PATH` entries, so switching toolkits never removes them and gpuenv never adds
//! one.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Where container runtimes put the driver's libraries: the NVIDIA container toolkit's
/// `/usr/local/nvidia/lib` and `lib64`, Apptainer/Singularity's `--nv`, WSL's.
pub const MOUNTED: &[&str] = &[
    "/usr/local/nvidia/lib",
    "/usr/local/nvidia/lib64",
    "/.singularity.d/libs",
    "/usr/lib/wsl/lib",
];

/// A driver or forward-compatibility directory: one of [`MOUNTED`] (or below
/// `/usr/local/nvidia/lib*`), or a path with a `compat*` or `*-compat` component.
pub fn is_driver_dir(entry: &OsStr) -> bool {
    let path = Path::new(entry);
    if !path.is_absolute() {
        return false;
    }
    // Each rule below needs one of these words in the path: most entries have none, and
    // looking for them costs less than taking the path apart (every PATH entry is asked).
    let b = entry.as_bytes();
    let may = [&b"nvidia"[..], b"singularity", b"wsl", b"compat"]
        .iter()
        .any(|w| crate::byte_search::contains(b, w));
    if !may {
        return false;
    }
    let mounted = MOUNTED.iter().any(|m| path.starts_with(m))
        || path.starts_with("/usr/local/nvidia")
            && path
                .components()
                .nth(4)
                .is_some_and(|c| c.as_os_str().as_bytes().starts_with(b"lib"));
    mounted
        || path.components().any(|c| {
            let c = c.as_os_str().as_bytes();
            c.starts_with(b"compat") || c.ends_with(b"-compat")
        })
}

/// The driver version a `libcuda.so.<version>` file name carries (`libcuda.so.580.65.06`
/// gives `580.65.06`); `None` for `libcuda.so`, `libcuda.so.1` and other names.
pub fn libcuda_version(file_name: &str) -> Option<&str> {
    let v = file_name.strip_prefix("libcuda.so.")?;
    let mut parts = v.split('.');
    let ok = parts.clone().count() >= 2
        && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    ok.then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_and_compat_dirs_are_known_by_their_place() {
        for d in [
            "/usr/local/cuda/compat/lib.real",
            "/usr/local/cuda-13.4/compat",
            "/usr/local/cuda-12.4/compat/lib",
            "/usr/local/nvidia/lib64",
            "/usr/local/nvidia/lib",
            "/.singularity.d/libs",
            "/usr/lib/wsl/lib",
            "/opt/conda/cuda-compat",
        ] {
            assert!(is_driver_dir(d.as_ref()), "{d}");
        }
        for d in [
            "/usr/local/cuda/lib64",
            "/usr/local/nvidia/bin",
            "/usr/lib/x86_64-linux-gnu",
            "compat",
            "",
        ] {
            assert!(!is_driver_dir(d.as_ref()), "{d}");
        }
    }

    #[test]
    fn libcuda_file_names_give_the_driver_version() {
        assert_eq!(libcuda_version("libcuda.so.580.65.06"), Some("580.65.06"));
        assert_eq!(libcuda_version("libcuda.so.535.54.03"), Some("535.54.03"));
        for n in [
            "libcuda.so",
            "libcuda.so.1",
            "libcuda.so.x.y",
            "libcudart.so.13.0.96",
        ] {
            assert_eq!(libcuda_version(n), None, "{n}");
        }
    }
}
