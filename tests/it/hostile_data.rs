//! A copy of gpuenv's compatibility data that gpuenv did not write, or that was tampered
//! with, changes what it tells about every toolkit: such a copy (not TOML, absurd values, a
//! link, another user's file, a directory everyone can write) is refused with the file and
//! line, and the data gpuenv was built with stays in effect. A redist manifest that names
//! an absurd driver does not get into the data.

use crate::common::server;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;

use crate::common::*;
use serde_json::Value;
use server::Server;

const REPO_DATA: &str = include_str!("../../crates/core/src/facts/cuda.toml");

/// The repository's data, dated later so that it would win over the embedded copy.
fn newer_copy() -> String {
    let date = REPO_DATA
        .lines()
        .find_map(|l| l.strip_prefix("date = "))
        .unwrap();
    REPO_DATA.replacen(&format!("date = {date}"), "date = \"2099-01-01\"", 1)
}

fn copy_path(sb: &Sandbox) -> PathBuf {
    sb.gpuenv_home().join("facts/cuda.toml")
}

fn plant(sb: &Sandbox, text: &str) -> PathBuf {
    let path = copy_path(sb);
    write(&path, text);
    path
}

/// `gpuenv self data --json`, and its stderr.
fn data(sb: &Sandbox) -> (Value, String) {
    let out: Output = sb
        .gpuenv()
        .args(["self", "data", "--json"])
        .output()
        .unwrap();
    let text = succeeded(&out);
    (
        serde_json::from_str(&text).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[track_caller]
fn assert_refused(sb: &Sandbox, why: &str) -> String {
    let (d, err) = data(sb);
    assert_eq!(d["origin"], "embedded in this gpuenv", "{d}");
    assert_eq!(d["date"], d["embedded_date"]);
    let path = copy_path(sb);
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains(why), "{err}");
    assert!(err.contains("using gpuenv's embedded data"), "{err}");
    assert!(err.contains("gpuenv self update-data"), "{err}");
    err
}

#[test]
fn a_good_newer_copy_in_the_home_is_used() {
    let sb = Sandbox::new();
    let path = plant(&sb, &newer_copy());
    let (d, err) = data(&sb);
    assert_eq!(d["origin"], path.to_str().unwrap(), "{err}");
    assert_eq!(d["date"], "2099-01-01");
}

#[test]
fn a_copy_that_is_not_toml_is_refused_with_its_line() {
    let sb = Sandbox::new();
    plant(
        &sb,
        "format = 1\ndate = \"2099-01-01\"\n\n[[release]\ncuda = \"13.9\"\n",
    );
    let err = assert_refused(&sb, "");
    assert!(err.contains("cuda.toml:4:"), "{err}");
}

#[test]
fn a_copy_with_absurd_values_is_refused_naming_the_row() {
    let sb = Sandbox::new();
    let bad = newer_copy().replacen("gcc-max = 11", "gcc-max = 1100", 1);
    plant(&sb, &bad);
    let err = assert_refused(&sb, "is not a GCC major range");
    assert!(err.contains("cuda = \"11.4\""), "{err}");
    for absurd in [
        ("driver = \"520.61.05\"", "driver = \"../../etc/passwd\""),
        ("archs = [35, 37, 50", "archs = [35, 35, 50"),
        ("format = 1", "format = 7"),
        ("name = \"cu118\"", "name = \"cu118/../../x\""),
    ] {
        plant(&sb, &newer_copy().replacen(absurd.0, absurd.1, 1));
        assert_refused(&sb, "");
    }
}

/// The `[[nvcc-build]]` rows name trees: a copy cannot give a build another major.minor's
/// release, list a release twice, put a path or a word where a version goes, or drop rows
/// to turn a name back into a guess.
#[test]
fn a_copy_with_bad_nvcc_build_rows_is_refused_naming_the_row() {
    let sb = Sandbox::new();
    let row = "release = \"13.2.2\"\nnvcc = \"13.2.86\"";
    assert!(newer_copy().contains(row));
    for (bad, why) in [
        (
            "release = \"13.2.2\"\nnvcc = \"13.3.86\"",
            "nvcc = \"13.3.86\" is not of the same major.minor",
        ),
        (
            "release = \"13.2.1\"\nnvcc = \"13.2.86\"",
            "[[nvcc-build]] release = \"13.2.1\": listed twice",
        ),
        (
            "release = \"13.2.2\"\nnvcc = \"13.2.86/../../x\"",
            "needs a release such as \"13.0.2\"",
        ),
        (
            "release = \"13.2\"\nnvcc = \"13.2.86\"",
            "needs a release such as \"13.0.2\"",
        ),
        (
            "release = \"13.2.2\"\nnvcc = \"13.2.8600000\"",
            "needs a release such as \"13.0.2\"",
        ),
        (
            "release = \"13.2.2\"\nnvcc = \"13.2.86\"\nsource = \" \"\nsourced",
            "needs a source",
        ),
    ] {
        let text = newer_copy().replacen(&format!("{row}\nsource"), &format!("{bad}\nsource"), 1);
        plant(&sb, &text.replacen("sourced\nsource =", "# was:", 1));
        let err = assert_refused(&sb, why);
        assert!(err.contains("[[nvcc-build]]"), "{err}");
    }
    // Rows dropped: the built-in data stays, however new the copy.
    let first = newer_copy().find("\n[[nvcc-build]]\n").unwrap() + 1;
    let mut cut = newer_copy();
    let end = cut[first..].find("\n\n").unwrap() + first + 2;
    cut.replace_range(first..end, "");
    plant(&sb, &cut);
    assert_refused(&sb, "nvcc builds ([[nvcc-build]])");
}

#[test]
fn a_copy_in_a_directory_everyone_can_write_is_not_read() {
    let sb = Sandbox::new();
    let path = plant(&sb, &newer_copy());
    let dir = path.parent().unwrap();
    fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_refused(&sb, "is writable by every user");
    fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_refused(&sb, "other users can write to it");
}

#[test]
fn a_link_planted_as_the_copy_is_not_followed() {
    let sb = Sandbox::new();
    let elsewhere = sb.path("elsewhere.toml");
    write(&elsewhere, &newer_copy());
    let path = copy_path(&sb);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    assert_refused(&sb, "symbolic link");
}

#[test]
fn another_users_copy_is_not_read() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: making a file owned by another user needs root");
        return;
    }
    let sb = Sandbox::new();
    let path = plant(&sb, &newer_copy());
    std::os::unix::fs::chown(&path, Some(4242), Some(4242)).unwrap();
    assert_refused(&sb, "owner uid 4242");
}

#[test]
fn a_manifest_naming_an_absurd_driver_does_not_get_into_the_data() {
    let server = Server::start();
    let manifest = serde_json::json!({
        "release_label": "13.7.0",
        "nvidia_driver": {"version": "99999999.1; rm -rf ~"},
        "cuda_nvcc": {"version": "13.7.0/../../x"},
    });
    server.put(
        "redistrib_13.7.0.json",
        serde_json::to_vec(&manifest).unwrap(),
        "application/json",
    );
    server.put("redistrib_13.8.0.json", "{not json", "application/json");
    server.put(
        "",
        "<a href=\"redistrib_13.7.0.json\">x</a><a href=\"redistrib_13.8.0.json\">y</a>",
        "text/html",
    );
    let sb = Sandbox::new();
    let out = sb
        .gpuenv()
        .env("GPUENV_CUDA_MIRROR", server.url(""))
        .args(["self", "update-data"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("redistrib_13.7.0.json: nvidia_driver.version") && err.contains("not used"),
        "{err}"
    );
    assert!(
        err.contains("redistrib_13.8.0.json is not a JSON redist manifest"),
        "{err}"
    );
    assert!(
        err.contains(
            "redistrib_13.7.0.json: cuda_nvcc.version \"13.7.0/../../x\" is not a build of 13.7.0"
        ),
        "{err}"
    );
    let text = fs_err::read_to_string(copy_path(&sb)).unwrap();
    assert!(
        !text.contains("99999999") && !text.contains("13.7"),
        "{text}"
    );
}
