//! docs/containers.md's Dockerfile, built without a Docker daemon: its instructions run in
//! order in a fresh home (FROM's python is a fresh venv; `apt-get` lines stand for g++,
//! which is here; `/opt`, `/root` and `/tmp/gpuenv-dist` are mapped into a temp dir;
//! a `--mount=type=cache` is a directory that is gone afterwards). The toolkit comes from a
//! local redist mirror, exactly as the project's gpuenv.lock names it; the doc's `ENV` lines
//! must be what `gpuenv env --shell dockerfile` printed, read back with Docker's quoting.

use crate::common::install_fixtures as fixtures;
use crate::common::wheel;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use fixtures::*;

/// The instructions of the doc's ```dockerfile block, continuation lines joined, comments
/// dropped: (keyword, rest).
fn instructions(doc: &str) -> Vec<(String, String)> {
    let start = doc.find("```dockerfile\n").expect("a dockerfile block") + 14;
    let block = &doc[start..start + doc[start..].find("```").unwrap()];
    let mut out = Vec::new();
    let mut current = String::new();
    for line in block.lines() {
        if line.trim_start().starts_with('#') && current.is_empty() {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(head) => current.push_str(head),
            None => {
                current.push_str(line);
                let (k, rest) = current.trim().split_once(' ').unwrap();
                out.push((k.to_string(), rest.trim().to_string()));
                current.clear();
            }
        }
    }
    out
}

/// A Dockerfile `ENV NAME="value"` read as Docker reads it: inside double quotes `\"`, `\\`
/// and `\$` stand for themselves, `${NAME}` and `$NAME` expand from `env`.
fn docker_env(rest: &str, env: &BTreeMap<String, String>) -> (String, String) {
    let (name, value) = rest.split_once('=').unwrap();
    let mut chars = value.chars().peekable();
    let mut out = String::new();
    let quoted = value.starts_with('"');
    if quoted {
        chars.next();
    }
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted => break,
            '\\' if matches!(chars.peek(), Some('"' | '\\' | '$')) => {
                out.push(chars.next().unwrap())
            }
            '$' => {
                let braced = chars.peek() == Some(&'{');
                if braced {
                    chars.next();
                }
                let mut var = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        var.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if braced {
                    assert_eq!(chars.next(), Some('}'));
                }
                out.push_str(env.get(&var).map_or("", String::as_str));
            }
            c => out.push(c),
        }
    }
    (name.to_string(), out)
}

#[test]
fn the_dockerfile_in_the_docs_installs_the_locked_toolkit_in_its_own_layer() {
    if !have_tool("python3") || !have_tool("g++") {
        return;
    }
    let Some(wheel) = wheel::wheel() else { return };
    let doc =
        fs_err::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/containers.md")).unwrap();
    let steps = instructions(&doc);

    let (_server, mirror) = redist_mirror(&["12.4.1"]);
    let locked = locked_project(&mirror, NVIDIA_12_4_1_MINIMAL);
    // The build context: the project's two files and the wheel in dist/.
    let image = Sandbox::new();
    let context = image.path("context");
    fs_err::create_dir_all(context.join("dist")).unwrap();
    fs_err::copy(
        &wheel,
        context.join("dist").join(wheel.file_name().unwrap()),
    )
    .unwrap();
    write(
        &context.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.4\"\n",
    );
    fs_err::copy(locked.path("gpuenv.lock"), context.join("gpuenv.lock")).unwrap();

    let rootfs = image.path("rootfs");
    let map = |text: &str| {
        let r = rootfs.display().to_string();
        text.replace("/opt/", &format!("{r}/opt/"))
            .replace("/root/", &format!("{r}/root/"))
            .replace("/tmp/gpuenv-dist", &format!("{r}/tmp/gpuenv-dist"))
    };
    // FROM python: a fresh venv's python and pip first on PATH.
    let python = image.path("python");
    wheel::run(Command::new("python3").args(["-m", "venv"]).arg(&python));
    let mut env: BTreeMap<String, String> = [
        ("HOME", map("/root/")),
        ("PATH", format!("{}/bin:/usr/bin:/bin", python.display())),
        ("LANG", "C.UTF-8".into()),
        ("NO_COLOR", "1".into()),
        ("GPUENV_CUDA_MIRROR", mirror.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut workdir = rootfs.clone();
    let mut cache_mounts = Vec::new();
    let mut printed = String::new();
    let mut doc_env = Vec::new();
    let mut ran = Vec::new();
    for (keyword, rest) in &steps {
        match keyword.as_str() {
            "FROM" => assert!(rest.starts_with("python:"), "{rest}"),
            "ENV" => {
                let (k, v) = docker_env(&map(rest), &env);
                if !printed.is_empty() {
                    doc_env.push(rest.clone());
                }
                env.insert(k, v);
            }
            "WORKDIR" => {
                workdir = Path::new(&map(rest)).to_path_buf();
                fs_err::create_dir_all(&workdir).unwrap();
            }
            "COPY" => {
                let parts: Vec<&str> = rest.split_whitespace().collect();
                let (to, from) = parts.split_last().unwrap();
                let to = if to.starts_with('/') {
                    Path::new(&map(to)).to_path_buf()
                } else {
                    workdir.join(to)
                };
                fs_err::create_dir_all(&to).unwrap();
                for f in from {
                    let src = context.join(f.trim_end_matches('/'));
                    let status = Command::new("cp")
                        .arg("-a")
                        .arg(if src.is_dir() { src.join(".") } else { src })
                        .arg(&to)
                        .status()
                        .unwrap();
                    assert!(status.success());
                }
            }
            "RUN" if rest.starts_with("apt-get") => assert!(rest.contains("g++"), "{rest}"),
            "RUN" => {
                let mut cmd = map(rest);
                while let Some(mount) = cmd.strip_prefix("--mount=") {
                    let (spec, after) = mount.split_once(' ').unwrap();
                    let target = spec
                        .split(',')
                        .find_map(|kv| kv.strip_prefix("target="))
                        .unwrap();
                    assert!(spec.starts_with("type=cache"), "{spec}");
                    fs_err::create_dir_all(target).unwrap();
                    cache_mounts.push(target.to_string());
                    cmd = after.trim_start().to_string();
                }
                let out = Command::new("/bin/sh")
                    .args(["-c", &cmd])
                    .env_clear()
                    .envs(&env)
                    .current_dir(&workdir)
                    .output()
                    .unwrap();
                let stdout = succeeded(&out);
                if cmd.contains("--shell dockerfile") {
                    printed = stdout.clone();
                }
                ran.push(stdout);
                // The cache mount is not part of the layer.
                for m in cache_mounts.drain(..) {
                    fs_err::remove_dir_all(m).unwrap();
                }
            }
            other => panic!("this test does not know {other}"),
        }
    }
    assert!(
        !printed.is_empty(),
        "a RUN step prints gpuenv env --shell dockerfile"
    );
    // The doc shows every line gpuenv printed, as printed: nothing left out, nothing added.
    let shown: Vec<String> = doc_env.iter().map(|l| format!("ENV {}", map(l))).collect();
    let printed_lines: Vec<&str> = printed.lines().collect();
    assert_eq!(
        shown, printed_lines,
        "the doc's ENV lines are not what gpuenv printed:\n{printed}"
    );
    // Nothing that depends on the machine or the user the image runs on.
    for var in [
        "CONDA_OVERRIDE_CUDA",
        "TORCH_EXTENSIONS_DIR",
        "TRITON_CACHE_DIR",
        "CUPY_CACHE_DIR",
        "FLASHINFER_WORKSPACE_BASE",
    ] {
        assert!(
            !printed.contains(&format!("ENV {var}=")),
            "{var}:\n{printed}"
        );
    }
    // The last RUN, `nvcc --version`, ran the locked toolkit's nvcc through the proxy, with
    // the download cache gone.
    let last = ran.last().unwrap();
    assert!(last.contains("release 12.4, V12.4.131"), "{last}");
    let gpuenv_home = map("/opt/gpuenv");
    assert!(env["CUDA_HOME"].starts_with(&gpuenv_home), "{env:?}");
}
