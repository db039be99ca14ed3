//! `gpuenv install torch` against a local index: a venv whose torch is a CUDA 13.0 build
//! with its NVIDIA wheels (cudart, cccl, the cuda-toolkit metapackage) gets a toolkit that
//! downloads only nvcc, crt and nvvm and links the rest into the venv; once the venv is
//! deleted, `gpuenv list`, `show` and `doctor` say the toolkit is broken and how to fix it.
//! (A real torch from PyPI is in tests/it/torch_real.rs.)

use crate::common::install_fixtures as fixtures;
use crate::common::server;

use crate::common::*;
use fixtures::*;
use server::Server;
use std::path::{Path, PathBuf};

/// A venv as pip leaves it after `pip install torch` for CUDA 13.0.
fn venv(sb: &Sandbox) -> PathBuf {
    let venv = sb.path("venv");
    let site = venv.join("lib/python3.11/site-packages");
    torch_package(&site, "2.9.0+cu130", Some("13.0"), None);
    let cu13 = site.join("nvidia/cu13");
    write(&cu13.join("include/cuda_runtime.h"), "// from the venv\n");
    write(&cu13.join("include/cublas_v2.h"), "// from the venv\n");
    write(
        &cu13.join("include/cccl/cuda/std/version"),
        "// from the venv\n",
    );
    write(&cu13.join("lib/libcudart.so.13"), "ELF");
    write(&cu13.join("lib/libcublas.so.13"), "ELF");
    for dist in [
        "cuda_toolkit-13.0.2",
        "nvidia_cuda_runtime-13.0.96",
        "nvidia_cuda_cccl-13.0.85",
        "nvidia_cublas-13.1.0.3",
    ] {
        write(&site.join(format!("{dist}.dist-info/METADATA")), "");
    }
    venv
}

/// `gpuenv install torch` with `venv` active, from the local index.
fn install_torch(sb: &Sandbox, server: &Server, venv: &Path) {
    let index = server.url("simple/");
    let vars = [
        ("GPUENV_PYPI_URL", index.as_str()),
        ("VIRTUAL_ENV", venv.to_str().unwrap()),
    ];
    let out = gpuenv(sb, &vars, &["install", "torch"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("installed cuda-13.0.2-torch"),
        "{}",
        text(&out)
    );
}

/// A local index serving `tree`, a sandbox, and in it a venv as `venv` makes it.
fn index_and_venv(tree: &Tree) -> (Server, Sandbox, PathBuf) {
    let server = Server::start();
    serve(&server, "", tree);
    let sb = Sandbox::new();
    let venv = venv(&sb);
    (server, sb, venv)
}

/// [`index_and_venv`], after `gpuenv install torch` with that venv active.
fn torch_toolkit(tree: &Tree) -> (Server, Sandbox, PathBuf) {
    let (server, sb, venv) = index_and_venv(tree);
    install_torch(&sb, &server, &venv);
    (server, sb, venv)
}

#[test]
fn install_torch_downloads_only_what_the_venv_lacks_and_links_the_rest() {
    let (server, sb, venv) = torch_toolkit(&pypi_tree());
    // Only the wheels torch does not have were fetched.
    let fetched: Vec<String> = server
        .log()
        .iter()
        .map(|h| h.path.clone())
        .filter(|p| p.ends_with(".whl"))
        .collect();
    for wanted in ["nvidia_cuda_nvcc", "nvidia_cuda_crt", "nvidia_nvvm"] {
        assert!(fetched.iter().any(|p| p.contains(wanted)), "{fetched:?}");
    }
    for has in ["nvidia_cuda_runtime", "nvidia_cuda_cccl"] {
        assert!(!fetched.iter().any(|p| p.contains(has)), "{fetched:?}");
    }

    let root = sb.gpuenv_home().join("toolchains/cuda-13.0.2-torch");
    let site = venv.join("lib/python3.11/site-packages");
    assert_eq!(
        fs_err::read_link(root.join("include/cuda_runtime.h")).unwrap(),
        site.join("nvidia/cu13/include/cuda_runtime.h")
    );
    assert!(
        root.join("include/crt/host_config.h").is_file(),
        "crt was downloaded"
    );
    assert!(!root.join("include/crt").is_symlink());
    assert_eq!(
        fs_err::read_link(root.join("lib64/libcudart.so")).unwrap(),
        Path::new("libcudart.so.13")
    );
    // Nothing was written into the venv.
    assert!(!site.join("nvidia/cu13/lib/libcudart.so").exists());

    // With the venv active, a `cuda = "torch"` pin picks it.
    let proj = sb.project("proj", "[toolchain]\ncuda = \"torch\"\n");
    let mut cmd = sb.gpuenv();
    cmd.current_dir(&proj)
        .env("VIRTUAL_ENV", &venv)
        .args(["run", "--", "nvcc", "--version"]);
    let out = cmd.output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("V13.0.88"),
        "{}",
        text(&out)
    );
}

#[test]
fn deleting_the_venv_makes_list_show_and_doctor_say_the_toolkit_is_broken_and_how_to_fix_it() {
    let (_server, sb, venv) = torch_toolkit(&pypi_tree());
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"cuda-13.0.2-torch\"\n",
    );
    fs_err::remove_dir_all(&venv).unwrap();
    let header = sb
        .gpuenv_home()
        .join("toolchains/cuda-13.0.2-torch/include/cuda_runtime.h");
    let gone = venv.join("lib/python3.11/site-packages/nvidia/cu13/include/cuda_runtime.h");
    let why = format!(
        "cuda-13.0.2-torch is broken: {} links to {}, which is gone",
        header.display(),
        gone.display()
    );
    let fix = format!(
        "`gpuenv uninstall cuda-13.0.2-torch`, then `gpuenv install torch` with the new Python environment active; or recreate {} with the same Python and torch",
        venv.display()
    );

    let t = text(&gpuenv(&sb, &[], &["list"]));
    assert!(t.contains(&format!("warning: {why}")), "{t}");
    assert!(t.contains(&format!("hint: {fix}")), "{t}");
    let out = sb.gpuenv().current_dir(&proj).arg("show").output().unwrap();
    assert!(
        text(&out).contains(&format!("warning: {why}")),
        "{}",
        text(&out)
    );

    // Where it is pinned, doctor's broken-toolchain finding is an error (exit 1) ...
    let doctor = |dir: &Path| {
        let out = sb
            .gpuenv()
            .current_dir(dir)
            .args(["doctor", "--json"])
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let all = report["findings"].as_array().unwrap();
        let f = all.iter().find(|f| f["id"] == "FM-13").unwrap().clone();
        (out.status.code(), f)
    };
    let (code, f) = doctor(&proj);
    assert_eq!(code, Some(1), "{f}");
    assert_eq!(
        (&f["name"], &f["status"], &f["summary"], &f["hint"]),
        (
            &"broken-toolchain".into(),
            &"error".into(),
            &why.as_str().into(),
            &fix.as_str().into()
        )
    );
    assert!(
        f["docs"]
            .as_str()
            .unwrap()
            .ends_with("docs/failure-modes.md#fm-13-broken-toolchain"),
        "{f}"
    );
    // ... and where nothing uses it, a warning with the same fix.
    let (_, f) = doctor(sb.dir.path());
    assert_eq!((&f["status"], &f["hint"]), (&"warn".into(), &fix.into()));

    // The text report says the same to a person.
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .arg("doctor")
        .output()
        .unwrap();
    let t = text(&out);
    assert!(
        t.contains(&format!("error FM-13 broken-toolchain: {why}")),
        "{t}"
    );
}

#[test]
fn wheels_of_another_release_in_the_venv_are_not_reused_but_fetched_in_the_release() {
    // pip resolved nvidia-nvvm and nvidia-cuda-crt (required without versions by the nvcc
    // wheel) to a newer release than torch's cuda-toolkit: reusing them would fail at
    // ptxas with "Unsupported .version".
    let (server, sb, venv) = index_and_venv(&pypi_tree());
    let site = venv.join("lib/python3.11/site-packages");
    for dist in ["nvidia_nvvm-13.2.78", "nvidia_cuda_crt-13.2.78"] {
        write(&site.join(format!("{dist}.dist-info/METADATA")), "");
    }
    let index = server.url("simple/");
    let vars = [
        ("GPUENV_PYPI_URL", index.as_str()),
        ("VIRTUAL_ENV", venv.to_str().unwrap()),
    ];
    let out = gpuenv(&sb, &vars, &["install", "torch"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("has nvidia-nvvm 13.2.78, not 13.0.88 of CUDA 13.0.2")
            && t.contains("Unsupported .version"),
        "{t}"
    );
    let fetched: Vec<String> = server
        .log()
        .iter()
        .map(|h| h.path.clone())
        .filter(|p| p.ends_with(".whl"))
        .collect();
    for wanted in ["nvidia_nvvm-13.0.88", "nvidia_cuda_crt-13.0.88"] {
        assert!(fetched.iter().any(|p| p.contains(wanted)), "{fetched:?}");
    }
    // The runtime the venv has in the release's own version is still linked, not fetched.
    assert!(
        !fetched.iter().any(|p| p.contains("nvidia_cuda_runtime")),
        "{fetched:?}"
    );
}

/// `gpuenv install torch --component X` installs X with the toolkit (it exited 0 ignoring
/// it), and refuses a component the source does not have rather than ignore it.
#[test]
fn install_torch_honours_or_refuses_its_components() {
    let (server, sb, venv) = index_and_venv(&pypi_tree());
    let index = server.url("simple/");
    let vars = [
        ("GPUENV_PYPI_URL", index.as_str()),
        ("VIRTUAL_ENV", venv.to_str().unwrap()),
    ];
    let out = gpuenv(
        &sb,
        &vars,
        &["install", "torch", "--component", "no_such_component"],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("no_such_component"), "{}", text(&out));
    assert!(!sb
        .gpuenv_home()
        .join("toolchains/cuda-13.0.2-torch")
        .exists());

    let out = gpuenv(
        &sb,
        &vars,
        &["install", "torch", "--component", "cuda_profiler_api"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let root = sb.gpuenv_home().join("toolchains/cuda-13.0.2-torch");
    assert!(
        root.join("include/cuda_profiler_api.h").is_file(),
        "{}",
        text(&out)
    );
    assert!(root.join("bin/nvcc").is_file());
    let rec = fs_err::read_to_string(root.join(".gpuenv-install.toml")).unwrap();
    assert!(
        rec.contains("components = [\"cuda_profiler_api\"]"),
        "{rec}"
    );
}

/// `gpuenv install <args>` with `venv` active, from the local index.
fn install_in(sb: &Sandbox, server: &Server, venv: &Path, args: &[&str]) -> std::process::Output {
    let index = server.url("simple/");
    let vars = [
        ("GPUENV_PYPI_URL", index.as_str()),
        ("VIRTUAL_ENV", venv.to_str().unwrap()),
    ];
    gpuenv(sb, &vars, args)
}

/// Every entry of `root`: its path, and the link's target or the file's inode and size.
fn listing(root: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs_err::read_dir(&dir).unwrap().flatten() {
            let m = fs_err::symlink_metadata(e.path()).unwrap();
            let rel = e.path().strip_prefix(root).unwrap().display().to_string();
            if m.is_dir() {
                stack.push(e.path());
                out.push(format!("{rel}/"));
            } else if m.file_type().is_symlink() {
                let to = fs_err::read_link(e.path()).unwrap();
                out.push(format!("{rel} -> {}", to.display()));
            } else {
                out.push(format!("{rel} {} {}", m.ino(), m.len()));
            }
        }
    }
    out.sort();
    out
}

/// The wheels the server sent since request `from`.
fn wheels_fetched(server: &Server, from: usize) -> Vec<String> {
    server.log()[from..]
        .iter()
        .map(|h| h.path.clone())
        .filter(|p| p.ends_with(".whl"))
        .collect()
}

/// The toolkit `install torch` made records what it is made of (the venv's wheel tree and
/// wheels, the archives it downloaded), so a component is added to it in place, by its
/// release (`install cuda-13.0 --component`, which said it "was installed by an older
/// gpuenv") and by `install torch --component` (which exited 0 leaving it out): only that
/// wheel is fetched, the rest of the tree stays (downloads the same files, the venv still
/// linked), and `list`/`show` say it is there.
#[test]
fn a_component_is_added_in_place_to_the_toolkit_install_torch_made() {
    let release: &[&str] = &["install", "cuda-13.0", "--component", "cuda_profiler_api"];
    let torch: &[&str] = &["install", "torch", "--component", "cuda_profiler_api"];
    for args in [release, torch] {
        let (server, sb, venv) = index_and_venv(&pypi_tree());
        let site = venv.join("lib/python3.11/site-packages");
        install_torch(&sb, &server, &venv);
        let root = sb.gpuenv_home().join("toolchains/cuda-13.0.2-torch");
        let rec = fs_err::read_to_string(root.join(".gpuenv-install.toml")).unwrap();
        for said in [
            "from = \"pypi\"".to_string(),
            "profile = \"minimal\"".into(),
            format!("tree = \"{}\"", site.join("nvidia/cu13").display()),
            "component = \"cuda_runtime\"\nversion = \"13.0.96\"".into(),
            "component = \"cuda_nvcc\"\nversion = \"13.0.88\"".into(),
        ] {
            assert!(rec.contains(&said), "{said}\n{rec}");
        }
        let before = listing(&root);
        let from = server.log().len();

        let out = install_in(&sb, &server, &venv, args);
        let t = text(&out);
        assert!(out.status.success(), "{args:?}: {t}");
        assert!(
            t.contains("added cuda_profiler_api to cuda-13.0.2-torch (from pypi"),
            "{args:?}: {t}"
        );
        let fetched = wheels_fetched(&server, from);
        assert_eq!(fetched.len(), 1, "{fetched:?}");
        assert!(
            fetched[0].contains("nvidia_cuda_profiler_api-13.0.85"),
            "{fetched:?}"
        );
        let header = root.join("include/cuda_profiler_api.h");
        assert!(header.is_file() && !header.is_symlink(), "{t}");
        // The rest is as it was: the same files (inodes), the same links into the venv.
        let after = listing(&root);
        let gone: Vec<_> = before
            .iter()
            .filter(|l| !after.contains(l) && !l.starts_with(".gpuenv-install.toml"))
            .filter(|l| !l.starts_with("version.json"))
            .collect();
        assert!(gone.is_empty(), "{gone:?}");
        assert_eq!(
            fs_err::read_link(root.join("include/cuda_runtime.h")).unwrap(),
            site.join("nvidia/cu13/include/cuda_runtime.h")
        );
        assert!(!site
            .join("nvidia/cu13/include/cuda_profiler_api.h")
            .exists());
        let rec = fs_err::read_to_string(root.join(".gpuenv-install.toml")).unwrap();
        assert!(
            rec.contains("components = [\"cuda_profiler_api\"]") && rec.contains("tree = "),
            "{rec}"
        );

        // `list` and `show` say what it is made of, the component too.
        let list: serde_json::Value =
            serde_json::from_str(&ok(&sb, &[], &["list", "--json"])).unwrap();
        let row = &list.as_array().unwrap()[0];
        assert_eq!(row["name"], "cuda-13.0.2-torch", "{list}");
        let made_of = |v: &serde_json::Value| -> Vec<String> {
            v["components"]
                .as_array()
                .unwrap_or_else(|| panic!("{v}"))
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect()
        };
        let components = made_of(row);
        for c in ["cuda_profiler_api", "cuda_nvcc", "cuda_cudart", "cuda_cccl"] {
            assert!(
                components.iter().any(|have| have == c),
                "{c}: {components:?}"
            );
        }
        let proj = sb.path("proj");
        write(
            &proj.join("gpuenv.toml"),
            "[toolchain]\ncuda = \"cuda-13.0.2-torch\"\n",
        );
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .args(["show", "--json"])
            .output()
            .unwrap();
        let show: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(made_of(&show["toolchains"][0]), components, "{show}");
        // Its nvcc works through the view as before.
        let mut cmd = sb.gpuenv();
        cmd.current_dir(&proj)
            .args(["run", "--", "nvcc", "--version"]);
        let out = cmd.output().unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("V13.0.88"),
            "{}",
            text(&out)
        );

        // Asked again: it has it.
        let out = install_in(&sb, &server, &venv, args);
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains("cuda-13.0.2-torch already has cuda_profiler_api"),
            "{}",
            text(&out)
        );
        // Uninstalled, it leaves no record behind for a plain `install cuda-13.0` to take
        // its minimal profile from.
        ok(&sb, &[], &["uninstall", "cuda-13.0.2-torch"]);
        let kept = sb
            .gpuenv_home()
            .join("toolchains/.cuda-13.0.2-torch.uninstalled.toml");
        assert!(!kept.exists());
    }
}

/// The component's wheel fails (a 500 from the index, every retry): the toolkit is as it
/// was, record and all, with nothing left beside it; once the index answers, it is added.
#[test]
fn a_failed_add_leaves_the_torch_toolkit_as_it_was() {
    let tree = pypi_tree();
    let (server, sb, venv) = torch_toolkit(&tree);
    let toolchains = sb.gpuenv_home().join("toolchains");
    let root = toolchains.join("cuda-13.0.2-torch");
    let before = listing(&root);
    let rec = fs_err::read(root.join(".gpuenv-install.toml")).unwrap();
    let entries = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = fs_err::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let beside = entries(&toolchains);
    let wheel = tree
        .iter()
        .map(|(p, ..)| p.as_str())
        .find(|p| p.starts_with("files/nvidia_cuda_profiler_api-"))
        .unwrap()
        .to_string();
    server.fail(&wheel, 500);

    let args = ["install", "torch", "--component", "cuda_profiler_api"];
    let out = install_in(&sb, &server, &venv, &args);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("500"), "{t}");
    assert!(!server.hits(&wheel).is_empty());
    assert_eq!(listing(&root), before, "{t}");
    assert_eq!(
        fs_err::read(root.join(".gpuenv-install.toml")).unwrap(),
        rec
    );
    assert_eq!(entries(&toolchains), beside, "{t}");
    let list = ok(&sb, &[], &["list", "--json"]);
    assert!(!list.contains("cuda_profiler_api"), "{list}");

    server.heal(&wheel);
    let out = install_in(&sb, &server, &venv, &args);
    assert!(out.status.success(), "{}", text(&out));
    assert!(root.join("include/cuda_profiler_api.h").is_file());
}

/// A toolkit an older `install torch` made has no record of the venv it links into:
/// never "installed by an older gpuenv" with a hint that cannot work, never exit 0 leaving
/// the component out; it says how, and the way it says works.
#[test]
fn a_torch_toolkit_without_a_record_says_how_and_then_the_component_is_in_it() {
    let (server, sb, venv) = torch_toolkit(&pypi_tree());
    let root = sb.gpuenv_home().join("toolchains/cuda-13.0.2-torch");
    // As an older gpuenv left it (its trees are read-only).
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    fs_err::remove_file(root.join(".gpuenv-install.toml")).unwrap();
    fs_err::set_permissions(&root, std::fs::Permissions::from_mode(0o555)).unwrap();
    for args in [
        &["install", "cuda-13.0", "--component", "cuda_profiler_api"][..],
        &["install", "torch", "--component", "cuda_profiler_api"],
    ] {
        let out = install_in(&sb, &server, &venv, args);
        let said = text(&out);
        assert!(!out.status.success(), "{args:?}: {said}");
        assert!(!said.contains("older gpuenv"), "{said}");
        assert!(
            said.contains("cuda-13.0.2-torch was made by an older `gpuenv install torch`"),
            "{args:?}: {said}"
        );
        assert!(
            said.contains("`gpuenv uninstall cuda-13.0.2-torch`, then `gpuenv install torch --component cuda_profiler_api`"),
            "{args:?}: {said}"
        );
        assert!(!root.join("include/cuda_profiler_api.h").exists());
    }
    // The hint, followed.
    let out = install_in(&sb, &server, &venv, &["uninstall", "cuda-13.0.2-torch"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = install_in(
        &sb,
        &server,
        &venv,
        &["install", "torch", "--component", "cuda_profiler_api"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(root.join("include/cuda_profiler_api.h").is_file());
}

/// A torch toolkit in a lock records how it was made like any installed one; where it is
/// not registered, `install --locked` says it comes from `gpuenv install torch` (a venv's
/// wheels are nothing a lock can bring) rather than planning it from the index.
#[test]
fn a_locked_torch_toolkit_is_said_to_come_from_install_torch() {
    let (server, sb, _venv) = torch_toolkit(&pypi_tree());
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"cuda-13.0.2-torch\"\n",
    );
    let out = sb.gpuenv().current_dir(&proj).arg("lock").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let lock = fs_err::read_to_string(proj.join("gpuenv.lock")).unwrap();
    assert!(
        lock.contains("name = \"cuda-13.0.2-torch\"") && lock.contains("from = \"pypi\""),
        "{lock}"
    );

    let clone = Sandbox::new();
    let proj = clone.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"cuda-13.0.2-torch\"\n",
    );
    write(&proj.join("gpuenv.lock"), &lock);
    let index = server.url("simple/");
    let out = clone
        .gpuenv()
        .current_dir(&proj)
        .env("GPUENV_PYPI_URL", &index)
        .args(["install", "--locked"])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("cuda-13.0.2-torch: made by `gpuenv install torch` from a Python environment's wheels, which no lock can bring; not registered here")
            && t.contains("hint: `gpuenv install torch`, with the Python environment of that torch active, makes cuda-13.0.2-torch as locked"),
        "{t}"
    );
    assert!(!clone
        .gpuenv_home()
        .join("toolchains/cuda-13.0.2-torch")
        .exists());
}

/// A newer patch release at the index is not an update for a toolkit made for torch: its
/// release is the one torch's wheels are, so `outdated` leaves it out (and says why when it is
/// named) and `update` keeps it, links into the venv and all.
#[test]
fn outdated_and_update_leave_the_toolkit_install_torch_made() {
    let (server, sb, venv) = torch_toolkit(&pypi_tree_of(&["13.0.2", "13.0.3"]));
    let index = server.url("simple/");
    let vars = [("GPUENV_PYPI_URL", index.as_str())];
    let from = ["--source", "pypi"];

    let json = gpuenv(&sb, &vars, &[&["outdated", "--json"][..], &from].concat());
    assert!(json.status.success(), "{}", text(&json));
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(rows, serde_json::json!([]), "{}", text(&json));
    let named = ok(
        &sb,
        &vars,
        &[&["outdated", "cuda-13.0.2-torch"][..], &from].concat(),
    );
    assert!(
        named.contains("cuda-13.0.2-torch follows the torch it was made for")
            && named.contains("`gpuenv install torch`"),
        "{named}"
    );

    let t = ok(&sb, &vars, &[&["update"][..], &from].concat());
    assert!(
        t.contains("every installed toolkit is on the newest patch release"),
        "{t}"
    );
    let root = sb.gpuenv_home().join("toolchains/cuda-13.0.2-torch");
    assert!(
        std::fs::read_link(root.join("include/cuda_runtime.h"))
            .unwrap()
            .starts_with(&venv),
        "the toolkit still links into the venv"
    );
    assert!(!sb.gpuenv_home().join("toolchains/cuda-13.0.3").exists());
}

/// A teammate cloning a project whose lock names a torch toolkit made with a component
/// needs one command: the first hint names the locked `--component`, and once it is run
/// `check --locked` passes (issue 41: it took `install torch`, a `check --locked` that
/// named the missing component, and `install torch --component` again).
#[test]
fn a_teammate_satisfies_a_locked_torch_toolkit_with_the_one_command_the_hint_names() {
    let (server, sb, venv) = torch_toolkit(&pypi_tree());
    let out = install_in(
        &sb,
        &server,
        &venv,
        &["install", "torch", "--component", "cuda_profiler_api"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let proj = sb.project("proj", "[toolchain]\ncuda = \"torch\"\n");
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("VIRTUAL_ENV", &venv)
        .arg("lock")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let lock = fs_err::read_to_string(proj.join("gpuenv.lock")).unwrap();

    // The teammate: the same project, their own venv with the same torch, nothing installed.
    let clone = Sandbox::new();
    let venv = super::install_torch::venv(&clone);
    let proj = clone.project("proj", "[toolchain]\ncuda = \"torch\"\n");
    write(&proj.join("gpuenv.lock"), &lock);
    let index = server.url("simple/");
    let run = |args: &[&str]| {
        clone
            .gpuenv()
            .current_dir(&proj)
            .env("GPUENV_PYPI_URL", &index)
            .env("VIRTUAL_ENV", &venv)
            .args(args)
            .output()
            .unwrap()
    };
    let wanted = "hint: `gpuenv install torch --component cuda_profiler_api`, with the Python environment of that torch active, makes cuda-13.0.2-torch as locked";
    for first in [&["install", "--locked"][..], &["check", "--locked"]] {
        let out = run(first);
        let t = text(&out);
        assert!(!out.status.success(), "{first:?}: {t}");
        // The first hint.
        let hint = t.lines().find(|l| l.starts_with("hint:"));
        assert_eq!(hint, Some(wanted), "{first:?}: {t}");
    }
    // The hint, followed: one command, and the lock is met.
    let out = run(&["install", "torch", "--component", "cuda_profiler_api"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(&["check", "--locked"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// torch's NCCL wheel (`nvidia/nccl`, only `libnccl.so.2`) joins the toolkit made for it:
/// its header and library are linked in, the toolkit's own tree gets the `libnccl.so` that
/// `-lnccl` needs (the venv is left as it was), and the environment names NCCL through the
/// view (issue 41: nccl-tests found no NCCL_* and `-lnccl` failed).
#[test]
fn install_torch_brings_the_venvs_nccl_with_a_libnccl_so_of_its_own() {
    let (server, sb, venv) = index_and_venv(&pypi_tree());
    let nccl = venv.join("lib/python3.11/site-packages/nvidia/nccl");
    write(&nccl.join("include/nccl.h"), "// NCCL 2.27\n");
    write(&nccl.join("lib/libnccl.so.2"), "ELF");
    install_torch(&sb, &server, &venv);

    let root = sb.gpuenv_home().join("toolchains/cuda-13.0.2-torch");
    assert_eq!(
        fs_err::canonicalize(root.join("include/nccl.h")).unwrap(),
        fs_err::canonicalize(nccl.join("include/nccl.h")).unwrap()
    );
    assert_eq!(
        fs_err::read_link(root.join("lib64/libnccl.so")).unwrap(),
        Path::new("libnccl.so.2")
    );
    assert!(root.join("lib64/libnccl.so").is_file());
    // Nothing was written into the venv.
    let in_venv: Vec<_> = fs_err::read_dir(nccl.join("lib"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(in_venv, ["libnccl.so.2"]);

    let proj = sb.project("proj", "[toolchain]\ncuda = \"cuda-13.0.2-torch\"\n");
    let env = sb.env_json(&proj);
    let view = sb.gpuenv_home().join("views/cuda-13.0.2-torch");
    let var = |k: &str| PathBuf::from(env[k].as_str().unwrap_or_else(|| panic!("{k}: {env}")));
    assert!(var("NCCL_ROOT").starts_with(&view), "{env}");
    assert!(var("NCCL_INCLUDE_DIR").join("nccl.h").is_file(), "{env}");
    // What `-lnccl` looks for, on the linker's path.
    let lib = var("NCCL_LIB_DIR");
    assert!(lib.join("libnccl.so").is_file(), "{env}");
    assert!(
        env["LIBRARY_PATH"]
            .as_str()
            .unwrap()
            .split(':')
            .any(|d| Path::new(d) == lib),
        "{env}"
    );
}
