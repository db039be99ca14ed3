//! `cuda = "torch"` costs a `cd` what any pin costs: the `python3` on PATH is asked for its
//! `sys.path` once (torch is found there without importing it), and later `cd`s into the
//! project, in this shell or another, start no process but gpuenv's own (the proxy binary
//! answers the prompt): traced with
//! `strace -f` of the whole shell, and by the fake python3's own log. A torch upgraded in
//! place is seen at the next `cd`, still without a process.

use std::path::Path;
use std::process::Command;

use crate::common::*;

const PROJECT: &str = "[toolchain]\ncuda = \"torch\"\n";

fn runs(log: &Path) -> usize {
    fs_err::read_to_string(log)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_cd_into_a_torch_project_starts_no_process_after_the_first() {
    if !have_tool("bash") {
        return;
    }
    let sb = Sandbox::new();
    for (dir, version) in [("opt/cuda-12.4", "12.4.131"), ("opt/cuda-12.6", "12.6.85")] {
        let root = cuda_runfile(&sb.path(dir), version);
        let name = format!("cuda-{}", &version[..4]);
        sb.ok(&["link", &name, root.to_str().unwrap()]);
    }
    // A python3 (no venv activated) whose sys.path holds a torch built for 12.4; it logs
    // each run.
    let site = torch_package(
        &sb.path("py/lib/site-packages"),
        "2.5.1+cu124",
        Some("12.4"),
        None,
    );
    let log = sb.path("python3.log");
    write_exe(
        &sb.path("py/bin/python3"),
        &format!(
            "#!/bin/sh\necho run >> '{}'\necho '{}'\n",
            log.display(),
            site.display()
        ),
    );
    write(&sb.path("proj/gpuenv.toml"), PROJECT);
    // What gpuenv remembers is only what has not changed in the last two seconds.
    std::thread::sleep(std::time::Duration::from_millis(2200));

    let path = format!("{}:/usr/bin:/bin", sb.path("py/bin").display());
    let gpuenv = pty::gpuenv_bin();
    let shell = |script: &str, traced: Option<&Path>| {
        let mut cmd = match traced {
            Some(trace) => {
                let mut c = Command::new("strace");
                c.args(["-f", "-qq", "-e", "trace=execve", "-o"])
                    .arg(trace)
                    .arg("bash");
                c
            }
            None => Command::new("bash"),
        };
        let out = cmd
            .args(["--norc", "--noprofile", "-c"])
            .arg(format!(
                "eval \"$(\"$GPUENV_BIN\" hook bash)\"\n_gpuenv_hook\n{script}"
            ))
            .env_clear()
            .env("HOME", sb.home())
            .env("PATH", &path)
            .env("GPUENV_BIN", &gpuenv)
            .current_dir(sb.path(""))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let cd_in_and_out = "for i in 1 2 3; do cd proj; _gpuenv_hook; echo \"in $CUDA_HOME\"; cd ..; _gpuenv_hook; done\n";

    // The first cd asks python3, once.
    let out = shell(cd_in_and_out, None);
    assert!(out.lines().all(|l| l.ends_with("views/cuda-12.4")), "{out}");
    assert_eq!(out.lines().count(), 3);
    assert_eq!(runs(&log), 1, "python3 ran once: {out}");

    // Another shell: three cds in and out, no python3. strace shows every program started.
    let out = shell(cd_in_and_out, None);
    assert!(out.lines().all(|l| l.ends_with("views/cuda-12.4")), "{out}");
    assert_eq!(runs(&log), 1, "a later cd starts no python3");
    if have_tool("strace") {
        let trace = sb.path("trace");
        let out = shell(cd_in_and_out, Some(&trace));
        assert_eq!(out.lines().count(), 3, "{out}");
        let programs = crate::common::shells::started(&trace);
        // `gpuenv hook bash`, then each prompt runs the proxy binary beside gpuenv.
        let proxy = Path::new(&gpuenv).with_file_name("gpuenv-shim");
        assert!(
            programs
                .iter()
                .all(|p| p.ends_with("/bash") || *p == gpuenv || Path::new(p) == proxy),
            "only bash, gpuenv and its proxy run: {programs:?}"
        );
        assert!(
            programs.iter().any(|p| Path::new(p) == proxy),
            "{programs:?}"
        );
    }

    // torch upgraded in place to a 12.6 build: the next cd sees it, with no process.
    torch_package(&site, "2.6.0+cu126", Some("12.6"), None);
    let out = shell(cd_in_and_out, None);
    assert!(out.lines().all(|l| l.ends_with("views/cuda-12.6")), "{out}");
    assert_eq!(runs(&log), 1);

    // torch removed from that site-packages: asked again, and said so.
    fs_err::remove_dir_all(site.join("torch")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c"])
        .arg("eval \"$(\"$GPUENV_BIN\" hook bash)\"\ncd proj; _gpuenv_hook; echo \"in ${CUDA_HOME:-none}\"")
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", &path)
        .env("GPUENV_BIN", &gpuenv)
        .current_dir(sb.path(""))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("in none"), "{out:?}");
    // Asked by the proxy binary, which hands a prompt with something to say over to gpuenv,
    // and by gpuenv, which says it.
    assert_eq!(
        runs(&log),
        3,
        "a directory of sys.path changed: asked again"
    );
}
