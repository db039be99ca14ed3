//! `gpuenv audit` of a prebuilt torch extension (issue 33): every symbol it takes from
//! torch's libraries must be defined by the installed torch. A real C++ extension is built
//! with g++ against the real torch wheel (test cache); it passes against that torch, and
//! fails, naming the torch and the symbols demangled, against a torch whose libraries
//! (stubs the test links) lack them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::real::torch_venv;
use crate::common::*;

/// Torch's tensor alone (`ATen/ATen.h` would cost the compile 6 s more and take the same
/// symbols from torch's libraries).
const EXT: &str = r#"#include <ATen/core/Tensor.h>
at::Tensor twice(const at::Tensor& x) { return x.add(x); }
void check(bool ok) { TORCH_CHECK(ok, "not ok"); }
"#;

fn torch_dir(venv: &Path) -> PathBuf {
    venv.join("lib/python3.11/site-packages/torch")
}

/// The extension, built against the real torch as torch's cpp_extension links one.
fn build_extension(sb: &Sandbox, venv: &Path) -> Option<PathBuf> {
    if !have_tool("g++") {
        cannot_run("g++ is not installed");
        return None;
    }
    let torch = torch_dir(venv);
    let src = sb.path("ext/ext.cpp");
    write(&src, EXT);
    let out = sb.path("ext/ext.so");
    let built = Command::new("g++")
        .args(["-std=c++20", "-shared", "-fPIC", "-O0"])
        .arg(format!("-I{}", torch.join("include").display()))
        .arg(format!(
            "-I{}",
            torch.join("include/torch/csrc/api/include").display()
        ))
        .arg(&src)
        .arg(format!("-L{}", torch.join("lib").display()))
        .args(["-lc10", "-ltorch_cpu", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    succeeded(&built);
    Some(out)
}

fn audit(sb: &Sandbox, venv: &Path, ext: &Path) -> std::process::Output {
    sb.gpuenv()
        .env("VIRTUAL_ENV", venv)
        .args(["audit", "--json"])
        .arg(ext)
        .output()
        .unwrap()
}

fn finding(out: &std::process::Output) -> serde_json::Value {
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "torch-symbols")
        .unwrap_or_else(|| panic!("no torch-symbols finding: {json}"))
        .clone()
}

#[test]
fn an_extension_built_against_the_installed_torch_passes_and_against_another_fails() {
    let Some(venv) = torch_venv() else { return };
    let sb = Sandbox::new();
    let Some(ext) = build_extension(&sb, &venv) else {
        return;
    };
    let out = audit(&sb, &venv, &ext);
    let f = finding(&out);
    assert_eq!(f["status"], "ok", "{f}");
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .starts_with("torch 2.15.0+cu132 at "),
        "{f}"
    );
    assert_eq!(out.status.code(), Some(0), "{f}");

    // Another torch: its libc10 and libtorch_cpu define none of what the extension takes.
    let other = sb.path("other-venv");
    let site = other.join("lib/python3.11/site-packages");
    torch_package(&site, "2.3.0+cu121", Some("12.1"), None);
    let stub = sb.path("stub.c");
    write(&stub, "int gpuenv_stub_symbol(void) { return 0; }\n");
    fs_err::create_dir_all(site.join("torch/lib")).unwrap();
    for lib in ["libc10.so", "libtorch_cpu.so"] {
        let made = Command::new("gcc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(site.join("torch/lib").join(lib))
            .arg(&stub)
            .output()
            .unwrap();
        succeeded(&made);
    }
    let out = audit(&sb, &other, &ext);
    let f = finding(&out);
    assert_eq!(out.status.code(), Some(1), "{f}");
    assert_eq!(f["status"], "error", "{f}");
    let message = f["summary"].as_str().unwrap();
    assert!(message.contains("torch 2.3.0+cu121 at "), "{message}");
    assert!(
        message.contains(
            "at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)"
        ),
        "{message}"
    );
    assert!(message.contains("undefined symbol"), "{message}");
    assert!(
        f["hint"].as_str().unwrap().contains("torch 2.3.0+cu121"),
        "{f}"
    );
}
