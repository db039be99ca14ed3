//! REAL: ccache over a real nvcc through gpuenv's proxy. CUDA 13.0 (NVIDIA's wheels, fetched
//! by scripts/real-toolchains.sh) and CUDA 13.2 (installed from the index) are registered; a
//! project with `[build] cache = "ccache"` compiles a kernel through `$CUDA_HOME/bin/nvcc`.
//! ccache's own statistics (a private CCACHE_DIR) show: a rebuild is a hit, the other
//! toolkit misses, and switching back hits again.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::real::{
    ccache_hits_and_misses, index_reachable, real_cuda13, real_gpuenv, SCALE_KERNEL,
};
use crate::common::*;

#[test]
fn ccache_hits_on_a_rebuild_and_misses_for_another_toolkit() {
    if !have_tool("ccache") || !have_tool("g++") {
        return;
    }
    let Some(cuda130) = real_cuda13() else {
        return;
    };
    if !index_reachable() {
        return;
    }
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", cuda130.to_str().unwrap()]);
    let out = real_gpuenv(&sb)
        .args([
            "install",
            "cuda-13.2",
            "--source",
            "pypi",
            "--profile",
            "minimal",
        ])
        .output()
        .unwrap();
    succeeded(&out);
    let list: serde_json::Value = serde_json::from_str(&sb.ok(&["list", "--json"])).unwrap();
    let cuda132 = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .find(|n| n.starts_with("cuda-13.2"))
        .expect("cuda-13.2 is registered")
        .to_string();

    let work = sb.path("work");
    write(&work.join("k.cu"), SCALE_KERNEL);
    write(
        &work.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"13.0\"\n\n[build]\ncache = \"ccache\"\n",
    );
    sb.ok(&["trust", work.join("gpuenv.toml").to_str().unwrap()]);
    let ccache_dir = sb.path("ccache");
    let view =
        |name: &str| -> PathBuf { sb.gpuenv_home().join("views").join(name).join("bin/nvcc") };
    let compile = |nvcc: &Path| {
        let _ = fs_err::remove_file(work.join("k.o"));
        let out = Command::new(nvcc)
            .args(["-c", "k.cu", "-o", "k.o"])
            .env_clear()
            .env("HOME", sb.home())
            .env("PATH", system_path())
            .env("CCACHE_DIR", &ccache_dir)
            .current_dir(&work)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} failed: {}",
            nvcc.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(work.join("k.o").is_file());
        ccache_hits_and_misses(&ccache_dir)
    };

    assert_eq!(
        compile(&view("cuda-13.0")),
        (0, 1),
        "the first build fills the cache"
    );
    assert_eq!(compile(&view("cuda-13.0")), (1, 1), "the rebuild is a hit");
    assert_eq!(compile(&view(&cuda132)), (1, 2), "another toolkit misses");
    assert_eq!(compile(&view("cuda-13.0")), (2, 2), "switching back hits");
    assert_eq!(
        compile(&view(&cuda132)),
        (3, 2),
        "and so does the other one"
    );
}
