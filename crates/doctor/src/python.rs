//! FM-08: `pip` installing into another environment than `python3` runs from, and a
//! PYTHONPATH entry whose torch shadows the environment's own.

use gpuenv_core::context::vars;
use std::path::{Path, PathBuf};

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::guard;

pub const CHECK: Check = Check {
    id: "FM-08",
    name: "python-mismatch",
};

/// `<prefix>/bin/python3` -> `<prefix>`.
fn prefix_of(exe: &Path) -> PathBuf {
    exe.parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("/"))
        .to_path_buf()
}

/// The interpreter a pip script runs with: its `#!/abs/path/python` line (not `env`).
fn shebang_interpreter(script: &Path) -> Option<PathBuf> {
    let text = gpuenv_core::outside::read_head(script, gpuenv_core::outside::Kind::Script)?;
    let line = text.lines().next()?.strip_prefix("#!")?.trim();
    let interp = line.split_whitespace().next()?;
    let name = Path::new(interp)
        .file_name()?
        .to_string_lossy()
        .into_owned();
    (interp.starts_with('/') && name.starts_with("python")).then(|| PathBuf::from(interp))
}

pub fn run(inputs: &Inputs) -> Finding {
    let m = &inputs.machine;
    let Some(python) = m.which("python3").or_else(|| m.which("python")) else {
        return CHECK.skip("no python3 on PATH");
    };
    let py_prefix = prefix_of(&python);
    let mut notes = Notes::default();
    notes.seen(format!("python3: {}", python.display()));

    let pip = m.which("pip").or_else(|| m.which("pip3"));
    if let Some(pip) = &pip {
        let interp = shebang_interpreter(pip);
        let pip_prefix = prefix_of(interp.as_deref().unwrap_or(pip));
        notes.seen(format!(
            "pip: {}{}",
            pip.display(),
            interp.map_or(String::new(), |i| format!(" (runs {})", i.display()))
        ));
        if pip_prefix != py_prefix {
            notes.problem(
                Status::Warn,
                format!(
                    "pip ({}) installs into {}, but python3 ({}) runs from {}: what pip installs is not what python imports",
                    pip.display(),
                    pip_prefix.display(),
                    python.display(),
                    py_prefix.display()
                ),
            );
            notes.hint("use `python3 -m pip install …`, which installs where python3 imports from (or activate one environment for both)");
        }
    }

    for entry in m.path_list(vars::PYTHONPATH) {
        let dir = Path::new(&entry);
        let Ok(torch) = guard::read_torch(&dir.join("torch")) else {
            continue;
        };
        if !dir.starts_with(&py_prefix) {
            notes.problem(
                Status::Warn,
                format!(
                    "PYTHONPATH has {entry}, whose torch {} comes before anything {} installs",
                    torch.label(),
                    py_prefix.display()
                ),
            );
            notes.hint(format!(
                "unset PYTHONPATH (or drop {entry} from it) so python3 imports its own torch"
            ));
        }
    }

    let both = match &pip {
        Some(_) => "python3 and pip both belong to",
        None => "python3 (no pip on PATH) belongs to",
    };
    notes.finish(
        CHECK,
        format!(
            "{both} {}; PYTHONPATH adds no other torch",
            py_prefix.display()
        ),
    )
}
