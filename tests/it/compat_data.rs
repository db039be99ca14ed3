//! gpuenv's compatibility data (minimum drivers, host GCC, archs, PyTorch's wheel indexes):
//! the real toolkits of the suite agree with it; a release newer than the data is "not
//! known", never guessed; `gpuenv self update-data` refreshes it from redist manifests a
//! local server serves and from the toolkits registered here; `gpuenv torch index` and
//! `[torch] index = "auto"` read the same data.

use crate::common::server;

use crate::common::real::{debian_cuda_toolkit, real_cuda13, real_gpuenv, torch_venv};
use crate::common::*;
use serde_json::Value;
use server::Server;
use std::path::PathBuf;

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_real_toolkits_headers_and_nvcc_agree_with_the_data() {
    let (Some(cu13), Some(cu118)) = (real_cuda13(), debian_cuda_toolkit()) else {
        return;
    };
    let sb = Sandbox::new();
    sb.ok(&["link", "cuda-13.0", cu13.to_str().unwrap()]);
    // Debian's tree is spread over /usr: discovered under its extraction root.
    let root = cu118.ancestors().nth(3).unwrap();
    let out = sb
        .gpuenv()
        .env("GPUENV_DISCOVER_ROOTS", root)
        .args(["discover", "--register"])
        .output()
        .unwrap();
    succeeded(&out);

    let data = json(&sb.ok(&["self", "data", "--json"]));
    let toolkits = data["toolkits"].as_array().unwrap();
    assert_eq!(toolkits.len(), 2, "{data}");
    for t in toolkits {
        // What each tree says (host_config.h, nvcc --list-gpu-arch) is what the data says.
        assert!(t["tree_gcc_max"].is_u64(), "{t}");
        assert_eq!(t["tree_gcc_max"], t["data_gcc_max"], "{t}");
        assert!(t["tree_archs"].is_array(), "{t}");
        assert_eq!(t["tree_archs"], t["data_archs"], "{t}");
    }
    let release = |r: &str| toolkits.iter().find(|t| t["release"] == r).unwrap();
    assert_eq!(release("11.8")["tree_gcc_max"], 11);
    assert_eq!(release("13.0")["tree_gcc_max"], 15);
    // nvcc was asked once; the answer is kept per binary.
    assert!(
        sb.gpuenv_home()
            .join("cache/tree-facts")
            .read_dir()
            .unwrap()
            .count()
            >= 2
    );
}

#[test]
fn the_toolkit_of_a_real_torch_agrees_with_the_data_and_its_index_is_torchs_own() {
    let Some(venv) = torch_venv() else {
        return;
    };
    let sb = Sandbox::new();
    let out = real_gpuenv(&sb)
        .env("VIRTUAL_ENV", &venv)
        .args(["install", "torch"])
        .output()
        .unwrap();
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    // torch 2.15.0's venv has nvidia-cuda-cccl 13.3.5.0.6 beside cuda-toolkit 13.2.2:
    // the toolkit gets the release's own cccl, not the venv's.
    eprintln!("{said}");

    let data = json(&sb.ok(&["self", "data", "--json"]));
    let t = &data["toolkits"][0];
    assert_eq!(
        (&t["name"], &t["release"]),
        (&"cuda-13.2.2-torch".into(), &"13.2".into())
    );
    assert_eq!(t["tree_gcc_max"], t["data_gcc_max"], "{t}");
    assert_eq!(t["tree_archs"], t["data_archs"], "{t}");

    // Pinned to the torch, the index is the one that torch came from (2.15.0+cu132).
    let proj = sb.project("proj", "[toolchain]\ncuda = \"torch\"\n");
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("VIRTUAL_ENV", &venv)
        .args(["torch", "index"])
        .output()
        .unwrap();
    assert_eq!(
        succeeded(&out).trim(),
        "https://download.pytorch.org/whl/cu132"
    );
}

/// A CUDA 13.9 toolkit, newer than the data: its headers accept gcc <= 17 and its nvcc
/// lists sm_90 and sm_130.
fn cuda_13_9(sb: &Sandbox) -> PathBuf {
    let root = cuda_runfile(&sb.path("opt/cuda-13.9"), "13.9.0");
    write(
        &root.join("targets/x86_64-linux/include/crt/host_config.h"),
        "#if defined(__GNUC__)\n#if __GNUC__ > 17\n#error -- unsupported GNU version! gcc versions later than 17 are not supported!\n#endif\n#endif\n",
    );
    write_exe(
        &root.join("bin/nvcc"),
        &format!(
            "#!/bin/sh\ncase \"$1\" in\n--version) cat <<'EOF'\n{}EOF\n;;\n--list-gpu-arch) printf 'compute_90\\ncompute_130\\n';;\nesac\n",
            nvcc_version_text("13.9.0")
        ),
    );
    sb.ok(&["link", "cuda-13.9", root.to_str().unwrap()]);
    root
}

#[test]
fn a_release_newer_than_the_data_is_not_known_and_says_how_to_refresh() {
    let sb = Sandbox::new();
    let root = cuda_13_9(&sb);
    // Without its own header, the host compiler range of 13.9 is not guessed from 13.5.
    fs_err::remove_file(root.join("targets/x86_64-linux/include/crt/host_config.h")).unwrap();
    let proj = sb.project("proj", "[toolchain]\ncuda = \"13.9\"\n");
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["torch", "index"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("CUDA 13.9 is newer than gpuenv's data")
            && err.contains("not known to this gpuenv"),
        "{err}"
    );
    assert!(err.contains("gpuenv self update-data"), "{err}");

    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("CUDA 13.9 is newer than gpuenv's data on the host GCC it accepts"),
        "{report}"
    );
}

#[test]
fn the_torch_index_follows_the_pinned_toolkit_and_says_when_pytorch_has_none() {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.4", "cuda-12.4", "12.4.131");
    let proj = sb.project("proj", "[toolchain]\ncuda = \"12.4\"\n");
    let run = |args: &[&str]| sb.gpuenv().current_dir(&proj).args(args).output().unwrap();
    let out = run(&["torch", "index"]);
    assert_eq!(
        succeeded(&out).trim(),
        "https://download.pytorch.org/whl/cu124"
    );
    // A driver too old for CUDA 12 leaves nothing for a 12.4 toolkit.
    let out = run(&["torch", "index", "--driver", "520.61.05"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cu124 needs driver 525.60.13 or newer"),
        "{}",
        stderr(&out)
    );

    // PyTorch builds no wheels for CUDA 12.5: the neighbours are named.
    sb.linked_runfile("opt/cuda-12.5", "cuda-12.5", "12.5.40");
    write(&proj.join("gpuenv.toml"), "[toolchain]\ncuda = \"12.5\"\n");
    let out = run(&["torch", "index"]);
    let err = stderr(&out);
    assert!(err.contains("no wheel index for CUDA 12.5"), "{err}");
    assert!(
        err.contains("cuda-12.4 or cuda-12.6") && !err.contains("driver"),
        "{err}"
    );

    // Without a toolkit, the GPUs count, which uv's --torch-backend=auto ignores.
    let out = run(&[
        "torch",
        "index",
        "--any-toolkit",
        "--driver",
        "580.65.06",
        "--gpu",
        "6.1",
        "--json",
    ]);
    let pick = json(&succeeded(&out));
    assert_eq!(pick["index"], "cu126", "{pick}");
    assert_eq!(
        pick["pip"],
        "pip install torch --index-url https://download.pytorch.org/whl/cu126"
    );
}

/// In a ROCm project the CUDA indexes are wrong: `torch index` chooses among the ROCm ones
/// instead of suggesting cu132, and the doctor's FM-03 invents no `whl/rocm5.2` index.
#[test]
fn a_rocm_project_gets_no_cuda_torch_index_and_no_invented_rocm_one() {
    let sb = Sandbox::new();
    let root = rocm(&sb.path("opt/rocm-5.2.3"), "5.2.3");
    sb.ok(&["link", "rocm-5.2", root.to_str().unwrap()]);
    let proj = sb.project("proj", "[toolchain]\nrocm = \"5.2\"\n");
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .args(["torch", "index", "--driver", "580.65.06", "--gpu", "9.0"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(err.contains("no wheel index for ROCm 5.2"), "{err}");
    assert!(err.contains("gpuenv pin rocm-7.14"), "{err}");
    assert!(!err.contains("cu13") && !err.contains("driver"), "{err}");

    // A CUDA torch in the environment of a project that pins ROCm, not torch.
    let venv = sb.path("venv");
    torch_package(
        &venv.join("lib/python3.11/site-packages"),
        "2.9.0+cu130",
        Some("13.0"),
        None,
    );
    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .env("VIRTUAL_ENV", &venv)
        .args(["doctor"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    let fm03 = report
        .lines()
        .find(|l| l.contains("FM-03"))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(fm03.starts_with("warn"), "{report}");
    assert!(!report.contains("whl/rocm"), "{report}");
}

#[test]
fn torch_index_auto_exports_the_index_for_pip_and_uv_only_from_a_trusted_file() {
    let sb = Sandbox::new();
    sb.linked_runfile("opt/cuda-12.8", "cuda-12.8", "12.8.93");
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.8\"\n\n[torch]\nindex = \"auto\"\n",
    );
    let env = |sb: &Sandbox| {
        let out = sb
            .gpuenv()
            .current_dir(&proj)
            .args(["env", "--shell", "json"])
            .output()
            .unwrap();
        (json(&succeeded(&out)), stderr(&out))
    };
    let (vars, err) = env(&sb);
    assert!(vars.get("PIP_EXTRA_INDEX_URL").is_none(), "{vars}");
    assert!(
        err.contains("sets [torch] index, which is not applied until you trust the file"),
        "{err}"
    );

    let out = sb
        .gpuenv()
        .current_dir(&proj)
        .arg("trust")
        .output()
        .unwrap();
    succeeded(&out);
    let (vars, _) = env(&sb);
    assert_eq!(
        vars["PIP_EXTRA_INDEX_URL"],
        "https://download.pytorch.org/whl/cu128"
    );
    assert_eq!(vars["UV_TORCH_BACKEND"], "cu128");
}

/// NVIDIA's redist root as a local server: an index page and the manifests given
/// (release, driver, and the nvcc build where not empty).
fn redist(server: &Server, manifests: &[(&str, &str, &str)]) {
    let mut index = String::from("<html><body><pre>\n");
    for (release, driver, nvcc) in manifests {
        let name = format!("redistrib_{release}.json");
        index.push_str(&format!("<a href=\"{name}\">{name}</a>\n"));
        let mut body = serde_json::json!({
            "release_date": "2026-11-20",
            "release_label": release,
            "release_product": "cuda",
            "nvidia_driver": {"name": "NVIDIA Linux Driver", "version": driver},
        });
        if !nvcc.is_empty() {
            body["cuda_nvcc"] = serde_json::json!({"name": "CUDA NVCC", "version": nvcc});
        }
        server.put(
            &name,
            serde_json::to_vec(&body).unwrap(),
            "application/json",
        );
    }
    index.push_str("</pre></body></html>\n");
    server.put("", index, "text/html");
}

#[test]
fn update_data_learns_drivers_from_the_redist_manifests_and_limits_from_toolkits_here() {
    let server = Server::start();
    // 13.6.0 is the GA; 13.6.1's newer driver is an update's, not the minimum.
    redist(
        &server,
        &[
            ("12.4.1", "550.54.15", "12.4.131"),
            ("13.2.0", "595.45.04", "13.2.51"),
            ("13.6.0", "630.45.04", "13.6.51"),
            ("13.6.1", "630.58.03", ""),
            ("13.3.0", "610.43.02", "13.3.33"),
            // A later update shipping 13.3.1's nvcc again: that build names neither now.
            ("13.3.2", "610.43.09", "13.3.73"),
        ],
    );
    let sb = Sandbox::new();
    cuda_13_9(&sb);
    let nvcc_only = |dir: &str| {
        let root = sb.path(dir);
        nvcc_stub(&root, "13.3.73");
        root.to_str().unwrap().to_string()
    };
    sb.ok(&["link", "cuda-13.3.1", &nvcc_only("a")]);
    let before = json(&sb.ok(&["self", "data", "--json"]));
    assert_eq!(before["newest"]["driver"], "13.5");

    // PyTorch's index pages (PEP 503) on the same server: cu124 has aarch64 wheels too,
    // cu130 lacks the newest torch (2.16) that cu132 has: it ends at 2.15.
    let wheel = |index: &str, torch: &str, platform: &str| {
        format!("<a href=\"/whl/{index}/torch-{torch}%2B{index}-cp312-cp312-manylinux_2_28_{platform}.whl#sha256=00\">torch-{torch}+{index}-cp312-cp312-manylinux_2_28_{platform}.whl</a>\n")
    };
    for (index, wheels) in [
        ("cu124", vec![("2.4.0", "x86_64"), ("2.6.0", "aarch64")]),
        ("cu130", vec![("2.9.0", "x86_64"), ("2.15.1", "aarch64")]),
        ("cu132", vec![("2.14.0", "x86_64"), ("2.16.0", "x86_64")]),
    ] {
        let body: String = wheels.iter().map(|(t, p)| wheel(index, t, p)).collect();
        server.put(
            &format!("whl/{index}/torch/"),
            format!("<html><body>\n{body}</body></html>\n"),
            "text/html",
        );
    }
    let out = sb
        .gpuenv()
        .env("GPUENV_CUDA_MIRROR", server.url(""))
        .env("GPUENV_TORCH_INDEX_URL", server.url("whl"))
        .args(["self", "update-data"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("added cu124: wheels for linux-sbsa"), "{err}");
    assert!(err.contains("added cu130: torch up to 2.15"), "{err}");
    // The pages the mirror does not hold are said once, and their rows stay.
    assert!(err.contains("the torch pages of cu118, cu121"), "{err}");
    assert!(
        err.contains("added CUDA 13.6: minimum driver 630.45.04"),
        "{err}"
    );
    assert!(err.contains("added CUDA 13.9: gcc <= 17"), "{err}");
    assert!(err.contains("added CUDA 13.3.2: nvcc 13.3.73"), "{err}");
    assert!(
        !err.contains("13.2") && !err.contains("13.3: minimum driver"),
        "a release that has its driver and nvcc rows keeps them: {err}"
    );
    assert!(
        !err.contains("12.4"),
        "a row that has its driver keeps it: {err}"
    );

    let file = sb.gpuenv_home().join("facts/cuda.toml");
    let text = fs_err::read_to_string(&file).unwrap();
    assert!(
        text.contains(&format!(
            "driver: nvidia_driver in {}",
            server.url("redistrib_13.6.0.json")
        )),
        "{text}"
    );
    assert!(text.contains("archs = [90, 130]"), "{text}");
    assert!(
        text.contains(&format!(
            "torch-last: torch wheels listed at {} (none of torch 2.16)",
            server.url("whl/cu130/torch/")
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "nvcc: cuda_nvcc in {}",
            server.url("redistrib_13.3.2.json")
        )),
        "{text}"
    );
    // 13.3.73 is in 13.3.1 and 13.3.2 now: a tree with that nvcc alone is 13.3.
    let out = sb
        .gpuenv()
        .args(["link", "cuda-13.3.1-b", &nvcc_only("b")])
        .output()
        .unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("name it cuda-13.3 "), "{said}");
    let after = json(&sb.ok(&["self", "data", "--json"]));
    assert_eq!(after["origin"], file.to_str().unwrap());
    assert_eq!(after["newest"]["driver"], "13.6");
    assert_eq!(after["newest"]["gcc"], "13.9");
    assert!(after["date"].as_str().unwrap() >= before["date"].as_str().unwrap());
}

/// One chooser: in a project pinned to CUDA 13.2 that declares the GPU it runs on,
/// `torch index --gpu`, the environment and the guard's hint (`gpuenv check`, with a torch
/// built for another CUDA) name the same index, GPU by GPU; where none fits (Pascal), all
/// three refuse and say which toolkit and torch would work, not the driver.
#[test]
fn torch_index_env_and_the_guards_hint_agree_gpu_by_gpu() {
    let sb = Sandbox::new();
    let cuda = cuda_runfile(&sb.path("opt/cuda-13.2"), "13.2.78");
    sb.ok(&["link", "cuda-13.2", cuda.to_str().unwrap()]);
    sb.fake_driver("580.65.06");
    let venv = sb.path("venv");
    torch_package(
        &venv.join("lib/python3.11/site-packages"),
        "2.15.0+cu130",
        Some("13.0"),
        None,
    );
    let proj = sb.path("proj");
    let run = |args: &[&str]| {
        sb.gpuenv()
            .current_dir(&proj)
            .env("VIRTUAL_ENV", &venv)
            .args(args)
            .output()
            .unwrap()
    };
    let cu132 = "https://download.pytorch.org/whl/cu132";
    for (cc, fits) in [
        ("9.0", true),
        ("10.0", true),
        ("12.0", true),
        ("7.5", true),
        ("6.0", false),
    ] {
        write(
            &proj.join("gpuenv.toml"),
            &format!("[toolchain]\ncuda = \"13.2\"\ncuda-arch = [\"{cc}\"]\n\n[torch]\nindex = \"auto\"\n"),
        );
        succeeded(&run(&["trust"]));
        let out = run(&["torch", "index", "--gpu", cc, "--json"]);
        let answer = json(&String::from_utf8_lossy(&out.stdout));
        let vars = json(&succeeded(&run(&["env", "--shell", "json"])));
        let check = run(&["check"]);
        let hint = stderr(&check);
        assert_eq!(check.status.code(), Some(1), "{cc}: {hint}");
        if fits {
            assert_eq!(out.status.code(), Some(0), "{cc}: {answer}");
            assert_eq!(answer["url"], cu132, "{cc}: {answer}");
            assert_eq!(vars["PIP_EXTRA_INDEX_URL"], cu132, "{cc}: {vars}");
            assert_eq!(vars["UV_TORCH_BACKEND"], "cu132", "{cc}: {vars}");
            assert!(
                hint.contains(&format!("--index-url {cu132}`")),
                "{cc}: {hint}"
            );
        } else {
            assert_eq!(out.status.code(), Some(1), "{cc}: {answer}");
            assert_eq!(answer["ok"], false, "{answer}");
            assert_eq!(
                answer["ruled_out_by"],
                serde_json::json!(["gpu"]),
                "{answer}"
            );
            let said = answer["hints"].to_string();
            assert!(
                said.contains("gpuenv pin cuda-12.6")
                    && said.contains("2.14")
                    && !said.contains("driver"),
                "{answer}"
            );
            assert!(vars.get("PIP_EXTRA_INDEX_URL").is_none(), "{vars}");
            assert!(vars.get("UV_TORCH_BACKEND").is_none(), "{vars}");
            assert!(!hint.contains(cu132), "{hint}");
            assert!(
                hint.contains("cu132 wheels carry no kernels for compute capability 6.0")
                    && hint.contains("gpuenv pin cuda-12.6"),
                "{hint}"
            );
        }
    }
}

/// The sandbox's machine has no GPU, driver or nvidia-smi whatever the host has: every test
/// gives the same answer on a GPU machine. A driver a test gives it is seen.
#[test]
fn the_sandbox_sees_no_host_gpu_unless_a_test_gives_it_one() {
    let sb = Sandbox::new();
    let path = system_path();
    for dir in std::env::split_paths(&path) {
        for tool in GPU_TOOLS {
            assert!(!dir.join(tool).exists(), "{} in {}", tool, dir.display());
        }
    }
    // On a GPU machine /usr/bin holds nvidia-smi: such a directory is replaced by links to
    // everything else in it.
    let host_bin = sb.path("host-bin");
    write_exe(&host_bin.join("nvidia-smi"), "#!/bin/sh\necho 9.0\n");
    write_exe(&host_bin.join("rocminfo"), "#!/bin/sh\n");
    write_exe(&host_bin.join("cc-tool"), "#!/bin/sh\necho tool\n");
    let plain = sb.path("plain-bin");
    write_exe(&plain.join("other-tool"), "#!/bin/sh\n");
    let path = without_gpu_tools(
        &[host_bin.to_str().unwrap(), plain.to_str().unwrap()],
        &sb.path("farms"),
    );
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    assert_ne!(dirs[0], host_bin, "{path}");
    assert!(dirs[0].join("cc-tool").exists() && !dirs[0].join("nvidia-smi").exists());
    assert!(!dirs[0].join("rocminfo").exists());
    assert_eq!(dirs[1], plain, "a directory without them stays as it is");

    let pick = json(&sb.ok(&["torch", "index", "--any-toolkit", "--json"]));
    assert_eq!(pick["inputs"]["gpus"], serde_json::json!([]), "{pick}");
    assert_eq!(pick["inputs"]["driver"], serde_json::Value::Null, "{pick}");
    sb.fake_driver("535.104.05");
    let pick = json(&sb.ok(&["torch", "index", "--any-toolkit", "--json"]));
    assert_eq!(pick["inputs"]["driver"], "535.104.05", "{pick}");
    assert_eq!(pick["index"], "cu129", "{pick}");
}

/// The torch release the project's pyproject.toml asks for is part of the choice, for
/// `torch index`, the environment and `--write-pyproject` alike: cu128 ends at torch 2.11.
#[test]
fn the_pyprojects_torch_requirement_is_part_of_the_choice() {
    let sb = Sandbox::new();
    let cuda = cuda_runfile(&sb.path("opt/cuda-12.8"), "12.8.93");
    sb.ok(&["link", "cuda-12.8", cuda.to_str().unwrap()]);
    let proj = sb.path("proj");
    write(
        &proj.join("gpuenv.toml"),
        "[toolchain]\ncuda = \"12.8\"\n\n[torch]\nindex = \"auto\"\n",
    );
    let run = |args: &[&str]| sb.gpuenv().current_dir(&proj).args(args).output().unwrap();
    succeeded(&run(&["trust"]));
    let pyproject = |req: &str| {
        write(
            &proj.join("pyproject.toml"),
            &format!(
                "[project]\nname = \"p\"\nversion = \"0\"\ndependencies = [\"numpy\", \"{req}\"]\n"
            ),
        )
    };

    pyproject("torch>=2.9,<2.12");
    let answer = json(&succeeded(&run(&["torch", "index", "--json"])));
    assert_eq!(answer["index"], "cu128", "{answer}");
    assert_eq!(answer["inputs"]["torch"], "torch 2.9–2.11", "{answer}");
    let vars = json(&succeeded(&run(&["env", "--shell", "json"])));
    assert_eq!(vars["UV_TORCH_BACKEND"], "cu128", "{vars}");

    pyproject("torch>=2.12");
    let out = run(&["torch", "index", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let answer = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        answer["ruled_out_by"],
        serde_json::json!(["torch"]),
        "{answer}"
    );
    let said = answer["hints"].to_string();
    assert!(
        said.contains("torch 2.7–2.11") && said.contains("gpuenv pin cuda-13.2"),
        "{answer}"
    );
    assert!(!said.contains("driver"), "{answer}");
    let vars = json(&succeeded(&run(&["env", "--shell", "json"])));
    assert!(vars.get("UV_TORCH_BACKEND").is_none(), "{vars}");
    let out = run(&["torch", "index", "--write-pyproject"]);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cu128 ends at torch 2.11"),
        "{}",
        stderr(&out)
    );
    // `--torch` overrides the file.
    let answer = json(&succeeded(&run(&[
        "torch", "index", "--torch", "2.10", "--json",
    ])));
    assert_eq!(answer["index"], "cu128", "{answer}");
}
