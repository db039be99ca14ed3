//! The way back: a `cd` back to the directory of the run before the last, with nothing
//! changed since, gets that directory's environment again without a process.
//!
//! Each run that moves the shell from one state to another (say from A to B) knows both:
//! the values every variable it assigns had in A (the shell's values before the run) and
//! has in B, and A's and B's checks (`fast_path`). It writes two functions, one hop each
//! way, to a file of the user's own home (`Home::hops`, named by what is in it, so a way
//! walked again is not written again), and gives the shell one line: back in A's
//! directory, read that file and hop. Only then is the file read: a run's own output grows
//! by that line, and a `cd` elsewhere costs the shell one string comparison. A hop happens
//! only where asking gpuenv would give the same result:
//! - every variable the run assigned (the state variable included) still has the value of
//!   the side the shell is on: the user changed none of them since (else gpuenv sorts it
//!   out, as it keeps a user's own values);
//! - the other side's check holds there (`$PWD`, the watched variables, the files, the
//!   toolchain file's text), leaving out the variables the hop itself assigns;
//! - neither run said anything (a note, an error): a hop would not say it again.
//!
//! The hop assigns the other side's values (its state variable included, so the next run
//! of gpuenv starts from exactly that state) and redefines the check and the way back.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::fast_path::{self, Check, Place};
use super::{quote, Shell};

/// Files beyond this many are cleared out when a new one is written; a way back whose file
/// is gone is gpuenv again.
const MAX_FILES: usize = 256;

/// One side of a hop: what the shell has there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    /// The check that the side's result still holds, as `fast_path::arm` made it.
    pub check: Check,
    /// Every variable the run assigned, with its value on this side (`None`: unset).
    pub values: Vec<(String, Option<OsString>)>,
}

/// The way between the state before a run (`back`) and after it (`here`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub back: Side,
    pub here: Side,
    /// Where its file goes (`Home::hops`).
    pub dir: PathBuf,
}

impl Hop {
    /// The hop between `back` and `here`, when each side's check asks nothing of the
    /// variables the hop assigns that the hop would not make true: a hop leaves those out
    /// of the check it makes (it sets them), so each must be given the value that side's
    /// check was made with (`None` and empty are the same to a check).
    pub fn new(back: Side, here: Side, dir: PathBuf) -> Option<Hop> {
        for side in [&back, &here] {
            for (k, wanted) in &side.check.vars {
                let Some((_, value)) = side.values.iter().find(|(n, _)| n == k) else {
                    continue;
                };
                let value = value.as_deref().filter(|v| !v.is_empty());
                if value.map(|v| v.to_str()) != wanted.as_deref().map(Some) {
                    return None;
                }
            }
        }
        Some(Hop { back, here, dir })
    }
}

/// The functions' names in each shell: `(back, hop to the state before, hop to this one)`.
fn names(shell: Shell) -> (&'static str, &'static str, &'static str) {
    match shell {
        Shell::Bash | Shell::Zsh => ("_gpuenv_back", "_gpuenv_hop_back", "_gpuenv_hop_here"),
        Shell::Fish => ("__gpuenv_back", "__gpuenv_hop_back", "__gpuenv_hop_here"),
    }
}

/// The definition of the way back that does nothing (no hop known).
pub fn none(shell: Shell) -> String {
    let (back, _, _) = names(shell);
    match shell {
        Shell::Bash | Shell::Zsh => format!("{back}() {{ return 1; }}\n"),
        Shell::Fish => format!("function {back}; return 1; end\n"),
    }
}

/// The way back for the shell: a line that reads the hop's file only in the directory it
/// leads back to (and only the user's own file), written here if it is not there yet.
/// `none`'s when there is no hop or its file cannot be written.
pub fn render(hop: Option<&Hop>, shell: Shell) -> String {
    let Some(hop) = hop else {
        return none(shell);
    };
    let Some((file, key)) = file_of(hop, shell) else {
        return none(shell);
    };
    let (back, to_back, _) = names(shell);
    let file = file.to_string_lossy();
    // The file's last line says its key: a file cut short, emptied or garbled (which
    // `write_atomic` never leaves, but a disk may) defines no hop and gpuenv is asked.
    // Back to one directory, or to any of a place's (walked up to be sure) before the file
    // is read.
    let mut out = String::new();
    match (shell, &hop.back.check.place) {
        (Shell::Bash | Shell::Zsh, Place::Dir(_)) => {
            let f = q_posix(file.as_bytes());
            out.push_str(&format!("{back}() {{ [[ "));
            fast_path::place_test(&mut out, shell, &hop.back.check.place);
            out.push_str(&format!(
                " && -f {f} && -O {f} ]] || return 1; local {SENTINEL}=; . {f} 2>/dev/null; [[ ${SENTINEL} == {key} ]] && {to_back}; }}\n"
            ));
        }
        (Shell::Bash | Shell::Zsh, place) => {
            let f = q_posix(file.as_bytes());
            out.push_str(&format!("{back}() {{\n    [[ "));
            fast_path::place_test(&mut out, shell, place);
            out.push_str(&format!(" && -f {f} && -O {f} ]] || return 1\n"));
            fast_path::walk_up(&mut out, shell, place, "    ");
            out.push_str(&format!(
                "    local {SENTINEL}=; . {f} 2>/dev/null; [[ ${SENTINEL} == {key} ]] && {to_back}; }}\n"
            ));
        }
        (Shell::Fish, Place::Dir(_)) => {
            let f = q_fish(file.as_bytes());
            out.push_str(&format!("function {back}; "));
            fast_path::place_test(&mut out, shell, &hop.back.check.place);
            out.push_str(&format!(
                " -a -f {f} -a -O {f}; or return 1; set -g {SENTINEL} ''; source {f} 2>/dev/null; test \"x${SENTINEL}\" = x{key}; and {to_back}; end\n"
            ));
        }
        (Shell::Fish, place) => {
            let f = q_fish(file.as_bytes());
            out.push_str(&format!("function {back}\n    "));
            fast_path::place_test(&mut out, shell, place);
            out.push_str(&format!("; and test -f {f} -a -O {f}; or return 1\n"));
            fast_path::walk_up(&mut out, shell, place, "    ");
            out.push_str(&format!(
                "    set -g {SENTINEL} ''; source {f} 2>/dev/null; test \"x${SENTINEL}\" = x{key}; and {to_back}; end\n"
            ));
        }
    }
    out
}

/// The variable a hop's file sets last, to its key.
const SENTINEL: &str = "__gpuenv_hop";

fn q_posix(s: &[u8]) -> String {
    String::from_utf8_lossy(&quote::posix(s)).into_owned()
}

fn q_fish(s: &[u8]) -> String {
    String::from_utf8_lossy(&quote::fish(s)).into_owned()
}

/// The hop's file for `shell` and its key, written (atomically) unless it is there with
/// exactly this code: named by a check of everything it is made of, so the same way is
/// one file, and never trusted by its name alone.
fn file_of(hop: &Hop, shell: Shell) -> Option<(PathBuf, String)> {
    let dir = &hop.dir;
    let key = format!("{:016x}", key(hop));
    let path = dir.join(format!("{key}.{shell}"));
    let code = code(hop, shell, &key);
    // Read as any cache entry of the home: capped, the user's own, never through a link.
    let there = crate::outside::read(&path, crate::outside::Kind::CacheEntry);
    if there.is_ok_and(|there| there == code.as_bytes()) {
        return Some((path, key));
    }
    fs_err::create_dir_all(dir).ok()?;
    crate::fsutil::clear_when_full(dir, MAX_FILES);
    crate::fsutil::write_atomic(&path, code.as_bytes()).ok()?;
    Some((path, key))
}

/// What a hop is made of, as one number.
fn key(hop: &Hop) -> u64 {
    let mut bytes = Vec::with_capacity(8 * 1024);
    for side in [&hop.back, &hop.here] {
        let c = &side.check;
        // A place of many directories is one, whichever of them the run was in.
        match &c.place {
            Place::Dir(pwd) => bytes.extend_from_slice(pwd.as_bytes()),
            Place::Plain => bytes.push(b'*'),
            Place::Under(root) => {
                bytes.extend_from_slice(b"under ");
                bytes.extend_from_slice(root.as_bytes());
            }
        }
        bytes.push(0);
        for (k, v) in &c.vars {
            bytes.extend_from_slice(k.as_bytes());
            bytes.push(u8::from(v.is_some()));
            bytes.extend_from_slice(v.as_deref().unwrap_or_default().as_bytes());
            bytes.push(0);
        }
        for (a, b) in &c.same_time {
            for p in [a, b] {
                bytes.extend_from_slice(p.as_os_str().as_bytes());
                bytes.push(0);
            }
        }
        for (p, text) in &c.same_text {
            bytes.extend_from_slice(p.as_os_str().as_bytes());
            bytes.push(0);
            bytes.extend_from_slice(text.as_bytes());
            bytes.push(0);
        }
        for p in &c.absent {
            bytes.extend_from_slice(p.as_os_str().as_bytes());
            bytes.push(0);
        }
        bytes.push(1);
        for (k, v) in &side.values {
            bytes.extend_from_slice(k.as_bytes());
            bytes.push(u8::from(v.is_some()));
            bytes.extend_from_slice(v.as_deref().map(|v| v.as_bytes()).unwrap_or_default());
            bytes.push(0);
        }
        bytes.push(2);
    }
    crate::fsutil::checksum(&bytes)
}

/// The file's code: both hops, then its key (the shell hops only when it reads that).
/// Written into one buffer, as the prompt's own check is (`fast_path::render_into`).
fn code(hop: &Hop, shell: Shell, key: &str) -> String {
    use std::fmt::Write as _;
    let (_, to_back, to_here) = names(shell);
    let mut out = String::with_capacity(16 * 1024);
    one(&mut out, shell, to_back, &hop.here, &hop.back, to_here);
    one(&mut out, shell, to_here, &hop.back, &hop.here, to_back);
    let _ = match shell {
        Shell::Bash | Shell::Zsh => writeln!(out, "{SENTINEL}={key}"),
        Shell::Fish => writeln!(out, "set -g {SENTINEL} {key}"),
    };
    out
}

/// The function `name`, appended to `out`: from `from` (the shell's values must be its
/// values) to `to` (its check must hold), then the way back is `then`.
fn one(out: &mut String, shell: Shell, name: &str, from: &Side, to: &Side, then: &str) {
    use std::fmt::Write as _;
    let (back, _, _) = names(shell);
    let check_name = format!("{name}_ok");
    // What the hop assigns is not asked of the check: it is what the hop makes it.
    let mut check = to.check.clone();
    check
        .vars
        .retain(|(k, _)| !to.values.iter().any(|(n, _)| n == k));
    let vars: Vec<(&str, Option<&std::ffi::OsStr>)> = to
        .values
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_deref()))
        .collect();
    let assign = super::render(&vars, shell.format())
        .expect("the shells' quoting holds any value")
        .bytes;
    let assign = String::from_utf8_lossy(&assign);
    fast_path::render_into(out, Some(&check), shell, &check_name);
    // `write!` to a String cannot fail.
    let _ = match shell {
        Shell::Bash | Shell::Zsh => write!(
            out,
            "{name}() {{\n    [[ {} ]] || return 1\n    {check_name} || return 1\n{assign}",
            guard_posix(&from.values)
        ),
        Shell::Fish => write!(
            out,
            "function {name}\n    {}\n    or return 1\n    {check_name}; or return 1\n{assign}",
            guard_fish(&from.values)
        ),
    };
    fast_path::render_into(out, Some(&to.check), shell, fast_path::function_name(shell));
    let _ = match shell {
        Shell::Bash | Shell::Zsh => write!(out, "{back}() {{ {then}; }}\n}}\n"),
        Shell::Fish => write!(out, "function {back}; {then}; end\nend\n"),
    };
}

/// `[[ ]]` terms: each variable set (or unset) and holding exactly its value.
fn guard_posix(values: &[(String, Option<OsString>)]) -> String {
    let terms: Vec<String> = values
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("-n ${{{k}+x}} && ${{{k}}} == {}", q_posix(v.as_bytes())),
            None => format!("-z ${{{k}+x}}"),
        })
        .collect();
    terms.join(" &&\n       ")
}

/// fish's tests: each variable set (or unset) and holding exactly its value (a path
/// variable, which fish keeps as a list, joined with `:` as fish does in quotes).
fn guard_fish(values: &[(String, Option<OsString>)]) -> String {
    let terms: Vec<String> = values
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("set -q {k}; and test \"x${k}\" = x{}", q_fish(v.as_bytes())),
            None => format!("not set -q {k}"),
        })
        .collect();
    terms.join("\n    and ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn side(pwd: &str, cuda_home: Option<&str>) -> Side {
        Side {
            check: Check {
                place: Place::Dir(pwd.into()),
                vars: vec![
                    ("VIRTUAL_ENV".into(), None),
                    ("PATH".into(), Some("/it's:/usr/bin".into())),
                ],
                same_time: vec![],
                same_text: vec![],
                absent: vec![],
            },
            values: vec![
                ("CUDA_HOME".into(), cuda_home.map(Into::into)),
                ("PATH".into(), Some("/it's:/usr/bin".into())),
            ],
        }
    }

    fn hop(dir: &Path) -> Hop {
        Hop::new(
            side("/elsewhere", None),
            side("/p", Some("/v")),
            dir.to_path_buf(),
        )
        .unwrap()
    }

    #[test]
    fn each_hop_checks_the_values_it_leaves_and_the_check_it_goes_to() {
        let hop = hop(Path::new("/unused"));
        let bash = code(&hop, Shell::Bash, "k1");
        // Leaving here: CUDA_HOME must still be /v; then /elsewhere's check, without the
        // PATH the hop sets itself.
        let to_back = bash.split("_gpuenv_hop_back() {").nth(1).unwrap();
        assert!(
            to_back.contains("-n ${CUDA_HOME+x} && ${CUDA_HOME} == '/v'"),
            "{bash}"
        );
        assert!(to_back.contains("unset CUDA_HOME"), "{bash}");
        let ok = bash.split("_gpuenv_hop_back_ok() {").nth(1).unwrap();
        assert!(ok.contains("$PWD == '/elsewhere'") && ok.contains("VIRTUAL_ENV"));
        assert!(
            !ok.split('}').next().unwrap().contains("${PATH-}"),
            "{bash}"
        );
        assert!(
            bash.contains("_gpuenv_back() { _gpuenv_hop_here; }"),
            "{bash}"
        );
        // It hops nowhere itself: its last line is its key, which the shell checks.
        assert!(bash.ends_with("}\n__gpuenv_hop=k1\n"), "{bash}");
        let fish = code(&hop, Shell::Fish, "k1");
        assert!(fish.contains("not set -q CUDA_HOME"), "{fish}");
        assert!(
            fish.contains(r#"test "x$PATH" = x'/it\'s:/usr/bin'"#),
            "{fish}"
        );
        assert!(fish.ends_with("end\nset -g __gpuenv_hop k1\n"), "{fish}");
    }

    #[test]
    fn a_check_that_a_hop_would_not_make_true_means_no_hop() {
        // /elsewhere's check wants this PATH, which the hop back would not give it.
        let mut back = side("/elsewhere", None);
        back.check.vars[1].1 = Some("/other".into());
        assert_eq!(Hop::new(back, side("/p", Some("/v")), "/h".into()), None);
        // A variable the hop does not assign is left to the check.
        let mut back = side("/elsewhere", None);
        back.check.vars[0].1 = Some("/venv".into());
        assert!(Hop::new(back, side("/p", Some("/v")), "/h".into()).is_some());
    }

    #[test]
    fn the_shell_reads_the_hops_file_only_in_the_directory_it_leads_back_to() {
        let dir = tempfile::tempdir().unwrap();
        let hop = hop(&dir.path().join("hops"));
        let line = render(Some(&hop), Shell::Bash);
        assert!(
            line.starts_with("_gpuenv_back() { [[ $PWD == '/elsewhere' && -f '"),
            "{line}"
        );
        let files: Vec<PathBuf> = fs_err::read_dir(&hop.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1);
        let f = files[0].display();
        assert!(line.contains(&format!("-O '{f}' ]] || return 1; local __gpuenv_hop=; . '{f}' 2>/dev/null; [[ $__gpuenv_hop == ")), "{line}");
        assert!(line.ends_with(" ]] && _gpuenv_hop_back; }\n"), "{line}");
        // The same way again is the same file; another way another.
        assert_eq!(render(Some(&hop), Shell::Bash), line);
        let mut other = hop.clone();
        other.here.values[0].1 = Some("/w".into());
        assert_ne!(render(Some(&other), Shell::Bash), line);
        // A file that is not what its name says is written again.
        fs_err::write(&files[0], "garbage").unwrap();
        assert_eq!(render(Some(&hop), Shell::Bash), line);
        assert!(fs_err::read_to_string(&files[0])
            .unwrap()
            .contains("_gpuenv_hop_here()"));
        assert!(render(Some(&hop), Shell::Fish).contains("-a -O "));
        assert_eq!(render(None, Shell::Zsh), "_gpuenv_back() { return 1; }\n");
    }
}
