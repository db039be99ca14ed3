//! Module files for a toolchain: the change `env::plan` computes for it, rendered as an Lmod
//! `.lua` file or a Tcl `#%Module1.0` file. Setting a variable becomes `setenv`, putting a
//! directory first in a list becomes `prepend_path`/`prepend-path` (which both module
//! systems undo exactly on unload); the removal of other toolkits' entries becomes
//! `family("cuda")` / `conflict cuda`, the module system's own way to allow one at a time.

use std::path::{Path, PathBuf};

use crate::named::Named;
use crate::plan::env::{Change, Op};
use crate::store::toolchain::registry::Entry;
use crate::store::toolchain::Kind;

/// The line that marks a file as gpuenv's: only such files are ever replaced.
pub const MARK: &str = "gpuenv module file: written by `gpuenv module export`";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Lmod,
    Tcl,
}

impl Named for Format {
    const ALL: &'static [Format] = &[Format::Lmod, Format::Tcl];
    fn name(self) -> &'static str {
        match self {
            Format::Lmod => "lmod",
            Format::Tcl => "tcl",
        }
    }
    fn help(self) -> &'static str {
        match self {
            Format::Lmod => "Lmod .lua files",
            Format::Tcl => "Tcl module files (Environment Modules; Lmod reads them too)",
        }
    }
}

/// `DIR/<kind>/<name without the kind- prefix>` (`.lua` for Lmod): `cuda/12.4.1.lua`.
/// The file is always directly in `DIR/<kind>/`: a name that would put it elsewhere is
/// refused (names are checked where they are read; this is the last line).
pub fn file_path(
    dir: &Path,
    name: &str,
    kind: Kind,
    format: Format,
) -> Result<PathBuf, crate::pathpart::UnsafePart> {
    let prefix = format!("{kind}-");
    let version = name.strip_prefix(&prefix).unwrap_or(name);
    let version = crate::pathpart::part("toolchain name", version)?;
    let file = match format {
        Format::Lmod => format!("{version}.lua"),
        Format::Tcl => version.to_string(),
    };
    Ok(dir.join(kind.as_str()).join(file))
}

/// True for a file gpuenv wrote (the mark in its first lines).
pub fn is_ours(text: &str) -> bool {
    text.lines().take(3).any(|l| l.contains(MARK))
}

/// The line naming the gpuenv home a module file was exported from: one module directory
/// may hold the files of several homes, and each home removes only its own.
pub fn home_line(home: &Path) -> String {
    format!("exported from the gpuenv home {}", home.display())
}

/// True for a file this home wrote (gpuenv's mark and this home's line in its first lines).
pub fn is_from_home(text: &str, home: &Path) -> bool {
    let line = home_line(home);
    is_ours(text) && text.lines().take(4).any(|l| l.ends_with(&line))
}

/// Where in the user's own home a module file points `TORCH_EXTENSIONS_DIR`: JIT builds
/// are per-user state, never in the (read-only) store the module file was exported from.
/// Computed when the module is loaded, from `HOME`; left unset without one (torch then uses
/// its own default).
pub const USER_TORCH_EXTENSIONS: &str = ".cache/gpuenv/torch-extensions";

/// What the module file says about its toolchain, for `whatis` and `help`.
fn describe(name: &str, entry: &Entry) -> (String, String) {
    let what = match entry.kind {
        Kind::Cuda => "CUDA Toolkit",
        Kind::Rocm => "ROCm",
    };
    let whatis = format!("{what} {} ({name}), through gpuenv", entry.version);
    let help = format!(
        "{what} {} registered in gpuenv as {name}, at {}.\nCUDA_HOME / ROCM_PATH point at gpuenv's view of it, whose compiler is gpuenv's\nproxy: PyTorch extension builds are checked against torch's CUDA/ROCm version.\nThe same variables as `gpuenv env {name}`.",
        entry.version,
        entry.root.display()
    );
    (whatis, help)
}

/// The module file of `name`, exported from `home`.
pub fn render(name: &str, entry: &Entry, change: &Change, format: Format, home: &Path) -> String {
    match format {
        Format::Lmod => render_lmod(name, entry, change, home),
        Format::Tcl => render_tcl(name, entry, change, home),
    }
}

/// Whether the plan's value of this variable is per-user state, computed at load time.
fn per_user(var: &str) -> bool {
    var == crate::context::vars::TORCH_EXTENSIONS_DIR
}

fn render_lmod(name: &str, entry: &Entry, change: &Change, home: &Path) -> String {
    let (whatis, help) = describe(name, entry);
    let mut out = format!("-- {MARK}; re-export replaces it, so edit a copy instead.\n");
    out += &format!("-- {}\n", home_line(home));
    out += &format!("whatis({})\n", lua(&format!("Name: {name}")));
    out += &format!("whatis({})\n", lua(&format!("Version: {}", entry.version)));
    out += &format!("whatis({})\n", lua(&format!("Description: {whatis}")));
    out += &format!("help({})\n", lua(&help));
    out += &format!("family({})\n", lua(entry.kind.as_str()));
    for op in &change.ops {
        match op {
            Op::Set(k, v) => out += &format!("setenv({}, {})\n", lua(k), lua(&text(v))),
            Op::Unset(k) => out += &format!("unsetenv({})\n", lua(k)),
            Op::Default(k, _, _) if per_user(k) => {
                out += &format!(
                    "local home = os.getenv(\"HOME\")\nif home then\n    pushenv({}, pathJoin(home, {}))\nend\n",
                    lua(k),
                    lua(&format!("{USER_TORCH_EXTENSIONS}/{name}"))
                )
            }
            // Modules cannot tell a user's value from another module's: set it, and put back
            // what was there on unload.
            Op::Default(k, v, _) => out += &format!("pushenv({}, {})\n", lua(k), lua(&text(v))),
            // The first entry ends up first: prepend the others before it.
            Op::Prepend(k, entries) => {
                for e in entries.iter().rev() {
                    out += &format!("prepend_path({}, {})\n", lua(k), lua(&text(e)));
                }
            }
            // A space-separated list: the user's entries stay after it.
            Op::PrependWord(k, w, _) => {
                out += &format!("prepend_path({}, {}, \" \")\n", lua(k), lua(&text(w)))
            }
            Op::Remove(..) | Op::Clear(..) => {}
        }
    }
    out
}

fn render_tcl(name: &str, entry: &Entry, change: &Change, home: &Path) -> String {
    let (whatis, help) = describe(name, entry);
    let mut out =
        format!("#%Module1.0\n## {MARK}; re-export replaces it, so edit a copy instead.\n");
    out += &format!("## {}\n", home_line(home));
    out += &format!("module-whatis {}\n", tcl(&whatis));
    out += "proc ModulesHelp {} {\n";
    for line in help.lines() {
        out += &format!("    puts stderr {}\n", tcl(line));
    }
    out += "}\n";
    out += &format!("conflict {}\n", tcl(entry.kind.as_str()));
    for op in &change.ops {
        match op {
            Op::Set(k, v) => out += &format!("setenv {} {}\n", tcl(k), tcl(&text(v))),
            Op::Unset(k) => out += &format!("unsetenv {}\n", tcl(k)),
            Op::Default(k, _, _) if per_user(k) => {
                let rest = tcl(&format!("/{USER_TORCH_EXTENSIONS}/{name}"));
                out += &format!(
                    "if {{[info exists ::env(HOME)]}} {{\n    pushenv {} \"$::env(HOME){}\n}}\n",
                    tcl(k),
                    &rest[1..]
                )
            }
            Op::Default(k, v, _) => out += &format!("pushenv {} {}\n", tcl(k), tcl(&text(v))),
            Op::Prepend(k, entries) => {
                for e in entries.iter().rev() {
                    out += &format!("prepend-path {} {}\n", tcl(k), tcl(&text(e)));
                }
            }
            Op::PrependWord(k, w, _) => {
                out += &format!("prepend-path -d {{ }} {} {}\n", tcl(k), tcl(&text(w)))
            }
            Op::Remove(..) | Op::Clear(..) => {}
        }
    }
    out
}

/// A value of the plan as module-file text. The plan's values here are view paths under
/// GPUENV_HOME and arch lists; a home whose path is not UTF-8 shows U+FFFD in the file.
fn text(value: &std::ffi::OsStr) -> String {
    value.to_string_lossy().into_owned()
}

/// A Lua string literal that reads back as the same bytes.
pub fn lua(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for b in value.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out.push('"');
    out
}

/// A Tcl word that reads back as the same text: double quotes, with every character Tcl
/// substitutes inside them escaped.
pub fn tcl(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' | '$' | '[' | ']' | '"' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::env::Foreign;

    fn entry() -> Entry {
        Entry::linked_cuda("/opt/cuda-12.4", "12.4.1")
    }

    fn change() -> Change {
        Change {
            ops: vec![
                Op::Remove("PATH".into(), Foreign::default()),
                Op::Set("CUDA_HOME".into(), "/v/cuda 12".into()),
                Op::Prepend("PATH".into(), vec!["/v/a".into(), "/v/b".into()]),
            ],
        }
    }

    #[test]
    fn lmod_file_sets_prepends_and_joins_the_cuda_family() {
        let text = render(
            "cuda-12.4.1",
            &entry(),
            &change(),
            Format::Lmod,
            Path::new("/h"),
        );
        assert!(is_ours(&text));
        assert!(text.contains("family(\"cuda\")\n"), "{text}");
        assert!(
            text.contains("setenv(\"CUDA_HOME\", \"/v/cuda 12\")\n"),
            "{text}"
        );
        let b = text.find("prepend_path(\"PATH\", \"/v/b\")").unwrap();
        let a = text.find("prepend_path(\"PATH\", \"/v/a\")").unwrap();
        assert!(b < a, "{text}");
    }

    #[test]
    fn tcl_file_starts_with_the_magic_line_and_conflicts_with_its_kind() {
        let text = render(
            "cuda-12.4.1",
            &entry(),
            &change(),
            Format::Tcl,
            Path::new("/h"),
        );
        assert!(text.starts_with("#%Module1.0\n"));
        assert!(is_ours(&text));
        assert!(text.contains("conflict \"cuda\"\n"), "{text}");
        assert!(
            text.contains("setenv \"CUDA_HOME\" \"/v/cuda 12\"\n"),
            "{text}"
        );
    }

    #[test]
    fn torch_extensions_are_in_the_loading_users_home() {
        let change = Change {
            ops: vec![Op::Default(
                "TORCH_EXTENSIONS_DIR".into(),
                "/store/torch-extensions/cuda-13.0.3".into(),
                "/store/torch-extensions".into(),
            )],
        };
        for format in [Format::Lmod, Format::Tcl] {
            let text = render(
                "cuda-13.0.3",
                &entry(),
                &change,
                format,
                Path::new("/store"),
            );
            assert!(!text.contains("/store/torch-extensions"), "{text}");
            assert!(
                text.contains(".cache/gpuenv/torch-extensions/cuda-13.0.3\""),
                "{text}"
            );
            assert!(is_from_home(&text, Path::new("/store")));
            assert!(!is_from_home(&text, Path::new("/other")));
        }
    }

    #[test]
    fn quoting_keeps_hostile_bytes_literal() {
        assert_eq!(lua("a\"b\\c\nd\u{7f}"), "\"a\\\"b\\\\c\\nd\\127\"");
        assert_eq!(
            tcl("$x [exec rm] {y} \"z\""),
            "\"\\$x \\[exec rm\\] \\{y\\} \\\"z\\\"\""
        );
    }

    #[test]
    fn files_are_named_by_kind_and_version() {
        let p = file_path(Path::new("/m"), "cuda-11.3-conda", Kind::Cuda, Format::Lmod).unwrap();
        assert_eq!(p, Path::new("/m/cuda/11.3-conda.lua"));
        let p = file_path(Path::new("/m"), "rocm-6.2.4", Kind::Rocm, Format::Tcl).unwrap();
        assert!(file_path(Path::new("/m"), "cuda-../../x", Kind::Cuda, Format::Lmod).is_err());
        assert_eq!(p, Path::new("/m/rocm/6.2.4"));
    }
}
