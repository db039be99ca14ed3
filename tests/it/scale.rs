//! A site's store of hundreds of toolkits (every CUDA patch release, some under labels), in
//! the user's own home and in an upstream: every entry point resolves from it what it would
//! from the TOML, through the compact copy gpuenv keeps of each settings file, and a change
//! is seen at once. How long each call takes is measured by scripts/bench-scale.sh.

use std::path::{Path, PathBuf};

use crate::common::*;
use fs_err as fs;

/// How many toolkits a site store holds here.
const MANY: usize = 300;

/// `settings` with `n` more toolkits (11.x patch releases, every other one labelled `-site`)
/// appended as gpuenv writes them, each with a tree of its own under `trees`.
pub fn add_toolkits(settings: &Path, trees: &Path, n: usize) {
    let mut text = fs::read_to_string(settings).unwrap();
    for i in 0..n {
        let version = format!("11.{}.{}", i / 40, (i / 2) % 20);
        let name = format!("cuda-{version}{}", if i % 2 == 1 { "-site" } else { "" });
        let root = trees.join(&name);
        write(
            &root.join("version.txt"),
            &format!("CUDA Version {version}\n"),
        );
        let root = root.display();
        text += &format!(
            "\n[toolchains.\"{name}\"]\nkind = \"cuda\"\nversion = \"{version}\"\nroot = \"{root}\"\nsource = \"linked\"\nversion_from = \"version.txt\"\ninclude_dir = \"{root}/include\"\nlib_dir = \"{root}/lib64\"\n"
        );
    }
    fs::write(settings, text).unwrap();
}

/// Files change times tick coarsely, so gpuenv copies only settings at least two seconds old.
pub fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(2200));
}

/// The copies of settings files in a gpuenv home.
pub fn copies(gpuenv_home: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(gpuenv_home.join("cache/registry"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// A directory 40 levels below `proj`.
fn deep(proj: &Path) -> PathBuf {
    let dir = (0..40).fold(proj.to_path_buf(), |d, i| d.join(format!("d{i}")));
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// CUDA 12.4 linked and `MANY - 1` more toolkits, and a project pinned to 12.4.
fn site_of_many(sb: &Sandbox, home: &Path) -> PathBuf {
    let root = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    sb.gpuenv()
        .env("GPUENV_HOME", home)
        .args(["link", "cuda-12.4", root.to_str().unwrap()])
        .assert()
        .success();
    add_toolkits(&home.join("settings.toml"), &sb.path("trees"), MANY - 1);
    sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n")
}

#[test]
fn three_hundred_toolkits_resolve_from_the_copy_as_from_the_settings() {
    let sb = Sandbox::new();
    let home = sb.gpuenv_home();
    let proj = site_of_many(&sb, &home);
    let dir = deep(&proj);
    let env = |dir: &Path| {
        succeeded(
            &sb.gpuenv()
                .current_dir(dir)
                .args(["env", "--shell", "bash"])
                .output()
                .unwrap(),
        )
    };

    // Too new to be copied: parsed each time.
    let parsed = env(&dir);
    assert!(copies(&home).is_empty());
    settle();
    let first = env(&dir);
    assert_eq!(copies(&home).len(), 1, "the own settings' copy is made");
    let from_copy = env(&dir);
    assert_eq!(parsed, first);
    assert_eq!(first, from_copy);
    assert!(
        from_copy.contains(&format!(
            "CUDA_HOME='{}'",
            home.join("views/cuda-12.4").display()
        )),
        "{from_copy}"
    );

    // A prefix picks the highest version, and the plain name over a labelled one.
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"11.3\"\n");
    let out = succeeded(&sb.gpuenv().current_dir(&dir).arg("show").output().unwrap());
    assert!(out.contains("cuda-11.3.19 "), "{out}");
    let list = sb.ok(&["list"]);
    assert_eq!(
        list.lines().filter(|l| l.contains("cuda-")).count(),
        MANY,
        "{list}"
    );
}

#[test]
fn a_change_through_gpuenv_is_seen_at_once_though_a_copy_exists() {
    let sb = Sandbox::new();
    let home = sb.gpuenv_home();
    site_of_many(&sb, &home);
    settle();
    assert!(sb.ok(&["list"]).contains("cuda-11.0.0 "));
    assert_eq!(copies(&home).len(), 1);

    sb.ok(&["unlink", "cuda-11.0.0"]);
    let list = sb.ok(&["list"]);
    assert!(!list.contains("cuda-11.0.0 "), "{list}");
    sb.linked_runfile("opt/cuda-12.6", "cuda-12.6", "12.6.77");
    assert!(sb.ok(&["list"]).contains("cuda-12.6 "));
}

#[test]
fn the_proxy_and_the_hook_use_an_upstream_of_many_and_its_copy_is_the_users() {
    let sb = Sandbox::new();
    let site = sb.path("site/gpuenv");
    let proj = site_of_many(&sb, &site);
    let dir = deep(&proj);
    settle();
    let before = fs::read_dir(&site).unwrap().count();
    let user = || {
        let mut cmd = sb.gpuenv();
        cmd.env("GPUENV_UPSTREAMS", &site).current_dir(&dir);
        cmd
    };
    let env = succeeded(&user().args(["env", "--shell", "bash"]).output().unwrap());
    assert!(
        env.contains(&format!(
            "CUDA_HOME='{}'",
            site.join("views/cuda-12.4").display()
        )),
        "{env}"
    );
    // The upstream's copy is kept in the user's home, and names the upstream's file.
    let copies = copies(&sb.gpuenv_home());
    assert_eq!(copies.len(), 1, "{copies:?}");
    let copy = fs::read_to_string(&copies[0]).unwrap();
    assert_eq!(
        copy.lines().nth(1),
        Some(site.join("settings.toml").to_str().unwrap())
    );
    assert!(
        !site.join("cache").exists(),
        "nothing is written into the upstream"
    );
    assert_eq!(fs::read_dir(&site).unwrap().count(), before);

    // The upstream view's nvcc, run by the user, is the real one behind the proxy.
    let out = std::process::Command::new(site.join("views/cuda-12.4/bin/nvcc"))
        .arg("--version")
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("GPUENV_UPSTREAMS", &site)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(succeeded(&out).contains("release 12.4"));

    // The hook after a `cd` into the deep directory applies the project.
    let hook = user().args(["hook", "bash"]).output().unwrap();
    let script = format!(
        "{}\ncd '{}'\n_gpuenv_hook\necho \"$CUDA_HOME\"",
        succeeded(&hook),
        dir.display()
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("GPUENV_UPSTREAMS", &site)
        .current_dir(sb.path(""))
        .output()
        .unwrap();
    assert_eq!(
        succeeded(&out).trim_end().lines().last(),
        Some(site.join("views/cuda-12.4").to_str().unwrap())
    );
}

/// `gpuenv env` in `dir` for the sandbox's own home.
fn env_in(sb: &Sandbox, dir: &Path) -> String {
    succeeded(
        &sb.gpuenv()
            .current_dir(dir)
            .args(["env", "--shell", "bash"])
            .output()
            .unwrap(),
    )
}

/// A store of many, its settings settled and copied; the copy's path.
fn copied_store(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let home = sb.gpuenv_home();
    let proj = site_of_many(sb, &home);
    settle();
    env_in(sb, &proj);
    let copies = copies(&home);
    assert_eq!(copies.len(), 1, "{copies:?}");
    (proj, copies[0].clone())
}

#[test]
fn a_settings_file_replaced_by_one_of_the_same_size_and_time_is_read_anew() {
    let sb = Sandbox::new();
    let (proj, _) = copied_store(&sb);
    let settings = sb.gpuenv_home().join("settings.toml");
    let meta = fs::metadata(&settings).unwrap();
    // Another toolkit at a path of the same length, written beside and renamed over the
    // settings (a new inode), its modification time set back to the old one.
    let other = cuda_runfile(&sb.path("opt/cuda-12.5"), "12.4.131");
    let text = fs::read_to_string(&settings).unwrap();
    let edited = sb.gpuenv_home().join("settings.toml.new");
    fs::write(&edited, text.replace("opt/cuda-12.4", "opt/cuda-12.5")).unwrap();
    let file = fs::File::options().write(true).open(&edited).unwrap();
    file.set_modified(meta.modified().unwrap()).unwrap();
    drop(file);
    fs::rename(&edited, &settings).unwrap();
    let now = fs::metadata(&settings).unwrap();
    assert_eq!(
        (now.len(), now.modified().unwrap()),
        (meta.len(), meta.modified().unwrap())
    );
    let out = succeeded(
        &sb.gpuenv()
            .current_dir(&proj)
            .args(["prefix", "cuda-12.4"])
            .output()
            .unwrap(),
    );
    assert_eq!(out.trim_end(), other.to_str().unwrap());
}

#[test]
fn a_truncated_or_garbled_copy_is_not_believed_and_is_made_again() {
    let sb = Sandbox::new();
    let (proj, copy) = copied_store(&sb);
    let expected = env_in(&sb, &proj);
    let good = fs::read_to_string(&copy).unwrap();
    let half = good[..good.len() / 2].to_string();
    let mut lines: Vec<&str> = good.lines().collect();
    let last = lines.len() - 1;
    lines.swap(last, last - 1);
    let swapped = lines.join("\n") + "\n";
    let forged = [
        ("truncated", half),
        ("a line cut short", good.replacen("\t\"", "\t", 1)),
        (
            "garbage in a field",
            good.replacen("\tcuda\t", "\tmetal\t", 1),
        ),
        ("out of order", swapped),
        (
            "an entry too many",
            good.clone() + good.lines().last().unwrap() + "\n",
        ),
        ("empty", String::new()),
    ];
    for (what, text) in forged {
        fs::write(&copy, &text).unwrap();
        assert_eq!(env_in(&sb, &proj), expected, "{what}");
        assert_eq!(
            fs::read_to_string(&copy).unwrap(),
            good,
            "{what}: made again"
        );
    }
}

#[test]
fn an_upstreams_copy_writable_by_others_is_not_believed() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let site = sb.path("site/gpuenv");
    let proj = site_of_many(&sb, &site);
    settle();
    let user = || {
        let mut cmd = sb.gpuenv();
        cmd.env("GPUENV_UPSTREAMS", &site).current_dir(&proj);
        cmd
    };
    let prefix = || succeeded(&user().args(["prefix", "cuda-12.4"]).output().unwrap());
    let real = prefix();
    let copy = copies(&sb.gpuenv_home())
        .pop()
        .expect("the upstream's copy is made");
    let text = fs::read_to_string(&copy).unwrap();
    let forged = text.replace("opt/cuda-12.4", "evil/cuda-12.4");
    fs::write(&copy, crate::common::hostile::resealed(&forged)).unwrap();
    fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(prefix(), real);
    assert!(real.contains("opt/cuda-12.4"), "{real}");
}

#[test]
fn concurrent_calls_each_resolve_and_leave_one_whole_copy() {
    let sb = Sandbox::new();
    let home = sb.gpuenv_home();
    let proj = site_of_many(&sb, &home);
    settle();
    // Eight calls at once, none finding a copy: each writes one, renamed into place.
    let outs: Vec<String> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..8).map(|_| scope.spawn(|| env_in(&sb, &proj))).collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert!(outs.iter().all(|o| *o == outs[0]), "{outs:?}");
    assert!(outs[0].contains("CUDA_HOME="), "{}", outs[0]);
    let copies = copies(&home);
    assert_eq!(copies.len(), 1, "one copy, no temp file left: {copies:?}");
    let before = fs::read_to_string(&copies[0]).unwrap();
    assert_eq!(env_in(&sb, &proj), outs[0]);
    assert_eq!(
        fs::read_to_string(&copies[0]).unwrap(),
        before,
        "believed as it is"
    );
}
