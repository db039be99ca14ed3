//! `check --json`, `doctor --json`, `audit --json` and `torch index --json` (an answer and a
//! refusal) validate against the checked-in schema, docs/gpuenv-output.schema.json, with
//! check-jsonschema from the test cache's Python tools; a broken object does not.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::real::test_cache;
use crate::common::*;

const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/docs/gpuenv-output.schema.json"
);

fn check_jsonschema() -> Option<PathBuf> {
    let tool = test_cache().join("pytools/bin/check-jsonschema");
    if tool.is_file() {
        Some(tool)
    } else {
        cannot_run(format!(
            "{} is missing (.ci/run installs it from PyPI)",
            tool.display()
        ));
        None
    }
}

/// Whether `files` all validate; what check-jsonschema said.
fn validate(tool: &Path, files: &[PathBuf]) -> (bool, String) {
    let out = Command::new(tool)
        .arg("--schemafile")
        .arg(SCHEMA)
        .args(files)
        .output()
        .unwrap();
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
fn every_json_output_validates_against_the_checked_in_schema() {
    let Some(tool) = check_jsonschema() else {
        return;
    };
    let sb = Sandbox::new();
    let cuda = cuda_runfile(&sb.path("opt/cuda-13.2"), "13.2.78");
    sb.ok(&["link", "cuda-13.2", cuda.to_str().unwrap()]);
    let venv = sb.path("venv");
    torch_package(
        &venv.join("lib/python3.11/site-packages"),
        "2.15.0+cu130",
        Some("13.0"),
        None,
    );
    let proj = sb.path("proj");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"13.2\"\n");
    // A plain shared object for audit: no GPU code, the report's shape all the same.
    let so = sb.path("plain.so");
    let src = sb.path("plain.c");
    write(&src, "int f(void) { return 1; }\n");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .output()
        .expect("cc builds the audited object");
    assert!(built.status.success());

    let mut files = Vec::new();
    let runs: [(&str, Vec<&str>, Option<i32>); 6] = [
        ("check", vec!["check", "--json"], Some(1)),
        ("doctor", vec!["doctor", "--json"], None),
        ("audit", vec!["audit", "--json", so.to_str().unwrap()], None),
        (
            "torch-ok",
            vec!["torch", "index", "--gpu", "9.0", "--json"],
            Some(0),
        ),
        (
            "torch-refused",
            vec!["torch", "index", "--gpu", "6.0", "--json"],
            Some(1),
        ),
        (
            "torch-jetson",
            vec![
                "torch",
                "index",
                "--any-toolkit",
                "--platform",
                "jetpack6",
                "--json",
            ],
            Some(0),
        ),
    ];
    for (name, args, code) in runs {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .env("VIRTUAL_ENV", &venv)
            .args(&args)
            .output()
            .unwrap();
        if let Some(code) = code {
            assert_eq!(
                out.status.code(),
                Some(code),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{name} printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert_eq!(value["schema"], "gpuenv-output/1", "{name}: {value}");
        let file = sb.path(&format!("{name}.json"));
        fs_err::write(&file, &out.stdout).unwrap();
        files.push(file);
    }
    let (ok, said) = validate(&tool, &files);
    assert!(ok, "{said}");

    // Not vacuous: an answer without its index, or another schema version, fails.
    let mut broken: serde_json::Value =
        serde_json::from_slice(&fs_err::read(sb.path("torch-ok.json")).unwrap()).unwrap();
    broken.as_object_mut().unwrap().remove("index");
    let bad = sb.path("broken.json");
    fs_err::write(&bad, broken.to_string()).unwrap();
    assert!(!validate(&tool, std::slice::from_ref(&bad)).0);
    let mut other: serde_json::Value =
        serde_json::from_slice(&fs_err::read(sb.path("doctor.json")).unwrap()).unwrap();
    other["schema"] = "gpuenv-output/2".into();
    fs_err::write(&bad, other.to_string()).unwrap();
    assert!(!validate(&tool, &[bad]).0);
}
