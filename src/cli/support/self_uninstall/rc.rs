//! The shell start-up lines of `gpuenv self uninstall`: gpuenv's lines sit between marked
//! comments (README), and only what is between the marks goes. The file is edited through
//! the one editor (in place, its mode and links kept), a copy of the old one is kept beside
//! it, and the shell itself reads the new text (`bash -n`, `zsh -n`, `fish --no-execute`)
//! before it replaces the old: a block inside `if … fi` becomes `:` when removing it would
//! leave an empty block.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use gpuenv_core::user_file::{self, Check, EditError, UserFile};
use gpuenv_core::{ask, outside};

/// The marks around gpuenv's lines in a shell start-up file.
pub const BEGIN: &str = "# >>> gpuenv hook >>>";
pub const END: &str = "# <<< gpuenv hook <<<";

/// The rc files and the shell that reads each, relative to HOME.
pub const RC_FILES: &[(&str, &str)] = &[
    (".bashrc", "bash"),
    (".zshrc", "zsh"),
    (".config/fish/config.fish", "fish"),
];

/// What stays of `text` without gpuenv's marked blocks (each replaced by `filler`, a line
/// or nothing), and how many blocks went. A begin mark without its end leaves the rest.
pub fn without_blocks(text: &str, filler: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut removed = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim() != BEGIN {
            out.push_str(line);
            continue;
        }
        let block: Vec<&str> = {
            let mut rest = lines.clone();
            let mut block = vec![line];
            let mut closed = false;
            for l in rest.by_ref() {
                block.push(l);
                if l.trim() == END {
                    closed = true;
                    break;
                }
            }
            if !closed {
                out.push_str(line);
                continue;
            }
            block
        };
        for _ in 1..block.len() {
            lines.next();
        }
        removed += 1;
        if !filler.is_empty() {
            let indent = &line[..line.len() - line.trim_start().len()];
            let eol = if line.ends_with("\r\n") { "\r\n" } else { "\n" };
            out.push_str(&format!("{indent}{filler}{eol}"));
        }
    }
    (out, removed)
}

/// Whether `text` holds a gpuenv hook line outside the marks (the line from before the marks
/// existed): left, and named.
pub fn unmarked_hook(text: &str) -> bool {
    let (rest, _) = without_blocks(text, "");
    rest.lines().any(|l| {
        let l = l.trim();
        !l.starts_with('#') && l.contains("gpuenv hook")
    })
}

/// `shell` reads `file` without running it.
fn shell_reads(shell: &str, file: &Path, rc: &Path) -> Result<(), EditError> {
    let mut cmd = Command::new(shell);
    match shell {
        "fish" => cmd.arg("--no-execute"),
        _ => cmd.arg("-n"),
    };
    let failed = |output: String| EditError::CheckFailed {
        path: rc.to_path_buf(),
        checker: format!("`{shell} -n`"),
        output,
    };
    match ask::output(cmd.arg(file)) {
        Ok(a) if a.status.success() => Ok(()),
        Ok(a) => Err(failed(a.text().trim().to_string())),
        Err(e) => Err(failed(e.to_string())),
    }
}

/// Removes gpuenv's blocks from `rc` (read by `shell`), inside `home`; the old file's copy
/// is `<rc>.gpuenv-uninstall.bak`, with its mode. `Ok(None)` when there was no block.
pub fn edit(rc: &Path, shell: &str, home: &Path) -> Result<Option<PathBuf>> {
    let backup = rc.with_file_name(format!(
        "{}.gpuenv-uninstall.bak",
        rc.file_name().unwrap_or_default().to_string_lossy()
    ));
    let check = |copy: &Path| shell_reads(shell, copy, rc);
    let file = UserFile {
        path: rc,
        within: home,
        scope: "your home",
        kind: outside::Kind::ShellRc,
    };
    let outcome = user_file::edit(file, Check::Text(&check), |text| -> Result<_> {
        let (plain, n) = without_blocks(text, "");
        if n == 0 {
            return Ok(None);
        }
        // An `if … fi` around the block would be left empty: a no-op line keeps it valid.
        let new = match user_file::check_copy(rc, &plain, &check) {
            Ok(()) => plain,
            Err(_) => without_blocks(text, ": # gpuenv hook removed by gpuenv self uninstall").0,
        };
        user_file::keep_copy(&backup, rc)?;
        Ok(Some(new))
    })?;
    Ok((outcome.edited != user_file::Edited::Unchanged).then_some(backup))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_marked_blocks_go() {
        let rc = format!(
            "export A=1\n{BEGIN}\neval \"$(gpuenv hook bash)\"\n{END}\neval \"$(gpuenv hook bash)\"\n  {BEGIN}\n  x\n  {END}\n{BEGIN}\nno end\n"
        );
        let (kept, n) = without_blocks(&rc, "");
        assert_eq!(n, 2);
        assert_eq!(
            kept,
            format!("export A=1\neval \"$(gpuenv hook bash)\"\n{BEGIN}\nno end\n")
        );
        assert!(unmarked_hook(&rc));
        let (filled, _) =
            without_blocks(&format!("if x; then\n  {BEGIN}\n  y\n  {END}\nfi\n"), ":");
        assert_eq!(filled, "if x; then\n  :\nfi\n");
    }
}
