//! docs/clusters.md, copy-pasted: its `# as root` blocks run in order as root, then its
//! `# as a user` blocks as a real second account (useradd, setpriv), as the document says.
//! Blocks with any other first line (the SLURM ones) are not run here. Two things stand in
//! for the machine: absolute paths the blocks name (`/usr/local`, `/shared/`, `/etc/gpuenv/`,
//! `/etc/profile.d/`) are moved under the test's site directory, and `cargo install`
//! copies the binaries this test run built. The CUDA 13 wheels come from the test cache's
//! downloads. `alice` and the `gpuenv-cache` group become the test's own.

use crate::common::accounts;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::common::real::{index_reachable, test_cache, REAL_VARS};
use crate::common::*;
use accounts::{Account, Site};

const ROOT: &str = "# as root";
const USER: &str = "# as a user";

/// The shell blocks of `doc` whose first line is `marker`, in order.
fn blocks(doc: &str, marker: &str) -> Vec<String> {
    doc.split("```sh\n")
        .skip(1)
        .map(|b| b[..b.find("```").expect("a closed block")].to_string())
        .filter(|b| b.lines().next() == Some(marker))
        .collect()
}

/// Stands in for `cargo install --locked --path . --root DIR`: both binaries into DIR/bin.
const FAKE_CARGO: &str = r#"cargo() {
    case "$*" in
        "install --locked --path . --root "*) ;;
        *) echo "this test only knows cargo install --locked --path . --root DIR" >&2; return 2 ;;
    esac
    mkdir -p "$6/bin"
    cp "$BUILT/gpuenv" "$BUILT/gpuenv-shim" "$6/bin/"
}
"#;

/// A group made for the test, removed when dropped.
struct Group(String);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("groupdel").arg(&self.0).output();
    }
}

#[test]
fn the_cluster_doc_runs_as_written_as_root_and_as_a_user() {
    if !accounts::can_make_accounts() || !have_tool("ccache") || !have_tool("g++") {
        return;
    }
    if !index_reachable() {
        return;
    }
    let doc =
        fs_err::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/clusters.md")).unwrap();
    let (root_blocks, user_blocks) = (blocks(&doc, ROOT), blocks(&doc, USER));
    assert!(
        root_blocks.len() >= 4 && !user_blocks.is_empty(),
        "{root_blocks:?}"
    );

    let site = Site::new();
    let user = Account::create(&site, "d");
    let group = Group(format!("gpuenv28ag{}", std::process::id() % 100_000));
    let s = site.dir.path().display().to_string();
    let moved = |block: &str| {
        block
            .replace("/usr/local", &format!("{s}/usr/local"))
            .replace("/shared/", &format!("{s}/shared/"))
            .replace("/etc/gpuenv", &format!("{s}/etc/gpuenv"))
            .replace("/etc/profile.d", &format!("{s}/etc/profile.d"))
            .replace("gpuenv-cache", &group.0)
            .replace("alice", &user.name)
    };
    site.dir("etc/profile.d");
    let steps: String = root_blocks.iter().map(|b| moved(b)).collect();
    let script =
        format!("{FAKE_CARGO}set -e\ntrap 'echo \"failed: $BASH_COMMAND\" >&2' ERR\n{steps}");
    let mut root = Command::new("bash");
    root.args(["--norc", "--noprofile", "-c", &script])
        .env_clear()
        .env("HOME", site.dir("root-home"))
        // root's default PATH, /usr/local/bin moved as the blocks are.
        .env(
            "PATH",
            format!("{s}/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"),
        )
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .env("BUILT", proxy_bin().parent().unwrap())
        .env("GPUENV_DOWNLOAD_CACHE", test_cache().join("downloads"))
        .current_dir(site.dir.path());
    for v in REAL_VARS {
        if let Some(val) = std::env::var_os(v) {
            root.env(v, val);
        }
    }
    let out = root.output().unwrap();
    succeeded(&out);

    // The user: the site config stands in for /etc/gpuenv/config.toml, gpuenv is on the
    // default PATH as /usr/local/bin is.
    let steps: String = user_blocks.iter().map(|b| moved(b)).collect();
    let config = site.path("etc/gpuenv/config.toml");
    let out = user.bash(
        &format!("set -e\ntrap 'echo \"failed: $BASH_COMMAND\" >&2' ERR\n{steps}"),
        &site.path("usr/local/bin"),
        &[("GPUENV_SYSTEM_CONFIG", config.to_str().unwrap())],
        &user.home,
    );
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let listed = succeeded(&out);
    assert!(listed.contains("cuda-13.0."), "{listed}\n{said}");
    for wrong in [
        "warning",
        "cannot be used",
        "shims dir",
        "Permission denied",
    ] {
        assert!(!said.contains(wrong), "{wrong}: {said}");
    }
    let object = user.home.join("proj/k.o");
    let meta = fs_err::metadata(&object).unwrap();
    assert!(
        meta.len() > 500 && meta.uid() == user.uid,
        "a real object of the user's"
    );

    // The user's compile went into the shared cache, in directories the group may add to.
    let cache = site.path("shared/ccache");
    let made: Vec<_> = walk(&cache)
        .into_iter()
        .filter(|p| p != &cache && fs_err::metadata(p).unwrap().uid() == user.uid)
        .collect();
    assert!(
        !made.is_empty(),
        "nothing of the user's in the shared cache"
    );
    let gid = fs_err::metadata(&cache).unwrap().gid();
    for p in &made {
        let m = fs_err::metadata(p).unwrap();
        assert_eq!(m.gid(), gid, "{} has the cache's group", p.display());
        assert_eq!(m.mode() & 0o020, 0o020, "{} is group-writable", p.display());
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    if dir.is_dir() && !dir.is_symlink() {
        for e in fs_err::read_dir(dir).unwrap() {
            out.extend(walk(&e.unwrap().path()));
        }
    }
    out
}
