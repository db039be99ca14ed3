//! FM-05: NCCL (RCCL for ROCm) where the torch build looks for it: torch/lib, the
//! `nvidia/nccl` wheel beside torch, the active toolkit, `ldconfig -p`. And NCCL_ROOT,
//! NCCL_INCLUDE_DIR, NCCL_LIB_DIR, RCCL_HOME, when set, naming directories that hold it.

use std::path::{Path, PathBuf};

use super::{Check, Finding, Inputs, Machine, Notes, RunError, Status};
use gpuenv_core::context::vars;
use gpuenv_core::toolchain::Kind;

pub const CHECK: Check = Check {
    id: "FM-05",
    name: "nccl-missing",
};

const FIX_VARS: &str =
    "eval \"$(gpuenv env)\" sets NCCL_ROOT, NCCL_INCLUDE_DIR and NCCL_LIB_DIR from the active toolkit (or unset the wrong ones)";

fn has_file_starting(dir: &Path, prefix: &str) -> bool {
    fs_err::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
    })
}

/// `ldconfig -p` lines naming `lib` (`libnccl.so.2 (libc6,x86-64) => /usr/lib/…/libnccl.so.2`).
pub fn parse_ldconfig(text: &str, lib: &str) -> Vec<PathBuf> {
    text.lines()
        .filter(|l| l.trim_start().starts_with(lib))
        .filter_map(|l| l.split_once("=>").map(|(_, p)| PathBuf::from(p.trim())))
        .collect()
}

/// ldconfig is often outside a user's PATH (`/sbin`).
fn ldconfig(m: &Machine) -> Option<Result<String, RunError>> {
    if let Some(out) = m.run_tool("ldconfig", &["-p"]) {
        return Some(out);
    }
    ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .map(|p| m.file(p))
        .find(|p| p.is_file())
        .map(|p| m.run(&p, &["-p"]))
}

fn check_vars(inputs: &Inputs, notes: &mut Notes) {
    let m = &inputs.machine;
    let root = m.var(vars::NCCL_ROOT).map(PathBuf::from);
    let mut bad = |var: &str, value: &str, what: &str| {
        notes.problem(Status::Error, format!("{var}={value} {what}"));
        notes.hint(FIX_VARS);
    };
    if let Some(r) = &root {
        if !r.join("include/nccl.h").is_file() {
            bad(
                vars::NCCL_ROOT,
                &r.display().to_string(),
                "has no include/nccl.h",
            );
        }
    }
    if let Some(d) = m.var(vars::NCCL_INCLUDE_DIR) {
        if !Path::new(d).join("nccl.h").is_file() {
            bad(vars::NCCL_INCLUDE_DIR, d, "has no nccl.h");
        }
    }
    if let Some(d) = m.var(vars::NCCL_LIB_DIR) {
        if !has_file_starting(Path::new(d), "libnccl") {
            bad(vars::NCCL_LIB_DIR, d, "has no libnccl.so");
        }
    }
    if let Some(d) = m.var(vars::RCCL_HOME) {
        let p = Path::new(d);
        if !p.join("include/rccl/rccl.h").is_file() && !p.join("include/rccl.h").is_file() {
            bad(vars::RCCL_HOME, d, "has no include/rccl/rccl.h");
        }
    }
    // Headers of one NCCL with the library of another build but crash at run time.
    if let Some(r) = &root {
        let canon = |p: &Path| fs_err::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        for var in [vars::NCCL_INCLUDE_DIR, vars::NCCL_LIB_DIR] {
            if let Some(d) = m.var(var) {
                if !canon(Path::new(d)).starts_with(canon(r)) {
                    notes.problem(
                        Status::Warn,
                        format!(
                            "{var}={d} is not under NCCL_ROOT={}: headers and library may come from different NCCLs",
                            r.display()
                        ),
                    );
                    notes.hint(FIX_VARS);
                }
            }
        }
    }
}

pub fn run(inputs: &Inputs) -> Finding {
    let mut notes = Notes::default();
    check_vars(inputs, &mut notes);
    let torch = match &inputs.torch {
        Ok(t) => t,
        Err(why) if notes.is_clean() => return CHECK.skip(why.to_string()),
        Err(_) => return notes.finish(CHECK, ""),
    };
    let kind = if torch.hip.is_some() {
        Kind::Rocm
    } else if torch.cuda.is_some() {
        Kind::Cuda
    } else if notes.is_clean() {
        return CHECK.skip(format!(
            "torch {} is CPU-only, so it uses no NCCL (FM-03 says whether that is a problem)",
            torch.label()
        ));
    } else {
        return notes.finish(CHECK, "");
    };
    let (lib, name) = match kind {
        Kind::Cuda => ("libnccl", "NCCL"),
        Kind::Rocm => ("librccl", "RCCL"),
    };

    let mut looked: Vec<String> = Vec::new();
    let mut found: Option<String> = None;
    let mut dirs = vec![torch.dir.join("lib")];
    if kind == Kind::Cuda {
        if let Some(site) = torch.dir.parent() {
            dirs.push(site.join("nvidia/nccl/lib"));
        }
    }
    if let Some(c) = inputs
        .active(kind)
        .and_then(|t| t.entry.collectives.as_ref())
    {
        dirs.push(c.lib_dir.clone());
    }
    for d in &dirs {
        looked.push(d.display().to_string());
        if found.is_none() && has_file_starting(d, lib) {
            found = Some(d.display().to_string());
        }
    }
    if found.is_none() {
        match ldconfig(&inputs.machine) {
            Some(Ok(text)) => {
                looked.push("ldconfig -p".into());
                found = parse_ldconfig(&text, lib)
                    .first()
                    .map(|p| format!("{} (ldconfig -p)", p.display()));
            }
            Some(Err(e)) => notes.seen(format!("ldconfig -p: {e}")),
            None => notes.seen("no ldconfig to ask"),
        }
    }
    notes.seen(format!("looked in: {}", looked.join(", ")));

    match found {
        Some(where_) => notes.finish(
            CHECK,
            format!("torch {} finds {name} in {where_}", torch.label()),
        ),
        None => {
            notes.problem(
                Status::Warn,
                format!(
                    "torch {} is a {kind} build, but no {lib}.so is anywhere it looks: distributed training fails with \"Distributed package doesn't have NCCL built in\" or cannot load {name}",
                    torch.label()
                ),
            );
            match kind {
                Kind::Cuda => {
                    let major = torch.built_for(Kind::Cuda).map_or(12, |v| v.major());
                    notes.hint(format!("pip install nvidia-nccl-cu{major}"));
                    notes.hint("on a cluster node, load the site's NCCL module or install libnccl2, and check `ldconfig -p | grep nccl`");
                }
                Kind::Rocm => notes.hint(
                    "install RCCL (the rccl package of your ROCm release), or activate a ROCm toolchain that includes it",
                ),
            }
            notes.finish(CHECK, "")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldconfig_lines_give_the_library_paths() {
        let text = "1234 libs found in cache `/etc/ld.so.cache'\n\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2\n\tlibm.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libm.so.6\n";
        assert_eq!(
            parse_ldconfig(text, "libnccl"),
            [PathBuf::from("/usr/lib/x86_64-linux-gnu/libnccl.so.2")]
        );
        assert!(parse_ldconfig(text, "librccl").is_empty());
    }
}
