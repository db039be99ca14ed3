//! The bugs an attack left behind, each tried through the real binary: a pin that names a
//! missing compiler, hostile module files, hostile variables, a prune racing an install,
//! a toolchain that changes under the prompt, a project directory deleted under the shell,
//! and messages that must stay true whatever the input.

mod common;
#[allow(dead_code)] // not every group uses every helper
#[path = "common/hostile.rs"]
mod hostile;

use common::*;
use fs_err as fs;
use hostile::{pinned_project, stderr};

#[test]
fn a_missing_pinned_host_compiler_is_said_by_env_and_run_as_by_show() {
    let (sb, proj) = pinned_project();
    let file = proj.join("gpuenv.toml");
    write(
        &file,
        "[toolchain]\ncuda = \"12.4\"\nhost-compiler = \"g++-no-such-version\"\n",
    );
    sb.ok(&["trust", file.to_str().unwrap()]);
    let said = |args: &[&str]| {
        let out = sb.gpuenv().current_dir(&proj).args(args).output().unwrap();
        succeeded(&out);
        let err = stderr(&out);
        assert!(
            err.contains("host-compiler = \"g++-no-such-version\" does not exist or is not on PATH"),
            "{args:?} said nothing of the missing compiler:\n{err}"
        );
    };
    said(&["show"]);
    said(&["env"]);
    said(&["run", "--", "true"]);
}
