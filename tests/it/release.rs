//! The release: `scripts/build-wheel.sh --zig` makes manylinux2014 wheels for x86_64 and
//! aarch64 whose gpuenv needs no glibc symbol newer than 2.17 (read from each ELF's
//! version needs) and whose proxy is static (musl), and that `auditwheel show` calls
//! manylinux_2_17; the release workflow and
//! the action pass the GitHub schema linter (check-jsonschema, offline) and the workflow
//! builds, checks, smoke-tests on each architecture and publishes by trusted publishing.

use crate::common::wheel;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::elf;
use object::read::elf::{Dyn as _, ElfFile64, FileHeader as _, ProgramHeader as _};
use object::Endianness;

use crate::common::*;
use wheel::*;

/// The libraries an ELF names in DT_NEEDED.
fn needed(data: &[u8]) -> Vec<String> {
    let file = ElfFile64::<Endianness>::parse(data).expect("an ELF64 file");
    let endian = file.endian();
    let sections = file.elf_header().sections(endian, data).unwrap();
    let Some((dynamic, link)) = sections.dynamic(endian, data).unwrap() else {
        return Vec::new();
    };
    let strings = sections.strings(endian, data, link).unwrap();
    dynamic
        .iter()
        .filter(|d| d.tag32(endian) == Some(elf::DT_NEEDED))
        .map(|d| String::from_utf8_lossy(d.string(endian, strings).unwrap()).into_owned())
        .collect()
}

/// The glibc versions (`(2, 17)`) an ELF needs, and its machine.
fn glibc_needs(data: &[u8]) -> (u16, Vec<(u32, u32)>) {
    let file = ElfFile64::<Endianness>::parse(data).expect("an ELF64 file");
    let endian = file.endian();
    let header = file.elf_header();
    let sections = header.sections(endian, data).unwrap();
    let mut needs = Vec::new();
    if let Some((mut verneed, link)) = sections.gnu_verneed(endian, data).unwrap() {
        let strings = sections.strings(endian, data, link).unwrap();
        while let Some((_, mut aux)) = verneed.next().unwrap() {
            while let Some(a) = aux.next().unwrap() {
                let name = String::from_utf8_lossy(a.name(endian, strings).unwrap()).into_owned();
                if let Some(v) = name.strip_prefix("GLIBC_") {
                    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
                    needs.push((parts.next().unwrap_or(0), parts.next().unwrap_or(0)));
                }
            }
        }
    }
    (header.e_machine(endian), needs)
}

/// Whether an ELF names a program interpreter (the dynamic loader): a static one does not.
fn has_interpreter(data: &[u8]) -> bool {
    let file = ElfFile64::<Endianness>::parse(data).expect("an ELF64 file");
    let endian = file.endian();
    file.elf_header()
        .program_headers(endian, data)
        .unwrap()
        .iter()
        .any(|p| p.p_type(endian) == elf::PT_INTERP)
}

fn member(wheel: &Path, name: &str) -> Vec<u8> {
    let mut zip = zip::ZipArchive::new(fs_err::File::open(wheel).unwrap()).unwrap();
    let mut f = zip
        .by_name(name)
        .unwrap_or_else(|_| panic!("{} holds no {name}", wheel.display()));
    let mut data = Vec::new();
    f.read_to_end(&mut data).unwrap();
    data
}

#[test]
fn release_wheels_are_manylinux2014_and_need_no_glibc_newer_than_2_17() {
    let Some(auditwheel) = py_tool("auditwheel") else {
        return;
    };
    let version = env!("CARGO_PKG_VERSION");
    for (arch, machine) in [("x86_64", elf::EM_X86_64), ("aarch64", elf::EM_AARCH64)] {
        let Some(wheel) = release_wheel(arch) else {
            return;
        };
        let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.contains(&format!("manylinux_2_17_{arch}")),
            "the wheel's tag: {name}"
        );
        let shown = run(Command::new(&auditwheel).arg("show").arg(&wheel));
        assert!(
            shown.contains(&format!("\"manylinux_2_17_{arch}\"")),
            "auditwheel show {name}:\n{shown}"
        );
        // The proxy is linked static against musl: no loader, no library, no glibc symbol.
        let proxy = member(
            &wheel,
            &format!("gpuenv-{version}.data/scripts/gpuenv-shim"),
        );
        let (m, needs) = glibc_needs(&proxy);
        assert_eq!(m, machine, "{name}: gpuenv-shim is built for {arch}");
        assert!(
            needs.is_empty() && needed(&proxy).is_empty() && !has_interpreter(&proxy),
            "{name}: gpuenv-shim is static: {needs:?} {:?}",
            needed(&proxy)
        );
        for bin in ["gpuenv"] {
            let data = member(&wheel, &format!("gpuenv-{version}.data/scripts/{bin}"));
            let (m, needs) = glibc_needs(&data);
            assert_eq!(m, machine, "{name}: {bin} is built for {arch}");
            assert!(!needs.is_empty(), "{name}: {bin} links glibc dynamically");
            // glibc's own libraries only: no libgcc_s, libstdc++ or anything auditwheel
            // would have to graft.
            for lib in needed(&data) {
                assert!(
                    [
                        "libc.so.6",
                        "libm.so.6",
                        "libpthread.so.0",
                        "libdl.so.2",
                        "librt.so.1"
                    ]
                    .contains(&lib.as_str())
                        || lib.starts_with("ld-linux"),
                    "{name}: {bin} needs {lib}"
                );
            }
            let newest = needs.iter().max().unwrap();
            assert!(
                *newest <= (2, 17),
                "{name}: {bin} needs GLIBC_{}.{} (manylinux2014 allows 2.17): {needs:?}",
                newest.0,
                newest.1
            );
        }
    }
}

/// The build this machine's tests use (debug, native glibc) needs a newer glibc than 2.17:
/// the reader sees what the release check relies on.
#[test]
fn the_glibc_reader_sees_a_native_builds_newer_needs() {
    let data = fs_err::read(env!("CARGO_BIN_EXE_gpuenv")).unwrap();
    let (m, needs) = glibc_needs(&data);
    assert!(m == elf::EM_X86_64 || m == elf::EM_AARCH64, "{m}");
    assert!(
        needed(&data).contains(&"libc.so.6".to_string()),
        "{:?}",
        needed(&data)
    );
    assert!(needs.iter().max().unwrap() > &(2, 17), "{needs:?}");
}

fn check_jsonschema(schema: &str, file: &Path) -> std::process::Output {
    let tool = py_tool("check-jsonschema").unwrap();
    Command::new(tool)
        .args(["--builtin-schema", schema])
        .arg(file)
        .output()
        .unwrap()
}

#[test]
fn workflows_and_the_action_pass_githubs_schemas() {
    if py_tool("check-jsonschema").is_none() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<(PathBuf, &str)> = fs_err::read_dir(root.join(".github/workflows"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .map(|p| (p, "vendor.github-workflows"))
        .collect();
    assert!(!files.is_empty(), "no workflows in .github/workflows");
    files.push((root.join("action.yml"), "vendor.github-actions"));
    for (file, schema) in &files {
        let out = check_jsonschema(schema, file);
        assert!(
            out.status.success(),
            "{}:\n{}{}",
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The linter is not a yes-sayer: a job without `runs-on` and a step with an unknown
    // key are refused.
    let sb = Sandbox::new();
    let bad = sb.path("bad.yml");
    fs_err::write(
        &bad,
        "on: push\njobs:\n  build:\n    steps:\n      - run: true\n        shel: bash\n",
    )
    .unwrap();
    let out = check_jsonschema("vendor.github-workflows", &bad);
    assert!(!out.status.success(), "a broken workflow passed the linter");
}

#[test]
fn the_release_workflow_builds_checks_smoke_tests_each_arch_and_publishes_by_trust() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = fs_err::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
    let wf: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let tags = &wf["on"]["push"]["tags"];
    assert!(
        tags.as_sequence()
            .is_some_and(|t| t.iter().any(|t| t.as_str() == Some("v*"))),
        "runs on a version tag: {tags:?}"
    );
    let jobs = &wf["jobs"];
    let steps = |job: &str| -> Vec<String> {
        jobs[job]["steps"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|s| serde_yaml::to_string(s).unwrap())
            .collect()
    };
    assert!(
        steps("build")
            .iter()
            .any(|s| s.contains("scripts/build-wheel.sh --zig")),
        "the build job runs the script a maintainer runs (twine check, auditwheel show)"
    );
    assert!(
        !steps("build").iter().any(|s| s.contains("--profile")),
        "what ships is built with the script's default profile, `release` (LTO); `ci` is the tests'"
    );
    let archs: Vec<&str> = jobs["smoke"]["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|m| m["arch"].as_str())
        .collect();
    assert!(
        archs.contains(&"x86_64") && archs.contains(&"aarch64"),
        "{archs:?}"
    );
    let runners: Vec<&str> = jobs["smoke"]["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|m| m["arch"].as_str() == Some("aarch64"))
        .filter_map(|m| m["runner"].as_str())
        .collect();
    assert!(
        runners.iter().all(|r| r.ends_with("-arm")),
        "aarch64 wheels are tested on an arm runner: {runners:?}"
    );
    let publish = &jobs["publish"];
    assert_eq!(publish["permissions"]["id-token"].as_str(), Some("write"));
    assert!(
        steps("publish")
            .iter()
            .any(|s| s.contains("pypa/gh-action-pypi-publish")),
        "publishes with PyPI's action (trusted publishing: no password or token)"
    );
    assert!(!text.contains("password:") && !text.contains("PYPI_TOKEN"));
    let needs = publish["needs"].as_sequence().unwrap();
    assert!(needs.iter().any(|n| n.as_str() == Some("smoke")));
}
