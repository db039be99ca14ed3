//! `plan` in-process: a home with two registered CUDA trees, a project pinning one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{plan, ProxyError};
use crate::context::Context;
use crate::diagnostic::{Diagnostic, Find};
use crate::store::home::Home;
use crate::store::toolchain::detect;
use crate::store::toolchain::registry::Source;
use crate::store::Store;
use crate::ui::Report;

/// The proxy's own errors (the whole registry, `edges::hints`, sits beside the proxy).
fn find_proxy_error<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn Diagnostic + 'static)> {
    crate::find_diagnostic!(err, ProxyError)
}
const FIND: &[Find] = &[find_proxy_error];

struct World {
    dir: tempfile::TempDir,
    home: Home,
}

impl World {
    /// cuda-12.4.1 and cuda-11.8.0 registered with views; `proj/` pins 12.4.
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().join("gpuenv"));
        let proxy = dir.path().join("gpuenv-shim");
        fs_err::write(&proxy, "the proxy").unwrap();
        let mut new = Vec::new();
        for version in ["12.4.1", "11.8.0"] {
            let root = dir.path().join(format!("cuda-{version}"));
            fs_err::create_dir_all(root.join("bin")).unwrap();
            fs_err::create_dir_all(root.join("include")).unwrap();
            fs_err::create_dir_all(root.join("lib64")).unwrap();
            fs_err::write(root.join("bin/nvcc"), "#!/bin/sh\n").unwrap();
            fs_err::write(
                root.join("version.json"),
                format!(r#"{{"cuda": {{"name": "CUDA SDK", "version": "{version}"}}}}"#),
            )
            .unwrap();
            let entry = detect::detect(&root, Source::Linked).unwrap();
            new.push((format!("cuda-{version}"), entry));
        }
        Store::new(home.clone(), proxy).register(new).unwrap();
        fs_err::create_dir_all(dir.path().join("proj")).unwrap();
        fs_err::write(
            dir.path().join("proj/gpuenv.toml"),
            "[toolchain]\ncuda = \"12.4\"\n",
        )
        .unwrap();
        World { dir, home }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn ctx(&self, cwd: &str, vars: &[(&str, &str)]) -> Context {
        let mut ctx = Context {
            cwd: self.path(cwd),
            ..Context::default()
        };
        ctx.vars.insert(
            "GPUENV_HOME".into(),
            self.home.settings().parent().unwrap().into(),
        );
        ctx.vars.insert("PATH".into(), "/usr/bin:/bin".into());
        for (k, v) in vars {
            ctx.vars.insert(k.to_string(), v.into());
        }
        ctx
    }

    fn self_exe(&self) -> PathBuf {
        self.path("gpuenv-shim")
    }
}

fn argv(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn var<'a>(exec: &'a super::Exec, key: &str) -> Option<&'a str> {
    exec.env
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.as_deref())
        .and_then(|v| v.to_str())
}

#[test]
fn a_shim_in_a_pinned_project_runs_the_pinned_nvcc_with_its_environment() {
    let w = World::new();
    let exec = plan(
        argv(&["nvcc", "-c", "k.cu"]),
        &w.ctx("proj", &[]),
        &w.self_exe(),
    )
    .unwrap();
    assert_eq!(exec.program, w.path("cuda-12.4.1/bin/nvcc"));
    assert_eq!(exec.args, argv(&["-c", "k.cu"]));
    let view = w.home.view("cuda-12.4.1");
    assert_eq!(var(&exec, "CUDA_HOME"), Some(view.to_str().unwrap()));
    assert_eq!(var(&exec, "GPUENV_SHIM_DEPTH"), Some("1"));
    assert!(var(&exec, "PATH")
        .unwrap()
        .starts_with(view.join("bin").to_str().unwrap()));
}

#[test]
fn a_plus_spec_overrides_the_pin_and_is_not_passed_to_the_tool() {
    let w = World::new();
    let exec = plan(
        argv(&["nvcc", "+cuda-11.8", "--version"]),
        &w.ctx("proj", &[]),
        &w.self_exe(),
    )
    .unwrap();
    assert_eq!(exec.program, w.path("cuda-11.8.0/bin/nvcc"));
    assert_eq!(exec.args, argv(&["--version"]));
}

#[test]
fn a_plus_spec_of_another_kind_or_matching_nothing_is_an_error_not_the_pinned_tool() {
    let w = World::new();
    let ctx = w.ctx("proj", &[]);
    let err = plan(argv(&["nvcc", "+rocm-6.2", "-c"]), &ctx, &w.self_exe()).unwrap_err();
    let err = format!("{err:#}");
    assert!(
        err.contains("`nvcc +rocm-6.2` names a rocm toolchain, but nvcc is the cuda compiler"),
        "{err}"
    );
    for tool in ["nvcc", "ptxas"] {
        let err = plan(argv(&[tool, "+cuda-99"]), &ctx, &w.self_exe()).unwrap_err();
        assert!(format!("{err:#}").contains("cuda-99"), "{err:#}");
    }
    // A tool of no compiler kind comes from the `+spec` toolchain only.
    let err = plan(argv(&["ptxas", "+rocm-6.2"]), &ctx, &w.self_exe()).unwrap_err();
    assert!(format!("{err:#}").contains("rocm-6.2"), "{err:#}");
}

#[test]
fn a_views_nvcc_runs_that_views_toolchain_whatever_the_project_pins() {
    let w = World::new();
    let view_nvcc = w.home.view("cuda-11.8.0").join("bin/nvcc");
    let exec = plan(
        vec![view_nvcc.into_os_string(), "-c".into()],
        &w.ctx("proj", &[]),
        &w.self_exe(),
    )
    .unwrap();
    assert_eq!(exec.program, w.path("cuda-11.8.0/bin/nvcc"));
    let view = w.home.view("cuda-11.8.0");
    assert_eq!(var(&exec, "CUDA_HOME"), Some(view.to_str().unwrap()));
}

#[test]
fn a_proxy_that_keeps_calling_itself_stops_at_the_depth_limit() {
    let w = World::new();
    let err = plan(
        argv(&["nvcc", "-c"]),
        &w.ctx("proj", &[("GPUENV_SHIM_DEPTH", "3")]),
        &w.self_exe(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("started 3 times in a row"),
        "{err}"
    );
}

#[test]
fn a_toolchain_whose_nvcc_is_the_proxy_itself_is_an_error() {
    let w = World::new();
    let real = w.path("cuda-12.4.1/bin/nvcc");
    let err = plan(argv(&["nvcc"]), &w.ctx("proj", &[]), &real).unwrap_err();
    assert!(
        err.to_string().contains("is the gpuenv proxy itself"),
        "{err}"
    );
}

#[test]
fn outside_any_pin_nothing_is_active_and_the_error_says_how_to_pick_one() {
    let w = World::new();
    let err = plan(argv(&["nvcc"]), &w.ctx("", &[]), &w.self_exe()).unwrap_err();
    let report = Report::of(&err, FIND);
    assert!(
        report.message.contains("no toolchain is active for nvcc"),
        "{report:?}"
    );
    assert!(
        report.hints.iter().any(|h| h.contains("gpuenv pin")),
        "{report:?}"
    );
}

#[test]
fn an_extension_build_for_another_cuda_than_torchs_is_refused_before_compiling() {
    let w = World::new();
    let site = w.path("site");
    write_torch(&site, "11.8");
    let include = site.join("torch/include");
    let args = vec![
        OsString::from("nvcc"),
        OsString::from(format!("-I{}", include.display())),
        OsString::from("-c"),
        OsString::from("ext.cu"),
    ];
    let err = plan(args, &w.ctx("proj", &[]), &w.self_exe()).unwrap_err();
    assert!(matches!(err, ProxyError::Refused(_)), "{err}");
}

#[test]
fn an_extension_build_for_torchs_own_cuda_passes() {
    let w = World::new();
    let site = w.path("site");
    write_torch(&site, "12.4");
    let include = site.join("torch/include");
    let args = vec![
        OsString::from("nvcc"),
        OsString::from(format!("-I{}", include.display())),
        OsString::from("-c"),
    ];
    let exec = plan(args, &w.ctx("proj", &[]), &w.self_exe()).unwrap();
    assert_eq!(exec.program, w.path("cuda-12.4.1/bin/nvcc"));
}

fn write_torch(site: &Path, cuda: &str) {
    fs_err::create_dir_all(site.join("torch/include")).unwrap();
    fs_err::write(
        site.join("torch/version.py"),
        format!(
            "__version__ = '2.4.0+cu{}'\ncuda: Optional[str] = '{cuda}'\nhip: Optional[str] = None\n",
            cuda.replace('.', "")
        ),
    )
    .unwrap();
}
