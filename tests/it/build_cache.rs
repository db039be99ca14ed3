//! `[build] cache`: the nvcc proxy compiles through ccache (or sccache) with the toolkit's
//! own compiler (here a stub that logs its arguments) as the cache's argument, from the
//! shims and from a view's `bin/nvcc` alike; a cache that is not installed is a warning and
//! the compile still runs. (The real thing, ccache over a real nvcc, is in
//! tests/it/build_cache_real.rs.) `gpuenv show` says which cache and which `[build] archs` apply.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use fs_err as fs;

struct World {
    sb: Sandbox,
    proj: PathBuf,
    /// A directory with a `ccache` that logs its arguments and runs them (and a `g++`).
    cache_bin: PathBuf,
}

fn world(project: &str) -> World {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let proj = sb.project("proj", project);
    // The user read the file and trusted it: its cache runs a program. (An invalid file
    // cannot be trusted; its tests see the error.)
    let _ = sb.gpuenv().current_dir(&proj).arg("trust").output();
    let cache_bin = sb.path("cache-bin");
    let log = sb.path("ccache.log");
    write_exe(
        &cache_bin.join("ccache"),
        &format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nexec \"$@\"\n",
            log.display()
        ),
    );
    // A host compiler on each PATH the compiles get (the proxy stops without one); the
    // nvcc stub never runs it.
    for bin in [cache_bin.clone(), sb.path("empty-bin")] {
        write_exe(
            &bin.join("g++"),
            "#!/bin/sh\necho 'g++ (Debian 12.2.0-14) 12.2.0'\n",
        );
    }
    World {
        sb,
        proj,
        cache_bin,
    }
}

impl World {
    fn nvcc(&self, program: &Path, cache_on_path: bool, vars: &[(&str, &str)]) -> Output {
        // Nothing else on PATH: this machine may have a real ccache in /usr/bin.
        let path = if cache_on_path {
            self.cache_bin.display().to_string()
        } else {
            self.sb.path("empty-bin").display().to_string()
        };
        let mut cmd = Command::new(program);
        cmd.args(["-c", "k.cu", "-o", "k.o"])
            .env_clear()
            .env("HOME", self.sb.home())
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .current_dir(&self.proj);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    fn view_nvcc(&self) -> PathBuf {
        self.sb.gpuenv_home().join("views/cuda-12.4/bin/nvcc")
    }

    fn shim_nvcc(&self) -> PathBuf {
        self.sb.gpuenv_home().join("shims/nvcc")
    }

    fn toolkit_nvcc(&self) -> String {
        self.sb.path("opt/cuda-12.4/bin/nvcc").display().to_string()
    }

    fn cache_log(&self) -> Vec<String> {
        fs::read_to_string(self.sb.path("ccache.log"))
            .map(|t| t.lines().map(String::from).collect())
            .unwrap_or_default()
    }

    fn compiled(&self) -> Vec<String> {
        fs::read_to_string(self.sb.path("opt/cuda-12.4/nvcc.log"))
            .map(|t| t.lines().map(String::from).collect())
            .unwrap_or_default()
    }
}

const CACHED: &str = "[toolchain]\ncuda = \"12.4\"\n\n[build]\ncache = \"ccache\"\n";

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_shim_and_the_view_compile_through_ccache_with_the_toolkits_own_nvcc_stub() {
    let w = world(CACHED);
    let want = format!("{} -c k.cu -o k.o", w.toolkit_nvcc());
    for nvcc in [w.shim_nvcc(), w.view_nvcc()] {
        let out = w.nvcc(&nvcc, true, &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(w.cache_log().last(), Some(&want), "{}", nvcc.display());
    }
    assert_eq!(w.compiled(), ["-c k.cu -o k.o", "-c k.cu -o k.o"]);
}

#[test]
fn gpuenv_build_cache_overrides_the_file_and_the_settings_default() {
    let w = world("[toolchain]\ncuda = \"12.4\"\n");
    // Off by default.
    assert!(w.nvcc(&w.view_nvcc(), true, &[]).status.success());
    assert_eq!(w.cache_log().len(), 0);
    // The user's default for every project, in settings.toml.
    let settings = w.sb.gpuenv_home().join("settings.toml");
    let text = fs::read_to_string(&settings).unwrap();
    fs::write(&settings, format!("{text}\n[build]\ncache = \"ccache\"\n")).unwrap();
    assert!(w.nvcc(&w.view_nvcc(), true, &[]).status.success());
    assert_eq!(w.cache_log().len(), 1);
    // The variable wins over both.
    let out = w.nvcc(&w.view_nvcc(), true, &[("GPUENV_BUILD_CACHE", "off")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(w.cache_log().len(), 1);
    // And the registry still loads and saves with the table in it.
    w.sb.ok(&["list"]);
}

#[test]
fn a_missing_ccache_is_a_warning_and_the_compile_runs_uncached() {
    let w = world(CACHED);
    let out = w.nvcc(&w.view_nvcc(), false, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("ccache is not on PATH"), "{err}");
    assert!(err.contains("gpuenv.toml:5:9"), "{err}");
    assert!(err.contains("hint: install it"), "{err}");
    assert_eq!(w.compiled(), ["-c k.cu -o k.o"]);
}

#[test]
fn a_bad_cache_name_names_the_file_and_line() {
    let w = world("[toolchain]\ncuda = \"12.4\"\n\n[build]\ncache = \"distcc\"\n");
    let out =
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .arg("show")
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("gpuenv.toml:5:9"), "{err}");
    assert!(err.contains("\"ccache\", \"sccache\", \"off\""), "{err}");
}

#[test]
fn show_says_when_a_cache_is_on() {
    let w = world(CACHED);
    let show = |path: &str| {
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .env("PATH", path)
            .arg("show")
            .output()
            .unwrap()
    };
    let out = show(&w.cache_bin.display().to_string());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("build cache: ccache (") && text.contains("gpuenv.toml:5:9"),
        "{text}"
    );
    let out = show(&w.sb.path("empty-bin").display().to_string());
    assert!(
        stderr(&out).contains("ccache is not on PATH"),
        "{}",
        stderr(&out)
    );
    let json = w.sb.ok(&["show", "--json"]);
    assert!(json.contains("\"build_cache\""), "{json}");
}

#[test]
fn show_says_what_build_archs_does_next_to_the_cache() {
    let w =
        world("[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\"]\n\n[build]\narchs = \"add\"\n");
    let show = || {
        let out =
            w.sb.gpuenv()
                .current_dir(&w.proj)
                .arg("show")
                .output()
                .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // Trusted: `add` applies, where it is written.
    let text = show();
    assert!(
        text.contains("build archs: add (") && text.contains("gpuenv.toml:6:9): the pinned archs"),
        "{text}"
    );

    // Changed since it was trusted: `add` waits, the default `warn` applies.
    let file = w.proj.join("gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\", \"9.0\"]\n\n[build]\narchs = \"add\"\n",
    );
    let text = show();
    assert!(
        text.contains("build archs: warn (")
            && text.contains("gpuenv.toml:6:9; it sets \"add\", applied once you `gpuenv trust` it): a compile whose own arch flags leave out a pinned arch is told once per build"),
        "{text}"
    );
    let out =
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .args(["show", "--json"])
            .output()
            .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["build_archs"]["policy"], "warn", "{v}");
    assert_eq!(v["build_archs"]["held_back"], "add", "{v}");

    // `off` needs no trust; with arch pins and no policy, the default.
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\"]\n\n[build]\narchs = \"off\"\n",
    );
    assert!(show().contains("build archs: off ("), "{}", show());
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\"]\n",
    );
    assert!(
        show().contains("build archs: warn (the default): "),
        "{}",
        show()
    );
    // Nothing pinned, nothing set: nothing for it to act on, nothing said.
    write(&file, "[toolchain]\ncuda = \"12.4\"\n");
    assert!(!show().contains("build archs"), "{}", show());
}
