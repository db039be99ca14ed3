//! Module systems (Lmod, Tcl Environment Modules): writing module files for gpuenv's
//! toolchains, and reading a site's module files (never running them) for the toolkit roots
//! they name, both on `MODULEPATH` and among the modules loaded now (`_LMFILES_`).

pub mod parse;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::path_list;
use crate::plan::env::{Change, Op};
use crate::store::toolchain::Kind;

/// How deep below a MODULEPATH entry to look (`cuda/11.8.lua` is depth 2).
const MAX_DEPTH: usize = 6;

/// A toolkit root named by a module file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleRoot {
    pub kind: Kind,
    pub root: PathBuf,
    /// The module file and the line that names it.
    pub file: PathBuf,
    pub line: usize,
    /// The module's name as `module load` takes it (`cuda/11.8`).
    pub module: String,
}

/// What reading module files found, and what it skipped (`file:line: why`).
#[derive(Debug, Default)]
pub struct Scan {
    pub roots: Vec<ModuleRoot>,
    pub warnings: Vec<String>,
}

/// Every module file under each `MODULEPATH` directory, each root once.
pub fn scan_modulepath(modulepath: &str) -> Scan {
    let mut scan = Scan::default();
    let mut seen_dirs: Vec<PathBuf> = Vec::new();
    for dir in path_list::dirs(Some(modulepath.as_ref())) {
        let dir = Path::new(&dir);
        let mut files = Vec::new();
        walk(dir, 0, &mut seen_dirs, &mut files, &mut scan.warnings);
        files.sort();
        for file in files {
            let module = module_name(dir, &file);
            read_file(&file, &module, Steers::Yes, &mut scan);
        }
    }
    let mut seen: Vec<(Kind, PathBuf)> = Vec::new();
    scan.roots.retain(|r| {
        let key = (r.kind, r.root.clone());
        let new = !seen.contains(&key);
        seen.push(key);
        new
    });
    scan
}

/// The module files loaded now: `_LMFILES_` (both module systems keep it), colon-separated;
/// their names from `LOADEDMODULES` (same order) when it matches.
pub fn scan_loaded(lmfiles: &str, loadedmodules: Option<&str>) -> Scan {
    let mut scan = Scan::default();
    let files: Vec<OsString> = path_list::dirs(Some(lmfiles.as_ref())).collect();
    let names: Vec<OsString> = path_list::dirs(loadedmodules.map(OsStr::new)).collect();
    for (i, file) in files.iter().enumerate() {
        let file = Path::new(file);
        let module = match names.get(i).filter(|_| names.len() == files.len()) {
            Some(n) => n.to_string_lossy().into_owned(),
            None => loaded_name(file),
        };
        read_file(file, &module, Steers::No, &mut scan);
    }
    scan
}

/// Loaded modules whose toolkit is of one of `kinds` (a real toolkit, not a shared prefix):
/// the ones `gpuenv env` replaces, and unloads so the module system agrees.
pub fn displaced(
    lmfiles: Option<&str>,
    loadedmodules: Option<&str>,
    kinds: &[Kind],
) -> Vec<ModuleRoot> {
    let Some(lmfiles) = lmfiles.filter(|l| !l.is_empty()) else {
        return Vec::new();
    };
    let mut out: Vec<ModuleRoot> = Vec::new();
    for r in scan_loaded(lmfiles, loadedmodules).roots {
        if kinds.contains(&r.kind)
            && is_toolkit_root(&r.root)
            && !out.iter().any(|o| o.module == r.module)
        {
            out.push(r);
        }
    }
    out
}

/// Never a shared prefix (`/usr`, a conda environment) or a top-level directory.
fn is_toolkit_root(root: &Path) -> bool {
    !crate::store::toolchain::is_shared_prefix(root) && root.components().count() > 2
}

/// Counts the toolkits that loaded modules name (`_LMFILES_`) as other toolkits in `change`:
/// switching then drops their path-list entries too, so `gpuenv env` after
/// `module load cuda/11.8` leaves nothing of 11.8 behind. Shared prefixes (`/usr`, conda
/// environments) are never counted.
pub fn count_loaded_as_foreign(change: &mut Change, lmfiles: Option<&str>) {
    let Some(lmfiles) = lmfiles.filter(|l| !l.is_empty()) else {
        return;
    };
    let loaded = scan_loaded(lmfiles, None);
    for op in &mut change.ops {
        let Op::Remove(_, foreign) = op else { continue };
        for r in &loaded.roots {
            if foreign.kinds.contains(&r.kind) && is_toolkit_root(&r.root) {
                std::sync::Arc::make_mut(&mut foreign.dirs)
                    .insert(crate::plan::env::foreign_key(&r.root));
            }
        }
    }
}

/// `cuda/11.8` for `<dir>/cuda/11.8.lua`.
fn module_name(dir: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(dir).unwrap_or(file);
    let text = rel.to_string_lossy();
    text.strip_suffix(".lua").unwrap_or(&text).to_string()
}

/// The last two components, as module names usually go (`cuda/11.8`).
fn loaded_name(file: &Path) -> String {
    let mut parts: Vec<String> = file
        .iter()
        .rev()
        .take(2)
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    parts.reverse();
    let text = parts.join("/");
    text.strip_suffix(".lua").unwrap_or(&text).to_string()
}

fn walk(
    dir: &Path,
    depth: usize,
    seen: &mut Vec<PathBuf>,
    files: &mut Vec<PathBuf>,
    warnings: &mut Vec<String>,
) {
    // A directory reached twice (a link loop, or two MODULEPATH entries) is read once.
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if seen.contains(&real) {
        return;
    }
    seen.push(real);
    let entries = match fs_err::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            warnings.push(format!("skipped {}: {}", dir.display(), e.kind()));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            if depth + 1 < MAX_DEPTH {
                walk(&path, depth + 1, seen, files, warnings);
            }
        } else if path.is_file() {
            files.push(path);
        }
    }
}

/// Whether a module file's roots may be registered (on MODULEPATH: the owner rule holds),
/// or are only recognised (loaded now, in `_LMFILES_`).
#[derive(PartialEq)]
enum Steers {
    Yes,
    No,
}

fn read_file(file: &Path, module: &str, steers: Steers, scan: &mut Scan) {
    use crate::outside;
    let opened = outside::open(file, outside::Kind::ModuleFile).and_then(|f| {
        if steers == Steers::Yes {
            if let Err(why) = outside::owner_and_mode(file, f.metadata()) {
                return Err(outside::ReadError {
                    path: file.to_path_buf(),
                    kind: outside::Kind::ModuleFile,
                    why: outside::Why::Foreign(why),
                });
            }
        }
        f.read()
    });
    let bytes = match opened {
        Ok(b) => b,
        Err(e) => {
            scan.warnings
                .push(format!("skipped {}: {}", file.display(), e.why));
            return;
        }
    };
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            // Said for a file that is a module file by its name or first line (a Tcl one
            // in Latin-1 too): skipping it silently would hide the toolkit it names.
            let lossy = String::from_utf8_lossy(e.as_bytes());
            if parse::syntax_of(file, &lossy).is_some() {
                scan.warnings.push(format!(
                    "skipped {}: not UTF-8 text, so not a module file gpuenv can read",
                    file.display()
                ));
            }
            return;
        }
    };
    let Some(syntax) = parse::syntax_of(file, &text) else {
        return;
    };
    let parsed = parse::parse(&text, syntax);
    for (line, why) in parsed.skipped {
        scan.warnings
            .push(format!("skipped {}:{line}: {why}", file.display()));
    }
    for n in parsed.named {
        let known = scan
            .roots
            .iter()
            .any(|r| r.file == file && r.root == n.root && r.kind == n.kind);
        if !known {
            scan.roots.push(ModuleRoot {
                kind: n.kind,
                root: n.root,
                file: file.to_path_buf(),
                line: n.line,
                module: module.to_string(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &[u8]) {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }

    #[test]
    fn scans_lua_and_tcl_files_and_names_what_it_skips() {
        let dir = tempfile::tempdir().unwrap();
        let mp = dir.path().join("modules");
        write(
            &mp.join("cuda/11.8.lua"),
            b"setenv(\"CUDA_HOME\", \"/sw/cuda-11.8\")\nsetenv(\"CUDA_PATH\", \"/sw/cuda-11.8\")\n",
        );
        write(
            &mp.join("rocm/6.2"),
            b"#%Module1.0\nsetenv ROCM_PATH /sw/rocm\n",
        );
        write(
            &mp.join("bad/1.lua"),
            b"setenv(\"CUDA_HOME\", os.getenv(\"X\"))\n",
        );
        write(&mp.join("bin/1.lua"), b"\xff\xfe\0\0");
        write(
            &mp.join("latin/1"),
            b"#%Module1.0\nsetenv CUDA_HOME /sw/caf\xe9\n",
        );
        write(&mp.join("latin/README"), b"caf\xe9\n");
        std::os::unix::fs::symlink(&mp, mp.join("cuda/loop")).unwrap();
        let scan = scan_modulepath(&format!("{}::{}", mp.display(), mp.display()));
        let found: Vec<(String, String)> = scan
            .roots
            .iter()
            .map(|r| (r.module.clone(), r.root.display().to_string()))
            .collect();
        assert_eq!(
            found,
            [
                ("cuda/11.8".to_string(), "/sw/cuda-11.8".to_string()),
                ("rocm/6.2".to_string(), "/sw/rocm".to_string())
            ]
        );
        let w = scan.warnings.join("\n");
        assert!(w.contains("bad/1.lua:1: CUDA_HOME is computed"), "{w}");
        assert!(w.contains("bin/1.lua: not UTF-8"), "{w}");
        assert!(w.contains("latin/1: not UTF-8"), "{w}");
        assert!(!w.contains("README"), "{w}");
    }
}
