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
    let mut lines = blocks_under(&readme, "## Install");
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
