//! Lifecycle commands keep what the user chose: `gpuenv update` and a reinstall (by name, from
//! the pin, `--offline`) bring the profile and components a toolkit had, whichever source
//! names them how; `gpuenv install NAME --component X` adds one component to an installed
//! toolkit (named, or the one a release selects) without reinstalling the rest; toolkits from wheels get a `libcuda.so` stub.
//! Against a local server with generated archives.

use crate::common::install_fixtures as fixtures;
use crate::common::server;

use crate::common::*;
use fixtures::*;
use server::Server;

/// A redist mirror with 12.4.1.
fn mirror() -> (Server, String) {
    redist_mirror(&["12.4.1"])
}

/// A package index with cuda-toolkit 13.0.2 and 13.0.3, NVIDIA's host unreachable: `auto`
/// ends at the index, as on a machine that only reaches PyPI.
fn index_only() -> (Server, Vec<(&'static str, String)>) {
    let server = Server::start();
    serve(&server, "", &pypi_tree_of(&["13.0.2", "13.0.3"]));
    let vars = vec![
        (
            "GPUENV_CUDA_MIRROR",
            "http://127.0.0.1:9/redist/".to_string(),
        ),
        ("GPUENV_PYPI_URL", server.url("simple/")),
    ];
    (server, vars)
}

fn pairs<'a>(vars: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    vars.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// `gpuenv install <name> --profile minimal`, with `--component` for each of `components`;
/// what it printed.
#[track_caller]
fn install_minimal(sb: &Sandbox, vars: &[(&str, &str)], name: &str, components: &[&str]) -> String {
    let mut args = vec!["install", name, "--profile", "minimal"];
    for c in components {
        args.extend(["--component", c]);
    }
    ok(sb, vars, &args)
}

/// `gpuenv install <name> --component <component>`, which must succeed; what it printed.
#[track_caller]
fn add_component(sb: &Sandbox, vars: &[(&str, &str)], name: &str, component: &str) -> String {
    ok(sb, vars, &["install", name, "--component", component])
}

/// `gpuenv <args>`, refused as a usage error (exit 2); what it printed.
#[track_caller]
fn refused(sb: &Sandbox, vars: &[(&str, &str)], args: &[&str]) -> String {
    let out = gpuenv(sb, vars, args);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    t
}

/// The `libcuda.so` stub of the installed toolchain `name`.
fn driver_stub(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    sb.toolchain(name).join("lib64/stubs/libcuda.so")
}

#[test]
fn update_of_a_toolkit_from_wheels_keeps_its_profile_and_components() {
    let (_server, vars) = index_only();
    let vars = pairs(&vars);
    let sb = Sandbox::new();
    install_minimal(&sb, &vars, "cuda-13.0.2", &["cuda_profiler_api"]);
    let t = ok(&sb, &vars, &["update"]);
    assert!(
        t.contains("updating cuda-13.0.2 to cuda-13.0.3 (from pypi)"),
        "{t}"
    );
    let root = sb.toolchain("cuda-13.0.3");
    assert!(root.join("include/cuda_profiler_api.h").is_file(), "{t}");
    assert!(!sb.toolchain("cuda-13.0.2").exists());

    // A toolkit installed before gpuenv kept records: its version.json names the wheels'
    // components (`cuda_runtime`, `cuda_profiler_api`), which every source understands.
    let sb = Sandbox::new();
    install_minimal(&sb, &vars, "cuda-13.0.2", &["profiler"]);
    let old = sb.toolchain("cuda-13.0.2");
    let json = fs_err::read_to_string(old.join("version.json")).unwrap();
    assert!(json.contains("\"cuda_runtime\""), "{json}");
    fs_err::remove_file(old.join(".gpuenv-install.toml")).unwrap();
    let t = ok(&sb, &vars, &["update", "cuda-13.0.2", "--keep"]);
    assert!(t.contains("installed cuda-13.0.3; kept cuda-13.0.2"), "{t}");
    let root = sb.toolchain("cuda-13.0.3");
    assert!(root.join("include/cuda_profiler_api.h").is_file(), "{t}");
}

#[test]
fn a_reinstall_brings_the_profile_and_components_it_had_offline_from_the_cache() {
    let (server, url) = mirror();
    let sb = Sandbox::new();
    let vars = [("GPUENV_CUDA_MIRROR", url.as_str())];
    install_minimal(&sb, &vars, "cuda-12.4.1", &["cuda_profiler_api"]);
    let root = sb.toolchain("cuda-12.4.1");
    let t = ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    assert!(!root.exists(), "{t}");
    let hits = server.log().len();

    // By name, as the uninstall's hint says: the minimal profile and the profiler headers,
    // all from the cache (the default profile's cuBLAS never was downloaded).
    let t = ok(&sb, &vars, &["install", "cuda-12.4.1", "--offline"]);
    assert!(
        t.contains("the profile minimal and cuda_profiler_api that cuda-12.4.1 had when it was uninstalled"),
        "{t}"
    );
    assert!(t.contains("installed cuda-12.4.1"), "{t}");
    assert!(root.join("include/cuda_profiler_api.h").is_file());
    assert!(!root.join("include/cublas.h").exists());
    assert_eq!(server.log().len(), hits, "offline touched the network");

    // From the pin, which names no release.
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    write(
        &sb.path("proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    let out = sb
        .gpuenv()
        .current_dir(sb.path("proj"))
        .env("GPUENV_CUDA_MIRROR", &url)
        .args(["install", "--offline"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(root.join("include/cuda_profiler_api.h").is_file(), "{t}");
    assert_eq!(server.log().len(), hits, "offline touched the network");
    // Installed again, its own record says it; nothing else is kept.
    assert!(!sb
        .gpuenv_home()
        .join("toolchains/.cuda-12.4.1.uninstalled.toml")
        .exists());

    // The command line wins over what was kept.
    ok(&sb, &[], &["uninstall", "cuda-12.4.1"]);
    let t = refused(
        &sb,
        &vars,
        &[
            "install",
            "cuda-12.4.1",
            "--offline",
            "--profile",
            "default",
        ],
    );
    assert!(
        t.contains("libcublas"),
        "the default profile is not cached: {t}"
    );
}

#[test]
fn an_offline_reinstall_of_a_toolkit_from_wheels_asks_the_index_source_first() {
    let (_server, vars) = index_only();
    let vars = pairs(&vars);
    let sb = Sandbox::new();
    install_minimal(&sb, &vars, "cuda-13.0.2", &[]);
    ok(&sb, &[], &["uninstall", "cuda-13.0.2"]);
    let t = ok(&sb, &vars, &["install", "cuda-13.0.2", "--offline"]);
    assert!(t.contains("installing cuda-13.0.2 from pypi"), "{t}");
    assert!(!t.contains("nvidia source cannot"), "{t}");
}

#[test]
fn install_component_adds_one_component_to_an_installed_toolkit() {
    let (server, url) = mirror();
    let sb = Sandbox::new();
    let vars = [("GPUENV_CUDA_MIRROR", url.as_str())];
    install_minimal(&sb, &vars, "cuda-12.4.1", &[]);
    let root = sb.toolchain("cuda-12.4.1");
    let before = server.log().len();
    let t = add_component(&sb, &vars, "cuda-12.4.1", "cublas");
    assert!(
        t.contains("added libcublas to cuda-12.4.1 (from nvidia"),
        "{t}"
    );
    // Only its archive was fetched.
    let fetched: Vec<String> = server.log()[before..]
        .iter()
        .filter(|h| h.path.ends_with(".tar.xz"))
        .map(|h| h.path.clone())
        .collect();
    assert_eq!(fetched.len(), 1, "{fetched:?}");
    assert!(fetched[0].contains("libcublas"), "{fetched:?}");
    assert!(root.join("include/cublas.h").is_file());
    assert!(
        root.join("lib64/libcublas.so").exists(),
        "the plain name links"
    );
    assert!(root.join("bin/nvcc").is_file());
    let json = fs_err::read_to_string(root.join("version.json")).unwrap();
    assert!(json.contains("\"libcublas\""), "{json}");
    let rec = fs_err::read_to_string(root.join(".gpuenv-install.toml")).unwrap();
    assert!(rec.contains("components = [\"libcublas\"]"), "{rec}");
    // The view and shims are the new tree's.
    assert!(view_nvcc_version(&sb, "cuda-12.4.1").contains("release 12.4"));

    let t = add_component(&sb, &vars, "cuda-12.4.1", "libcublas");
    assert!(t.contains("cuda-12.4.1 already has libcublas"), "{t}");

    // A name the source does not know: what it has instead.
    let t = refused(
        &sb,
        &vars,
        &["install", "cuda-12.4.1", "--component", "cublsa"],
    );
    assert!(t.contains("unknown component cublsa"), "{t}");
    assert!(
        t.contains("hint: this release has: ") && t.contains("cuda_profiler_api"),
        "{t}"
    );
    hint_last(&t);
    assert!(
        root.join("include/cublas.h").is_file(),
        "the tree is untouched"
    );

    // From the source that installed it, not another one's archives of the same release.
    let t = refused(
        &sb,
        &vars,
        &[
            "install",
            "cuda-12.4.1",
            "--component",
            "cupti",
            "--source",
            "pypi",
        ],
    );
    assert!(t.contains("cuda-12.4.1 came from the nvidia source"), "{t}");
    hint_last(&t);

    // A toolkit gpuenv did not install is not gpuenv's to change.
    let linked = sb.path("cuda-12.6");
    nvcc_stub(&linked, "12.6.77");
    ok(&sb, &[], &["link", "cuda-12.6", linked.to_str().unwrap()]);
    let t = refused(
        &sb,
        &vars,
        &["install", "cuda-12.6", "--component", "libcublas"],
    );
    assert!(
        t.contains("cuda-12.6 is a linked toolchain at ")
            && t.contains("gpuenv adds components only to toolchains it installed"),
        "{t}"
    );
    assert!(
        t.contains("hint: ") && t.contains("gpuenv unlink cuda-12.6"),
        "{t}"
    );
    assert!(!linked.join("include").exists());
}

#[test]
fn install_component_by_release_adds_to_the_installed_toolkit_it_selects() {
    // The index has 13.0.2 and 13.0.3; 13.0.2 is installed.
    let (_server, vars) = index_only();
    let vars = pairs(&vars);
    let sb = Sandbox::new();
    ok(
        &sb,
        &vars,
        &["install", "cuda-13.0.2", "--profile", "minimal"],
    );
    let toolchains = sb.gpuenv_home().join("toolchains");

    // `cuda-13.0` selects the installed 13.0.2: the component goes there, and the index's
    // newer 13.0.3 is not installed for it.
    let t = ok(
        &sb,
        &vars,
        &["install", "cuda-13.0", "--component", "cuda_profiler_api"],
    );
    assert!(t.contains("cuda-13.0 selects cuda-13.0.2:"), "{t}");
    assert!(t.contains("added cuda_profiler_api to cuda-13.0.2"), "{t}");
    assert!(!toolchains.join("cuda-13.0.3").exists(), "{t}");
    let rec = fs_err::read_to_string(toolchains.join("cuda-13.0.2/.gpuenv-install.toml")).unwrap();
    assert!(rec.contains("profile = \"minimal\""), "{rec}");

    // With both installed, the highest, as `gpuenv` itself picks it, and it says which.
    ok(
        &sb,
        &vars,
        &["install", "cuda-13.0.3", "--profile", "minimal"],
    );
    let t = ok(
        &sb,
        &vars,
        &["install", "cuda-13.0", "--component", "cuda_profiler_api"],
    );
    assert!(
        t.contains("cuda-13.0 selects cuda-13.0.3, the highest of cuda-13.0.2, cuda-13.0.3"),
        "{t}"
    );
    assert!(t.contains("added cuda_profiler_api to cuda-13.0.3"), "{t}");
    let which = ok(
        &sb,
        &[("GPUENV_TOOLCHAIN", "cuda-13.0")],
        &["which", "nvcc"],
    );
    assert!(which.contains("cuda-13.0.3"), "{which}");
}

#[test]
fn the_profiler_headers_are_a_component_of_the_wheels_too() {
    let (_server, vars) = index_only();
    let vars = pairs(&vars);
    let sb = Sandbox::new();
    install_minimal(&sb, &vars, "cuda-13.0.3", &[]);
    let root = sb.toolchain("cuda-13.0.3");
    assert!(!root.join("include/cuda_profiler_api.h").exists());
    // Under NVIDIA's redist name, which the index calls the `profiler` extra.
    let t = add_component(&sb, &vars, "cuda-13.0.3", "cuda_profiler_api");
    assert!(
        t.contains("added cuda_profiler_api to cuda-13.0.3 (from pypi"),
        "{t}"
    );
    assert!(root.join("include/cuda_profiler_api.h").is_file());
}

#[test]
fn a_toolkit_from_wheels_gets_a_driver_stub_and_one_from_nvidia_keeps_nvidias() {
    use std::os::unix::fs::PermissionsExt;
    let (_server, vars) = index_only();
    let vars = pairs(&vars);
    let sb = Sandbox::new();
    install_minimal(&sb, &vars, "cuda-13.0.3", &[]);
    // No wheel carries one: made from the toolkit's cuda.h, readable by everyone.
    let stub = driver_stub(&sb, "cuda-13.0.3");
    let bytes = fs_err::read(&stub).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    for name in [
        "libcuda.so.1",
        "cuInit",
        "cuMemAlloc_v2",
        "cuStreamQuery_ptsz",
    ] {
        assert!(
            bytes.windows(name.len()).any(|w| w == name.as_bytes()),
            "the stub lacks {name}"
        );
    }
    let mode = fs_err::metadata(&stub).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o444);
    // The same cuda.h makes the same stub: a lock's file list does not depend on the machine.
    let sb2 = Sandbox::new();
    install_minimal(&sb2, &vars, "cuda-13.0.3", &[]);
    let again = driver_stub(&sb2, "cuda-13.0.3");
    assert_eq!(fs_err::read(again).unwrap(), bytes);

    // NVIDIA's redist brings its own in cuda_cudart, which stays as it is.
    let (_server, url) = mirror();
    install_minimal(
        &sb,
        &[("GPUENV_CUDA_MIRROR", url.as_str())],
        "cuda-12.4.1",
        &[],
    );
    let nvidias = driver_stub(&sb, "cuda-12.4.1");
    assert_eq!(fs_err::read_to_string(nvidias).unwrap(), "ELF stub");
}
