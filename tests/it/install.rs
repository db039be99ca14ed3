//! Installing through each source from a local server (or a plain directory): the tree
//! that results and its view's nvcc. Network only to 127.0.0.1.

use crate::common::archives;
use crate::common::install_fixtures as fixtures;
use crate::common::server;

use std::path::Path;

use crate::common::*;
use fixtures::*;
use server::Server;

#[test]
fn nvidia_source_installs_a_release_from_a_redist_mirror() {
    let server = Server::start();
    serve(
        &server,
        "redist/",
        &redist_tree(&["12.4.0", "12.4.1", "13.0.2"]),
    );
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];

    let out = ok(&sb, &vars, &["list", "--available", "cuda"]);
    assert!(
        out.contains("cuda-12.4.0\ncuda-12.4.1\ncuda-13.0.2\n"),
        "{out}"
    );

    let out = ok(
        &sb,
        &vars,
        &[
            "install",
            "cuda-12.4",
            "--source",
            "nvidia",
            "--profile",
            "minimal",
        ],
    );
    assert!(out.contains("installed cuda-12.4.1"), "{out}");
    let root = sb.gpuenv_home().join("toolchains/cuda-12.4.1");
    check_runfile_layout(&root);
    // The archive's own links survive; loose files go to share/doc/<component>/.
    assert_eq!(
        fs_err::read_link(root.join("lib64/libcudart.so")).unwrap(),
        Path::new("libcudart.so.12")
    );
    assert!(root.join("share/doc/cuda_nvcc/LICENSE").is_file());
    assert!(
        !root.join("include/cublas.h").exists(),
        "minimal has no cuBLAS"
    );
    let json: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(root.join("version.json")).unwrap()).unwrap();
    assert_eq!(json["cuda"]["version"], "12.4.1");
    assert_eq!(json["cuda_nvcc"]["version"], "12.4.131");
    assert!(view_nvcc_version(&sb, "cuda-12.4.1").contains("release 12.4, V12.4.131"));

    let list: serde_json::Value = serde_json::from_str(&ok(&sb, &[], &["list", "--json"])).unwrap();
    assert_eq!(list[0]["name"], "cuda-12.4.1");
    assert_eq!(list[0]["source"], "installed");
    assert_eq!(list[0]["version"], "12.4.1");
    assert!(sb.gpuenv_home().join("shims/nvcc").is_symlink());
    let out = ok(&sb, &vars, &["list", "--available", "cuda"]);
    assert!(out.contains("cuda-12.4.1  (installed)"), "{out}");

    // Again: nothing to do, and no archive fetched a second time.
    let archive_hits = server.hits(".tar.xz").len();
    let out = ok(
        &sb,
        &vars,
        &[
            "install",
            "cuda-12.4",
            "--source",
            "nvidia",
            "--profile",
            "minimal",
        ],
    );
    assert!(out.contains("cuda-12.4.1 is already installed"), "{out}");
    assert_eq!(server.hits(".tar.xz").len(), archive_hits);

    // 13.x adds cuda_crt and libnvvm; the default profile adds the math libraries.
    ok(&sb, &vars, &["install", "cuda-13", "--source", "nvidia"]);
    let root = sb.gpuenv_home().join("toolchains/cuda-13.0.2");
    check_runfile_layout(&root);
    for f in [
        "include/cublas.h",
        "include/cusparse.h",
        "include/cusolver.h",
        "include/curand.h",
        "include/cufft.h",
        "lib64/libcublas.so",
        "nvvm/libdevice/libdevice.10.bc",
    ] {
        assert!(root.join(f).exists(), "default profile: no {f}");
    }
    assert!(view_nvcc_version(&sb, "cuda-13.0.2").contains("release 13.0, V13.0.88"));
}

#[test]
fn a_plain_directory_is_a_mirror_too() {
    let sb = Sandbox::new();
    let dir = sb.path("mirror");
    write_tree(&dir, &redist_tree(&["12.6.3"]));
    let mirror = dir.display().to_string();
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    ok(
        &sb,
        &vars,
        &[
            "install",
            "cuda-12.6.3",
            "--profile",
            "minimal",
            "--component",
            "libcublas",
            "-q",
        ],
    );
    let root = sb.gpuenv_home().join("toolchains/cuda-12.6.3");
    check_runfile_layout(&root);
    assert!(
        root.join("include/cublas.h").is_file(),
        "--component adds cuBLAS"
    );
    assert!(!root.join("include/cusparse.h").exists());
    let url = format!("file://{mirror}");
    let out = ok(
        &sb,
        &[("GPUENV_CUDA_MIRROR", url.as_str())],
        &["list", "--available", "cuda", "--json"],
    );
    assert!(
        out.contains("\"name\": \"cuda-12.6.3\"") && out.contains("\"installed\": true"),
        "{out}"
    );
}

#[test]
fn pypi_source_resolves_through_the_metapackage_json_or_html() {
    let server = Server::start();
    serve(&server, "", &pypi_tree());
    for (index, env) in [("simple/", "GPUENV_PYPI_URL"), ("html/", "PIP_INDEX_URL")] {
        let sb = Sandbox::new();
        let url = server.url(index);
        let vars = [(env, url.as_str())];
        let out = ok(
            &sb,
            &vars,
            &[
                "install",
                "cuda-13.0",
                "--source",
                "pypi",
                "--profile",
                "minimal",
            ],
        );
        assert!(out.contains("installed cuda-13.0.2"), "{out}");
        let root = sb.gpuenv_home().join("toolchains/cuda-13.0.2");
        check_runfile_layout(&root);
        // Only the wheels' nvidia/cu13/ tree; the unversioned library the linker needs.
        assert_eq!(
            fs_err::read_link(root.join("lib64/libcudart.so")).unwrap(),
            Path::new("libcudart.so.13")
        );
        assert!(root.join("include/cccl/cuda/std/version").is_file());
        assert!(root
            .join("share/doc/cuda_runtime/.metadata/provenance.txt")
            .is_file());
        assert!(!root.join("nvidia").exists() && !root.join("__init__.py").exists());
        // The metapackage pins nvcc 13.0.88, though 13.0.99 is on the index.
        assert!(view_nvcc_version(&sb, "cuda-13.0.2").contains("V13.0.88"));
        let json = fs_err::read_to_string(root.join("version.json")).unwrap();
        assert!(
            json.contains("\"13.0.2\"") && json.contains("\"13.0.96\""),
            "{json}"
        );
    }
    // The JSON index was asked for JSON; no Windows wheel or pre-release was fetched.
    let hits = server.hits("/simple/cuda-toolkit/");
    assert!(hits[0]
        .accept
        .as_deref()
        .unwrap()
        .starts_with("application/vnd.pypi.simple.v1+json"));
    assert!(server.hits("win_amd64.whl").is_empty());
    assert!(server.hits("13.1.0rc1-py2.py3-none-any.whl").is_empty());
    assert!(server.hits("nvidia_cuda_nvcc-13.0.99-py3").is_empty());

    // Asking for a component the metapackage lacks says what it has.
    let sb = Sandbox::new();
    let url = server.url("simple/");
    let out = gpuenv(
        &sb,
        &[("GPUENV_PYPI_URL", &url)],
        &[
            "install",
            "cuda-13.0",
            "--source",
            "pypi",
            "--component",
            "nope",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let t = text(&out);
    assert!(
        t.contains("unknown component nope") && t.contains("cublas, cudart"),
        "{t}"
    );
    assert_eq!(sb.settings(), None);
}

#[test]
fn pypi_refuses_cuda_11_and_12_and_points_elsewhere() {
    let sb = Sandbox::new();
    // No server: the answer needs no network.
    let out = gpuenv(
        &sb,
        &[("GPUENV_PYPI_URL", "http://127.0.0.1:9/simple/")],
        &["install", "cuda-12.4", "--source", "pypi"],
    );
    assert_eq!(out.status.code(), Some(2));
    let t = text(&out);
    assert!(t.contains("ship ptxas but no nvcc driver on Linux"), "{t}");
    assert!(
        t.contains("hint: `gpuenv install cuda-12.4 --source nvidia`"),
        "{t}"
    );
    assert!(t.contains("gpuenv link cuda-12.4"), "{t}");
    assert_eq!(sb.settings(), None);
    let out = gpuenv(&sb, &[], &["install", "cuda-13.0-mine"]);
    assert!(
        text(&out).contains("hint: gpuenv install cuda-13.0\n"),
        "{}",
        text(&out)
    );
}

#[test]
fn auto_falls_back_to_pypi_and_names_every_reason_when_all_fail() {
    let server = Server::start();
    serve(&server, "", &pypi_tree());
    let sb = Sandbox::new();
    let (mirror, index) = (server.url("no-redist-here/"), server.url("simple/"));
    let vars = [
        ("GPUENV_CUDA_MIRROR", mirror.as_str()),
        ("GPUENV_PYPI_URL", index.as_str()),
    ];
    let out = ok(
        &sb,
        &vars,
        &["install", "cuda-13.0", "--profile", "minimal"],
    );
    assert!(out.contains("installing cuda-13.0.2 from pypi"), "{out}");

    let out = gpuenv(&sb, &vars, &["install", "cuda-12.4"]);
    assert_eq!(out.status.code(), Some(2));
    let t = text(&out);
    assert!(t.contains("no source could install cuda-12.4"), "{t}");
    assert!(
        t.contains("nvidia: listing the CUDA releases at") && t.contains("404"),
        "{t}"
    );
    assert!(
        t.contains("pypi: NVIDIA's wheels of CUDA 12.4 cannot make a toolkit"),
        "{t}"
    );
    // The hints come last.
    let last = t.trim_end().lines().last().unwrap();
    assert!(last.starts_with("hint:"), "{t}");
}

#[test]
fn a_failed_nvidia_source_is_one_note_before_pypi_installs_and_quiet_leaves_it_out() {
    let server = Server::start();
    serve(&server, "", &pypi_tree());
    let (mirror, index) = (server.url("no-redist-here/"), server.url("simple/"));
    let vars = [
        ("GPUENV_CUDA_MIRROR", mirror.as_str()),
        ("GPUENV_PYPI_URL", index.as_str()),
    ];
    let install = ["install", "cuda-13.0", "--profile", "minimal"];
    let about_nvidia = |o: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .filter(|l| l.contains("nvidia") || l.contains("no-redist-here"))
            .map(str::to_string)
            .collect()
    };

    let sb = Sandbox::new();
    let out = gpuenv(&sb, &vars, &install);
    assert!(out.status.success(), "{}", text(&out));
    let lines = about_nvidia(&out);
    assert_eq!(lines.len(), 1, "{}", text(&out));
    assert!(
        lines[0].starts_with("info: the nvidia source cannot install cuda-13.0 (")
            && lines[0].contains("(HTTP 404)")
            && lines[0].ends_with("; trying pypi"),
        "{}",
        lines[0]
    );
    assert!(
        text(&out).contains("installed cuda-13.0.2"),
        "{}",
        text(&out)
    );

    let sb = Sandbox::new();
    let mut quiet = vec!["-q"];
    quiet.extend(install);
    let out = gpuenv(&sb, &vars, &quiet);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(about_nvidia(&out), Vec::<String>::new());
    assert!(sb.gpuenv_home().join("toolchains/cuda-13.0.2/bin").is_dir());
}

#[test]
fn manifest_source_installs_rocm_from_a_path_or_a_url() {
    let sb = Sandbox::new();
    let manifest = write_manifest(&sb.path("m"), "6.2.4");
    let out = ok(
        &sb,
        &[],
        &[
            "install",
            "rocm-6.2",
            "--manifest",
            manifest.to_str().unwrap(),
        ],
    );
    assert!(out.contains("installed rocm-6.2.4"), "{out}");
    let root = sb.gpuenv_home().join("toolchains/rocm-6.2.4");
    assert_eq!(
        fs_err::read_to_string(root.join(".info/version")).unwrap(),
        "6.2.4-120\n"
    );
    assert_eq!(
        fs_err::read_link(root.join("lib/libamdhip64.so")).unwrap(),
        Path::new("libamdhip64.so.6")
    );
    assert!(sb
        .gpuenv_home()
        .join("views/rocm-6.2.4/bin/hipcc")
        .is_symlink());
    let out = ok(
        &sb,
        &[],
        &[
            "list",
            "--available",
            "rocm",
            "--manifest",
            manifest.to_str().unwrap(),
        ],
    );
    assert!(out.contains("rocm-6.2.4  (installed)"), "{out}");

    let server = Server::start();
    let tarball = fixtures::rocm_tarball("6.3.1");
    server.put(
        "rocm/rocm-6.3.1.tar.xz",
        tarball.clone(),
        "application/x-xz",
    );
    server.put(
        "rocm/gpuenv.toml",
        manifest_toml("6.3.1", "rocm-6.3.1.tar.xz", &archives::sha256(&tarball)),
        "text/plain",
    );
    ok(
        &sb,
        &[],
        &[
            "install",
            "rocm-6.3.1",
            "--manifest",
            &server.url("rocm/gpuenv.toml"),
        ],
    );
    assert!(sb
        .gpuenv_home()
        .join("toolchains/rocm-6.3.1/bin/hipcc")
        .is_file());

    let out = gpuenv(
        &sb,
        &[],
        &[
            "install",
            "rocm-7",
            "--manifest",
            manifest.to_str().unwrap(),
        ],
    );
    assert!(
        text(&out).contains("has no rocm-7") && text(&out).contains("hint: it has rocm-6.2.4"),
        "{}",
        text(&out)
    );
}

/// `install A B C`: a spec that fails does not stop the others; each failure is said, the
/// end names every spec that failed, and the status is not 0.
#[test]
fn install_goes_on_past_a_failing_spec_and_reports_each() {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1", "13.0.2"]));
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    let args = [
        "install",
        "cuda-11.8",
        "cuda-12.4",
        "cuda-99",
        "cuda-13.0",
        "--source",
        "nvidia",
        "--profile",
        "minimal",
    ];
    let out = fixtures::gpuenv(&sb, &vars, &args);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    for name in ["cuda-12.4.1", "cuda-13.0.2"] {
        assert!(said.contains(&format!("installed {name}")), "{said}");
        check_runfile_layout(&sb.gpuenv_home().join("toolchains").join(name));
    }
    for spec in ["cuda-11.8", "cuda-99"] {
        assert!(
            said.contains(&format!("error: cannot install {spec}\n  caused by: ")),
            "no error of its own for {spec}:\n{said}"
        );
    }
    assert!(
        said.contains(
            "error: 2 of 4 could not be installed: cuda-11.8, cuda-99 (each said why above)"
        ),
        "{said}"
    );
}

/// Offline, a spec an installed toolchain selects is that toolchain: said, not an error.
#[test]
fn offline_install_of_a_spec_an_installed_toolchain_selects_says_it_is_installed() {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["13.0.2"]));
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    let vars = [("GPUENV_CUDA_MIRROR", mirror.as_str())];
    ok(
        &sb,
        &vars,
        &[
            "install",
            "cuda-13.0.2",
            "--source",
            "nvidia",
            "--profile",
            "minimal",
        ],
    );
    // No mirror at all now: nothing can be planned, and nothing needs to be.
    let gone = sb.path("no-mirror");
    let vars = [
        ("GPUENV_CUDA_MIRROR", gone.to_str().unwrap()),
        ("GPUENV_PYPI_URL", gone.to_str().unwrap()),
    ];
    let out = ok(&sb, &vars, &["install", "cuda-13.0", "--offline"]);
    assert!(
        out.contains("cuda-13.0: cuda-13.0.2 is installed at ")
            && out.contains("offline, no newer release was looked for"),
        "{out}"
    );
    // A spec nothing installed selects is still the error it was.
    let out = fixtures::gpuenv(&sb, &vars, &["install", "cuda-12.4", "--offline"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// After an install, the advice fits the project it ran in: its pin selects the new
/// toolchain (nothing to pin), or pins another release (how to move it).
#[test]
fn the_advice_after_an_install_fits_the_project_here() {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["12.4.1", "13.0.2"]));
    let sb = Sandbox::new();
    let mirror = server.url("redist/");
    let proj = sb.project("proj", "[toolchain]\ncuda = \"13.0\"\n");
    let install = |spec: &str| {
        let mut cmd = sb.gpuenv();
        cmd.env("GPUENV_CUDA_MIRROR", &mirror)
            .current_dir(&proj)
            .args([
                "install",
                spec,
                "--source",
                "nvidia",
                "--profile",
                "minimal",
            ]);
        text(&cmd.output().unwrap())
    };
    let said = install("cuda-13.0");
    assert!(!said.contains("gpuenv pin cuda-13.0.2"), "{said}");
    assert!(
        said.contains("the pin at ")
            && said.contains("gpuenv.toml:2:8 (cuda = \"13.0\") selects it here"),
        "{said}"
    );
    let said = install("cuda-12.4");
    assert!(
        said.contains("this project pins cuda-13.0 (")
            && said.contains("`gpuenv pin cuda-12.4.1` moves the pin to it"),
        "{said}"
    );
}

/// A site store's admin installs into the store: the advice is who sees it, not a pin.
#[test]
fn the_advice_after_an_install_into_a_site_store_is_for_its_admin() {
    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["13.0.2"]));
    let sb = Sandbox::new();
    let store = sb.path("site/gpuenv");
    let config = sb.path("etc/gpuenv/config.toml");
    write(&config, &format!("upstreams = [\"{}\"]\n", store.display()));
    let mirror = server.url("redist/");
    let vars = [
        ("GPUENV_CUDA_MIRROR", mirror.as_str()),
        ("GPUENV_HOME", store.to_str().unwrap()),
        ("GPUENV_SYSTEM_CONFIG", config.to_str().unwrap()),
    ];
    let out = ok(
        &sb,
        &vars,
        &[
            "install",
            "cuda-13.0",
            "--source",
            "nvidia",
            "--profile",
            "minimal",
        ],
    );
    assert!(
        out.contains(&format!(
            "{} is an upstream this machine's users search (GPUENV_UPSTREAMS or the system config): they can `gpuenv pin cuda-13.0.2` or `gpuenv use cuda-13.0.2` now",
            store.display()
        )),
        "{out}"
    );
    assert!(!out.contains("gpuenv default"), "{out}");
}

/// A mirror on this machine (`file://`, a directory) downloads nothing: the summary says so,
/// and gpuenv does not claim its cache spared a network that was never used.
#[test]
fn a_local_mirror_install_says_nothing_was_downloaded() {
    let sb = Sandbox::new();
    let dir = sb.path("mirror");
    write_tree(&dir, &redist_tree(&["12.6.3"]));
    let url = format!("file://{}", dir.display());
    let said = ok(
        &sb,
        &[("GPUENV_CUDA_MIRROR", url.as_str())],
        &["install", "cuda-12.6.3", "--profile", "minimal"],
    );
    assert!(said.contains("installed cuda-12.6.3"), "{said}");
    assert!(said.contains("nothing downloaded"), "{said}");
    assert!(!said.contains("0 B downloaded"), "{said}");
    assert!(!said.contains("reinstalls need no network"), "{said}");
}
