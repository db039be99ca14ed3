//! A newcomer follows the README top to bottom: the lines of its "Install" and "First
//! steps" blocks run verbatim in bash, in a fresh HOME. Two things stand in for the outside
//! world: `uv tool install .` is the real uv installing the wheel built from this checkout
//! (tests/it/common/wheel.rs: built once, not again from the clone), and GPUENV_CUDA_MIRROR
//! points `gpuenv install` at a local server with NVIDIA's redist layout.

use crate::common::install_fixtures as fixtures;
use crate::common::server;
use crate::common::wheel;

use std::process::Command;

use crate::common::*;
use fixtures::*;
use server::Server;

/// The shell blocks of the README section under `heading`.
fn blocks_under(readme: &str, heading: &str) -> Vec<String> {
    let start = readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("the README has no {heading}"));
    let rest = &readme[start + heading.len() + 2..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    section
        .split("```sh\n")
        .skip(1)
        .map(|b| b[..b.find("```").expect("a closed block")].to_string())
        .collect()
}

/// `uv tool install .` in the clone: the real uv, given the wheel built from this checkout
/// (what it would build from `.`), never the network.
const FAKE_UV: &str = r#"uv() {
    if [ "$*" = "tool update-shell" ]; then "$UV" tool update-shell; return; fi
    if [ "$*" != "tool install ." ]; then echo "this test only knows uv tool install ." >&2; return 2; fi
    "$UV" tool install --offline "$WHEEL"
}
"#;

#[test]
fn a_newcomer_follows_the_readme_from_install_to_the_guard_refusing_a_mismatch() {
    if !have_tool("bash") {
        return;
    }
    let readme = fs_err::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    // The first install block (uv tool / pipx); the pip route is walked by the new-shell test.
    let mut lines = blocks_under(&readme, "## Install")[..1].to_vec();
    lines.extend(blocks_under(&readme, "## First steps"));
    let steps = lines.concat();
    assert!(steps.contains("uv tool install ."), "{steps}");
    let (Some(wheel), Some(tools)) = (wheel::wheel(), wheel::py_tools()) else {
        return;
    };
    assert!(steps.contains("gpuenv install cuda-13.0"), "{steps}");

    let server = Server::start();
    serve(&server, "redist/", &redist_tree(&["13.0.2"]));
    let sb = Sandbox::new();
    let preamble = format!(
        "{FAKE_UV}trap 'echo \"README line $((LINENO - {offset})) failed\" >&2' ERR\nset -e\n",
        offset = FAKE_UV.lines().count() + 2
    );
    let script = sb.path("readme.sh");
    write(&script, &format!("{preamble}{steps}"));

    let out = Command::new("bash")
        .arg(&script)
        .current_dir(sb.home())
        .env_clear()
        .env("HOME", sb.home())
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .env("UV", tools.join("bin/uv"))
        .env("WHEEL", &wheel)
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("GPUENV_CUDA_MIRROR", server.url("redist/"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let log = format!("stdout:\n{stdout}\nstderr:\n{stderr}");

    // Every line ran; only the last one, the mismatched extension build, failed: exit 1 from
    // the guard, before compiling.
    let last = steps.lines().count();
    assert!(
        stderr.contains(&format!("README line {last} failed")),
        "{log}"
    );
    assert_eq!(out.status.code(), Some(1), "{log}");
    assert!(
        stderr.contains("refusing to build a PyTorch extension: nvcc is cuda 13.0")
            && stderr.contains("was built for cuda 12.1"),
        "{log}"
    );

    let home = sb.home();
    // uv's tool environment holds both binaries; ~/.local/bin links gpuenv.
    assert!(home.join(".local/bin/gpuenv").is_symlink(), "{log}");
    assert!(
        home.join(".local/share/uv/tools/gpuenv/bin/gpuenv-shim")
            .is_file(),
        "{log}"
    );
    assert!(fs_err::read_to_string(home.join(".bashrc"))
        .unwrap()
        .contains("gpuenv hook bash"));
    assert!(stderr.contains("installed cuda-13.0.2"), "{log}");
    let pin = fs_err::read_to_string(home.join("hello-cuda/gpuenv.toml")).unwrap();
    assert!(
        pin.contains("cuda = \"13.0\"") && pin.contains("9.0"),
        "{pin}"
    );
    // The kernel went to the pinned toolkit's nvcc (this one echoes its arguments).
    // …with the pinned arch added by the proxy, since the command line names none.
    assert!(
        stdout.contains("-c kernel.cu -o kernel.o") && stdout.contains("arch=compute_90"),
        "{log}"
    );
}

/// An install route's lines for a new-shell test: `uv tool` and `pipx` put the built binaries
/// where they put a tool's (its own environment, linked from `~/.local/bin`), `pip` into the
/// active venv; everything else (`uv tool update-shell`, `pipx ensurepath`) is the real tool.
const FAKE_INSTALLERS: &str = r#"tool_env() {
    mkdir -p "$1" ~/.local/bin
    ln -s "$GPUENV_BIN" "$1/gpuenv" && ln -s "$GPUENV_SHIM_BIN" "$1/gpuenv-shim"
}
uv() {
    if [ "$*" = "tool install ." ]; then tool_env ~/.local/share/uv/tools/gpuenv/bin && ln -s ~/.local/share/uv/tools/gpuenv/bin/gpuenv ~/.local/bin/gpuenv; return; fi
    "$PY_TOOLS/bin/uv" "$@"
}
pipx() {
    if [ "$*" = "install ." ]; then tool_env ~/.local/share/pipx/venvs/gpuenv/bin && ln -s ~/.local/share/pipx/venvs/gpuenv/bin/gpuenv ~/.local/bin/gpuenv; return; fi
    "$PY_TOOLS/bin/pipx" "$@"
}
pip() {
    if [ "$*" != "install ." ]; then echo "this test only knows pip install ." >&2; return 2; fi
    ln -s "$GPUENV_BIN" "$VIRTUAL_ENV/bin/gpuenv" && ln -s "$GPUENV_SHIM_BIN" "$VIRTUAL_ENV/bin/gpuenv-shim"
}
"#;

/// The `# or: …` alternative written after a README line (up to its parenthesis).
fn alternative(line: &str) -> &str {
    let alt = line.split_once("# or: ").expect("an alternative").1;
    alt.split(" (").next().unwrap().trim()
}

/// The hook line of the README's first step for `shell` (bash's is the line, the others
/// its comment names).
fn hook_line(first_steps: &str, shell: &str) -> String {
    let line = first_steps.lines().next().unwrap();
    let (bash, others) = line.split_once("   # ").unwrap();
    match shell {
        "bash" => bash.trim().to_string(),
        "zsh" => others
            .split("zsh: ")
            .nth(1)
            .unwrap()
            .split("  fish: ")
            .next()
            .unwrap()
            .trim()
            .to_string(),
        _ => others.split("fish: ").nth(1).unwrap().trim().to_string(),
    }
}

/// A user's own start-up file from before gpuenv: a prompt that shows `GPUENV_ACTIVE`.
fn own_rc(sb: &Sandbox, shell: &str) {
    let home = sb.home();
    match shell {
        "bash" => write(&home.join(".bashrc"), "PS1='(${GPUENV_ACTIVE:-none}) $ '\n"),
        "zsh" => write(
            &home.join(".zshrc"),
            "setopt PROMPT_SUBST\nPS1='(${GPUENV_ACTIVE:-none}) $ '\n",
        ),
        _ => write(
            &home.join(".config/fish/config.fish"),
            "set -g fish_greeting\nset -g fish_autosuggestion_enabled 0\nfunction fish_prompt\n    if set -q GPUENV_ACTIVE\n        printf '(%s) $ ' $GPUENV_ACTIVE\n    else\n        printf '(none) $ '\n    end\nend\n",
        ),
    }
}

/// After the README's install lines by each route and its hook line, a NEW interactive bash,
/// zsh and fish (their real start-up files, nothing typed by hand) start without an error,
/// find `gpuenv`, and switch to a pinned project's toolkit on `cd`.
#[test]
fn after_the_readme_install_a_new_bash_zsh_and_fish_find_gpuenv_and_switch_on_cd() {
    for tool in ["bash", "zsh", "fish", "tmux", "python3"] {
        if !have_tool(tool) {
            cannot_run(format!("{tool} is not installed"));
            return;
        }
    }
    let Some(tools) = wheel::py_tools() else {
        return;
    };
    let readme = fs_err::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let install = blocks_under(&readme, "## Install");
    let first_steps = &blocks_under(&readme, "## First steps")[0];
    let uv_route = install[0].clone();
    let pipx_route: String = install[0]
        .lines()
        .map(|l| {
            if l.contains("# or: ") {
                format!("{}\n", alternative(l))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert!(pipx_route.contains("pipx ensurepath"), "{pipx_route}");
    let pip_route = format!(
        "python3 -m venv ~/venv && . ~/venv/bin/activate\n{}",
        install[1]
    );
    let bin = pty::gpuenv_bin();
    let shim = assert_cmd::cargo::cargo_bin("gpuenv-shim");

    for (route, steps, shell) in [
        ("uv tool", &uv_route, "bash"),
        ("uv tool", &uv_route, "zsh"),
        ("uv tool", &uv_route, "fish"),
        ("pipx", &pipx_route, "bash"),
        ("pipx", &pipx_route, "zsh"),
        ("pipx", &pipx_route, "fish"),
        ("pip", &pip_route, "bash"),
    ] {
        let sb = Sandbox::new();
        let home = sb.home();
        own_rc(&sb, shell);
        let toolkit = cuda_runfile(&sb.path("opt/cuda-12.4"), "12.4.131");
        write(
            &home.join("proj/gpuenv.toml"),
            "[toolchain]\ncuda = \"12.4\"\n",
        );
        let script = format!(
            "set -e\n{FAKE_INSTALLERS}{steps}{hook}\ngpuenv link cuda-12.4 '{root}'\n",
            hook = hook_line(first_steps, shell),
            root = toolkit.display()
        );
        let out = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &script])
            .current_dir(&home)
            .env_clear()
            .env("HOME", &home)
            .env("PATH", "/usr/bin:/bin")
            .env("SHELL", format!("/usr/bin/{shell}"))
            .env("LANG", "C.UTF-8")
            .env("NO_COLOR", "1")
            .env("PY_TOOLS", &tools)
            .env("GPUENV_BIN", &bin)
            .env("GPUENV_SHIM_BIN", &shim)
            .env("PIPX_HOME", home.join(".local/share/pipx"))
            .output()
            .unwrap();
        let what = format!("{route} install, then a new {shell}");
        assert!(
            out.status.success(),
            "{what}: the README's lines failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );

        // A new interactive shell, as a terminal starts one: its own start-up files only.
        let env: Vec<(String, String)> = [
            ("HOME", home.display().to_string()),
            ("PATH", "/usr/local/bin:/usr/bin:/bin".into()),
            ("SHELL", format!("/usr/bin/{shell}")),
            ("TERM", "xterm-256color".into()),
            ("LANG", "C.UTF-8".into()),
            ("NO_COLOR", "1".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let mut pane = pty::Pane::start(&sb, &home, &env, &[shell, "-i"]);
        let start = pane.screen();
        for wrong in ["not found", "Unknown command", "rror"] {
            assert!(
                !start.contains(wrong),
                "{what}: the shell started with {wrong:?}:\n{start}"
            );
        }
        // The hook defines a `gpuenv` function: ask a child which program PATH finds.
        let found = pane.run("sh -c 'command -v gpuenv'");
        assert_eq!(
            found.output.trim(),
            home.join(".local/bin/gpuenv").display().to_string(),
            "{what}"
        );
        let cd = pane.run("cd proj");
        assert_eq!(cd.active, "cuda-12.4", "{what}: {cd:?}");
        assert_eq!(cd.before_prompt, "", "{what}");
        let nvcc = pane.run("nvcc --version");
        assert!(nvcc.output.contains("release 12.4"), "{what}: {nvcc:?}");
        let back = pane.run("cd ..");
        assert_eq!(back.active, "none", "{what}: {back:?}");
    }
}
