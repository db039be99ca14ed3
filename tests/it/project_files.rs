//! The project's own files, as gpuenv edits them for the user: `gpuenv.toml` and
//! `gpuenv.lock` follow the umask when new and keep their mode when edited (a colleague can
//! read a shared project), and `pin` on a trusted file keeps it trusted (an edit from
//! outside still needs `gpuenv trust`).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use fs_err as fs;

use crate::common::*;

fn linked() -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let proj = sb.path("proj");
    fs::create_dir_all(&proj).unwrap();
    (sb, proj)
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().mode() & 0o777
}

/// Runs gpuenv through `sh` with this umask.
fn with_umask(sb: &Sandbox, dir: &Path, umask: &str, args: &str) {
    let out = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("umask {umask} && exec \"$GPUENV_BIN\" {args}"),
        ])
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .env("GPUENV_BIN", assert_cmd::cargo::cargo_bin("gpuenv"))
        .current_dir(dir)
        .output()
        .unwrap();
    succeeded(&out);
}

#[test]
fn new_project_files_follow_the_umask_and_edited_ones_keep_their_mode() {
    let (sb, proj) = linked();
    let (toml, lock) = (proj.join("gpuenv.toml"), proj.join("gpuenv.lock"));
    with_umask(&sb, &proj, "022", "pin cuda-12.4");
    with_umask(&sb, &proj, "022", "lock");
    assert_eq!((mode(&toml), mode(&lock)), (0o644, 0o644));
    fs::remove_file(&toml).unwrap();
    fs::remove_file(&lock).unwrap();
    with_umask(&sb, &proj, "027", "pin cuda-12.4");
    with_umask(&sb, &proj, "027", "lock");
    assert_eq!((mode(&toml), mode(&lock)), (0o640, 0o640));
    // Edited, each keeps the mode its owner gave it, whatever the umask now.
    fs::set_permissions(&toml, std::fs::Permissions::from_mode(0o664)).unwrap();
    fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o600)).unwrap();
    with_umask(&sb, &proj, "077", "pin --arch 9.0");
    with_umask(&sb, &proj, "022", "lock");
    assert!(fs::read_to_string(&toml).unwrap().contains("cuda-arch"));
    assert_eq!((mode(&toml), mode(&lock)), (0o664, 0o600));
}

/// `gpuenv env --shell json` in `proj`, and what gpuenv said.
fn env_here(sb: &Sandbox, proj: &Path) -> (serde_json::Value, String) {
    let out = sb
        .gpuenv()
        .current_dir(proj)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    let json = serde_json::from_str(&succeeded(&out)).unwrap();
    (json, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn pin_keeps_a_trusted_file_trusted_and_an_outside_edit_does_not() {
    let (sb, proj) = linked();
    let toml = proj.join("gpuenv.toml");
    write(
        &toml,
        "[toolchain]\ncuda = \"12.4\"\n\n[env]\nNCCL_DEBUG = \"INFO\"\n",
    );
    let (env, said) = env_here(&sb, &proj);
    assert!(
        env.get("NCCL_DEBUG").is_none(),
        "applied before trust: {env}"
    );
    assert!(said.contains("not applied until you trust"), "{said}");
    sb.gpuenv()
        .current_dir(&proj)
        .arg("trust")
        .assert()
        .success();
    assert_eq!(env_here(&sb, &proj).0["NCCL_DEBUG"], "INFO");

    // gpuenv's own edit, asked for by the user: still trusted.
    sb.gpuenv()
        .current_dir(&proj)
        .args(["pin", "--arch", "9.0"])
        .assert()
        .success();
    let (env, said) = env_here(&sb, &proj);
    assert!(fs::read_to_string(&toml).unwrap().contains("cuda-arch"));
    assert_eq!(env["NCCL_DEBUG"], "INFO", "{said}");
    assert!(!said.contains("trust"), "{said}");
    assert_eq!(env["TORCH_CUDA_ARCH_LIST"], "9.0");

    // An edit from outside: held back until trusted again.
    let text = fs::read_to_string(&toml).unwrap();
    fs::write(&toml, text.replace("INFO", "TRACE")).unwrap();
    let (env, said) = env_here(&sb, &proj);
    assert!(env.get("NCCL_DEBUG").is_none(), "{env}");
    assert!(said.contains("not applied until you trust"), "{said}");
    // And a pin on the untrusted file does not trust it.
    sb.gpuenv()
        .current_dir(&proj)
        .args(["pin", "--arch", "8.0"])
        .assert()
        .success();
    assert!(env_here(&sb, &proj).0.get("NCCL_DEBUG").is_none());
}
