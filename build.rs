//! The commit and its date for `gpuenv --version` (`0.1.0 (207a5b9 2026-12-03)`), from git
//! when the source is a git checkout; nothing extra otherwise (a crates.io tarball).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
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
