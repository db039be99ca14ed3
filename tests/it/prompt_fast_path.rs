//! The prompt's fast path in real interactive bash, zsh and fish (tmux panes): where nothing
//! changed, the prompt starts no process at all; every change that matters — an edited
//! toolchain file, a new one in a parent directory, an install, uninstall or link, a trust —
//! is seen at the very next prompt, even though the shell had stopped asking gpuenv.

use crate::common;
use crate::common::install_fixtures as fixtures;

use crate::common::pty::*;
use crate::common::*;

/// One shell: how to start it with the hook of a given gpuenv binary, and the command
/// that prints the fast-path check the last hook-env run defined.
struct Dialect {
    name: &'static str,
    start: fn(&Sandbox, &str) -> Pane,
    show_check: &'static str,
}

impl Dialect {
    /// Runs `test` in this shell, where tmux and the shell are installed (a missing one
    /// fails under CI, and skips elsewhere).
    fn test(&self, test: fn(&Dialect)) {
        if have_tool("tmux") && have_tool(self.name) {
            test(self);
        }
    }
}

const BASH: Dialect = Dialect {
    name: "bash",
    start: |sb, bin| bash(sb, &bash_rc_with(bin, "")),
    show_check: "declare -f _gpuenv_fresh",
};
const ZSH: Dialect = Dialect {
    name: "zsh",
    start: |sb, bin| zsh(sb, &zsh_rc_with(bin, "")),
    show_check: "functions _gpuenv_fresh",
};
const FISH: Dialect = Dialect {
    name: "fish",
    start: |sb, bin| fish(sb, &fish_rc_with(bin)),
    show_check: "functions __gpuenv_fresh",
};

/// CUDA 12.4 and 10.2 linked, a CUDA 11.8 tree on disk but not registered, a ROCm 6.2.4
/// manifest to install from; `work/proj` and `work/other` pinned to 12.4, `work/outer/inner`
/// unpinned.
fn world() -> Sandbox {
    let sb = Sandbox::new();
    let cuda124 = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
    let cuda102 = cuda_10_2(&sb.path("opt/cuda-10.2"));
    cuda_runfile(&sb.path("opt/cuda-11.8"), "11.8.89");
    fixtures::write_manifest(&sb.path("m"), "6.2.4");
    sb.ok(&["link", "cuda-12.4", cuda124.to_str().unwrap()]);
    sb.ok(&["link", "cuda-10.2", cuda102.to_str().unwrap()]);
    write(
        &sb.path("work/proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    write(
        &sb.path("work/other/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    fs_err::create_dir_all(sb.path("work/outer/inner")).unwrap();
    sb
}

/// Waits until every file the last run read is old enough to be trusted by its time, lets
/// a prompt arm the check, and shows that it is armed (it compares `$PWD`).
fn arm(pane: &mut Pane, d: &Dialect) {
    pane.run("sleep 1.2");
    let out = pane.run(d.show_check);
    assert!(
        out.output.contains("$PWD"),
        "{}: the fast path is not armed: {out:?}",
        d.name
    );
}

fn prompt_sees_every_change(d: &Dialect) {
    let sb = world();
    let mut pane = (d.start)(&sb, &gpuenv_bin());
    assert_eq!(pane.run("cd proj").active, "cuda-12.4");

    // An edit of the toolchain file, to a pin of the same length.
    arm(&mut pane, d);
    write(
        &sb.path("work/proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"10.2\"\n",
    );
    assert_eq!(pane.run("true").active, "cuda-10.2");

    // A new toolchain file in a parent directory.
    assert_eq!(pane.run("cd ../outer/inner").active, "none");
    arm(&mut pane, d);
    write(
        &sb.path("work/outer/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    assert_eq!(pane.run("true").active, "cuda-12.4");

    // An install and an uninstall of a pinned toolchain.
    write(
        &sb.path("work/outer/gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\nrocm = \"6.2\"\n",
    );
    let out = pane.run("true");
    assert!(out.before_prompt.contains("not installed"), "{out:?}");
    arm(&mut pane, d);
    let manifest = sb.path("m/toolchains.toml");
    let out = pane.run(&format!(
        "gpuenv install rocm-6.2 --manifest '{}'",
        manifest.display()
    ));
    assert_eq!(out.active, "cuda-12.4,rocm-6.2.4", "{out:?}");
    arm(&mut pane, d);
    let out = pane.run("gpuenv uninstall rocm-6.2.4");
    assert!(out.before_prompt.contains("not installed"), "{out:?}");

    // A link of the toolkit a pin asks for.
    write(
        &sb.path("work/outer/gpuenv.toml"),
        "[toolchain]\ncuda = \"11.8\"\n",
    );
    let out = pane.run("true");
    assert!(out.before_prompt.contains("not installed"), "{out:?}");
    arm(&mut pane, d);
    let cuda118 = sb.path("opt/cuda-11.8");
    let out = pane.run(&format!("gpuenv link cuda-11.8 '{}'", cuda118.display()));
    assert_eq!(out.active, "cuda-11.8", "{out:?}");

    // `gpuenv trust` lets the file's [env] apply at the next prompt.
    write(
        &sb.path("work/outer/gpuenv.toml"),
        "[toolchain]\ncuda = \"11.8\"\n\n[env]\nMY_FLAG = \"on\"\n",
    );
    let out = pane.run("true");
    assert!(out.before_prompt.contains("gpuenv trust"), "{out:?}");
    arm(&mut pane, d);
    pane.run("gpuenv trust");
    assert_eq!(pane.run("echo \"[$MY_FLAG]\"").output, "[on]");
}

#[test]
fn bash_prompt_sees_every_change_while_skipping_gpuenv() {
    BASH.test(prompt_sees_every_change);
}

#[test]
fn zsh_prompt_sees_every_change_while_skipping_gpuenv() {
    ZSH.test(prompt_sees_every_change);
}

#[test]
fn fish_prompt_sees_every_change_while_skipping_gpuenv() {
    FISH.test(prompt_sees_every_change);
}

/// The hook names a private copy of gpuenv, which is then deleted: prompts where nothing
/// changed still come up clean (no process was started), and the first `cd` shows the
/// shell trying to start the missing binary.
fn no_process_when_nothing_changed(d: &Dialect) {
    let sb = world();
    let bin = private_gpuenv(&sb);
    let mut pane = (d.start)(&sb, bin.to_str().unwrap());
    assert_eq!(pane.run("cd proj").active, "cuda-12.4");
    arm(&mut pane, d);

    fs_err::remove_file(&bin).unwrap();
    for _ in 0..3 {
        let out = pane.run("true");
        assert_eq!(out.before_prompt, "", "{}: {out:?}", d.name);
        assert_eq!(out.active, "cuda-12.4");
    }
    // A directory other than the one before (that one comes back without a process:
    // `a_cd_back_puts_the_directorys_environment_back_without_a_process`).
    let out = pane.run("cd ../outer");
    assert!(
        asked(&out, &bin),
        "{}: a change runs gpuenv again: {out:?}",
        d.name
    );
}

/// A private copy of gpuenv for the hook to name, which a test may delete (a prompt that
/// then starts it shows the shell failing to) and put back.
fn private_gpuenv(sb: &Sandbox) -> std::path::PathBuf {
    let bin = sb.path("bin/gpuenv");
    if bin.exists() {
        // (A copy onto a hard link of itself would empty both.)
        return bin;
    }
    fs_err::create_dir_all(bin.parent().unwrap()).unwrap();
    if fs_err::hard_link(gpuenv_bin(), &bin).is_err() {
        fs_err::copy(gpuenv_bin(), &bin).unwrap();
    }
    bin
}

/// Whether the shell, around the command `out` ran, tried to start the deleted binary
/// `bin`: a prompt that asked gpuenv shows the shell failing to.
fn asked(out: &Ran, bin: &std::path::Path) -> bool {
    format!("{}\n{}", out.output, out.before_prompt).contains(&bin.display().to_string())
}

/// `cd` must ask gpuenv (`bin` is deleted); with gpuenv put back, the next prompt's answer.
fn asks_gpuenv(
    d: &Dialect,
    sb: &Sandbox,
    pane: &mut Pane,
    bin: &std::path::Path,
    cd: &str,
) -> String {
    let out = pane.run(cd);
    assert!(
        asked(&out, bin),
        "{}: {cd} must run gpuenv: {out:?}",
        d.name
    );
    private_gpuenv(sb);
    pane.run("true").active
}

/// `cd` back and forth between a project and the directory before it: after the first
/// visit of each, the environment comes back with builtins alone (the binary is gone and
/// nothing complains). A hop file cut short, missing or someone else's, an edit of the
/// toolchain file while away, a registry changed, a watched variable the user set, a
/// variable of gpuenv's the user set themselves, and a directory whose run said something
/// each send the shell to gpuenv again, whose answer is the one that counts.
fn cd_back_without_a_process(d: &Dialect) {
    let sb = world();
    write(
        &sb.path("work/missing/gpuenv.toml"),
        "[toolchain]\ncuda = \"11.8\"\n",
    );
    let bin = private_gpuenv(&sb);
    // Files older than a second: the checks trust their times.
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let mut pane = (d.start)(&sb, bin.to_str().unwrap());
    assert_eq!(pane.run("cd proj").active, "cuda-12.4");
    fs_err::remove_file(&bin).unwrap();
    for _ in 0..2 {
        for (dir, active) in [("..", "none"), ("proj", "cuda-12.4")] {
            let out = pane.run(&format!("cd {dir}"));
            assert_eq!(
                (&*out.output, &*out.before_prompt),
                ("", ""),
                "{}: {out:?}",
                d.name
            );
            assert_eq!(out.active, active, "{}: {out:?}", d.name);
        }
    }
    assert!(pane
        .run("echo $CUDA_HOME")
        .output
        .ends_with("views/cuda-12.4"));
    // The hop's files are in the user's own gpuenv home.
    let hops = sb.gpuenv_home().join("cache/hops");
    let files = || -> Vec<std::path::PathBuf> {
        fs_err::read_dir(&hops)
            .map(|r| r.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    };
    assert!(!files().is_empty(), "{}: no hop file in {hops:?}", d.name);

    // A hop file cut short or emptied, then none at all, then one of another user's: the
    // `cd` back asks gpuenv (which is gone, and the shell says so). A way back is read
    // from its file once, after the run that made it: gpuenv's run from outside projects
    // into a second project leaves one that reads the file (back to anywhere outside).
    let asks_gpuenv = |pane: &mut Pane, spoil: &dyn Fn()| {
        private_gpuenv(&sb);
        assert_eq!(pane.run("cd ../outer").active, "none");
        assert_eq!(pane.run("cd ../other").active, "cuda-12.4");
        fs_err::remove_file(&bin).unwrap();
        spoil();
        let active = asks_gpuenv(d, &sb, pane, &bin, "cd ../outer/inner");
        assert_eq!(active, "none", "{}", d.name);
        assert_eq!(pane.run("cd ../../proj").active, "cuda-12.4", "{}", d.name);
    };
    asks_gpuenv(&mut pane, &|| {
        for f in files() {
            let text = fs_err::read_to_string(&f).unwrap();
            write(&f, &text[..text.len() / 2]);
        }
    });
    asks_gpuenv(&mut pane, &|| {
        for f in files() {
            write(&f, "");
        }
    });
    asks_gpuenv(&mut pane, &|| {
        for f in files() {
            fs_err::remove_file(f).unwrap();
        }
    });
    // Only root can give a file away: elsewhere this part says so and is left out.
    let root = files()
        .iter()
        .all(|f| std::os::unix::fs::chown(f, Some(0), None).is_ok());
    if root {
        asks_gpuenv(&mut pane, &|| {
            for f in files() {
                std::os::unix::fs::chown(f, Some(65534), None).unwrap();
            }
        });
    } else {
        eprintln!(
            "{}: not root, the hop file of another user is not tried",
            d.name
        );
    }
    private_gpuenv(&sb);

    // The toolchain file edited while away: gpuenv is asked.
    assert_eq!(pane.run("cd ..").active, "none");
    write(
        &sb.path("work/proj/gpuenv.toml"),
        "[toolchain]\ncuda = \"10.2\"\n",
    );
    assert_eq!(pane.run("cd proj").active, "cuda-10.2", "{}", d.name);

    // The registry changed while away (a default for the directory without a file).
    std::thread::sleep(std::time::Duration::from_millis(1200));
    assert_eq!(pane.run("cd ..").active, "none");
    assert_eq!(pane.run("cd proj").active, "cuda-10.2");
    let out = pane.run("gpuenv default cuda-12.4 && cd ..");
    assert_eq!(out.active, "cuda-12.4", "{}: {out:?}", d.name);
    pane.run("gpuenv default none");
    std::thread::sleep(std::time::Duration::from_millis(1200));

    // A watched variable the user set while away.
    assert_eq!(pane.run("cd proj").active, "cuda-10.2");
    assert_eq!(pane.run("cd ..").active, "none");
    assert_eq!(pane.run("cd proj").active, "cuda-10.2");
    let out = pane.run("export GPUENV_TOOLCHAIN=cuda-12.4; cd ..");
    assert_eq!(out.active, "cuda-12.4", "{}: {out:?}", d.name);
    pane.run(if d.name == "fish" {
        "set -e GPUENV_TOOLCHAIN"
    } else {
        "unset GPUENV_TOOLCHAIN"
    });

    // A value of the user's in a variable gpuenv set: gpuenv keeps it.
    assert_eq!(pane.run("cd proj").active, "cuda-10.2");
    pane.run("export LIBRARY_PATH=/mine");
    assert_eq!(pane.run("cd ..").active, "none");
    assert_eq!(
        pane.run("echo \"[$LIBRARY_PATH]\"").output,
        "[/mine]",
        "{}",
        d.name
    );

    // A run that said something is run again, and says it again.
    for _ in 0..2 {
        // (zsh and fish run the hook as the `cd` changes the directory: in its output.)
        let out = pane.run("cd missing");
        let shown = format!("{}\n{}", out.output, out.before_prompt);
        assert!(shown.contains("not installed"), "{}: {out:?}", d.name);
        pane.run("cd ..");
    }
}

/// Outside projects one run holds everywhere: after it, a `cd` between directories without
/// a toolchain file above them, and from a project back to any of them, starts no process
/// (the binary is gone and nothing complains). A toolchain file put above the directory
/// gone to, and a directory reached through a link (its real parents are others), send
/// the shell to gpuenv again.
fn outside_projects_without_a_process(d: &Dialect) {
    let sb = world();
    let work = sb.path("work");
    fs_err::create_dir_all(work.join("elsewhere/deep/er")).unwrap();
    fs_err::create_dir_all(work.join("proj/src")).unwrap();
    std::os::unix::fs::symlink(work.join("proj/src"), work.join("outer/to-src")).unwrap();
    let bin = private_gpuenv(&sb);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let mut pane = (d.start)(&sb, bin.to_str().unwrap());
    assert_eq!(pane.run("cd outer").active, "none");
    // Into a project from outside: the way back leads to anywhere outside.
    assert_eq!(pane.run("cd ../proj").active, "cuda-12.4");
    fs_err::remove_file(&bin).unwrap();
    for (dir, active) in [
        ("../elsewhere/deep/er", "none"),
        ("/", "none"),
        (work.join("outer/inner").to_str().unwrap(), "none"),
        ("../../proj", "cuda-12.4"),
        ("../elsewhere", "none"),
    ] {
        let out = pane.run(&format!("cd {dir}"));
        assert_eq!(
            (&*out.output, &*out.before_prompt),
            ("", ""),
            "{}: cd {dir}: {out:?}",
            d.name
        );
        assert_eq!(out.active, active, "{}: cd {dir}: {out:?}", d.name);
    }
    // A toolchain file above the directory gone to.
    write(
        &work.join("elsewhere/deep/gpuenv.toml"),
        "[toolchain]\ncuda = \"10.2\"\n",
    );
    let active = asks_gpuenv(d, &sb, &mut pane, &bin, "cd deep/er");
    assert_eq!(active, "cuda-10.2");
    assert_eq!(pane.run("cd /").active, "none", "{}", d.name);
    fs_err::remove_file(&bin).unwrap();
    // Through a link into a project's subdirectory: the project applies.
    let link = work.join("outer/to-src");
    let cd = format!("cd {}", link.display());
    let active = asks_gpuenv(d, &sb, &mut pane, &bin, &cd);
    assert_eq!(active, "cuda-12.4", "{}", d.name);
}

/// Within a project one run holds in every directory below its toolchain file: a `cd`
/// down, across and back up starts no process. A toolchain file of a subproject, and a
/// directory reached through a link (whose real parents are others), send the shell to
/// gpuenv again; the project's own file is still watched from below.
fn within_a_project_without_a_process(d: &Dialect) {
    let sb = world();
    let proj = sb.path("work/proj");
    for dir in ["src/a/b", "docs", "sub/deeper"] {
        fs_err::create_dir_all(proj.join(dir)).unwrap();
    }
    std::os::unix::fs::symlink(sb.path("work/outer"), proj.join("src/to-outer")).unwrap();
    let bin = private_gpuenv(&sb);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let mut pane = (d.start)(&sb, bin.to_str().unwrap());
    assert_eq!(pane.run("cd proj/src").active, "cuda-12.4");
    fs_err::remove_file(&bin).unwrap();
    for dir in ["a/b", "../../../docs", "..", "src/a"] {
        let out = pane.run(&format!("cd {dir}"));
        assert_eq!(
            (&*out.output, &*out.before_prompt, &*out.active),
            ("", "", "cuda-12.4"),
            "{}: cd {dir}: {out:?}",
            d.name
        );
    }
    // Asked, then armed again and the binary gone again for the next case.
    let asks_gpuenv = |pane: &mut Pane, cd: &str| {
        let active = asks_gpuenv(d, &sb, pane, &bin, cd);
        std::thread::sleep(std::time::Duration::from_millis(1200));
        pane.run("true");
        fs_err::remove_file(&bin).unwrap();
        active
    };
    // Through a link out of the project: the directory it leads to has no pin.
    let cd = format!("cd {}", proj.join("src/to-outer").display());
    assert_eq!(asks_gpuenv(&mut pane, &cd), "none", "{}", d.name);
    // A subproject's own pin.
    write(
        &proj.join("sub/gpuenv.toml"),
        "[toolchain]\ncuda = \"10.2\"\n",
    );
    let cd = format!("cd {}", proj.join("sub/deeper").display());
    assert_eq!(asks_gpuenv(&mut pane, &cd), "cuda-10.2");
    // The project's own file edited while in a subdirectory: seen at the next prompt.
    let cd = format!("cd {}", proj.join("src/a/b").display());
    assert_eq!(asks_gpuenv(&mut pane, &cd), "cuda-12.4", "{}", d.name);
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"10.2\"\n");
    private_gpuenv(&sb);
    assert_eq!(pane.run("true").active, "cuda-10.2", "{}", d.name);
}

/// A project whose directory's name a shell would read as code (a quote, `$(...)`, a
/// space): the check holds below it and nowhere else (a sibling whose name starts with it
/// is outside the project), and runs nothing of the name. One a pattern would read (`*`, `[`) keeps the
/// check to `$PWD`: below it, gpuenv is asked.
fn a_hostile_project_name_is_only_a_name(d: &Dialect) {
    let sb = world();
    let work = sb.path("work");
    // Run as code, it would leave a file `ran` in whatever directory the shell is in.
    let code = "it's $(touch ran) \"q\"";
    for name in [code, "star*[x]"] {
        fs_err::create_dir_all(work.join(name).join("a/b")).unwrap();
        fs_err::create_dir_all(work.join(format!("{name}-2"))).unwrap();
        write(
            &work.join(name).join("gpuenv.toml"),
            "[toolchain]\ncuda = \"12.4\"\n",
        );
    }
    let bin = private_gpuenv(&sb);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let mut pane = (d.start)(&sb, bin.to_str().unwrap());
    // The shell's own glob finds each directory: its name is never typed.
    for (glob, anywhere_below) in [("it\\'s*", true), ("star*", false)] {
        assert_eq!(
            pane.run(&format!("cd {glob}/a")).active,
            "cuda-12.4",
            "{}",
            d.name
        );
        fs_err::remove_file(&bin).unwrap();
        let out = pane.run("cd b");
        assert_eq!(
            !asked(&out, &bin),
            anywhere_below,
            "{}: {glob}: {out:?}",
            d.name
        );
        private_gpuenv(&sb);
        assert_eq!(pane.run("true").active, "cuda-12.4", "{}: {glob}", d.name);
        fs_err::remove_file(&bin).unwrap();
        // A sibling whose name starts with the project's is not in it: it is outside
        // projects, where the way back leads (from the project's own place: no process).
        if !anywhere_below {
            private_gpuenv(&sb);
        }
        let out = pane.run(&format!("cd ../../../{glob}-2"));
        assert_eq!(out.active, "none", "{}: {glob}: {out:?}", d.name);
        if anywhere_below {
            assert_eq!((&*out.output, &*out.before_prompt), ("", ""), "{}", d.name);
        }
        private_gpuenv(&sb);
        pane.run("cd ..");
    }
    fn ran_somewhere(dir: &std::path::Path) -> bool {
        fs_err::read_dir(dir).unwrap().any(|e| {
            let e = e.unwrap();
            e.file_name() == "ran" || (e.file_type().unwrap().is_dir() && ran_somewhere(&e.path()))
        })
    }
    assert!(!ran_somewhere(&work), "{}: a name ran as code", d.name);
}

#[test]
fn bash_a_hostile_project_name_is_only_a_name() {
    BASH.test(a_hostile_project_name_is_only_a_name);
}

#[test]
fn zsh_a_hostile_project_name_is_only_a_name() {
    ZSH.test(a_hostile_project_name_is_only_a_name);
}

#[test]
fn fish_a_hostile_project_name_is_only_a_name() {
    FISH.test(a_hostile_project_name_is_only_a_name);
}

#[test]
fn bash_within_a_project_a_cd_starts_no_process() {
    BASH.test(within_a_project_without_a_process);
}

#[test]
fn zsh_within_a_project_a_cd_starts_no_process() {
    ZSH.test(within_a_project_without_a_process);
}

#[test]
fn fish_within_a_project_a_cd_starts_no_process() {
    FISH.test(within_a_project_without_a_process);
}

#[test]
fn bash_outside_projects_a_cd_starts_no_process() {
    BASH.test(outside_projects_without_a_process);
}

#[test]
fn zsh_outside_projects_a_cd_starts_no_process() {
    ZSH.test(outside_projects_without_a_process);
}

#[test]
fn fish_outside_projects_a_cd_starts_no_process() {
    FISH.test(outside_projects_without_a_process);
}

#[test]
fn bash_a_cd_back_puts_the_directorys_environment_back_without_a_process() {
    BASH.test(cd_back_without_a_process);
}

#[test]
fn zsh_a_cd_back_puts_the_directorys_environment_back_without_a_process() {
    ZSH.test(cd_back_without_a_process);
}

#[test]
fn fish_a_cd_back_puts_the_directorys_environment_back_without_a_process() {
    FISH.test(cd_back_without_a_process);
}

#[test]
fn bash_prompt_where_nothing_changed_starts_no_process() {
    BASH.test(no_process_when_nothing_changed);
}

#[test]
fn zsh_prompt_where_nothing_changed_starts_no_process() {
    ZSH.test(no_process_when_nothing_changed);
}

#[test]
fn fish_prompt_where_nothing_changed_starts_no_process() {
    FISH.test(no_process_when_nothing_changed);
}

/// A prompt after a `cd` costs bash one process, gpuenv (a fork is about as dear as the
/// run itself): the user's INT trap, put back after the result is applied, is read in the
/// subshell that becomes gpuenv, not in a command substitution of its own. bash's trace,
/// with each line naming the process it ran in, shows every process the hook forked.
#[test]
fn bash_prompt_after_a_cd_forks_once() {
    if !have_tool("bash") {
        return;
    }
    let sb = world();
    let out = sb.path("out");
    fs_err::create_dir_all(&out).unwrap();
    let script = "eval \"$(\"$GPUENV_BIN\" hook bash)\"\n\
                  trap 'echo interrupted' INT\n\
                  cd work/proj\n\
                  exec 9>\"$OUT/trace\"; BASH_XTRACEFD=9; PS4='+$BASHPID '\n\
                  set -x; _gpuenv_hook; set +x\n\
                  printf '%s\\n' \"$$\" \"$CUDA_HOME\" \"$(trap -p INT)\" > \"$OUT/shell\"\n";
    let (home, gpuenv_home, bin) = (sb.home(), sb.gpuenv_home(), gpuenv_bin());
    let env: [(&str, &std::ffi::OsStr); 5] = [
        ("HOME", home.as_os_str()),
        ("PATH", "/usr/bin:/bin".as_ref()),
        ("GPUENV_HOME", gpuenv_home.as_os_str()),
        ("GPUENV_BIN", bin.as_ref()),
        ("OUT", out.as_os_str()),
    ];
    let run = common::shells::run("bash", script, &sb.path(""), &env);
    assert!(run.status.success(), "{run:?}");
    let shell = fs_err::read_to_string(out.join("shell")).unwrap();
    let shell: Vec<&str> = shell.lines().collect();
    assert!(shell[1].ends_with("views/cuda-12.4"), "applied: {shell:?}");
    assert_eq!(
        shell[2], "trap -- 'echo interrupted' SIGINT",
        "the user's trap is back"
    );
    let trace = fs_err::read_to_string(out.join("trace")).unwrap();
    let mut forked: Vec<&str> = trace
        .lines()
        // A traced line starts with `+`; a multi-line value goes on without one.
        .filter_map(|l| l.strip_prefix('+'))
        .filter_map(|l| l.trim_start_matches('+').split(' ').next())
        .filter(|pid| *pid != shell[0])
        .collect();
    forked.sort();
    forked.dedup();
    assert_eq!(forked.len(), 1, "one process, gpuenv's proxy: {trace}");
    let proxy = std::path::Path::new(&bin).with_file_name("gpuenv-shim");
    assert!(
        trace.contains(&format!(
            "+{} exec {} hook-env --shell bash",
            forked[0],
            proxy.display()
        )),
        "the one fork becomes the proxy beside gpuenv: {trace}"
    );
}

/// bash's `nocasematch` makes its `==` ignore case: a directory `PROJ` beside the project
/// `proj` would pass the project's check. With it set the check asks gpuenv, whose answer
/// (no project there) is applied.
#[test]
fn bash_with_nocasematch_a_directory_named_like_the_project_is_not_it() {
    if !have_tool("bash") {
        return;
    }
    let sb = world();
    fs_err::create_dir_all(sb.path("work/PROJ")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let script = "shopt -s nocasematch\n\
                  eval \"$(\"$GPUENV_BIN\" hook bash)\"\n\
                  cd work/proj; _gpuenv_hook; echo \"in proj: ${GPUENV_ACTIVE-none}\"\n\
                  cd ../PROJ; _gpuenv_hook; echo \"in PROJ: ${GPUENV_ACTIVE-none}\"\n";
    let (home, gpuenv_home, bin) = (sb.home(), sb.gpuenv_home(), gpuenv_bin());
    let env: [(&str, &std::ffi::OsStr); 4] = [
        ("HOME", home.as_os_str()),
        ("PATH", "/usr/bin:/bin".as_ref()),
        ("GPUENV_HOME", gpuenv_home.as_os_str()),
        ("GPUENV_BIN", bin.as_ref()),
    ];
    let run = common::shells::run("bash", script, &sb.path(""), &env);
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{run:?}");
    assert!(out.contains("in proj: cuda-12.4"), "{out}");
    assert!(out.contains("in PROJ: none"), "{out}");
}
