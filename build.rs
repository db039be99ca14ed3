//! The commit and its date for `gpuenv --version` (`0.1.0 (207a5b9 2026-12-03)`), from git
//! when the source is a git checkout; nothing extra otherwise (a crates.io tarball).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    proxy_without_libgcc_s();
    let info = match (
        git(&["rev-parse", "--short=9", "HEAD"]),
        git(&["log", "-1", "--format=%cs"]),
    ) {
        (Some(commit), Some(date)) => format!(" ({commit} {date})"),
        _ => String::new(),
    };
    println!("cargo:rustc-env=GPUENV_BUILD_INFO={info}");
    // Rebuild when HEAD moves: HEAD itself (a branch switch) and the branch it names.
    for path in ["HEAD", "packed-refs"]
        .into_iter()
        .map(str::to_string)
        .chain(git(&["symbolic-ref", "-q", "HEAD"]))
    {
        // A path that does not exist would make cargo rerun this at every build.
        let existing =
            git(&["rev-parse", "--git-path", &path]).filter(|p| std::path::Path::new(p).exists());
        if let Some(p) = existing {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}

/// The proxy starts for every compiler call; each shared library it needs costs the
/// loader time (libgcc_s about 0.1 ms here, its constructor runs CPUID, which traps in a
/// VM). Rust's std asks for libgcc_s only for unwinding and backtraces, so the proxy gets
/// libgcc's static unwinder instead, as `gcc -static-libgcc` does for C++ programs: a
/// `libgcc_s.so` linker script in a search directory of the proxy's link alone names
/// `libgcc_eh.a` and `libgcc.a`. Only for a native Linux glibc build whose linker knows
/// where those are; otherwise nothing changes and the proxy links libgcc_s as before.
/// `gpuenv` itself is linked the same way (the shell hook starts it).
/// (A static-pie proxy needs `+crt-static`, which is not per binary: docs/performance.md.)
// Errors here only mean the fallback (libgcc_s), so std::fs is fine: fs-err is no build-dependency.
#[allow(clippy::disallowed_methods)]
fn proxy_without_libgcc_s() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let native_glibc = var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && var("TARGET") == var("HOST")
        && !var("CARGO_CFG_TARGET_FEATURE")
            .split(',')
            .any(|f| f == "crt-static");
    if !native_glibc {
        return;
    }
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into());
    let archive = |name: &str| {
        let out = Command::new(&linker)
            .arg(format!("-print-file-name={name}"))
            .output()
            .ok()?;
        let path = std::path::PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        (out.status.success() && path.is_absolute() && path.is_file()).then_some(path)
    };
    let (Some(eh), Some(gcc)) = (archive("libgcc_eh.a"), archive("libgcc.a")) else {
        return;
    };
    // By name, searched at link time in the compiler's own directory: a later compiler
    // upgrade (another directory) still links; if the archives go, this script reruns.
    println!("cargo:rerun-if-changed={}", eh.display());
    println!("cargo:rerun-if-changed={}", gcc.display());
    let dir = std::path::PathBuf::from(var("OUT_DIR")).join("proxy-link");
    let script = "GROUP(-l:libgcc_eh.a -l:libgcc.a)\n";
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join("libgcc_s.so"), script));
    if written.is_ok() {
        println!("cargo:rustc-link-arg-bin=gpuenv-shim=-L{}", dir.display());
        // `gpuenv hook-env` starts at every prompt after a `cd`: the same saving there.
        println!("cargo:rustc-link-arg-bin=gpuenv=-L{}", dir.display());
    }
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
}
