//! The messages a user meets on their first day (issue 41 item 8), each from the built
//! binary: a hint never promises an install no source can do, a typo gets the spec or key
//! it meant, an arch list in TORCH_CUDA_ARCH_LIST's form gets the comma form, and a pin in
//! the home directory is said to govern everything below it.

use crate::common::*;

fn said(sb: &Sandbox, dir: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = sb.gpuenv().current_dir(dir).args(args).output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn first_day_typos_and_mistakes_get_the_hint_that_works() {
    let sb = Sandbox::new();
    let proj = sb.path("proj");
    fs_err::create_dir_all(&proj).unwrap();

    // A release no source has: no `gpuenv install` promised.
    let (ok, text) = said(&sb, &proj, &["use", "cuda-99"]);
    assert!(!ok, "{text}");
    assert!(
        !text.contains("`gpuenv install cuda-99` installs it"),
        "{text}"
    );
    assert!(
        text.contains("no source of `gpuenv install` has CUDA 99"),
        "{text}"
    );
    let (_, text) = said(&sb, &proj, &["use", "cuda-12.4"]);
    assert!(
        text.contains("`gpuenv install cuda-12.4` installs it"),
        "{text}"
    );

    // A letter O for a zero.
    let (ok, text) = said(&sb, &proj, &["pin", "cuda-13.O"]);
    assert!(!ok, "{text}");
    assert!(text.contains("did you mean `cuda-13.0`?"), "{text}");

    // TORCH_CUDA_ARCH_LIST's form on --arch.
    let (ok, text) = said(&sb, &proj, &["pin", "cuda-13.0", "--arch", "8.6;9.0"]);
    assert!(!ok, "{text}");
    assert!(text.contains("`--arch 8.6,9.0`"), "{text}");
    assert!(!proj.join("gpuenv.toml").exists(), "nothing written");

    // A key with `_` for `-`.
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda_arch = [\"9.0\"]\n",
    );
    let (ok, text) = said(&sb, &proj, &["show"]);
    assert!(!ok, "{text}");
    assert!(text.contains("did you mean `cuda-arch`?"), "{text}");

    // A pin in the home directory governs every directory below it.
    let (ok, text) = said(&sb, &sb.home(), &["pin", "cuda-13.0"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("is in your home directory: it pins every project below it")
            && text.contains("`gpuenv default cuda-13.0`"),
        "{text}"
    );
    // In a project directory, no such word.
    fs_err::remove_file(proj.join("gpuenv.toml")).unwrap();
    let (ok, text) = said(&sb, &proj, &["pin", "cuda-13.0"]);
    assert!(ok, "{text}");
    assert!(!text.contains("home directory"), "{text}");
}

/// `gpuenv check` outside any project says nothing is pinned before anything about torch;
/// in a uv project whose `.venv` is not activated, it checks that environment's torch, not
/// the python on PATH.
#[test]
fn check_says_nothing_is_pinned_first_and_reads_a_uv_projects_venv() {
    if !have_tool("python3") {
        return;
    }
    let sb = Sandbox::new();
    let outside = sb.path("elsewhere");
    fs_err::create_dir_all(&outside).unwrap();
    let (ok, text) = said(&sb, &outside, &["check"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("cannot tell: nothing is pinned or active"),
        "{text}"
    );
    assert!(!text.contains("no torch package"), "{text}");

    let root = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    sb.ok(&["link", "cuda-12.4", root.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"12.4\"\n");
    write(&proj.join("pyproject.toml"), "[project]\nname = \"app\"\n");
    let venv = proj.join(".venv");
    succeeded(
        &std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .unwrap(),
    );
    let site = fs_err::read_dir(venv.join("lib"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("python3")
        })
        .unwrap()
        .join("site-packages");
    write(
        &site.join("torch/version.py"),
        "__version__ = '2.5.1+cu124'\ncuda = '12.4'\nhip = None\n",
    );
    write(&site.join("torch/__init__.py"), "");
    let (ok, text) = said(&sb, &proj, &["check"]);
    assert!(ok, "{text}");
    assert!(text.contains("2.5.1+cu124"), "{text}");
}

/// A typo in any TOML file gpuenv reads is said on one line with the file, line and column,
/// and what the parser expected; never a `\n` written out inside the message.
#[test]
fn a_toml_syntax_error_is_one_clean_line_with_file_and_line() {
    let sb = Sandbox::new();
    let proj = sb.path("proj");
    let one_clean_line = |text: &str, at: &str| {
        assert!(!text.contains("\\n"), "{text}");
        let line = text.lines().next().unwrap();
        assert!(
            line.contains(at) && line.contains("invalid table header: expected `.`, `]`"),
            "{text}"
        );
    };

    write(&proj.join("gpuenv.toml"), "[toolchain\ncuda = \"13.0\"\n");
    let (ok, text) = said(&sb, &proj, &["show"]);
    assert!(!ok, "{text}");
    let toml = proj.join("gpuenv.toml");
    one_clean_line(&text, &format!("{}:1:11:", toml.display()));

    write(&toml, "[toolchain]\ncuda = \"13.0\"\n");
    write(&proj.join("gpuenv.lock"), "[toolchain\n");
    let (ok, text) = said(&sb, &proj, &["check", "--locked"]);
    assert!(!ok, "{text}");
    let lock = proj.join("gpuenv.lock");
    one_clean_line(&text, &format!("{}:1:11:", lock.display()));

    let manifest = sb.path("manifest.toml");
    write(&manifest, "kind = \"rocm\"\n[x\n");
    let (ok, text) = said(
        &sb,
        &proj,
        &[
            "install",
            "rocm-6.2.4",
            "--manifest",
            manifest.to_str().unwrap(),
        ],
    );
    assert!(!ok, "{text}");
    assert!(!text.contains("\\n") && !text.contains("  |"), "{text}");
    assert!(
        text.contains("line 2, column 3: invalid table header: expected `.`, `]`"),
        "{text}"
    );

    write(&sb.gpuenv_home().join("settings.toml"), "[x\n");
    let (ok, text) = said(&sb, &proj, &["list"]);
    assert!(!ok, "{text}");
    one_clean_line(&text, "settings.toml is corrupt: line 1, column 3:");
}
