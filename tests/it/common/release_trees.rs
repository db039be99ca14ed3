//! Fake releases laid out as the real sources serve them: NVIDIA's redist tree (manifest +
//! tar.xz per component), a simple-API package index with NVIDIA-style wheels and the
//! `cuda-toolkit` metapackage, and a gpuenv manifest with a ROCm tarball. The nvcc inside
//! prints the real `--version` text of its release.

use std::path::Path;

use crate::common::archives::*;
use crate::common::{nvcc_version_text, write, CAPTURED};

/// Files by path (relative to a mirror root), with their content type.
pub type Tree = Vec<(String, Vec<u8>, &'static str)>;

pub fn platform() -> &'static str {
    if std::env::consts::ARCH == "aarch64" {
        "linux-sbsa"
    } else {
        "linux-x86_64"
    }
}

pub fn nvcc_script(version: &str) -> String {
    format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then\ncat <<'EOF'\n{}EOF\nexit 0\nfi\necho \"nvcc $*\"\n",
        nvcc_version_text(version)
    )
}

/// (component, version, files inside the component's directory) of a CUDA release.
pub fn cuda_components(release: &str) -> Vec<(&'static str, String, Vec<Item>)> {
    let major: u32 = release.split('.').next().unwrap().parse().unwrap();
    let v = |patch: &str| {
        let mm: Vec<&str> = release.split('.').take(2).collect();
        format!("{}.{}", mm.join("."), patch)
    };
    let (nvcc, rt, cccl) = if major >= 13 {
        (v("88"), v("96"), v("85"))
    } else {
        (v("131"), v("127"), v("127"))
    };
    let lic = || file("LICENSE", "NVIDIA license\n");
    let mut nvcc_files = vec![
        exe("bin/nvcc", nvcc_script(&nvcc)),
        exe("bin/ptxas", "#!/bin/sh\necho ptxas\n"),
        file("bin/nvcc.profile", "TOP = $(_HERE_)/..\n"),
        lic(),
    ];
    if major < 13 {
        nvcc_files.push(exe("nvvm/bin/cicc", "#!/bin/sh\n"));
        nvcc_files.push(file("include/crt/host_config.h", "// crt\n"));
    }
    let so = format!("libcudart.so.{rt}");
    let mut out = vec![
        ("cuda_nvcc", nvcc, nvcc_files),
        (
            "cuda_cudart",
            rt.clone(),
            vec![
                file("include/cuda_runtime.h", "// cuda_runtime\n"),
                file(&format!("lib/{so}"), "ELF"),
                Item::Symlink(format!("lib/libcudart.so.{major}"), so.clone()),
                Item::Symlink("lib/libcudart.so".into(), format!("libcudart.so.{major}")),
                file("lib/libcudart_static.a", "!<arch>\n"),
                // NVIDIA's driver stub, for linking without a driver.
                file("lib/stubs/libcuda.so", "ELF stub"),
                lic(),
            ],
        ),
        (
            "cuda_cccl",
            cccl.clone(),
            vec![file("include/cuda/std/version", "// cccl\n"), lic()],
        ),
    ];
    if major >= 13 {
        out.push((
            "cuda_crt",
            v("88"),
            vec![file("include/crt/host_config.h", "// crt\n"), lic()],
        ));
        out.push((
            "libnvvm",
            v("88"),
            vec![
                exe("nvvm/bin/cicc", "#!/bin/sh\n"),
                file("nvvm/libdevice/libdevice.10.bc", "BC"),
                lic(),
            ],
        ));
    }
    out.push((
        "cuda_profiler_api",
        cccl,
        vec![file("include/cuda_profiler_api.h", PROFILER_API_H), lic()],
    ));
    for lib in [
        "libcublas",
        "libcusparse",
        "libcusolver",
        "libcurand",
        "libcufft",
    ] {
        let name = lib.trim_start_matches("lib");
        out.push((
            lib,
            v("1"),
            vec![
                file(&format!("include/{name}.h"), "// header\n"),
                file(&format!("lib/{lib}.so.{major}"), "ELF"),
                lic(),
            ],
        ));
    }
    out
}

/// NVIDIA's redist tree for `releases`: an index page, `redistrib_<r>.json`, archives.
pub fn redist_tree(releases: &[&str]) -> Tree {
    let p = platform();
    let mut tree: Tree = Vec::new();
    let mut index = String::from("<html><body><pre>\n");
    for release in releases {
        let mut manifest = serde_json::Map::new();
        manifest.insert("release_date".into(), "2024-04-17".into());
        manifest.insert("release_label".into(), release.to_string().into());
        manifest.insert("release_product".into(), "cuda".into());
        for (comp, version, files) in cuda_components(release) {
            let top = format!("{comp}-{p}-{version}-archive");
            let items: Vec<Item> = files.into_iter().map(|i| prefixed(&top, i)).collect();
            let bytes = tar_xz(&items);
            let rel = format!("{comp}/{p}/{top}.tar.xz");
            manifest.insert(
                comp.into(),
                serde_json::json!({
                    "name": format!("CUDA {comp}"),
                    "license": "CUDA Toolkit",
                    "license_path": format!("{comp}/LICENSE.txt"),
                    "version": version,
                    p: {"relative_path": rel, "sha256": sha256(&bytes), "md5": "0", "size": bytes.len().to_string()},
                }),
            );
            tree.push((rel, bytes, "application/x-xz"));
        }
        let name = format!("redistrib_{release}.json");
        index.push_str(&format!("<a href=\"{name}\">{name}</a>\n"));
        tree.push((
            name,
            serde_json::to_vec_pretty(&manifest).unwrap(),
            "application/json",
        ));
    }
    index.push_str("</pre></body></html>\n");
    tree.push((String::new(), index.into_bytes(), "text/html"));
    tree
}

fn prefixed(top: &str, item: Item) -> Item {
    match item {
        Item::File(p, b, m) => Item::File(format!("{top}/{p}"), b, m),
        Item::Dir(p) => Item::Dir(format!("{top}/{p}")),
        Item::Symlink(p, t) => Item::Symlink(format!("{top}/{p}"), t),
        Item::HardLink(p, t) => Item::HardLink(format!("{top}/{p}"), format!("{top}/{t}")),
    }
}

fn dist_info(name: &str, version: &str, extra: &str) -> Vec<Item> {
    let dist = format!("{}-{version}.dist-info", name.replace('-', "_"));
    vec![
        file(
            &format!("{dist}/METADATA"),
            format!("Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n{extra}\n# {name}\n"),
        ),
        file(&format!("{dist}/WHEEL"), "Wheel-Version: 1.0\n"),
        file(&format!("{dist}/RECORD"), ""),
    ]
}

/// A PEP 691 index (under `simple/`) and the same as PEP 503 HTML only (under `html/`), with
/// CUDA 13 wheels resolved through `cuda-toolkit` 13.0.2. Decoys that must not be chosen: a
/// newer nvcc wheel outside the metapackage's pin, a Windows wheel, a pre-release toolkit.
pub fn pypi_tree() -> Tree {
    pypi_tree_of(&["13.0.2"])
}

/// [`pypi_tree`] with `cuda-toolkit` releases 13.0.N (N < 10), each pinning its own wheels.
pub fn pypi_tree_of(releases: &[&str]) -> Tree {
    pypi_tree_with(releases, CUDA_H)
}

/// [`pypi_tree_of`] whose runtime wheels carry `cuda_h` as `include/cuda.h`.
pub fn pypi_tree_with(releases: &[&str], cuda_h: &str) -> Tree {
    let arch = std::env::consts::ARCH;
    let plat = format!("manylinux2014_{arch}.manylinux_2_17_{arch}");
    // The wheel versions of 13.0.N, as NVIDIA numbers them (13.0.2: nvcc 13.0.88).
    let pins = |release: &str| {
        let n: u32 = release.rsplit('.').next().unwrap().parse().unwrap();
        assert!(release.starts_with("13.0.") && n < 10, "{release}");
        let v = |base: u32| format!("13.0.{}", base + n);
        (v(86), v(94), v(83))
    };
    // (project, version, files under nvidia/cu13/)
    let mut wheels: Vec<(&str, String, Vec<Item>)> = vec![(
        "nvidia-cuda-nvcc",
        "13.0.99".into(),
        vec![Item::File(
            "bin/nvcc".into(),
            nvcc_script("13.0.99").into_bytes(),
            0o744,
        )],
    )];
    for release in releases {
        let (tools, runtime, headers) = pins(release);
        wheels.extend([
            (
                "nvidia-cuda-nvcc",
                tools.clone(),
                vec![
                    Item::File("bin/nvcc".into(), nvcc_script(&tools).into_bytes(), 0o744),
                    Item::File("bin/ptxas".into(), b"#!/bin/sh\n".to_vec(), 0o744),
                    file("bin/nvcc.profile", "TOP = $(_HERE_)/..\n"),
                    file(".metadata/provenance.txt", "nvcc\n"),
                ],
            ),
            (
                "nvidia-cuda-runtime",
                runtime,
                vec![
                    file("include/cuda_runtime.h", "// cuda_runtime\n"),
                    file("include/cuda.h", cuda_h),
                    file("lib/libcudart.so.13", "ELF"),
                    file(".metadata/provenance.txt", "runtime\n"),
                ],
            ),
            (
                "nvidia-cuda-cccl",
                headers.clone(),
                vec![file("include/cccl/cuda/std/version", "// cccl\n")],
            ),
            (
                "nvidia-cuda-crt",
                tools.clone(),
                vec![file("include/crt/host_config.h", "// crt\n")],
            ),
            (
                "nvidia-nvvm",
                tools,
                vec![
                    Item::File("nvvm/bin/cicc".into(), b"#!/bin/sh\n".to_vec(), 0o744),
                    file("lib/libnvvm.so.4", "ELF"),
                ],
            ),
            (
                "nvidia-cuda-profiler-api",
                headers,
                vec![file("include/cuda_profiler_api.h", PROFILER_API_H)],
            ),
        ]);
    }
    let mut files: std::collections::BTreeMap<String, Vec<(String, Vec<u8>)>> = Default::default();
    for (project, version, items) in wheels {
        let version = version.as_str();
        let mut all: Vec<Item> = items
            .into_iter()
            .map(|i| match i {
                Item::File(p, b, m) => Item::File(format!("nvidia/cu13/{p}"), b, m),
                other => other,
            })
            .collect();
        all.push(file("nvidia/__init__.py", ""));
        all.extend(dist_info(project, version, ""));
        let fname = format!(
            "{}-{version}-py3-none-{plat}.whl",
            project.replace('-', "_")
        );
        files
            .entry(project.into())
            .or_default()
            .push((fname, zip(&all)));
    }
    files.entry("nvidia-cuda-nvcc".into()).or_default().push((
        "nvidia_cuda_nvcc-13.0.88-py3-none-win_amd64.whl".into(),
        zip(&[file("nvidia/cu13/bin/nvcc.exe", "MZ")]),
    ));
    let req = |p: &str, v: &str, extra: &str| {
        format!("Requires-Dist: {p}=={v}.*; (sys_platform == 'linux' or sys_platform == 'win32') and extra == '{extra}'\n")
    };
    let mut metas: Vec<(String, String)> = Vec::new();
    for release in releases {
        let (tools, runtime, headers) = pins(release);
        let mut meta = String::new();
        for (extra, project, version) in [
            ("cccl", "nvidia-cuda-cccl", headers.as_str()),
            ("crt", "nvidia-cuda-crt", tools.as_str()),
            ("cublas", "nvidia-cublas", "13.1.0.3"),
            ("cudart", "nvidia-cuda-runtime", runtime.as_str()),
            ("nvcc", "nvidia-cuda-nvcc", tools.as_str()),
            ("nvvm", "nvidia-nvvm", tools.as_str()),
            ("profiler", "nvidia-cuda-profiler-api", headers.as_str()),
        ] {
            meta.push_str(&format!("Provides-Extra: {extra}\n"));
            meta.push_str(&req(project, version, extra));
        }
        metas.push((release.to_string(), meta));
    }
    metas.push(("13.1.0rc1".into(), String::new()));
    metas.push(("12.4.1".into(), String::new()));
    for (version, body) in &metas {
        let fname = format!("cuda_toolkit-{version}-py2.py3-none-any.whl");
        files
            .entry("cuda-toolkit".into())
            .or_default()
            .push((fname, zip(&dist_info("cuda-toolkit", version, body))));
    }
    let mut tree: Tree = Vec::new();
    for (project, list) in &files {
        let mut json_files = Vec::new();
        let mut html = String::from("<!DOCTYPE html>\n<html><body>\n");
        for (fname, bytes) in list {
            let sha = sha256(bytes);
            tree.push((
                format!("files/{fname}"),
                bytes.clone(),
                "application/octet-stream",
            ));
            json_files.push(serde_json::json!({
                "filename": fname, "url": format!("../../files/{fname}"),
                "hashes": {"sha256": sha}, "size": bytes.len(), "yanked": false,
            }));
            html.push_str(&format!(
                "<a href=\"../../files/{fname}#sha256={sha}\">{fname}</a><br/>\n"
            ));
        }
        html.push_str("</body></html>\n");
        let json = serde_json::json!({"meta": {"api-version": "1.1"}, "name": project, "files": json_files});
        tree.push((
            format!("simple/{project}/"),
            serde_json::to_vec(&json).unwrap(),
            "application/vnd.pypi.simple.v1+json",
        ));
        tree.push((format!("html/{project}/"), html.into_bytes(), "text/html"));
    }
    tree
}

/// A few declarations of the driver API as NVIDIA's cuda.h makes them: plain, versioned
/// by a define, and per-thread-stream variants.
pub const CUDA_H: &str = "#define __CUDA_API_PTSZ(api) api ## _ptsz\n#define cuMemAlloc cuMemAlloc_v2\n#define cuStreamQuery __CUDA_API_PTSZ(cuStreamQuery)\ntypedef int CUresult;\nCUresult CUDAAPI cuInit(unsigned int Flags);\nCUresult CUDAAPI cuMemAlloc(void **dptr, unsigned long bytesize);\nCUresult CUDAAPI cuStreamQuery(void *hStream);\n";

/// NVIDIA's profiler control header, as the `cuda_profiler_api` component ships it.
pub const PROFILER_API_H: &str = "#ifndef __CUDA_PROFILER_API_H__\n#define __CUDA_PROFILER_API_H__\nextern int cudaProfilerStart(void);\nextern int cudaProfilerStop(void);\n#endif\n";

/// A ROCm tarball whose tree sits under `rocm-<version>/`.
pub fn rocm_tarball(version: &str) -> Vec<u8> {
    let hipcc = fs_err::read_to_string(Path::new(CAPTURED).join("hipcc-version-6.2.txt")).unwrap();
    let top = format!("rocm-{version}");
    tar_xz(&[
        Item::Dir(top.clone()),
        file(&format!("{top}/.info/version"), format!("{version}-120\n")),
        exe(
            &format!("{top}/bin/hipcc"),
            format!("#!/bin/sh\ncat <<'EOF'\n{hipcc}EOF\n"),
        ),
        file(&format!("{top}/include/hip/hip_runtime.h"), "// hip\n"),
        file(&format!("{top}/lib/libamdhip64.so.6"), "ELF"),
        Item::Symlink(
            format!("{top}/lib/libamdhip64.so"),
            "libamdhip64.so.6".into(),
        ),
    ])
}

pub fn manifest_toml(version: &str, url: &str, sha: &str) -> String {
    format!("kind = \"rocm\"\nversion = \"{version}\"\n\n[[archive]]\nurl = \"{url}\"\nsha256 = \"{sha}\"\nstrip-prefix = \"rocm-{version}\"\n")
}

pub fn write_manifest(dir: &Path, version: &str) -> std::path::PathBuf {
    let tarball = rocm_tarball(version);
    let name = format!("rocm-{version}.tar.xz");
    fs_err::create_dir_all(dir).unwrap();
    fs_err::write(dir.join(&name), &tarball).unwrap();
    let path = dir.join("toolchains.toml");
    write(&path, &manifest_toml(version, &name, &sha256(&tarball)));
    path
}
