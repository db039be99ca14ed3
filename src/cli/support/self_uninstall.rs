//! `gpuenv self uninstall`: removes what gpuenv made in `$GPUENV_HOME` and the shell lines
//! the README has users add, after saying what it will do and asking. Nothing it did not
//! make goes: an entry of the home with another name, a link where gpuenv makes a directory,
//! an entry another account owns, an rc file that is a link, stay and are named.

use std::io::{BufRead as _, Write as _};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Hinted;
use gpuenv_core::fsutil;
use gpuenv_core::store::home::OWN_ENTRIES;
use gpuenv_core::ui;

/// The lines `gpuenv hook` is documented with (README, docs/design.md), one per shell.
pub const HOOK_LINES: &[&str] = &[
    r#"eval "$(gpuenv hook bash)""#,
    r#"eval "$(gpuenv hook zsh)""#,
    "gpuenv hook fish | source",
];

/// The rc files those lines go in, relative to HOME.
const RC_FILES: &[&str] = &[".bashrc", ".zshrc", ".config/fish/config.fish"];

/// `text` without the documented hook lines (a line equal to one, leading and trailing
/// blanks aside), and how many went.
pub fn without_hook_lines(text: &str) -> (String, usize) {
    let mut removed = 0;
    let kept: String = text
        .split_inclusive('\n')
        .filter(|line| {
            let hook = HOOK_LINES.contains(&line.trim());
            removed += usize::from(hook);
            !hook
        })
        .collect();
    (kept, removed)
}

enum Step {
    Remove(PathBuf),
    EditRc {
        path: PathBuf,
        text: String,
        lines: usize,
    },
}

pub fn run(ctx: &Context, yes: bool, keep_toolchains: bool) -> Result<()> {
    let home = ctx.own_home()?;
    // SAFETY: getuid cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    let mut steps = Vec::new();
    let mut left = Vec::new();
    match fs_err::symlink_metadata(&home.root) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() || m.uid() != uid => {
            bail!(Hinted::new(format!(
                "{} is not a directory of yours (a link, a file, or another account's): gpuenv did not make it and removes nothing in it",
                home.root.display()
            ))
            .hint("point GPUENV_HOME at the home gpuenv made, or remove it yourself"));
        }
        Ok(_) => {
            let mut entries = fs_err::read_dir(&home.root)?.collect::<Result<Vec<_>, _>>()?;
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let path = entry.path();
                let name = entry.file_name();
                let own = OWN_ENTRIES.iter().find(|(n, _)| name == *n);
                let meta = fs_err::symlink_metadata(&path)?;
                match own {
                    Some((_, true)) if keep_toolchains => {}
                    Some((n, _)) if meta.file_type().is_symlink() || meta.uid() != uid => left
                        .push(format!(
                            "{} (gpuenv makes `{n}` itself; this one is {})",
                            path.display(),
                            if meta.file_type().is_symlink() {
                                "a link"
                            } else {
                                "another account's"
                            }
                        )),
                    Some(_) => steps.push(Step::Remove(path)),
                    None => left.push(format!("{} (not gpuenv's)", path.display())),
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    if let Some(user_home) = ctx.home_dir() {
        for rc in RC_FILES {
            let path = user_home.join(rc);
            let Ok(meta) = fs_err::symlink_metadata(&path) else {
                continue;
            };
            let Some(text) =
                gpuenv_core::outside::read_text(&path, gpuenv_core::outside::Kind::ShellRc).ok()
            else {
                continue;
            };
            let (kept, lines) = without_hook_lines(&text);
            if lines == 0 {
                continue;
            }
            if meta.file_type().is_symlink() || !meta.is_file() || meta.uid() != uid {
                left.push(format!(
                    "the gpuenv hook line in {} (a link or not your file: gpuenv edits no file through a link; remove the line yourself)",
                    path.display()
                ));
                continue;
            }
            steps.push(Step::EditRc {
                path,
                text: kept,
                lines,
            });
        }
    }

    if steps.is_empty() {
        ui::info(format!(
            "nothing of gpuenv's to remove in {}",
            home.root.display()
        ));
    } else {
        eprintln!("gpuenv self uninstall will:");
        for step in &steps {
            match step {
                Step::Remove(p) => eprintln!("  remove {}", p.display()),
                Step::EditRc { path, lines, .. } => eprintln!(
                    "  remove the gpuenv hook line{} from {}",
                    if *lines == 1 { "" } else { "s" },
                    path.display()
                ),
            }
        }
        if keep_toolchains {
            eprintln!(
                "  and keep the toolchains, the download cache and the settings that register them"
            );
        }
        if !yes && !confirmed()? {
            ui::info("nothing was removed");
            return Ok(());
        }
        for step in &steps {
            match step {
                Step::Remove(p) => gpuenv_install::dir::remove_all(p)
                    .with_context(|| format!("removing {}", p.display()))?,
                Step::EditRc { path, text, .. } => edit_rc(path, text)?,
            }
        }
        if !keep_toolchains {
            // Empty now unless something not gpuenv's is left; then it stays with it.
            let _ = fs_err::remove_dir(&home.root);
        }
        ui::info(format!("removed gpuenv's state in {}", home.root.display()));
    }
    for l in &left {
        ui::warn(format!("left in place: {l}"));
    }
    let this = super::self_info::detect(&std::env::current_exe()?);
    ui::info(format!(
        "gpuenv itself stays until you run: {}",
        this.remove
    ));
    Ok(())
}

/// Asks on stderr, reads the answer from stdin: only `y`/`yes` goes on.
fn confirmed() -> Result<bool> {
    eprint!("go on? [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// Rewrites an rc file in place of itself (temp file + rename), keeping its mode.
fn edit_rc(path: &Path, text: &str) -> Result<()> {
    let mode = fs_err::metadata(path)?.permissions();
    fsutil::write_atomic(path, text.as_bytes())?;
    fs_err::set_permissions(path, mode)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_documented_lines_go() {
        let rc = "export A=1\n  eval \"$(gpuenv hook bash)\"\n# eval \"$(gpuenv hook bash)\"\neval \"$(gpuenv hook bash --x)\"\ngpuenv hook fish | source";
        let (kept, n) = without_hook_lines(rc);
        assert_eq!(n, 2);
        assert_eq!(
            kept,
            "export A=1\n# eval \"$(gpuenv hook bash)\"\neval \"$(gpuenv hook bash --x)\"\n"
        );
    }
}
