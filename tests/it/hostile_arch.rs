//! Arch values gpuenv did not write: `cuda-arch` / `rocm-arch` entries and `gpuenv pin
//! --arch` values with two suffixes, out-of-range numbers, another tool's spelling, list
//! separators smuggled into one entry, doubled colons, unknown or repeated target features,
//! escape sequences. Each is refused with its file, line and column (or, for `pin`, before
//! the file is touched), and nothing reaches TORCH_CUDA_ARCH_LIST, CUDAARCHS or
//! PYTORCH_ROCM_ARCH.

use crate::common::hostile;

use std::path::Path;

use crate::common::*;
use fs_err as fs;
use hostile::{pinned_project, stderr};

/// `text` as a TOML basic string: quotes, backslashes and control characters escaped.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `gpuenv env` in `proj` with `toml` as its toolchain file: the exit code, stdout, stderr.
fn env_with(sb: &Sandbox, proj: &Path, toml: &str) -> (i32, String, String) {
    write(&proj.join("gpuenv.toml"), toml);
    let out = sb
        .gpuenv()
        .current_dir(proj)
        .args(["env", "--shell", "json"])
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr(&out),
    )
}

#[test]
fn a_malformed_cuda_arch_is_an_error_at_its_file_line_and_column() {
    let (sb, proj) = pinned_project();
    for (value, why) in [
        (
            "9.0af",
            "two suffixes; an arch takes at most one `a` (arch-specific) or `f` (family-specific)",
        ),
        ("9.0aa", "two suffixes"),
        ("8.6a", "arch-specific (`a`) targets start at 9.0"),
        ("9.0f", "family-specific (`f`) targets start at 10.0"),
        ("8.10", "a major from 1 to 99 and a one-digit minor"),
        ("0.0", "a major from 1 to 99"),
        ("08.6", "a major from 1 to 99"),
        ("99999999999999999999.0", "a major from 1 to 99"),
        (
            "8.6+PTX+PTX",
            "expected forms like \"8.6\", \"9.0a\", \"10.0f\" or \"9.0+PTX\"",
        ),
        ("8.6+ptx", "expected forms like"),
        ("8.6;rm -rf ~", "expected forms like"),
        ("8.6 9.0", "several archs in one"),
        ("8.6,9.0", "expected forms like"),
        ("Hopper", "expected forms like"),
        ("", "expected forms like"),
        (
            "sm_86",
            "`sm_86` is nvcc's or CMake's spelling of \"8.6\", which is the form here",
        ),
        ("compute_90a", "spelling of \"9.0a+PTX\""),
        ("90-real", "spelling of \"9.0\""),
        ("\u{1b}[31m8.6", "expected forms like"),
    ] {
        let toml = format!(
            "[toolchain]\ncuda = \"12.4\"\ncuda-arch = [\"8.0\", {}]\n",
            toml_string(value)
        );
        let (code, stdout, err) = env_with(&sb, &proj, &toml);
        assert_eq!(code, 2, "{value:?}: {err}");
        assert!(
            err.contains("gpuenv.toml:3:21: cuda-arch `"),
            "{value:?}: {err}"
        );
        assert!(
            err.contains("is not a compute capability: "),
            "{value:?}: {err}"
        );
        assert!(err.contains(why), "{value:?}: {err}");
        assert!(
            !err.contains('\u{1b}'),
            "an escape reached the terminal: {err:?}"
        );
        assert!(stdout.is_empty(), "{value:?} exported something: {stdout}");
    }
}

#[test]
fn a_malformed_rocm_target_is_an_error_at_its_file_line_and_column() {
    let (sb, proj) = pinned_project();
    for (value, why) in [
        (
            "gfx90a::xnack+",
            "a target feature is empty: features follow single colons",
        ),
        ("gfx90a:", "a target feature is empty"),
        ("gfx90a:xnack", "`xnack` is not a target feature"),
        ("gfx90a:xnack+:xnack-", "`xnack-` is not a target feature"),
        ("gfx90a:tgsplit+", "`tgsplit+` is not a target feature"),
        (
            "gfx90a:xnack+,gfx942",
            "`xnack+,gfx942` is not a target feature",
        ),
        (
            "GFX90A",
            "expected forms like \"gfx90a\", \"gfx942\" or \"gfx90a:xnack+\"",
        ),
        ("gfx90a;gfx942", "expected forms like"),
        ("gfx90a gfx942", "expected forms like"),
        ("gfx", "expected forms like"),
        ("gfx12345", "expected forms like"),
        ("gfx000", "expected forms like"),
        ("8.6", "expected forms like"),
        ("gfx90a\n", "expected forms like"),
    ] {
        let toml = format!(
            "[toolchain]\ncuda = \"12.4\"\nrocm-arch = [\"gfx90a\", {}]\n",
            toml_string(value)
        );
        let (code, stdout, err) = env_with(&sb, &proj, &toml);
        assert_eq!(code, 2, "{value:?}: {err}");
        assert!(
            err.contains("gpuenv.toml:3:24: rocm-arch `"),
            "{value:?}: {err}"
        );
        assert!(err.contains("is not a gfx target: "), "{value:?}: {err}");
        assert!(err.contains(why), "{value:?}: {err}");
        assert!(stdout.is_empty(), "{value:?} exported something: {stdout}");
    }
}

#[test]
fn pin_arch_refuses_a_malformed_value_before_touching_the_file() {
    let (sb, proj) = pinned_project();
    let before = fs::read_to_string(proj.join("gpuenv.toml")).unwrap();
    for (value, why) in [
        (
            "9.0af",
            "cuda-arch `9.0af` is not a compute capability: it has two suffixes",
        ),
        ("8.6;9.0", "cuda-arch `8.6;9.0` is not a compute capability"),
        (
            "gfx90a::xnack+",
            "rocm-arch `gfx90a::xnack+` is not a gfx target",
        ),
        ("GFX90A", "rocm-arch `GFX90A` is not a gfx target"),
    ] {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .args(["pin", "--arch", value])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(!out.status.success(), "{value}");
        assert!(err.contains(why), "{value}: {err}");
        assert_eq!(
            fs::read_to_string(proj.join("gpuenv.toml")).unwrap(),
            before
        );
    }
}

#[test]
fn pin_arch_refuses_a_suffix_older_than_the_pinned_toolkit() {
    let (sb, proj) = pinned_project();
    sb.linked_runfile("opt/cuda-11.8", "cuda-11.8", "11.8.89");
    let before = fs::read_to_string(proj.join("gpuenv.toml")).unwrap();
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["pin", "cuda-11.8", "--arch", "8.0,9.0a"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("CUDA 11.8.89 cannot target 9.0a (sm_90a): arch-specific (`a`) targets need CUDA 12.0 or newer; CUDA 12.0 to 13.5 can target sm_90a; gpuenv.toml was left unchanged"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(proj.join("gpuenv.toml")).unwrap(),
        before
    );
}

/// What ROCm's tools print without a GPU (a coloured line from rocminfo, a Python traceback
/// from rocm_agent_enumerator) reaches `pin --arch native`'s error as plain words: no escape
/// sequence, raw or escaped, and of the traceback only the exception.
#[test]
fn pin_arch_native_shows_no_escapes_and_no_traceback_from_the_tools() {
    let sb = Sandbox::new();
    let tools = sb.path("tools");
    write_exe(
        &tools.join("rocminfo"),
        "#!/bin/sh\nprintf '\\033[31mROCk module is NOT loaded, possibly no GPU devices\\033[0m\\n'\nexit 1\n",
    );
    write_exe(
        &tools.join("rocm_agent_enumerator"),
        "#!/bin/sh\ncat <<'EOF'\nTraceback (most recent call last):\n  File \"/usr/bin/rocm_agent_enumerator\", line 268, in <module>\n    main()\nFileNotFoundError: [Errno 2] No such file or directory: '/sys/class/kfd/kfd/topology/nodes'\nEOF\nexit 1\n",
    );
    let proj = sb.path("proj");
    fs_err::create_dir_all(&proj).unwrap();
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("PATH", format!("{}:/bin", tools.display()))
        .args(["pin", "--arch", "native"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--arch native: this machine shows no GPU"),
        "{err}"
    );
    assert!(
        err.contains("rocminfo: exited with exit status: 1: ROCk module is NOT loaded, possibly no GPU devices;"),
        "{err}"
    );
    assert!(
        err.contains("rocm_agent_enumerator: exited with exit status: 1: FileNotFoundError: [Errno 2] No such file or directory"),
        "{err}"
    );
    for leak in ["\x1b", "\\x1b", "[31m", "Traceback", "File \""] {
        assert!(!err.contains(leak), "{leak:?} in {err}");
    }
}
