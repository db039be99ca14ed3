//! `gpuenv self uninstall` removes only what gpuenv made: an entry of the home it does not
//! name, a link where gpuenv makes a directory (and what it points to), a link inside its
//! own directories' target, an rc file that is a link, all stay. It asks first; `-y` does
//! not; `--keep-toolchains` keeps them. `gpuenv self info` tells a cargo install from a
//! build run in place.

use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::common::*;

const HOOK: &str = "# >>> gpuenv hook >>>\neval \"$(gpuenv hook bash)\"\n# <<< gpuenv hook <<<\n";

/// A home with a linked toolkit (views, shims, the proxy, settings), a user's file in it, a
/// link at `cache` to a directory of the user's, and rc files with the hook line.
fn populated() -> Sandbox {
    let sb = Sandbox::new();
    sb.linked_runfile("cuda", "cuda-12.4", "12.4.131");
    let home = sb.gpuenv_home();
    write(&home.join("notes.txt"), "mine\n");
    write(&sb.path("elsewhere/precious"), "keep\n");
    // Where gpuenv makes `cache/` itself, a link to the user's directory.
    let _ = fs_err::remove_dir_all(home.join("cache"));
    std::os::unix::fs::symlink(sb.path("elsewhere"), home.join("cache")).unwrap();
    write(&sb.path("elsewhere/target-of-a-shim"), "keep too\n");
    std::os::unix::fs::symlink(
        sb.path("elsewhere/target-of-a-shim"),
        home.join("shims/odd-link"),
    )
    .unwrap();
    write(
        &sb.home().join(".bashrc"),
        &format!("export A=1\n{HOOK}alias l=ls\n"),
    );
    write(
        &sb.path("dotfiles/zshrc"),
        "# >>> gpuenv hook >>>\neval \"$(gpuenv hook zsh)\"\n# <<< gpuenv hook <<<\n",
    );
    std::os::unix::fs::symlink(sb.path("dotfiles/zshrc"), sb.home().join(".zshrc")).unwrap();
    sb
}

fn uninstall(sb: &Sandbox, args: &[&str], answer: &str) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("gpuenv");
    let mut child = Command::new(bin)
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .args(["self", "uninstall"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn self_uninstall_asks_then_removes_only_what_gpuenv_made() {
    let sb = populated();
    let home = sb.gpuenv_home();

    let out = uninstall(&sb, &[], "n\n");
    succeeded(&out);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        said.contains("go on? [y/N]") && said.contains("nothing was removed"),
        "{said}"
    );
    assert!(home.join("views").is_dir() && home.join("settings.toml").is_file());
    assert!(fs_err::read_to_string(sb.home().join(".bashrc"))
        .unwrap()
        .contains(HOOK));

    let out = uninstall(&sb, &[], "y\n");
    let said = succeeded(&out) + &String::from_utf8_lossy(&out.stderr);
    for gone in ["views", "shims", "bin", "settings.toml"] {
        assert!(!home.join(gone).exists(), "{gone} is still there: {said}");
    }
    // What gpuenv did not make stays, and is named.
    assert_eq!(
        fs_err::read_to_string(home.join("notes.txt")).unwrap(),
        "mine\n"
    );
    assert!(home.join("cache").is_symlink(), "{said}");
    assert_eq!(
        fs_err::read_to_string(sb.path("elsewhere/precious")).unwrap(),
        "keep\n"
    );
    assert_eq!(
        fs_err::read_to_string(sb.path("elsewhere/target-of-a-shim")).unwrap(),
        "keep too\n"
    );
    assert!(said.contains("notes.txt (not gpuenv's)"), "{said}");
    assert!(said.contains("this one is a link"), "{said}");
    // The rc file lost the hook line only; the one that is a link was not edited.
    assert_eq!(
        fs_err::read_to_string(sb.home().join(".bashrc")).unwrap(),
        "export A=1\nalias l=ls\n"
    );
    assert!(sb.home().join(".zshrc").is_symlink());
    assert!(fs_err::read_to_string(sb.path("dotfiles/zshrc"))
        .unwrap()
        .contains("gpuenv hook zsh"));
    assert!(
        said.contains("gpuenv writes no file outside your home"),
        "{said}"
    );
    // The linked toolkit's own tree is the user's: untouched.
    assert!(sb.path("cuda/bin/nvcc").is_file());
}

#[test]
fn self_uninstall_keeps_toolchains_when_asked_and_a_home_that_is_a_link_is_refused() {
    let sb = Sandbox::new();
    sb.linked_runfile("cuda", "cuda-12.4", "12.4.131");
    write(&sb.gpuenv_home().join("toolchains/kept-marker"), "");
    let out = uninstall(&sb, &["-y", "--keep-toolchains"], "");
    let said = succeeded(&out) + &String::from_utf8_lossy(&out.stderr);
    let home = sb.gpuenv_home();
    assert!(home.join("toolchains/kept-marker").is_file(), "{said}");
    assert!(home.join("settings.toml").is_file(), "{said}");
    assert!(
        !home.join("views").exists() && !home.join("shims").exists(),
        "{said}"
    );
    assert!(!said.contains("go on?"), "-y does not ask: {said}");

    // GPUENV_HOME that is a link: nothing behind it is removed.
    let other = Sandbox::new();
    write(&other.path("real-home/settings.toml"), "");
    std::os::unix::fs::symlink(other.path("real-home"), other.path("link-home")).unwrap();
    let out = other
        .gpuenv()
        .env("GPUENV_HOME", other.path("link-home"))
        .args(["self", "uninstall", "-y"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a directory of yours"));
    assert!(other.path("real-home/settings.toml").is_file());
}

#[test]
fn self_info_tells_a_cargo_install_from_a_build_in_place() {
    let sb = Sandbox::new();
    let out = sb.gpuenv().args(["self", "info"]).output().unwrap();
    let said = succeeded(&out);
    assert!(said.contains("installed by hand"), "{said}");

    let cargo_bin = sb.path("cargo/bin");
    fs_err::create_dir_all(&cargo_bin).unwrap();
    let built = proxy_bin().parent().unwrap().to_path_buf();
    for b in ["gpuenv", "gpuenv-shim"] {
        fs_err::copy(built.join(b), cargo_bin.join(b)).unwrap();
    }
    write(&sb.path("cargo/.crates2.json"), "{\"installs\":{}}");
    let out = Command::new(cargo_bin.join("gpuenv"))
        .args(["self", "info"])
        .env_clear()
        .env("HOME", sb.home())
        .output()
        .unwrap();
    let said = succeeded(&out);
    assert!(said.contains("installed with `cargo install`"), "{said}");
    assert!(said.contains("cargo install --locked --path ."), "{said}");
    // `self update` says the same command, on stdout, and why on stderr.
    let out = Command::new(cargo_bin.join("gpuenv"))
        .args(["self", "update"])
        .env_clear()
        .env("HOME", sb.home())
        .output()
        .unwrap();
    let said = succeeded(&out);
    assert_eq!(said, "in a newer clone: cargo install --locked --path .\n");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("installed with `cargo install`"),
        "{out:?}"
    );
}

#[test]
fn self_info_escapes_a_wheels_installer_and_quotes_its_commands() {
    let sb = Sandbox::new();
    // A Python environment in a directory with a space, whose INSTALLER file carries an
    // escape sequence that would retitle the terminal and a line of its own.
    let prefix = sb.path("my env");
    let bin = prefix.join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    let built = proxy_bin().parent().unwrap().to_path_buf();
    for b in ["gpuenv", "gpuenv-shim"] {
        fs_err::copy(built.join(b), bin.join(b)).unwrap();
    }
    write(
        &prefix.join("lib/python3.12/site-packages/gpuenv-1.0.dist-info/INSTALLER"),
        "pip\u{1b}]0;owned\u{7}\nrm -rf ~\n",
    );
    let out = Command::new(bin.join("gpuenv"))
        .args(["self", "info"])
        .env_clear()
        .env("HOME", sb.home())
        .output()
        .unwrap();
    let said = succeeded(&out);
    assert!(
        !said.contains('\u{1b}') && !said.contains('\u{7}'),
        "{said:?}"
    );
    assert!(said.contains("\\x1b]0;owned\\x07"), "{said}");
    let py = format!("'{}/bin/python'", prefix.display());
    assert!(
        said.contains(&format!(
            "remove: gpuenv self uninstall, then {py} -m pip uninstall gpuenv"
        )),
        "{said}"
    );
    // Every line is one of gpuenv's: the file's second line did not become one.
    assert!(!said.lines().any(|l| l.starts_with("rm -rf")), "{said}");
}

#[test]
fn a_removed_proxy_is_put_back_by_the_next_command_and_shims_work_again() {
    let sb = Sandbox::new();
    let root = cuda_runfile(&sb.path("cuda"), "12.4.131");
    sb.ok(&["link", "cuda-12.4", root.to_str().unwrap()]);
    let proxy = sb.gpuenv_home().join("bin/gpuenv-shim");
    fs_err::remove_file(&proxy).unwrap();
    let nvcc = sb.gpuenv_home().join("shims/nvcc");
    assert!(!nvcc.exists(), "the shim dangles while the proxy is gone");
    let out = sb.gpuenv().args(["list"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    succeeded(&out);
    assert!(said.contains("put back the proxy"), "{said}");
    assert!(proxy.is_file());
    let out = Command::new(&nvcc)
        .arg("--version")
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("GPUENV_TOOLCHAIN", "cuda-12.4")
        .current_dir(sb.dir.path())
        .output()
        .unwrap();
    assert!(
        succeeded(&out).contains("release 12.4"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A home with nothing linking to the proxy gets none.
    let empty = Sandbox::new();
    let out = empty.gpuenv().args(["list"]).output().unwrap();
    succeeded(&out);
    assert!(!empty.gpuenv_home().join("bin/gpuenv-shim").exists());
}
