//! Rendering environment changes for a shell (or as JSON / dotenv). Every value goes
//! through the quoting functions here, which the tests check against the real shells.

pub mod fast_path;
pub mod hook;
pub mod hook_env;
pub mod quote;

use std::fmt;
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
}

#[derive(Debug, thiserror::Error)]
#[error("{name}'s value has a newline, which a SLURM TaskProlog line cannot carry (slurmd reads one `export NAME=value` per line)\nhint: remove the newline from the value (a toolchain file's [env] table, or the variable in this environment)")]
pub struct SlurmError {
    pub name: String,
}

/// TaskProlog output has no quoting: a value with a newline would become two lines.
pub fn check_slurm(vars: &[(&str, Option<&str>)]) -> Result<(), SlurmError> {
    match vars
        .iter()
        .find(|(_, v)| v.is_some_and(|v| v.contains('\n')))
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
    ];
    fn name(self) -> &'static str {
        match self {
            Format::Bash => "bash",
            Format::Zsh => "zsh",
            Format::Fish => "fish",
            Format::Json => "json",
            Format::Dotenv => "dotenv",
            Format::Slurm => "slurm",
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
                quote::posix(name)
            )),
            Format::Fish => out.push_str(&format!(
                "if functions -q module; module unload {}; end\n",
                quote::fish(name)
            )),
            Format::Json | Format::Dotenv | Format::Slurm => {}
        }
    }
    out
}

/// Renders assignments (`None` = unset) in `format`, one statement per line.
pub fn render(vars: &[(&str, Option<&str>)], format: Format) -> String {
    let mut out = String::new();
    match format {
        Format::Bash | Format::Zsh => {
            for (k, v) in vars {
                match v {
                    Some(v) => out.push_str(&format!("export {k}={}\n", quote::posix(v))),
                    None => out.push_str(&format!("unset {k}\n")),
                }
            }
        }
        Format::Fish => {
            for (k, v) in vars {
                match v {
                    Some(v) => out.push_str(&format!("set -gx {k} {}\n", quote::fish(v))),
                    None => out.push_str(&format!("set -e {k}\n")),
                }
            }
        }
        Format::Json => {
            let map: serde_json::Map<String, serde_json::Value> = vars
                .iter()
                .map(|(k, v)| {
                    let v = v.map_or(serde_json::Value::Null, |s| s.into());
                    (k.to_string(), v)
                })
                .collect();
            out = serde_json::to_string_pretty(&map).expect("a map of strings serializes");
            out.push('\n');
        }
        Format::Slurm => {
            for (k, v) in vars {
                match v {
                    Some(v) => out.push_str(&format!("export {k}={v}\n")),
                    None => out.push_str(&format!("unset {k}\n")),
                }
            }
        }
        Format::Dotenv => {
            // dotenv has no "unset"; unset variables are left out.
            for (k, v) in vars {
                if let Some(v) = v {
                    out.push_str(&format!("{k}={}\n", quote::dotenv(v)));
                }
            }
        }
    }
    out
}
