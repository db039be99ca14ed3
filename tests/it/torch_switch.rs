//! The guard's way out "install the torch built for this toolkit", run as the user would
//! paste it, by real pip and real uv against a local index laid out like PyTorch's: torch
//! is replaced by the same release built for the toolkit, the CUDA wheels the new build
//! needs are added, and nothing else is reinstalled (issue 41: `--force-reinstall` pulled
//! torch's ~3 GB of dependencies down again).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::proxy_world::{stderr, World};
use crate::common::*;

/// A pure-Python wheel of `name` `version` requiring `requires`, in `dir`.
fn fake_wheel(dir: &Path, name: &str, version: &str, requires: &[&str]) {
    let module = name.replace('-', "_");
    let dist = format!("{module}-{version}");
    let path = dir.join(format!("{dist}-py3-none-any.whl"));
    fs_err::create_dir_all(dir).unwrap();
    let mut zip = zip::ZipWriter::new(fs_err::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    let mut metadata = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
    for r in requires {
        metadata.push_str(&format!("Requires-Dist: {r}\n"));
    }
    let files = [
        (format!("{module}/__init__.py"), String::new()),
        (format!("{dist}.dist-info/METADATA"), metadata),
        (
            format!("{dist}.dist-info/WHEEL"),
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
                .into(),
        ),
    ];
    let mut record = String::new();
    for (file, text) in &files {
        zip.start_file(file.as_str(), opts).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
        record.push_str(&format!("{file},,\n"));
    }
    record.push_str(&format!("{dist}.dist-info/RECORD,,\n"));
    zip.start_file(format!("{dist}.dist-info/RECORD"), opts)
        .unwrap();
    zip.write_all(record.as_bytes()).unwrap();
    zip.finish().unwrap();
}

/// A PEP 503 index at `root` (`root/<project>/index.html`) of the wheels in `dir`; its URL.
fn simple_index(dir: &Path, root: &Path) -> String {
    for entry in fs_err::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap().to_string();
        let project = file.split('-').next().unwrap().replace('_', "-");
        let page = root.join(&project).join("index.html");
        let old = fs_err::read_to_string(&page).unwrap_or_default();
        write(
            &page,
            &format!("{old}<a href=\"file://{}\">{file}</a>\n", path.display()),
        );
    }
    format!("file://{}", root.display())
}

/// The command in the guard's hint "or install the torch built for …: `<command>` (uv:
/// `<command>`)": (pip's, uv's).
fn switch_commands(err: &str) -> (String, String) {
    let line = err
        .lines()
        .find(|l| l.starts_with("hint: or install the torch built for"))
        .unwrap_or_else(|| panic!("no install hint: {err}"));
    let quoted: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
    (quoted[0].to_string(), quoted[1].to_string())
}

/// Runs a pasted command with `program` for its first word, `index` for PyTorch's index,
/// offline; its output.
fn paste(command: &str, program: &Path, index: &str, venv: &Path) -> String {
    let mut words = command.split_whitespace().skip(1);
    let mut args: Vec<String> = Vec::new();
    while let Some(w) = words.next() {
        if w == "--index-url" {
            words.next();
            args.extend(["--index-url".into(), index.into()]);
        } else if let Some(backend) = w.strip_prefix("--torch-backend=") {
            // uv's name for PyTorch's index: the local one stands in for it.
            assert_eq!(backend, "cu118", "{command}");
            args.extend(["--index-url".into(), index.into()]);
        } else {
            args.push(w.into());
        }
    }
    let out = Command::new(program)
        .args(&args)
        .env("VIRTUAL_ENV", venv)
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("UV_OFFLINE", "1")
        .env("UV_NO_CONFIG", "1")
        .env("UV_CACHE_DIR", venv.join("uv-cache"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{program:?} {args:?}:\n{text}");
    text
}

/// A venv whose torch is 2.4.1+cu121 with its CUDA wheel and filelock, from `cu121`.
fn venv_with_cu121_torch(venv: &Path, cu121: &str) -> PathBuf {
    wheel::run(Command::new("python3").args(["-m", "venv"]).arg(venv));
    let pip = venv.join("bin/pip");
    paste("pip install torch --index-url x", &pip, cu121, venv);
    pip
}

fn installed(venv: &Path) -> String {
    wheel::run(
        Command::new(venv.join("bin/python"))
            .args(["-m", "pip", "list", "--format=freeze"])
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
    )
}

#[test]
fn the_guards_torch_command_replaces_torch_alone_with_pip_and_with_uv() {
    if !have_tool("python3") {
        return;
    }
    let w = World::new("11.8");
    let out = w.run(&w.view_nvcc("cuda-11.8"), &w.ext_args(), &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let (pip_cmd, uv_cmd) = switch_commands(&err);
    assert_eq!(
        pip_cmd,
        "pip install torch==2.4.1+cu118 --index-url https://download.pytorch.org/whl/cu118"
    );
    assert_eq!(
        uv_cmd,
        "uv pip install --torch-backend=cu118 torch==2.4.1+cu118"
    );

    // Two indexes as PyTorch lays them out: every wheel's local version is the index's name.
    let wheels = w.sb.path("wheels");
    for (index, cuda, nvidia) in [("cu121", "12.1", "cu12"), ("cu118", "11.8", "cu11")] {
        let dir = wheels.join(index);
        let runtime = format!("nvidia-runtime-{nvidia}");
        let pinned = format!("{runtime}=={cuda}");
        fake_wheel(
            &dir,
            "torch",
            &format!("2.4.1+{index}"),
            &[&pinned, "filelock"],
        );
        fake_wheel(&dir, &runtime, cuda, &[]);
        fake_wheel(&dir, "filelock", "3.13.1", &[]);
    }
    let cu121 = simple_index(&wheels.join("cu121"), &w.sb.path("simple/cu121"));
    let cu118 = simple_index(&wheels.join("cu118"), &w.sb.path("simple/cu118"));

    // pip: torch swapped, the CUDA 11 wheel added, filelock left as it was.
    let venv = w.sb.path("pip-venv");
    let pip = venv_with_cu121_torch(&venv, &cu121);
    let said = paste(&pip_cmd, &pip, &cu118, &venv);
    assert!(
        said.contains("Requirement already satisfied: filelock"),
        "{said}"
    );
    let now = installed(&venv);
    assert!(now.contains("torch==2.4.1+cu118"), "{now}");
    assert!(now.contains("nvidia-runtime-cu11==11.8"), "{now}");
    assert!(!said.contains("Uninstalling filelock"), "{said}");

    // uv, the same.
    let Some(tools) = wheel::py_tools() else {
        return;
    };
    let venv = w.sb.path("uv-venv");
    venv_with_cu121_torch(&venv, &cu121);
    let said = paste(&uv_cmd, &tools.join("bin/uv"), &cu118, &venv);
    assert!(said.contains("+ torch==2.4.1+cu118"), "{said}");
    assert!(!said.contains("filelock"), "{said}");
    let now = installed(&venv);
    assert!(now.contains("torch==2.4.1+cu118"), "{now}");
    assert!(now.contains("nvidia-runtime-cu11==11.8"), "{now}");
}
