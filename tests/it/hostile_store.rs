//! What an attacker or a careless user does to gpuenv's store, and what gpuenv does about
//! it: writes never land outside gpuenv's own directories or through a planted link; roots
//! that are gpuenv's own (a view, the shims, the proxy) are refused; a broken toolchain is
//! reported, not a reason to stop repairing the others; a full disk or an emptied state
//! file never loses or half-writes a registration.

use crate::common::archives;

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Output;

use fs_err as fs;

use crate::common::*;
use archives::*;

fn run(sb: &Sandbox, dir: &Path, args: &[&str]) -> Output {
    sb.gpuenv().current_dir(dir).args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs gpuenv, expects exit status 2, returns stderr.
fn refused(sb: &Sandbox, args: &[&str]) -> String {
    let out = run(sb, sb.dir.path(), args);
    assert_eq!(
        out.status.code(),
        Some(2),
        "gpuenv {args:?}: {}",
        stderr(&out)
    );
    stderr(&out)
}

/// Every entry under `dir` (links not followed): a file's bytes or a link's target.
fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            let ft = fs::symlink_metadata(&p).unwrap().file_type();
            let what = if ft.is_symlink() {
                format!("-> {}", fs::read_link(&p).unwrap().display())
            } else if ft.is_dir() {
                todo.push(p);
                "dir".to_string()
            } else {
                String::from_utf8_lossy(&fs::read(&p).unwrap()).into_owned()
            };
            out.insert(rel, what);
        }
    }
    out
}

#[test]
fn a_link_planted_in_a_toolchain_root_never_redirects_a_write() {
    let sb = Sandbox::new();
    let important = sb.home().join("important.txt");
    write(&important, "my notes\n");
    // `ln -s ~/important.txt tk/.gpuenv-view.toml; gpuenv link cuda-12.1 tk`
    let tk = cuda_runfile(&sb.path("tk"), "12.1.105");
    symlink(&important, tk.join(".gpuenv-view.toml")).unwrap();
    sb.ok(&["link", "cuda-12.1", tk.to_str().unwrap()]);
    // The same through `discover --register` (as root this could be any system file).
    let found = cuda_runfile(&sb.root().join("usr/local/cuda-12.4"), "12.4.131");
    symlink(&important, found.join(".gpuenv-view.toml")).unwrap();
    sb.ok(&["discover", "--register"]);
    sb.ok(&["reshim"]);
    assert_eq!(fs::read_to_string(&important).unwrap(), "my notes\n");
    // The view mirrors the root as it is; gpuenv's own knowledge is in the registry.
    let view = sb.gpuenv_home().join("views/cuda-12.1");
    assert_eq!(
        fs::read_link(view.join(".gpuenv-view.toml")).unwrap(),
        tk.join(".gpuenv-view.toml")
    );
    let settings = sb.settings().unwrap();
    assert!(
        settings.contains("[toolchains.\"cuda-12.1\"]"),
        "{settings}"
    );
    assert!(
        settings.contains("[toolchains.\"cuda-12.4.131\"]"),
        "{settings}"
    );
}

#[test]
fn an_archive_shipping_gpuenvs_file_names_keeps_them_in_the_tree_and_the_cache() {
    let sb = Sandbox::new();
    let shipped = "name = \"rocm-6.2.4\"\n# shipped by the archive\n";
    let hipcc = "#!/bin/sh\necho 'HIP version: 6.2.41133-dd7f95766'\n";
    let tarball = tar_xz(&[
        Item::Dir("rocm-6.2.4".into()),
        file("rocm-6.2.4/.info/version", "6.2.4-120\n"),
        exe("rocm-6.2.4/bin/hipcc", hipcc),
        file("rocm-6.2.4/include/hip/hip_runtime.h", "// hip\n"),
        file("rocm-6.2.4/lib/libamdhip64.so", "ELF"),
        file("rocm-6.2.4/.gpuenv-view.toml", shipped),
    ]);
    let m = sb.path("mirror");
    fs::create_dir_all(&m).unwrap();
    fs::write(m.join("rocm-6.2.4.tar.xz"), &tarball).unwrap();
    let manifest = m.join("toolchains.toml");
    write(
        &manifest,
        &format!(
            "kind = \"rocm\"\nversion = \"6.2.4\"\n\n[[archive]]\nurl = \"rocm-6.2.4.tar.xz\"\nsha256 = \"{}\"\nstrip-prefix = \"rocm-6.2.4\"\n",
            sha256(&tarball)
        ),
    );
    sb.ok(&[
        "install",
        "rocm-6.2",
        "--manifest",
        manifest.to_str().unwrap(),
    ]);
    sb.ok(&["reshim"]);
    let installed = sb
        .gpuenv_home()
        .join("toolchains/rocm-6.2.4/.gpuenv-view.toml");
    assert_eq!(fs::read_to_string(installed).unwrap(), shipped);
    let cached: Vec<(PathBuf, String)> = tree(&sb.gpuenv_home().join("downloads"))
        .into_iter()
        .filter(|(p, _)| p.ends_with(".gpuenv-view.toml"))
        .collect();
    assert!(!cached.is_empty(), "the unpacked archive is cached");
    for (path, text) in cached {
        assert_eq!(text, shipped, "{}", path.display());
    }
}

#[test]
fn linking_a_directory_inside_gpuenv_home_is_refused() {
    let sb = Sandbox::new();
    sb.linked_runfile("tk", "cuda-12.1", "12.1.105");
    let home = sb.gpuenv_home();
    let before = (sb.settings(), tree(&home));
    // `gpuenv link X $GPUENV_HOME/views/cuda-12.1`, and the other dirs gpuenv owns.
    for (name, inside) in [
        ("cuda-12.1-x", "views/cuda-12.1"),
        ("cuda-12.1-y", "views/cuda-12.1/"),
        ("cuda-12.1-z", "shims"),
        ("cuda-12.1-w", "."),
    ] {
        let dir = home.join(inside);
        let err = refused(&sb, &["link", name, dir.to_str().unwrap()]);
        assert!(err.contains("is inside GPUENV_HOME"), "{err}");
        assert!(
            err.contains("hint: link the toolchain at its real root"),
            "{err}"
        );
    }
    assert_eq!((sb.settings(), tree(&home)), before);
}

#[test]
fn a_root_whose_compiler_is_the_gpuenv_proxy_is_refused_at_link_time() {
    let sb = Sandbox::new();
    let tk = sb.linked_runfile("tk", "cuda-12.1", "12.1.105");
    let home = sb.gpuenv_home();

    // Another home's view: its bin/nvcc is a link to the proxy.
    let other = sb.path("other-home");
    let out = sb
        .gpuenv()
        .env("GPUENV_HOME", &other)
        .args(["link", "cuda-12.1", tk.to_str().unwrap()])
        .output()
        .unwrap();
    succeeded(&out);
    // A tree whose bin/nvcc is a copy of the proxy.
    let copy = cuda_runfile(&sb.path("copy"), "12.1.105");
    fs::copy(proxy_bin(), copy.join("bin/nvcc")).unwrap();
    // A tree whose bin is a shims dir.
    let shimmed = sb.path("shimmed");
    write(&shimmed.join("version.txt"), "CUDA Version 12.1.105\n");
    symlink(home.join("shims"), shimmed.join("bin")).unwrap();

    let before = (sb.settings(), tree(&home));
    for (root, tool) in [
        (other.join("views/cuda-12.1"), "nvcc"),
        (copy, "nvcc"),
        (shimmed, "nvcc"),
    ] {
        let err = refused(&sb, &["link", "cuda-12.1-p", root.to_str().unwrap()]);
        assert!(
            err.contains(&format!(
                "/bin/{tool} is the gpuenv proxy, not a real {tool}"
            )),
            "{err}"
        );
        assert!(
            err.contains("hint: link the toolchain at its real root"),
            "{err}"
        );
    }
    assert_eq!((sb.settings(), tree(&home)), before);
}

/// Three registered toolchains; the root of cuda-11.8 is then moved away.
fn one_root_gone() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let a = cuda_runfile(&sb.path("opt/cuda-12.1"), "12.1.105");
    let b = cuda_runfile(&sb.path("opt/cuda-11.8"), "11.8.89");
    let c = rocm(&sb.path("opt/rocm-6.2.4"), "6.2.4");
    for (name, root) in [("cuda-12.1", &a), ("cuda-11.8", &b), ("rocm-6.2.4", &c)] {
        sb.ok(&["link", name, root.to_str().unwrap()]);
    }
    fs::rename(&b, sb.path("opt/moved-away")).unwrap();
    (sb, b)
}

#[test]
fn reshim_repairs_every_toolchain_it_can_and_names_each_broken_one() {
    let (sb, gone) = one_root_gone();
    let home = sb.gpuenv_home();
    // Everything gpuenv made is lost (a cleaned home, a moved gpuenv).
    fs::remove_dir_all(home.join("views")).unwrap();
    fs::remove_dir_all(home.join("shims")).unwrap();
    // What killed changes leave: a half-built view, a set-aside one, one never registered.
    for litter in [".tmp-cuda-12.1-Xy12", ".old-cuda-11.8.4242", "cuda-10.0"] {
        fs::create_dir_all(home.join("views").join(litter).join("bin")).unwrap();
    }
    let out = run(&sb, sb.dir.path(), &["reshim"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "the root of cuda-11.8, {}, is gone",
            gone.display()
        )),
        "{err}"
    );
    assert!(err.contains("gpuenv unlink cuda-11.8"), "{err}");
    for name in ["cuda-12.1", "rocm-6.2.4"] {
        assert!(home.join("views").join(name).join("bin").is_dir(), "{name}");
    }
    for tool in ["nvcc", "ptxas", "hipcc"] {
        assert!(home.join("shims").join(tool).is_symlink(), "{tool}");
    }
    let mut views: Vec<String> = fs::read_dir(home.join("views"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    views.sort();
    assert_eq!(views, ["cuda-12.1", "rocm-6.2.4"], "litter is cleared");
    // The way out the hint gives works, and then reshim is clean.
    sb.ok(&["unlink", "cuda-11.8"]);
    sb.ok(&["reshim"]);
}

#[test]
fn list_show_and_doctor_say_what_is_missing_and_how_to_fix_it() {
    let (sb, gone) = one_root_gone();
    let home = sb.gpuenv_home();
    fs::remove_dir_all(home.join("views/rocm-6.2.4")).unwrap();
    fs::remove_dir_all(home.join("shims")).unwrap();

    let out = run(&sb, sb.dir.path(), &["list"]);
    succeeded(&out);
    let list = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str| list.lines().find(|l| l.contains(name)).unwrap().to_string();
    assert!(line("cuda-11.8").ends_with("[root missing]"), "{list}");
    assert!(line("rocm-6.2.4").ends_with("[view missing]"), "{list}");
    assert!(!line("cuda-12.1").contains('['), "{list}");
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}, is gone", gone.display())),
        "{err}"
    );
    assert!(err.contains("gpuenv unlink cuda-11.8"), "{err}");
    assert!(err.contains("the view of rocm-6.2.4"), "{err}");
    assert!(err.contains("the shims dir"), "{err}");
    assert!(err.contains("`gpuenv reshim` makes it again"), "{err}");
    let json = sb.ok(&["list", "--json"]);
    assert!(json.contains("\"root missing\""), "{json}");

    let proj = sb.project("proj", "[toolchain]\ncuda = \"11.8\"\n");
    let out = run(&sb, &proj, &["show"]);
    let err = stderr(&out);
    assert!(err.contains("the root of cuda-11.8"), "{err}");
    assert!(err.contains("the shims dir"), "{err}");
    assert!(
        !err.contains("rocm-6.2.4"),
        "show is about what is active here: {err}"
    );

    let out = run(&sb, &proj, &["doctor", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the active root is gone: an error"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let finding = |id: &str| {
        let all = report["findings"].as_array().unwrap();
        all.iter().find(|f| f["id"] == id).unwrap().clone()
    };
    // The tree is FM-13's (broken-toolchain); what gpuenv exports is the active set's.
    let tree = finding("FM-13");
    assert_eq!(tree["status"], "error", "{tree}");
    let text = tree.to_string();
    assert!(text.contains("the root of cuda-11.8"), "{text}");
    assert!(text.contains("gpuenv unlink cuda-11.8"), "{text}");
    let exported = finding("active-set");
    assert_eq!(exported["status"], "warn", "{exported}");
    let text = exported.to_string();
    assert!(text.contains("the shims dir"), "{text}");
    assert!(text.contains("gpuenv reshim"), "{text}");
    assert!(!text.contains("the root of cuda-11.8"), "said once: {text}");
}

#[test]
fn pin_through_a_symlinked_toolchain_file_edits_it_only_inside_the_project() {
    let sb = Sandbox::new();
    sb.linked_runfile("tk", "cuda-12.1", "12.1.105");
    let shared = sb.path("shared/gpuenv.toml");
    let before = "# shared by every checkout\n[toolchain]\ncuda = \"11.8\"\n";
    write(&shared, before);
    let proj = sb.path("proj");
    fs::create_dir_all(&proj).unwrap();
    // A link out of the project: refused, the other file untouched.
    symlink("../shared/gpuenv.toml", proj.join("gpuenv.toml")).unwrap();
    let out = run(&sb, &proj, &["pin", "cuda-12.1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("outside the project"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&shared).unwrap(), before);

    // A link to a file of the project's own (shared by its checkouts): edited there.
    fs::remove_file(proj.join("gpuenv.toml")).unwrap();
    let inside = proj.join("config/gpuenv.toml");
    write(&inside, before);
    symlink("config/gpuenv.toml", proj.join("gpuenv.toml")).unwrap();
    succeeded(&run(&sb, &proj, &["pin", "cuda-12.1"]));
    assert_eq!(
        fs::read_link(proj.join("gpuenv.toml")).unwrap(),
        Path::new("config/gpuenv.toml"),
        "the link stays a link"
    );
    let text = fs::read_to_string(&inside).unwrap();
    assert!(text.contains("# shared by every checkout"), "{text}");
    assert!(text.contains("cuda = \"12.1\""), "{text}");
    let leftovers: Vec<_> = tree(&proj.join("config")).into_keys().collect();
    assert_eq!(
        leftovers,
        [PathBuf::from("gpuenv.toml")],
        "no temp file left"
    );
}

#[test]
fn a_plus_spec_of_another_kind_or_matching_nothing_is_an_error_for_the_shim() {
    let sb = Sandbox::new();
    let tk = cuda_runfile(&sb.path("tk"), "12.1.105");
    let r = rocm(&sb.path("rocm"), "6.2.4");
    sb.ok(&["link", "cuda-12.1", tk.to_str().unwrap()]);
    sb.ok(&["link", "rocm-6.2.4", r.to_str().unwrap()]);
    sb.ok(&["default", "cuda-12.1"]);
    let shims = sb.gpuenv_home().join("shims");
    let nvcc = |spec: &str| {
        std::process::Command::new(shims.join("nvcc"))
            .args([spec, "-c", "x.cu"])
            .env_clear()
            .env("HOME", sb.home())
            .env("PATH", "/usr/bin:/bin")
            .current_dir(sb.dir.path())
            .output()
            .unwrap()
    };
    // `nvcc +rocm-6.2 …` used to run the active CUDA.
    let out = nvcc("+rocm-6.2");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("`nvcc +rocm-6.2` names a rocm toolchain, but nvcc is the cuda compiler"),
        "{}",
        stderr(&out)
    );
    let out = nvcc("+cuda-99");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cuda-99"), "{}", stderr(&out));
    assert!(!tk.join("nvcc.log").exists(), "the real nvcc never ran");
}

#[test]
fn an_emptied_settings_file_warns_and_names_the_backup() {
    let sb = Sandbox::new();
    let a = cuda_runfile(&sb.path("a"), "12.1.105");
    let b = cuda_runfile(&sb.path("b"), "11.8.89");
    sb.ok(&["link", "cuda-12.1", a.to_str().unwrap()]);
    sb.ok(&["link", "cuda-11.8", b.to_str().unwrap()]);
    let settings = sb.gpuenv_home().join("settings.toml");
    let backup = sb.gpuenv_home().join("settings.toml.bak");
    // `: > settings.toml`
    fs::write(&settings, "").unwrap();
    let out = run(&sb, sb.dir.path(), &["list"]);
    succeeded(&out);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "gpuenv's state file {} is empty",
            settings.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("cp {} {}", backup.display(), settings.display())),
        "{err}"
    );
    // A change made meanwhile never makes the empty file the backup.
    let c = rocm(&sb.path("c"), "6.2.4");
    let out = run(
        &sb,
        sb.dir.path(),
        &["link", "rocm-6.2.4", c.to_str().unwrap()],
    );
    succeeded(&out);
    assert!(stderr(&out).contains("is empty"), "{}", stderr(&out));
    // The backup brings back the state before the last change.
    fs::copy(&backup, &settings).unwrap();
    let list = sb.ok(&["list"]);
    assert!(list.contains("cuda-12.1"), "{list}");
}

#[path = "hostile_store/full_disk.rs"]
mod full_disk;

#[path = "hostile_store/registry_copy.rs"]
mod registry_copy;

#[path = "hostile_store/retired_records.rs"]
mod retired_records;
