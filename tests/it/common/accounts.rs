//! Real second accounts for what users share: made with `useradd` for one test (names start
//! with `gpuenv28a` and carry the test's tag and this process's id, so parallel tests and
//! other suites never collide), removed when dropped, also when the test fails. Commands run
//! as them through `setpriv`. Their files live in a site directory every account can
//! traverse (a temp dir made 0755 under /tmp), never under /root.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Whether accounts can be made here (root, with useradd and setpriv); under CI a missing
/// piece fails the test, elsewhere it is skipped.
pub fn can_make_accounts() -> bool {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        super::cannot_run("making test accounts needs root");
        return false;
    }
    for tool in ["useradd", "userdel", "setpriv"] {
        if !super::have_tool(tool) {
            return false;
        }
    }
    true
}

/// A site directory every account can reach: `<tmp>/gpuenv28a-site…`, mode 0755.
pub struct Site {
    pub dir: tempfile::TempDir,
}

impl Site {
    pub fn new() -> Site {
        let dir = tempfile::Builder::new()
            .prefix("gpuenv28a-site")
            .tempdir_in("/tmp")
            .unwrap();
        fs_err::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Site { dir }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `rel` made (with its parents) as root, mode 0755.
    pub fn dir(&self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        fs_err::create_dir_all(&p).unwrap();
        fs_err::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    /// Both binaries in `<site>/usr/local/bin`, as an admin installs them system-wide (the
    /// build's own directory may be under /root, which no account can reach).
    pub fn install_binaries(&self) -> PathBuf {
        let bin = self.dir("usr/local/bin");
        let built = super::proxy_bin().parent().unwrap().to_path_buf();
        for name in ["gpuenv", "gpuenv-shim"] {
            let to = bin.join(name);
            if fs_err::hard_link(built.join(name), &to).is_err() {
                fs_err::copy(built.join(name), &to).unwrap();
            }
            fs_err::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        bin
    }
}

/// A Python environment every account can run (see [`Site::python_for_all`]).
pub struct SharedPython {
    /// The copy's `bin/python`.
    pub python: PathBuf,
    /// The copy of the base interpreter's `lib/`: its `libpython` is found through a
    /// RUNPATH that names the original prefix, so a run puts this on LD_LIBRARY_PATH.
    pub lib_dir: PathBuf,
}

impl Site {
    /// `venv` and its base interpreter (`sys.base_prefix`), which live where other accounts
    /// cannot reach (/root is 0700), as a copy in `<site>/python/`: hard links (`cp -al`,
    /// else a plain copy across file systems), so nothing is read twice from disk. The links
    /// share the cache's files, so no file is changed in place: `pyvenv.cfg` and the
    /// `bin/python*` links that name the original base are replaced by new ones that name
    /// the copy, and only the copy's own directories get mode 0755.
    pub fn python_for_all(&self, venv: &Path) -> SharedPython {
        let out = Command::new(venv.join("bin/python"))
            .args(["-c", "import sys; print(sys.base_prefix)"])
            .output()
            .unwrap();
        let base = PathBuf::from(super::succeeded(&out).trim());
        let top = self.dir("python");
        let (new_base, new_venv) = (top.join("base"), top.join("venv"));
        for (from, to) in [(&base, &new_base), (&venv.to_path_buf(), &new_venv)] {
            let linked = Command::new("cp")
                .arg("-al")
                .arg(from)
                .arg(to)
                .output()
                .unwrap();
            if !linked.status.success() {
                let _ = fs_err::remove_dir_all(to);
                super::succeeded(
                    &Command::new("cp")
                        .arg("-a")
                        .arg(from)
                        .arg(to)
                        .output()
                        .unwrap(),
                );
            }
        }
        // Directories only: `find -type d` does not follow links out of the copy.
        super::succeeded(
            &Command::new("find")
                .arg(&top)
                .args(["-type", "d", "-exec", "chmod", "0755", "{}", "+"])
                .output()
                .unwrap(),
        );
        let renamed = |text: &str| text.replace(base.to_str().unwrap(), new_base.to_str().unwrap());
        let cfg = new_venv.join("pyvenv.cfg");
        let text = fs_err::read_to_string(&cfg).unwrap();
        fs_err::remove_file(&cfg).unwrap();
        fs_err::write(&cfg, renamed(&text)).unwrap();
        fs_err::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
        for entry in fs_err::read_dir(new_venv.join("bin")).unwrap() {
            let link = entry.unwrap().path();
            let Ok(target) = fs_err::read_link(&link) else {
                continue;
            };
            if target.starts_with(&base) {
                fs_err::remove_file(&link).unwrap();
                let target = PathBuf::from(renamed(target.to_str().unwrap()));
                std::os::unix::fs::symlink(target, &link).unwrap();
            }
        }
        SharedPython {
            python: new_venv.join("bin/python"),
            lib_dir: new_base.join("lib"),
        }
    }
}

/// A user account that exists while this value does.
pub struct Account {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
}

impl Account {
    /// `useradd` of `gpuenv28a<tag><pid>` (its own group, no home made) with `shell` and, if
    /// given, `home`; a leftover account of a killed run of the same pid goes first.
    fn add(tag: &str, shell: &str, home: Option<&Path>) -> Account {
        let name = Account::name_of(tag);
        assert!(name.len() <= 32, "{name} is too long for an account name");
        let _ = Command::new("userdel").arg(&name).output();
        let mut useradd = Command::new("useradd");
        useradd.args(["-M", "-U", "-s", shell]);
        if let Some(home) = home {
            useradd.arg("-d").arg(home);
        }
        super::succeeded(&useradd.arg(&name).output().unwrap());
        let (uid, gid) = ids(&name);
        Account {
            name,
            uid,
            gid,
            home: home.map_or_else(|| PathBuf::from("/nonexistent"), Path::to_path_buf),
        }
    }

    /// The name of this run's account `tag`: `gpuenv28a<tag><pid>`.
    fn name_of(tag: &str) -> String {
        format!("gpuenv28a{tag}{}", std::process::id() % 100_000)
    }

    /// `gpuenv28a<tag><pid>` with its home at `<site>/home/<name>` (made, theirs, 0755).
    pub fn create(site: &Site, tag: &str) -> Account {
        let home = site.dir("home").join(Account::name_of(tag));
        let account = Account::add(tag, "/bin/bash", Some(&home));
        fs_err::create_dir_all(&account.home).unwrap();
        account.owns(&account.home);
        fs_err::set_permissions(&account.home, std::fs::Permissions::from_mode(0o755)).unwrap();
        account
    }

    /// An account without a home (`gpuenv28a<tag><pid>`), for files that must belong to
    /// someone else; `None` where accounts cannot be made (a skip outside CI).
    pub fn other(tag: &str) -> Option<Account> {
        can_make_accounts().then(|| Account::add(tag, "/usr/sbin/nologin", None))
    }

    /// `gpuenv28a<tag><pid>` whose home is `home`, which this neither makes nor needs (a
    /// cluster's node may lack it), with `shell`; `None` where accounts cannot be made (a
    /// skip outside CI).
    pub fn at_home(tag: &str, home: &Path, shell: &str) -> Option<Account> {
        can_make_accounts().then(|| Account::add(tag, shell, Some(home)))
    }

    /// `program` run as this account (its own uid and group, no other groups).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid",
            &self.name,
            "--regid",
            &self.name,
            "--clear-groups",
            "--",
        ])
        .arg(program);
        cmd
    }

    /// Gives `path` (not what is under it) to this account.
    pub fn owns(&self, path: &Path) {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid)).unwrap();
    }

    /// Adds the account to `group` (made when missing).
    pub fn join(&self, group: &str) {
        let _ = Command::new("groupadd").args(["-f", group]).output();
        super::succeeded(
            &Command::new("usermod")
                .args(["-aG", group, &self.name])
                .output()
                .unwrap(),
        );
    }

    /// `script` in bash as this account (its groups from the group database), in `cwd`,
    /// with only `vars` (and HOME, USER, LOGNAME, a system PATH ahead of `bin`).
    pub fn bash(&self, script: &str, bin: &Path, vars: &[(&str, &str)], cwd: &Path) -> Output {
        Command::new("setpriv")
            .args([
                "--reuid",
                &self.name,
                "--regid",
                &self.name,
                "--init-groups",
                "--",
            ])
            .args(["bash", "--norc", "--noprofile", "-c", script])
            .env_clear()
            .env("HOME", &self.home)
            .env("USER", &self.name)
            .env("LOGNAME", &self.name)
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
            )
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .envs(vars.iter().copied())
            .current_dir(cwd)
            .output()
            .unwrap()
    }
}

/// An account's uid and gid.
fn ids(name: &str) -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let out = Command::new("id").args([flag, name]).output().unwrap();
        super::succeeded(&out).trim().parse().unwrap()
    };
    (id("-u"), id("-g"))
}

impl Drop for Account {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).output();
        let _ = Command::new("groupdel").arg(&self.name).output();
    }
}
