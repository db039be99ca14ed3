//! Hostile inputs to what Python environments are given (issue 33): an index base URL with a
//! newline or a user's password, from the variable or the settings, is refused with a clear
//! error, and nothing is exported or written.

mod common;

use common::*;

fn trusted(sb: &Sandbox) -> std::path::PathBuf {
    let root = cuda_runfile(&sb.path("opt/cuda-13.2"), "13.2.78");
    sb.ok(&["link", "cuda-13.2", root.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"13.2\"\n\n[torch]\nindex = \"auto\"\n",
    );
    succeeded(
        &sb.gpuenv()
            .current_dir(&proj)
            .arg("trust")
            .output()
            .unwrap(),
    );
    proj
}

#[test]
fn an_index_url_with_a_newline_or_a_password_is_refused() {
    let sb = Sandbox::new();
    let proj = trusted(&sb);
    let settings = sb.gpuenv_home().join("settings.toml");
    let before = fs_err::read_to_string(&settings).unwrap();
    for (bad, why) in [
        ("https://m.example/whl\nexport EVIL=1", "a newline"),
        ("https://user:secret@m.example/whl", "names a user"),
        ("file:///srv/whl", "not an http:// or https:// URL"),
    ] {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("GPUENV_TORCH_INDEX_URL", bad)
            .args(["env", "--shell", "bash"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad:?} was taken: {err}");
        assert!(out.stdout.is_empty(), "{bad:?}: something was exported");
        assert!(err.contains("GPUENV_TORCH_INDEX_URL"), "{err}");
        assert!(err.contains(why), "{bad:?}: {err}");
        assert!(!err.contains("secret@"), "the password is repeated: {err}");
        assert!(err.contains("hint:"), "{err}");
        assert_eq!(fs_err::read_to_string(&settings).unwrap(), before);
    }

    // The same from the settings file: named with the file.
    write(
        &settings,
        &format!("{before}\n[torch]\nindex-url = \"https://a:b@m.example/whl\"\n"),
    );
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("[torch] index-url in gpuenv's settings.toml"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
