//! A project's PyTorch index goes in front of the user's own index lists and never replaces
//! them (issue 39): with `UV_INDEX` and `PIP_EXTRA_INDEX_URL` set (a company index), a
//! trusted `[torch] index = "auto"` project keeps them after its own entry through `env`,
//! `run` and the hook in real bash, zsh and fish, and leaving the project gives back exactly
//! what the user had.

#[allow(dead_code)]
use crate::common::hostile;

use std::ffi::OsStr;

use crate::common::shells::{dialect, env_vars, SHELLS};
use crate::common::*;

const UV_MINE: &str = "corp=https://corp.example/simple  other=https://o.example/s";
const PIP_MINE: &str = "https://corp.example/simple https://o.example/s";
const TORCH: &str = "https://download.pytorch.org/whl/cu132";

fn expected() -> (String, String) {
    (
        format!("pytorch={TORCH} corp=https://corp.example/simple other=https://o.example/s"),
        format!("{TORCH} {PIP_MINE}"),
    )
}

#[test]
fn env_and_run_keep_the_users_indexes_after_the_projects() {
    let sb = Sandbox::new();
    let proj = trusted_torch_auto_13_2(&sb);
    let (uv, pip) = expected();
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("UV_INDEX", UV_MINE)
        .env("PIP_EXTRA_INDEX_URL", PIP_MINE)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    let vars: serde_json::Value = serde_json::from_str(&succeeded(&out)).unwrap();
    assert_eq!(vars["UV_INDEX"], uv.as_str());
    assert_eq!(vars["PIP_EXTRA_INDEX_URL"], pip.as_str());

    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("UV_INDEX", UV_MINE)
        .env("PIP_EXTRA_INDEX_URL", PIP_MINE)
        .args([
            "run",
            "--",
            "sh",
            "-c",
            "printf '%s\\n%s\\n' \"$UV_INDEX\" \"$PIP_EXTRA_INDEX_URL\"",
        ])
        .output()
        .unwrap();
    assert_eq!(succeeded(&out), format!("{uv}\n{pip}\n"));

    // Without a list of the user's, gpuenv's entry alone (no stray space).
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    let vars: serde_json::Value = serde_json::from_str(&succeeded(&out)).unwrap();
    assert_eq!(vars["PIP_EXTRA_INDEX_URL"], TORCH);
}

#[test]
fn the_hook_prepends_and_leaving_restores_the_users_lists_exactly() {
    let sb = Sandbox::new();
    trusted_torch_auto_13_2(&sb);
    let (uv, pip) = expected();
    let mut ran = 0;
    for sh in SHELLS {
        if !have_tool(sh) {
            if in_ci() {
                panic!("{sh} is not installed");
            }
            continue;
        }
        ran += 1;
        let (source, prompt, hook) = dialect(sh);
        let script = format!(
            "{source}\n{prompt}\ncd \"$P\"\n{hook}\nenv -0 > \"$OUT/in\"\ncd /\n{hook}\nenv -0 > \"$OUT/out\"\ntrue\n"
        );
        hostile::shell(
            &sb,
            sh,
            &script,
            &[
                ("UV_INDEX", OsStr::new(UV_MINE)),
                ("PIP_EXTRA_INDEX_URL", OsStr::new(PIP_MINE)),
            ],
        );
        let (inside, out) = (env_vars(&sb.path("out/in")), env_vars(&sb.path("out/out")));
        assert_eq!(inside["UV_INDEX"], OsStr::new(&uv), "{sh}");
        assert_eq!(inside["PIP_EXTRA_INDEX_URL"], OsStr::new(&pip), "{sh}");
        assert_eq!(
            out["UV_INDEX"],
            OsStr::new(UV_MINE),
            "{sh}: not restored exactly"
        );
        assert_eq!(out["PIP_EXTRA_INDEX_URL"], OsStr::new(PIP_MINE), "{sh}");
    }
    assert!(ran > 0, "no shell to test with");
}
