//! Rendering environment changes for a shell (or as JSON / dotenv). Every value goes
//! through the quoting functions here, which the tests check against the real shells.

pub mod by_proxy;
pub mod ci;
pub mod fast_path;
pub mod hook;
pub mod hook_env;
pub mod hop;
pub mod prompt;
pub use crate::quote;

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::str::FromStr;

use crate::named::Named;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Named for Shell {
    const ALL: &'static [Shell] = &[Shell::Bash, Shell::Zsh, Shell::Fish];
    fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
        }
    }
}

impl Shell {
    /// The format of `gpuenv env` that this shell reads.
    pub fn format(self) -> Format {
        match self {
            Shell::Bash => Format::Bash,
            Shell::Zsh => Format::Zsh,
            Shell::Fish => Format::Fish,
        }
    }
}

impl fmt::Display for Shell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Shell {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "bash" => Ok(Shell::Bash),
            "zsh" => Ok(Shell::Zsh),
            "fish" => Ok(Shell::Fish),
            other => Err(format!(
                "unsupported shell `{other}`: expected bash, zsh or fish"
            )),
        }
    }
}

/// Output formats of `gpuenv env`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Bash,
    Zsh,
    Fish,
    Json,
    Dotenv,
    /// SLURM TaskProlog lines: `export NAME=value`, `unset NAME` (values are taken to the end
    /// of the line, unquoted; check them with [`check_slurm`] first).
    Slurm,
    /// A GitHub Actions step's `$GITHUB_ENV` (and `$GITHUB_PATH`) lines (see [`ci::github`]).
    Github,
    /// Dockerfile `ENV` lines (see [`ci::dockerfile`]).
    Dockerfile,
}

#[derive(Debug, thiserror::Error)]
#[error("{name}'s value has a newline, which a SLURM TaskProlog line cannot carry (slurmd reads one `export NAME=value` per line)")]
pub struct SlurmError {
    pub name: String,
}

impl crate::diagnostic::Diagnostic for SlurmError {
    fn hints(&self) -> Vec<String> {
        vec!["remove the newline from the value (a toolchain file's [env] table, or the variable in this environment)".into()]
    }
}

/// TaskProlog output has no quoting: a value with a newline would become two lines.
pub fn check_slurm(vars: &[(&str, Option<&OsStr>)]) -> Result<(), SlurmError> {
    match vars
        .iter()
        .find(|(_, v)| v.is_some_and(|v| v.as_bytes().contains(&b'\n')))
    {
        Some((k, _)) => Err(SlurmError {
            name: k.to_string(),
        }),
        None => Ok(()),
    }
}

impl Named for Format {
    const ALL: &'static [Format] = &[
        Format::Bash,
        Format::Zsh,
        Format::Fish,
        Format::Json,
        Format::Dotenv,
        Format::Slurm,
        Format::Github,
        Format::Dockerfile,
    ];
    fn name(self) -> &'static str {
        match self {
            Format::Bash => "bash",
            Format::Zsh => "zsh",
            Format::Fish => "fish",
            Format::Json => "json",
            Format::Dotenv => "dotenv",
            Format::Slurm => "slurm",
            Format::Github => "github",
            Format::Dockerfile => "dockerfile",
        }
    }
}

/// Shell code that unloads modules, where the shell has a `module` command (Lmod or
/// Environment Modules); nothing for formats that are not shell code.
pub fn module_unload(names: &[String], format: Format) -> String {
    let mut out = String::new();
    for name in names {
        match format {
            Format::Bash | Format::Zsh => out.push_str(&format!(
                "if type module >/dev/null 2>&1; then module unload {}; fi\n",
                String::from_utf8_lossy(&quote::posix(name.as_bytes()))
            )),
            Format::Fish => out.push_str(&format!(
                "if functions -q module; module unload {}; end\n",
                String::from_utf8_lossy(&quote::fish(name.as_bytes()))
            )),
            Format::Json | Format::Dotenv | Format::Slurm | Format::Github | Format::Dockerfile => {
            }
        }
    }
    out
}

/// Renders assignments (`None` = unset) in `format`, one statement per line, as bytes:
/// a value that is not UTF-8 is written byte for byte (JSON, which cannot hold such
/// bytes, shows U+FFFD for them; `lossy` tells the caller so). GitHub's and Docker's formats
/// refuse what they cannot hold; here, without the values before, PATH is set whole.
pub fn render(vars: &[(&str, Option<&OsStr>)], format: Format) -> Result<Rendered, ci::CiError> {
    let mut out: Vec<u8> = Vec::new();
    let mut lossy = Vec::new();
    let mut line = |parts: &[&[u8]]| {
        for p in parts {
            out.extend_from_slice(p);
        }
        out.push(b'\n');
    };
    match format {
        Format::Bash | Format::Zsh => {
            for (k, v) in vars {
                match v {
                    Some(v) => line(&[b"export ", k.as_bytes(), b"=", &quote::posix(v.as_bytes())]),
                    None => line(&[b"unset ", k.as_bytes()]),
                }
            }
        }
        Format::Fish => {
            for (k, v) in vars {
                match v {
                    Some(v) => line(&[b"set -gx ", k.as_bytes(), b" ", &quote::fish(v.as_bytes())]),
                    None => line(&[b"set -e ", k.as_bytes()]),
                }
            }
        }
        Format::Json => {
            let map: serde_json::Map<String, serde_json::Value> = vars
                .iter()
                .map(|(k, v)| {
                    if v.is_some_and(|v| v.to_str().is_none()) {
                        lossy.push(k.to_string());
                    }
                    let v = v.map_or(serde_json::Value::Null, |s| s.to_string_lossy().into());
                    (k.to_string(), v)
                })
                .collect();
            let text = serde_json::to_string_pretty(&map).expect("a map of strings serializes");
            line(&[text.as_bytes()]);
        }
        Format::Slurm => {
            for (k, v) in vars {
                match v {
                    Some(v) => line(&[b"export ", k.as_bytes(), b"=", v.as_bytes()]),
                    None => line(&[b"unset ", k.as_bytes()]),
                }
            }
        }
        Format::Dotenv => {
            // dotenv has no "unset"; unset variables are left out.
            for (k, v) in vars {
                if let Some(v) = v {
                    line(&[k.as_bytes(), b"=", &quote::dotenv(v.as_bytes())]);
                }
            }
        }
        Format::Github | Format::Dockerfile => {
            let changes: Vec<ci::Change> = vars.iter().map(|&(k, v)| (k, None, v)).collect();
            out = match format {
                Format::Github => ci::github(&changes)?.env,
                _ => ci::dockerfile(&changes)?.into_bytes(),
            };
        }
    }
    Ok(Rendered { bytes: out, lossy })
}

/// Rendered shell code or data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub bytes: Vec<u8>,
    /// Variables whose value the format could not hold exactly (JSON and non-UTF-8).
    pub lossy: Vec<String>,
}
