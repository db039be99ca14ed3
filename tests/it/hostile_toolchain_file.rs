//! An attacker's checklist against the toolchain file and trust: a file swapped between
//! reads, escape sequences in keys, something that is not a file named gpuenv.toml, `[env]`
//! keys that would steer gpuenv or the shell, files that do not parse. Every case runs the
//! built binary, in real bash, zsh and fish where the case is about the shell.

use crate::common::hostile;

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::shells::{dialect, env_vars, SHELLS};
use crate::common::*;
use fs_err as fs;
use hostile::{pinned_project, shell, stderr};

#[test]
fn a_file_swapped_between_reads_never_applies_untrusted_env() {
    let (sb, proj) = pinned_project();
    let file = proj.join("gpuenv.toml");
    let trusted = "[toolchain]\ncuda = \"12.4\"\n[env]\nGOOD = \"1\"\n";
    let evil = "[toolchain]\ncuda = \"12.4\"\n[env]\nEVIL = \"1\"\n";
    write(&file, trusted);
    sb.gpuenv()
        .current_dir(&proj)
        .arg("trust")
        .assert()
        .success();

    // A writer swaps the two contents as fast as the kernel can: one atomic exchange of
    // two names per flip (renameat2 RENAME_EXCHANGE), so any two reads may differ.
    let swap = proj.join(".swap");
    write(&swap, evil);
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let (a, b) = (c(&file), c(&swap));
    let stop = AtomicBool::new(false);
    let (mut good, mut skipped, mut evil) = (0, 0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: two valid NUL-terminated paths.
                let rc = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        a.as_ptr(),
                        libc::AT_FDCWD,
                        b.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
            }
        });
        for _ in 0..150 {
            let out = sb
                .gpuenv()
                .current_dir(&proj)
                .args(["env", "--shell", "json"])
                .output()
                .unwrap();
            let vars = String::from_utf8_lossy(&out.stdout);
            evil += usize::from(vars.contains("EVIL"));
            good += usize::from(vars.contains("\"GOOD\""));
            skipped += usize::from(stderr(&out).contains("not applied until you trust"));
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(
        evil, 0,
        "an untrusted [env] was applied {evil} times in 150"
    );
    assert!(
        good > 0 && skipped > 0,
        "the race saw both files: {good} trusted, {skipped} untrusted"
    );
}

#[test]
fn an_osc52_key_in_an_untrusted_file_reaches_the_terminal_escaped() {
    let (sb, proj) = pinned_project();
    // TOML escapes: the key itself holds ESC … BEL, an OSC 52 "set the clipboard" sequence.
    let osc52 = r"\u001b]52;c;Y3VybCBldmlsLnNoIHwgc2gK\u0007";
    write(
        &proj.join("gpuenv.toml"),
        &format!("[toolchain]\ncuda = \"12.4\"\n[env]\n\"{osc52}\" = \"x\"\n"),
    );
    let clean = |text: &str, who: &str| {
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{who}: {text:?}"
        );
        assert!(
            text.contains("\\x1b]52;c;"),
            "{who} shows the key escaped: {text:?}"
        );
    };
    for sh in SHELLS {
        if !have_tool(sh) {
            continue;
        }
        let (source, prompt, hook) = dialect(sh);
        let out = shell(
            &sb,
            sh,
            &format!("{source}\n{prompt}\ncd \"$P\"\n{hook}\ntrue\n"),
            &[],
        );
        clean(&stderr(&out), sh);
    }
    let out = sb.gpuenv().current_dir(&proj).arg("show").output().unwrap();
    clean(&stderr(&out), "gpuenv show");
}

/// Makes something at a path.
type MakeFile = dyn Fn(&Path);

#[test]
fn a_gpuenv_toml_that_is_not_a_file_is_an_error_naming_it() {
    let (sb, proj) = pinned_project();
    let fifo = |p: &Path| {
        assert!(std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap()
            .success());
    };
    let cases: [(&str, &MakeFile); 4] = [
        ("a directory", &|p| fs::create_dir(p).unwrap()),
        ("a FIFO", &fifo),
        ("a link to /dev/zero", &|p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
        ("a symlink loop", &|p| {
            std::os::unix::fs::symlink(p, p).unwrap();
        }),
    ];
    for (what, make) in cases {
        let sub = proj.join(what.replace(' ', "-"));
        fs::create_dir_all(&sub).unwrap();
        make(&sub.join("gpuenv.toml"));
        let out = sb
            .gpuenv()
            .current_dir(&sub)
            .arg("show")
            .timeout(Duration::from_secs(20))
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains(&sub.join("gpuenv.toml").display().to_string()),
            "{what}: {err}"
        );
    }
}

#[test]
fn the_hook_and_show_agree_on_a_directory_named_gpuenv_toml() {
    let (sb, proj) = pinned_project();
    fs::create_dir_all(proj.join("sub/gpuenv.toml")).unwrap();
    let out = shell(
        &sb,
        "bash",
        "eval \"$(\"$GPUENV_BIN\" hook bash)\"\ncd \"$P\"; _gpuenv_hook\ncd sub; _gpuenv_hook\n\
         echo \"[$CUDA_HOME]\" > \"$OUT/cuda\"\n",
        &[],
    );
    let err = stderr(&out);
    assert!(
        err.contains("gpuenv.toml is a directory, not a regular file"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(sb.path("out/cuda")).unwrap().trim(),
        "[]"
    );
    let show = sb
        .gpuenv()
        .current_dir(proj.join("sub"))
        .arg("show")
        .output()
        .unwrap();
    assert!(stderr(&show).contains("is a directory, not a regular file"));
}

#[test]
fn trusted_env_cannot_set_what_steers_gpuenv_or_the_shell() {
    let (sb, proj) = pinned_project();
    let file = proj.join("gpuenv.toml");
    for var in [
        "GPUENV_TOOLCHAIN",
        "PROMPT_COMMAND",
        "BASH_ENV",
        "PS1",
        "precmd_functions",
        "fish_prompt",
        "LD_PRELOAD",
        "PATH",
    ] {
        write(
            &file,
            &format!("[toolchain]\ncuda = \"12.4\"\n\n[env]\n{var} = \"x\"\n"),
        );
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .arg("trust")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{var}: {err}");
        assert!(
            err.contains(&format!("{}:5:", file.display())),
            "{var}: {err}"
        );
        assert!(err.contains(&format!("cannot set {var}")), "{var}: {err}");
    }
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\n[env]\nX = \"a\\u0000b\"\n",
    );
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .arg("trust")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}:4:", file.display())) && err.contains("NUL"),
        "{err}"
    );
}

#[test]
fn moving_from_a_trusted_project_into_an_invalid_one_takes_everything_back() {
    let (sb, proj) = pinned_project();
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n[env]\nNCCL_DEBUG = \"INFO\"\n",
    );
    sb.gpuenv()
        .current_dir(&proj)
        .arg("trust")
        .assert()
        .success();
    write(
        &proj.join("broken/gpuenv.toml"),
        "[toolchain]\ncuda = 12.4.1\n",
    );
    for sh in SHELLS {
        if !have_tool(sh) {
            continue;
        }
        let (source, prompt, hook) = dialect(sh);
        let script = format!(
            "{source}\n{prompt}\nenv -0 > \"$OUT/start\"\ncd \"$P\"\n{hook}\nenv -0 > \"$OUT/in\"\n\
             cd broken\n{hook}\n{prompt}\nenv -0 > \"$OUT/broken\"\ntrue\n"
        );
        let out = shell(&sb, sh, &script, &[]);
        let inside = env_vars(&sb.path("out/in"));
        assert_eq!(inside["NCCL_DEBUG"], "INFO", "{sh}");
        let broken = env_vars(&sb.path("out/broken"));
        for var in ["NCCL_DEBUG", "CUDA_HOME", "GPUENV_ACTIVE"] {
            assert_eq!(broken.get(var), None, "{sh}: {var}");
        }
        // Outside any project with no CUDA outside gpuenv the shims are off PATH; where the
        // file is broken nothing is decided, so they stay (an `nvcc` there names the file).
        let shims = sb.gpuenv_home().join("shims");
        let without_shims = |p: &std::ffi::OsStr| -> Vec<Vec<u8>> {
            p.as_bytes()
                .split(|b| *b == b':')
                .filter(|e| *e != shims.as_os_str().as_bytes())
                .map(<[u8]>::to_vec)
                .collect()
        };
        assert_eq!(
            without_shims(&broken["PATH"]),
            without_shims(&env_vars(&sb.path("out/start"))["PATH"]),
            "{sh}"
        );
        let err = stderr(&out);
        assert_eq!(err.matches("gpuenv: ").count(), 1, "{sh}: said once: {err}");
        assert!(err.contains("broken/gpuenv.toml:2:"), "{sh}: {err}");
    }
}

#[test]
fn toml_errors_say_what_the_file_should_contain_and_name_a_path_once() {
    let (sb, proj) = pinned_project();
    let file = proj.join("gpuenv.toml");
    write(&file, "toolchain = \"x\"\n");
    let out = sb.gpuenv().current_dir(&proj).arg("show").output().unwrap();
    let err = stderr(&out);
    assert!(!err.contains("RawToolchain"), "{err}");
    assert!(err.contains(&format!("{}:1:", file.display())), "{err}");
    assert!(
        err.contains("[toolchain] table") && err.contains("\nhint: "),
        "{err}"
    );

    // A state file that cannot be read: its path once, then why.
    let settings = sb.gpuenv_home().join("settings.toml");
    fs::remove_file(&settings).unwrap();
    fs::create_dir(&settings).unwrap();
    let out = sb.gpuenv().arg("list").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.matches(&settings.display().to_string()).count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("it is a directory, not a regular file"),
        "{err}"
    );
}
