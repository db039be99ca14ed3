//! A real site: root fills a store under umask 022 as docs/clusters.md says, and other
//! accounts (made for the test with useradd, run through setpriv) use it: they list it, pin
//! it, compile a real CUDA object with its real nvcc 13 through the proxy, read
//! `$CUDA_HOME/version.json`, load its exported module files in real Lmod and real Tcl
//! Environment Modules (every per-user variable in their own home: the torch JIT dir, where a
//! real torch's `load_inline` builds and imports, and the kernel caches Triton, CuPy and
//! FlashInfer make and write), and a colleague reads a shared project after
//! `gpuenv trust --safe-directory`.

use crate::common;
use crate::common::accounts;
use crate::common::modules;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::real::{index_reachable, test_cache, REAL_VARS};
use crate::common::*;
use accounts::{Account, Site};

const KERNEL: &str = r#"#include <cuda_runtime.h>
__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }
int main() { float *d; return cudaMalloc(&d, 4) != cudaSuccess; }
"#;

/// Root's part: both binaries system-wide, the store filled under umask 022 from NVIDIA's
/// CUDA 13 wheels (the test cache's downloads), module files exported for both systems,
/// the site config naming the store. Returns the toolchain's name.
struct Store {
    site: Site,
    bin: PathBuf,
    name: String,
}

fn as_root(site: &Site, bin: &Path, script: &str) -> Output {
    let mut cmd = Command::new("bash");
    cmd.args([
        "--norc",
        "--noprofile",
        "-c",
        &format!("set -e\numask 022\n{script}"),
    ])
    .env_clear()
    .env("HOME", site.dir("root-home"))
    .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
    .env("LANG", "C.UTF-8")
    .env("NO_COLOR", "1")
    .env("SITE", site.dir.path())
    .env("GPUENV_DOWNLOAD_CACHE", test_cache().join("downloads"));
    for v in REAL_VARS {
        if let Some(val) = std::env::var_os(v) {
            cmd.env(v, val);
        }
    }
    cmd.current_dir(site.dir.path()).output().unwrap()
}

fn filled_store() -> Option<Store> {
    filled_store_of("13.0")
}

/// The store filled with the newest CUDA `release` (major.minor) on the index.
fn filled_store_of(release: &str) -> Option<Store> {
    if !accounts::can_make_accounts() || !have_tool("g++") || !index_reachable() {
        return None;
    }
    let site = Site::new();
    let bin = site.install_binaries();
    site.dir("etc/gpuenv");
    succeeded(&as_root(
        &site,
        &bin,
        &format!(
            r#"
export GPUENV_HOME="$SITE/shared/gpuenv"
gpuenv install cuda-{release} --source pypi --profile minimal
gpuenv module export --format lmod --dir "$SITE/modules/lmod"
gpuenv module export --format tcl --dir "$SITE/modules/tcl"
printf 'upstreams = ["%s"]\n' "$GPUENV_HOME" > "$SITE/etc/gpuenv/config.toml"
"#
        ),
    ));
    let list = succeeded(&as_root(
        &site,
        &bin,
        "GPUENV_HOME=\"$SITE/shared/gpuenv\" gpuenv list --json",
    ));
    let rows: serde_json::Value = serde_json::from_str(&list).unwrap();
    let name = rows[0]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with(&format!("cuda-{release}.")), "{list}");
    Some(Store { site, bin, name })
}

impl Store {
    fn vars(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "GPUENV_SYSTEM_CONFIG",
                self.site
                    .path("etc/gpuenv/config.toml")
                    .display()
                    .to_string(),
            ),
            ("SITE", self.site.dir.path().display().to_string()),
            ("NAME", self.name.clone()),
            ("KERNEL", KERNEL.to_string()),
        ]
    }

    fn run_as(&self, who: &Account, script: &str, cwd: &Path) -> Output {
        let vars = self.vars();
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        who.bash(&format!("set -e\n{script}"), &self.bin, &vars, cwd)
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn mode(p: &Path) -> u32 {
    fs_err::metadata(p).unwrap().mode() & 0o7777
}

#[test]
fn every_file_root_writes_in_the_store_is_readable_by_all_and_writable_by_root_alone() {
    let Some(store) = filled_store() else {
        return;
    };
    let home = store.site.path("shared/gpuenv");
    let root = home.join("toolchains").join(&store.name);
    for (file, expected) in [
        (home.join("settings.toml"), 0o644),
        (root.join(".gpuenv-install.toml"), 0o444),
        (root.join("version.json"), 0o444),
        (
            store
                .site
                .path(&format!("modules/tcl/cuda/{}", &store.name[5..])),
            0o644,
        ),
        (
            store
                .site
                .path(&format!("modules/lmod/cuda/{}.lua", &store.name[5..])),
            0o644,
        ),
    ] {
        assert_eq!(mode(&file), expected, "{}", file.display());
    }
    // No file or directory under the store is writable by group or others.
    let out = Command::new("find")
        .arg(&home)
        .args(["-perm", "/022", "!", "-type", "l"])
        .output()
        .unwrap();
    assert_eq!(succeeded(&out), "", "writable by others than root");
}

#[test]
fn a_user_lists_pins_compiles_with_the_stores_real_nvcc_and_loads_its_module_files() {
    let Some(store) = filled_store() else {
        return;
    };
    let Some(lmod) = modules::init_line(modules::System::Lmod) else {
        return;
    };
    if modules::init_line(modules::System::Tcl).is_none() {
        return;
    }
    // Tcl Environment Modules from the test cache, where the account can reach it.
    let envmod = store.site.path("environment-modules");
    succeeded(
        &Command::new("cp")
            .arg("-a")
            .arg(modules::tcl_modulecmd().ancestors().nth(4).unwrap())
            .arg(&envmod)
            .output()
            .unwrap(),
    );
    let tcl = format!(
        "eval \"$(tclsh8.6 {}/usr/lib/x86_64-linux-gnu/modulecmd.tcl bash autoinit)\"",
        envmod.display()
    );
    let user = Account::create(&store.site, "u");
    let h = &user.home;

    // A fresh user: no home of gpuenv's yet, and no word about shims on any command.
    let out = store.run_as(
        &user,
        r#"
umask 027
gpuenv list
mkdir proj && cd proj
gpuenv pin cuda-13.0
stat -c %a gpuenv.toml > ../toml-mode
gpuenv run -- nvcc --version > ../nvcc-version
gpuenv run -- sh -c 'cat "$CUDA_HOME/version.json"' > ../version.json
gpuenv env --shell json > ../env.json
printf '%s' "$KERNEL" > k.cu
gpuenv run -- nvcc -c k.cu -o k.o
nvcc_shim="$HOME/.local/share/gpuenv/shims/nvcc"
"$nvcc_shim" -c k.cu -o k2.o
"#,
        h,
    );
    let said = stderr(&out);
    succeeded(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&store.name),
        "the user lists the store's toolchain: {said}"
    );
    for wrong in ["cannot be used", "shims dir", "reshim", "Permission denied"] {
        assert!(!said.contains(wrong), "{wrong}: {said}");
    }
    // A new project file follows the umask (027), as an editor's would.
    assert_eq!(
        fs_err::read_to_string(h.join("toml-mode")).unwrap().trim(),
        "640"
    );
    assert!(fs_err::read_to_string(h.join("nvcc-version"))
        .unwrap()
        .contains("Cuda compilation tools, release 13.0"));
    let version: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(h.join("version.json")).unwrap()).unwrap();
    assert!(version["cuda"]["version"]
        .as_str()
        .unwrap()
        .starts_with("13.0"));
    for obj in ["proj/k.o", "proj/k2.o"] {
        let meta = fs_err::metadata(h.join(obj)).unwrap();
        assert!(meta.len() > 1000, "{obj} is a real object");
        assert_eq!(meta.uid(), user.uid, "{obj} is the user's");
    }
    // The JIT dir of `gpuenv env` is in the user's own home.
    let env: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(h.join("env.json")).unwrap()).unwrap();
    let jit = env["TORCH_EXTENSIONS_DIR"].as_str().unwrap();
    assert!(jit.starts_with(h.to_str().unwrap()), "{jit}");

    // The module files root exported, in both module systems.
    for (system, init) in [("lmod", &lmod), ("tcl", &tcl)] {
        let script = format!(
            r#"{init}
module use "$SITE/modules/{system}"
module load "cuda/${{NAME#cuda-}}"
for v in TORCH_EXTENSIONS_DIR TRITON_CACHE_DIR CUPY_CACHE_DIR FLASHINFER_WORKSPACE_BASE; do
    printenv "$v" > {system}-$v
done
mkdir -p "$TORCH_EXTENSIONS_DIR"
# What Triton, CuPy and FlashInfer do with their cache variable: make it and write there.
python3 -c '
import os, tempfile
for v in ("TRITON_CACHE_DIR", "CUPY_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE"):
    d = os.environ[v]
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d)
    os.write(fd, b"kernel")
    os.close(fd)
    os.replace(tmp, os.path.join(d, "kernel.cubin"))
'
nvcc --version > {system}-nvcc
cd proj && nvcc -c k.cu -o {system}.o
"#
        );
        let out = store.run_as(&user, &script, h);
        succeeded(&out);
        for (var, dir) in [
            ("TORCH_EXTENSIONS_DIR", ".cache/gpuenv/torch-extensions"),
            ("TRITON_CACHE_DIR", ".cache/gpuenv/jit/triton"),
            ("CUPY_CACHE_DIR", ".cache/gpuenv/jit/cupy"),
            ("FLASHINFER_WORKSPACE_BASE", ".cache/gpuenv/jit/flashinfer"),
        ] {
            let got = fs_err::read_to_string(h.join(format!("{system}-{var}"))).unwrap();
            assert_eq!(
                got.trim(),
                h.join(format!("{dir}/{}", store.name))
                    .display()
                    .to_string(),
                "{system}: {var}"
            );
            assert_eq!(
                fs_err::metadata(got.trim()).unwrap().uid(),
                user.uid,
                "{system}: {var} is the user's own"
            );
            if var != "TORCH_EXTENSIONS_DIR" {
                let kernel = Path::new(got.trim()).join("kernel.cubin");
                assert_eq!(fs_err::metadata(&kernel).unwrap().uid(), user.uid);
            }
        }
        assert!(fs_err::read_to_string(h.join(format!("{system}-nvcc")))
            .unwrap()
            .contains("release 13.0"));
        assert!(
            fs_err::metadata(h.join(format!("proj/{system}.o")))
                .unwrap()
                .len()
                > 1000
        );
    }
}

#[test]
fn a_colleague_reads_a_shared_project_after_trust_safe_directory() {
    let Some(store) = filled_store() else {
        return;
    };
    let user = Account::create(&store.site, "o");
    let colleague = Account::create(&store.site, "c");
    // A team scratch directory, as /scratch/team is: every user may make projects there.
    let team = store.site.dir("scratch/team");
    fs_err::set_permissions(&team, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
    let out = store.run_as(
        &user,
        "umask 022\nmkdir proj && cd proj && gpuenv pin cuda-13.0 && gpuenv pin --arch 9.0\nchmod 0644 gpuenv.toml",
        &team,
    );
    succeeded(&out);
    let proj = team.join("proj");
    assert_eq!(mode(&proj.join("gpuenv.toml")), 0o644);

    let show = |who: &Account| store.run_as(who, "gpuenv show", &proj);
    let before = show(&colleague);
    let said = stderr(&before);
    assert!(
        said.contains(&user.name) || said.contains("another user"),
        "{said}"
    );
    assert!(!String::from_utf8_lossy(&before.stdout).contains("gpuenv.toml"));

    succeeded(&store.run_as(&colleague, "gpuenv trust --safe-directory .", &proj));
    let after = show(&colleague);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&after.stdout),
        stderr(&after)
    );
    succeeded(&after);
    assert!(text.contains(&store.name), "{text}");
    assert!(
        text.contains(&proj.join("gpuenv.toml").display().to_string()),
        "{text}"
    );
    let nvcc = store.run_as(&colleague, "gpuenv run -- nvcc --version", &proj);
    assert!(succeeded(&nvcc).contains("release 13.0"));
}

/// torch's JIT (`load()` of a tiny CUDA kernel and a module without torch's headers: they
/// cost CI a minute through nvcc, where `load_inline` puts them, and 20 s through g++) by an
/// account that uses the store through its module file in real Lmod, with the real torch
/// (2.15, a CUDA 13.2 build; the store holds 13.2 so the guard lets it through): the build
/// runs the store's nvcc through the proxy in the account's own TORCH_EXTENSIONS_DIR, never
/// in the read-only store, and the extension imports.
#[test]
fn a_users_torch_jit_builds_in_their_own_space_with_the_stores_module_file() {
    if !have_tool("ninja") {
        return;
    }
    let Some(venv) = common::real::torch_venv() else {
        return;
    };
    let Some(lmod) = modules::init_line(modules::System::Lmod) else {
        return;
    };
    let Some(store) = filled_store_of("13.2") else {
        return;
    };
    let py = store.site.python_for_all(&venv);
    let user = Account::create(&store.site, "j");
    let h = &user.home;
    let script = format!(
        r#"{lmod}
module use "$SITE/modules/lmod"
module load "cuda/${{NAME#cuda-}}"
export TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=2
export LD_LIBRARY_PATH="{lib}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"
cat > twice_kernel.cu <<'CU'
__global__ void twice_kernel(float* x, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}}
void twice_launch(float* x, int n) {{ twice_kernel<<<(n + 255) / 256, 256>>>(x, n); }}
CU
cat > twice.cpp <<'CPP'
{binding}CPP
"{python}" - > jit.out <<'PY'
import os
from torch.utils.cpp_extension import load
m = load(name="twice_jit", sources=["twice.cpp", "twice_kernel.cu"])
print(os.environ["TORCH_EXTENSIONS_DIR"])
print(m.__file__)
print(callable(m.twice))
PY
"#,
        lib = py.lib_dir.display(),
        python = py.python.display(),
        binding = common::real::plain_module("twice_jit"),
    );
    let out = store.run_as(&user, &script, h);
    let said = stderr(&out);
    succeeded(&out);
    let text = fs_err::read_to_string(h.join("jit.out")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let ours = h.join(format!(".cache/gpuenv/torch-extensions/{}", store.name));
    assert_eq!(lines.first().copied(), ours.to_str(), "{text}{said}");
    let built = Path::new(lines[1]);
    assert!(built.starts_with(ours.join("twice_jit")), "{text}{said}");
    assert_eq!(lines[2], "True", "the extension imports: {text}{said}");
    assert_eq!(
        fs_err::metadata(built).unwrap().uid(),
        user.uid,
        "the extension is the user's own"
    );
    // Its CUDA object came from the store's nvcc, in the user's build dir.
    let objects = Command::new("find")
        .arg(ours.join("twice_jit"))
        .args(["-name", "*.cuda.o"])
        .output()
        .unwrap();
    assert!(!succeeded(&objects).trim().is_empty(), "{said}");
    // Nothing of the user's was written in the store.
    let theirs = Command::new("find")
        .arg(store.site.path("shared/gpuenv"))
        .args(["-user", &user.name])
        .output()
        .unwrap();
    assert_eq!(succeeded(&theirs), "", "the store holds the user's files");
}
