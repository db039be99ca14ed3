//! The names of CUDA's components. NVIDIA's redist manifests key them (`cuda_cudart`,
//! `libcublas`), the `cuda-toolkit` metapackage's extras name them (`cudart`, `cublas`), the
//! wheels are projects (`nvidia-cuda-runtime`), and a wheel install names its archives after
//! the project (`cuda_runtime`). One row per component, so a name recorded or typed in any
//! of those forms is understood by every source; records keep the redist key.

/// One component under each of its names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    /// The key of NVIDIA's `redistrib_*.json`: how gpuenv records it.
    pub redist: &'static str,
    /// The `cuda-toolkit` metapackage's extra.
    pub extra: &'static str,
    /// The wheel's project on the package index.
    pub wheel: &'static str,
}

const fn row(redist: &'static str, extra: &'static str, wheel: &'static str) -> Component {
    Component {
        redist,
        extra,
        wheel,
    }
}

/// From the CUDA 13 metapackage's METADATA (`Provides-Extra`, `Requires-Dist`) and the
/// redist manifests of the same releases.
pub const COMPONENTS: &[Component] = &[
    row("cuda_cccl", "cccl", "nvidia-cuda-cccl"),
    row("cuda_crt", "crt", "nvidia-cuda-crt"),
    row("cuda_cudart", "cudart", "nvidia-cuda-runtime"),
    row("cuda_culibos", "culibos", "nvidia-cuda-culibos"),
    row("cuda_cuobjdump", "cuobjdump", "nvidia-cuda-cuobjdump"),
    row("cuda_cupti", "cupti", "nvidia-cuda-cupti"),
    row("cuda_cuxxfilt", "cuxxfilt", "nvidia-cuda-cuxxfilt"),
    row("cuda_nvcc", "nvcc", "nvidia-cuda-nvcc"),
    row("cuda_nvdisasm", "nvdisasm", "nvidia-cuda-nvdisasm"),
    row("cuda_nvml_dev", "nvml", "nvidia-nvml-dev"),
    row("cuda_nvrtc", "nvrtc", "nvidia-cuda-nvrtc"),
    row("cuda_nvtx", "nvtx", "nvidia-nvtx"),
    row("cuda_opencl", "opencl", "nvidia-cuda-opencl"),
    row("cuda_profiler_api", "profiler", "nvidia-cuda-profiler-api"),
    row(
        "cuda_sanitizer_api",
        "sanitizer",
        "nvidia-cuda-sanitizer-api",
    ),
    row("libcublas", "cublas", "nvidia-cublas"),
    row("libcufft", "cufft", "nvidia-cufft"),
    row("libcufile", "cufile", "nvidia-cufile"),
    row("libcurand", "curand", "nvidia-curand"),
    row("libcusolver", "cusolver", "nvidia-cusolver"),
    row("libcusparse", "cusparse", "nvidia-cusparse"),
    row("libnpp", "npp", "nvidia-npp"),
    row("libnvfatbin", "nvfatbin", "nvidia-nvfatbin"),
    row("libnvjitlink", "nvjitlink", "nvidia-nvjitlink"),
    row("libnvjpeg", "nvjpeg", "nvidia-nvjpeg"),
    row("libnvvm", "nvvm", "nvidia-nvvm"),
];

fn normal(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('-', "_")
}

/// The component `name` names in any of its forms: redist key, extra, wheel project, or
/// the wheel's archive name (`cuda_runtime`).
pub fn component(name: &str) -> Option<&'static Component> {
    let n = normal(name);
    COMPONENTS.iter().find(|c| {
        let wheel = normal(c.wheel);
        n == c.redist
            || n == c.extra
            || n == wheel
            || Some(n.as_str()) == wheel.strip_prefix("nvidia_")
    })
}

/// How a component is recorded: its redist key when the table knows it, else as given.
pub fn recorded_component(name: &str) -> String {
    component(name).map_or_else(|| name.to_string(), |c| c.redist.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_names_one_component() {
        for name in [
            "cuda_cudart",
            "cudart",
            "nvidia-cuda-runtime",
            "cuda_runtime",
        ] {
            assert_eq!(component(name).unwrap().redist, "cuda_cudart", "{name}");
        }
        assert_eq!(component("profiler").unwrap().redist, "cuda_profiler_api");
        assert_eq!(component("nvidia_nvvm").unwrap().extra, "nvvm");
        assert_eq!(recorded_component("cublas"), "libcublas");
        assert_eq!(recorded_component("in_house"), "in_house");
    }

    #[test]
    fn no_name_is_shared_by_two_rows() {
        for c in COMPONENTS {
            let wheel = normal(c.wheel);
            let archive = wheel.trim_start_matches("nvidia_").to_string();
            for name in [c.redist, c.extra, &wheel, &archive] {
                assert_eq!(component(name), Some(c), "{name}");
            }
        }
    }
}
