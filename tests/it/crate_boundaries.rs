//! The proxy runs for every nvcc/hipcc call: it links gpuenv-core only, and gpuenv-core has
//! no CLI, network, archive, progress-bar or ELF-parsing dependency (`gpuenv audit`'s
//! parsing lives in gpuenv-audit).

use crate::common;

use std::process::Command;

fn normal_deps(package: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_core_that_the_proxy_links_has_no_cli_network_archive_progress_or_elf_crates() {
    let deps = normal_deps("gpuenv-core");
    assert!(
        deps.iter().any(|d| d == "toml"),
        "cargo tree listed: {deps:?}"
    );
    for heavy in [
        "clap",
        "reqwest",
        "hyper",
        "rustls",
        "tar",
        "zip",
        "liblzma",
        "indicatif",
        "object",
    ] {
        assert!(
            !deps.iter().any(|d| d == heavy),
            "gpuenv-core depends on {heavy}: {deps:?}"
        );
    }
}

/// `gpuenv audit`'s parsing takes bytes and returns a report: no CLI, network or archive
/// crate, and no doctor (the CLI passes it the GPUs the doctor's code finds).
#[test]
fn the_audit_crate_parses_without_cli_network_or_doctor() {
    let deps = normal_deps("gpuenv-audit");
    assert!(deps.iter().any(|d| d == "object"), "{deps:?}");
    for heavy in [
        "clap",
        "reqwest",
        "tar",
        "zip",
        "gpuenv-doctor",
        "gpuenv-install",
    ] {
        assert!(
            !deps.iter().any(|d| d == heavy),
            "gpuenv-audit depends on {heavy}: {deps:?}"
        );
    }
}

/// What a built binary contains of each crate: their names appear in its symbols and
/// panic locations only when their code is linked in.
fn links(binary: &str, krate: &str) -> bool {
    let bytes = fs_err::read(binary).unwrap();
    bytes.windows(krate.len()).any(|w| w == krate.as_bytes())
}

#[test]
fn the_proxy_binary_is_built_from_the_core_alone() {
    let proxy = env!("CARGO_BIN_EXE_gpuenv-shim");
    assert!(links(proxy, "gpuenv_core"), "{proxy}");
    for other in ["gpuenv_install", "gpuenv_doctor", "clap_builder", "reqwest"] {
        assert!(!links(proxy, other), "{proxy} links {other}");
        // The CLI, built from the same package, does: the check can tell.
        assert!(links(env!("CARGO_BIN_EXE_gpuenv"), other), "{other}");
    }
}

/// Each shared library costs the loader time at every nvcc call: where the C compiler has
/// libgcc's static unwinder (glibc Linux), build.rs links it into the proxy instead of
/// libgcc_s (docs/performance.md).
#[test]
fn the_proxy_binary_loads_libc_and_no_libgcc_s() {
    let eh = Command::new("cc")
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if !std::path::Path::new(&eh).is_absolute() {
        common::cannot_run("cc has no libgcc_eh.a here, so the proxy links libgcc_s");
        return;
    }
    if !common::have_tool("readelf") {
        return;
    }
    let out = Command::new("readelf")
        .args(["-d", env!("CARGO_BIN_EXE_gpuenv-shim")])
        .output()
        .expect("readelf runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next())
        .collect();
    // The dynamic loader itself may be named too (libgcc's unwinder asks it for
    // `_dl_find_object`): it is loaded anyway.
    assert!(needed.contains(&"libc.so.6"), "{text}");
    for lib in needed {
        assert!(
            lib == "libc.so.6" || lib.starts_with("ld-linux"),
            "the proxy needs {lib}: {text}"
        );
    }
}

/// `gpuenv hook-env` starts at every prompt after a `cd`: build.rs links the CLI against
/// libgcc's static unwinder too, where the C compiler has it.
#[test]
fn the_cli_binary_loads_no_libgcc_s() {
    let eh = Command::new("cc")
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if !std::path::Path::new(&eh).is_absolute() {
        common::cannot_run("cc has no libgcc_eh.a here, so gpuenv links libgcc_s");
        return;
    }
    if !common::have_tool("readelf") {
        return;
    }
    let out = Command::new("readelf")
        .args(["-d", env!("CARGO_BIN_EXE_gpuenv")])
        .output()
        .expect("readelf runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[libc.so.6]"), "{text}");
    assert!(!text.contains("libgcc_s"), "gpuenv needs libgcc_s: {text}");
}

/// The `.rs` files under `dir`, at any depth, sorted.
fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The doctor is a command: the GPU probe and the machine's facts other commands use are
/// the core's, so only `gpuenv doctor` (and what it runs on each node) imports the doctor.
#[test]
fn only_the_doctor_command_uses_the_doctor_crate() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let mut users = Vec::new();
    for path in rust_files(&src) {
        let text = fs_err::read_to_string(&path).unwrap();
        if text.contains("gpuenv_doctor") {
            let rel = path.strip_prefix(&src).unwrap();
            users.push(rel.to_string_lossy().into_owned());
        }
    }
    users.sort();
    assert_eq!(users, ["commands/doctor.rs"]);
}

/// The Session is the only way into resolution for the commands: none resolves directly.
#[test]
fn no_command_resolves_around_the_session() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    {
        for path in rust_files(&src) {
            let text = fs_err::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if [
                    "resolve::resolve(",
                    "resolve::resolve_kinds(",
                    "Request::new(",
                ]
                .iter()
                .any(|c| code.contains(c))
                {
                    found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "resolve through Session::resolve:\n{}",
        found.join("\n")
    );
}
