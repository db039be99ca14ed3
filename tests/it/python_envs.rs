//! Python environments follow the pin (issue 33): real uv and pip against a PyTorch-like
//! index served on 127.0.0.1, the index base as a setting, and `CONDA_OVERRIDE_CUDA`.

use crate::common::proxy_world as world;
use crate::common::server;
use crate::common::wheel;

use crate::common::*;
use server::Server;
use std::io::Write;
use std::path::{Path, PathBuf};
use wheel::py_tools;
use world::World as ProxyWorld;

/// A tiny wheel of `torch` at `version`: METADATA, WHEEL and RECORD, as an installer reads.
fn fake_wheel(version: &str) -> Vec<u8> {
    let info = format!("torch-{version}.dist-info");
    let files = [
        ("torch/__init__.py".to_string(), format!("__version__ = \"{version}\"\n")),
        (
            format!("{info}/METADATA"),
            format!("Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"),
        ),
        (
            format!("{info}/WHEEL"),
            "Wheel-Version: 1.0\nGenerator: gpuenv-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n".into(),
        ),
    ];
    let mut record = String::new();
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut buf);
    let opts = zip::write::SimpleFileOptions::default();
    for (name, body) in &files {
        zip.start_file(name.as_str(), opts).unwrap();
        zip.write_all(body.as_bytes()).unwrap();
        record.push_str(&format!("{name},,\n"));
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    zip.start_file(format!("{info}/RECORD"), opts).unwrap();
    zip.write_all(record.as_bytes()).unwrap();
    zip.finish().unwrap();
    buf.into_inner()
}

/// PyPI's simple layout under `/simple/` (a CPU torch) and PyTorch's under `/whl/cuXYZ/`.
fn serve_indexes() -> Server {
    let server = Server::start();
    let add = |dir: &str, version: &str| {
        let file = format!("torch-{}-py3-none-any.whl", version.replace('+', "%2B"));
        let real = format!("torch-{version}-py3-none-any.whl");
        server.put(
            &format!("/{dir}/files/{file}"),
            fake_wheel(version),
            "application/octet-stream",
        );
        server.put(
            &format!("/{dir}/files/{real}"),
            fake_wheel(version),
            "application/octet-stream",
        );
        let page = format!(
            "<!DOCTYPE html><html><body><a href=\"/{dir}/files/{file}\">{real}</a></body></html>\n"
        );
        server.put(&format!("/{dir}/torch/"), page.clone(), "text/html");
        server.put(&format!("/{dir}/torch"), page, "text/html");
    };
    add("simple", "2.15.0");
    add("whl/cu132", "2.15.0+cu132");
    add("whl/cu130", "2.15.0+cu130");
    server
}

struct World {
    sb: Sandbox,
    server: Server,
    proj: PathBuf,
    tools: PathBuf,
}

fn world() -> Option<World> {
    let tools = py_tools()?;
    let sb = Sandbox::new();
    for (name, version) in [("cuda-13.2", "13.2.78"), ("cuda-13.0", "13.0.88")] {
        let root = cuda_runfile(&sb.path(&format!("opt/{name}")), version);
        sb.ok(&["link", name, root.to_str().unwrap()]);
    }
    let proj = sb.path("proj");
    write(
        &proj.join("pyproject.toml"),
        "[project]\nname = \"app\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\ndependencies = [\"torch\"]\n",
    );
    let server = serve_indexes();
    let w = World {
        sb,
        server,
        proj,
        tools,
    };
    w.pin("13.2");
    Some(w)
}

impl World {
    fn pin(&self, release: &str) {
        write(
            &self.proj.join("gpuenv.toml"),
            &format!("[toolchain]\ncuda = \"{release}\"\n\n[torch]\nindex = \"auto\"\n"),
        );
        succeeded(
            &self
                .sb
                .gpuenv()
                .current_dir(&self.proj)
                .arg("trust")
                .output()
                .unwrap(),
        );
    }

    /// `gpuenv run -- <args>` in the project, the test's "PyPI" as the default index.
    fn run(&self, args: &[&str]) -> String {
        let out = self
            .sb
            .gpuenv()
            .current_dir(&self.proj)
            .env("GPUENV_TORCH_INDEX_URL", self.server.url("/whl"))
            .env("UV_DEFAULT_INDEX", self.server.url("/simple"))
            .env("PIP_INDEX_URL", self.server.url("/simple"))
            .env("UV_CACHE_DIR", self.sb.path("uv-cache"))
            .env("UV_PYTHON_DOWNLOADS", "never")
            .env("UV_NO_PROGRESS", "1")
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("PIP_NO_CACHE_DIR", "1")
            .arg("run")
            .arg("--")
            .args(args)
            .output()
            .unwrap();
        succeeded(&out)
    }

    fn uv(&self) -> String {
        self.tools.join("bin/uv").to_string_lossy().into_owned()
    }

    fn locked_torch(&self) -> String {
        let lock = fs_err::read_to_string(self.proj.join("uv.lock")).unwrap();
        let doc: toml::Value = lock.parse().unwrap();
        let torch = doc["package"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"].as_str() == Some("torch"))
            .unwrap_or_else(|| panic!("no torch in uv.lock:\n{lock}"));
        format!(
            "{} {}",
            torch["version"].as_str().unwrap(),
            torch["source"]["registry"].as_str().unwrap_or("?")
        )
    }
}

#[test]
fn uv_lock_and_sync_and_pip_take_torch_from_the_pinned_toolkits_index() {
    let Some(w) = world() else { return };
    let uv = w.uv();
    w.run(&[&uv, "lock"]);
    assert_eq!(
        w.locked_torch(),
        format!("2.15.0+cu132 {}", w.server.url("/whl/cu132"))
    );
    w.run(&[&uv, "sync", "--python", "python3"]);
    let installed = w.proj.join(".venv/lib");
    let found: Vec<String> = walkdir::WalkDir::new(&installed)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("torch-") && n.ends_with(".dist-info"))
        .collect();
    assert_eq!(
        found,
        ["torch-2.15.0+cu132.dist-info"],
        "{}",
        installed.display()
    );

    // The pin moves: the next lock follows it, without being told to upgrade.
    w.pin("13.0");
    w.run(&[&uv, "lock"]);
    assert_eq!(
        w.locked_torch(),
        format!("2.15.0+cu130 {}", w.server.url("/whl/cu130"))
    );

    // pip in the same environment takes the same index.
    let dl = w.sb.path("dl");
    w.run(&[
        "python3",
        "-m",
        "pip",
        "download",
        "--no-deps",
        "torch",
        "-d",
        dl.to_str().unwrap(),
    ]);
    let names: Vec<String> = fs_err::read_dir(&dl)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["torch-2.15.0+cu130-py3-none-any.whl"]);
}

fn env_json(sb: &Sandbox, proj: &Path, vars: &[(&str, &str)]) -> serde_json::Value {
    let mut cmd = sb.gpuenv();
    cmd.current_dir(proj).args(["env", "--shell", "json"]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    serde_json::from_str(&succeeded(&cmd.output().unwrap())).unwrap()
}

#[test]
fn the_index_base_is_a_setting_every_named_index_uses() {
    let sb = Sandbox::new();
    let proj = trusted_torch_auto_13_2(&sb);
    let vars = env_json(&sb, &proj, &[]);
    assert_eq!(
        vars["PIP_EXTRA_INDEX_URL"],
        "https://download.pytorch.org/whl/cu132"
    );
    assert_eq!(
        vars["UV_INDEX"],
        "pytorch=https://download.pytorch.org/whl/cu132"
    );

    // The site config names a mirror; the user's settings beat it; the variable beats both.
    let site = sb.path("site.toml");
    write(
        &site,
        "[torch]\nindex-url = \"https://site.example/pytorch/whl/\"\n",
    );
    let site_s = site.to_str().unwrap();
    let vars = env_json(&sb, &proj, &[("GPUENV_SYSTEM_CONFIG", site_s)]);
    assert_eq!(
        vars["PIP_EXTRA_INDEX_URL"],
        "https://site.example/pytorch/whl/cu132"
    );

    let settings = sb.gpuenv_home().join("settings.toml");
    let text = fs_err::read_to_string(&settings).unwrap();
    write(
        &settings,
        &format!("{text}\n[torch]\nindex-url = \"https://mine.example/whl\"\n"),
    );
    let vars = env_json(&sb, &proj, &[("GPUENV_SYSTEM_CONFIG", site_s)]);
    assert_eq!(vars["UV_INDEX"], "pytorch=https://mine.example/whl/cu132");

    let mirror = [("GPUENV_TORCH_INDEX_URL", "http://mirror.local/whl")];
    let vars = env_json(&sb, &proj, &mirror);
    assert_eq!(vars["PIP_EXTRA_INDEX_URL"], "http://mirror.local/whl/cu132");
    assert_eq!(vars["UV_INDEX"], "pytorch=http://mirror.local/whl/cu132");

    // `torch index` names it too.
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("GPUENV_TORCH_INDEX_URL", "http://mirror.local/whl")
        .args(["torch", "index", "--json"])
        .output()
        .unwrap();
    let pick: serde_json::Value = serde_json::from_str(&succeeded(&out)).unwrap();
    assert_eq!(
        pick["pip"], "pip install torch --index-url http://mirror.local/whl/cu132",
        "{pick}"
    );
}

#[test]
fn the_guards_refusal_names_the_mirror() {
    let w = ProxyWorld::new("11.8");
    let mirror = [("GPUENV_TORCH_INDEX_URL", "http://mirror.local/whl")];
    let out = w.run(&w.view_nvcc("cuda-11.8"), &w.ext_args(), &mirror);
    let err = world::stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--index-url http://mirror.local/whl/cu118"),
        "{err}"
    );
    assert!(!err.contains("download.pytorch.org"), "{err}");
}

#[test]
fn conda_override_cuda_stands_in_only_where_no_driver_is_seen() {
    let sb = Sandbox::new();
    let proj = trusted_torch_auto_13_2(&sb);
    let none = sb.path("no-driver");
    fs_err::create_dir_all(&none).unwrap();
    let vars = env_json(
        &sb,
        &proj,
        &[("GPUENV_DOCTOR_ROOT", none.to_str().unwrap())],
    );
    assert_eq!(vars["CONDA_OVERRIDE_CUDA"], "13.2", "{vars}");

    let with = sb.path("driver");
    write(
        &with.join("proc/driver/nvidia/version"),
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:14 UTC 2025\n",
    );
    let vars = env_json(
        &sb,
        &proj,
        &[("GPUENV_DOCTOR_ROOT", with.to_str().unwrap())],
    );
    assert!(vars.get("CONDA_OVERRIDE_CUDA").is_none(), "{vars}");
}

#[test]
fn write_pyproject_routes_torch_to_the_pinned_index_keeping_the_file_and_check_says_when_it_drifts()
{
    let Some(w) = world() else { return };
    let file = w.proj.join("pyproject.toml");
    let before = fs_err::read_to_string(&file).unwrap();
    write(&file, &format!("# the app\n{before}# trailing comment\n"));
    let mirror = w.server.url("/whl");
    let gpuenv = |args: &[&str]| {
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .env("GPUENV_TORCH_INDEX_URL", &mirror)
            .args(args)
            .output()
            .unwrap()
    };
    let check = || -> serde_json::Value {
        let out = gpuenv(&["check", "--json"]);
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    };
    assert_eq!(check()["pyproject"], serde_json::json!([]));

    succeeded(&gpuenv(&["torch", "index", "--write-pyproject"]));
    let text = fs_err::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# the app\n[project]\nname = \"app\"\n"),
        "{text}"
    );
    assert!(text.contains("# trailing comment\n"), "{text}");
    assert!(
        text.contains(&format!(
            "[[tool.uv.index]]\nname = \"pytorch\"\nurl = \"{mirror}/cu132\"\nexplicit = true\n"
        )),
        "{text}"
    );
    assert!(text.contains("torch = { index = \"pytorch\" }"), "{text}");
    assert_eq!(check()["pyproject"], serde_json::json!([]));
    let uv = w.uv();
    w.run(&[&uv, "lock"]);
    assert_eq!(w.locked_torch(), format!("2.15.0+cu132 {mirror}/cu132"));

    // The pin moves; the file still names cu132: check says so, and the rewrite follows.
    w.pin("13.0");
    let said = check();
    let lines = said["pyproject"].as_array().unwrap();
    assert!(!lines.is_empty(), "{said}");
    assert!(
        lines[0]
            .as_str()
            .unwrap()
            .contains(&format!("{mirror}/cu132")),
        "{said}"
    );
    succeeded(&gpuenv(&["torch", "index", "--write-pyproject"]));
    assert_eq!(check()["pyproject"], serde_json::json!([]));
    w.run(&[&uv, "lock"]);
    assert_eq!(w.locked_torch(), format!("2.15.0+cu130 {mirror}/cu130"));
}

/// `gpuenv pin` moves the project's CUDA after `--write-pyproject`: the index gpuenv wrote
/// follows the pin (the file kept otherwise), pin names the one command left (`uv lock`),
/// and after it `uv lock --check` passes without gpuenv's environment, as a colleague's or
/// CI's `uv sync --locked` would. An index of the user's own (a mirror not named
/// `pytorch`) is never touched.
#[test]
fn pin_moves_the_pyproject_index_gpuenv_wrote_and_uv_lock_check_passes_without_gpuenv() {
    let Some(w) = world() else { return };
    let file = w.proj.join("pyproject.toml");
    let before = fs_err::read_to_string(&file).unwrap();
    write(&file, &format!("# the app\n{before}"));
    let mirror = w.server.url("/whl");
    let gpuenv = |args: &[&str]| {
        w.sb.gpuenv()
            .current_dir(&w.proj)
            .env("GPUENV_TORCH_INDEX_URL", &mirror)
            .args(args)
            .output()
            .unwrap()
    };
    succeeded(&gpuenv(&["torch", "index", "--write-pyproject"]));
    let uv = w.uv();
    // uv alone, as a colleague or CI runs it: no gpuenv environment.
    let plain_uv = |args: &[&str]| {
        std::process::Command::new(&uv)
            .current_dir(&w.proj)
            .env_clear()
            .env("HOME", w.sb.home())
            .env("PATH", "/usr/bin:/bin")
            .env("UV_DEFAULT_INDEX", w.server.url("/simple"))
            .env("UV_CACHE_DIR", w.sb.path("uv-cache"))
            .env("UV_PYTHON_DOWNLOADS", "never")
            .env("UV_NO_PROGRESS", "1")
            .args(args)
            .output()
            .unwrap()
    };
    succeeded(&plain_uv(&["lock"]));
    assert_eq!(w.locked_torch(), format!("2.15.0+cu132 {mirror}/cu132"));

    let out = gpuenv(&["pin", "cuda-13.0"]);
    let said = succeeded(&out) + &String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!(
            "the index `pytorch` gpuenv wrote follows the pin, {mirror}/cu132 -> {mirror}/cu130; run `uv lock`"
        )),
        "{said}"
    );
    let text = fs_err::read_to_string(&file).unwrap();
    assert!(text.starts_with("# the app\n[project]\n"), "{text}");
    assert!(
        text.contains(&format!("url = \"{mirror}/cu130\"")),
        "{text}"
    );
    assert!(!text.contains("cu132"), "{text}");

    // The one command pin named, then the check a colleague's `uv sync --locked` makes.
    let check = plain_uv(&["lock", "--check"]);
    assert!(!check.status.success(), "the old lock no longer matches");
    succeeded(&plain_uv(&["lock"]));
    succeeded(&plain_uv(&["lock", "--check"]));
    assert_eq!(w.locked_torch(), format!("2.15.0+cu130 {mirror}/cu130"));

    // An index of the user's own under another name stays where they put it.
    let own = text
        .replace("name = \"pytorch\"", "name = \"ours\"")
        .replace("index = \"pytorch\"", "index = \"ours\"");
    write(&file, &own);
    succeeded(&gpuenv(&["pin", "cuda-13.2"]));
    assert_eq!(fs_err::read_to_string(&file).unwrap(), own);
}

/// In a shell with the hook, exporting `GPUENV_TORCH_INDEX_URL` (a mirror) moves `UV_INDEX`
/// and `PIP_EXTRA_INDEX_URL` to it at the next prompt, without a `cd`; unsetting it moves
/// them back.
#[test]
fn the_hook_follows_an_exported_torch_index_mirror_at_the_next_prompt() {
    let Some(w) = world() else { return };
    let (init, prompt, _) = shells::dialect("bash");
    let script = format!(
        "{init}\n{prompt}\necho \"1 $UV_INDEX\"\nexport GPUENV_TORCH_INDEX_URL=http://mirror.example/whl\n{prompt}\necho \"2 $UV_INDEX|$PIP_EXTRA_INDEX_URL\"\nunset GPUENV_TORCH_INDEX_URL\n{prompt}\necho \"3 $UV_INDEX\"\n"
    );
    let bin = assert_cmd::cargo::cargo_bin("gpuenv");
    let home = w.sb.home();
    let gh = w.sb.gpuenv_home();
    let env: Vec<(&str, &std::ffi::OsStr)> = vec![
        ("HOME", home.as_os_str()),
        ("GPUENV_HOME", gh.as_os_str()),
        ("PATH", std::ffi::OsStr::new("/usr/bin:/bin")),
        ("GPUENV_BIN", bin.as_os_str()),
        ("LANG", std::ffi::OsStr::new("C.UTF-8")),
    ];
    let out = shells::run("bash", &script, &w.proj, &env);
    let said = succeeded(&out);
    let lines: Vec<&str> = said.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("1 pytorch=https://download.pytorch.org/whl/cu132")),
        "{said}"
    );
    assert!(
        lines.iter().any(
            |l| l.starts_with("2 pytorch=http://mirror.example/whl/cu132|")
                && l.contains("http://mirror.example/whl/cu132")
        ),
        "{said}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("3 pytorch=https://download.pytorch.org/whl/cu132")),
        "{said}"
    );
}
