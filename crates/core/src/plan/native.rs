//! This machine's GPUs as arch pins (`gpuenv pin --arch native`): NVIDIA's compute
//! capabilities from `nvidia-smi`, AMD's gfx names from `rocminfo` (else
//! `rocm_agent_enumerator`), each tool run with a timeout. A fact of the machine, used by
//! `pin`, `torch index`, `audit` and the doctor alike.

use std::path::Path;
use std::process::Command;

use crate::ask;
use crate::context::{vars, Context};
use crate::facts::arch::{CudaArch, RocmTarget};
use crate::facts::driver;
use crate::plan::guard::find_on_path;

/// The archs found, and what was asked (for the message when there are none).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Native {
    pub cuda: Vec<String>,
    pub rocm: Vec<String>,
    /// `nvidia-smi: not on PATH`, `rocminfo: ROCk module is NOT loaded…`.
    pub asked: Vec<String>,
}

/// `nvidia-smi --query-gpu=compute_cap --format=csv,noheader`: one `8.6` per GPU.
pub fn parse_compute_caps(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cap in text.lines().map(str::trim) {
        if CudaArch::parse(cap).is_ok() && !out.iter().any(|c| c == cap) {
            out.push(cap.to_string());
        }
    }
    out
}

/// `rocm_agent_enumerator`: one gfx name per agent, `gfx000` for the CPU.
pub fn parse_agents(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in text.lines().map(str::trim) {
        // `gfx000` (the CPU agent) is no GPU target.
        if RocmTarget::parse(name).is_ok() && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The gfx names of the GPU agents in `rocminfo` output (`Name:  gfx90a`), in order, once
/// each. ISA lines (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`) and CPU agents are not GPUs.
pub fn parse_rocminfo(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some(name) = line.trim().strip_prefix("Name:") else {
            continue;
        };
        let name = name.trim();
        if RocmTarget::parse(name).is_ok() && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// Why a tool gave no output to read.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// It could not be started, or did not answer in time (`crate::ask`).
    #[error(transparent)]
    Ask(#[from] ask::AskError),
    #[error("`{command}` exited with {status}: {output}")]
    Failed {
        command: String,
        status: std::process::ExitStatus,
        output: String,
    },
}

/// Runs `program` with the context's environment (and nothing else) in its directory,
/// returning stdout and stderr together. A non-zero exit is an error carrying the output;
/// a tool that hangs (nvidia-smi on a wedged driver does) is stopped at `ask`'s deadline.
pub fn run(ctx: &Context, program: &Path, args: &[&str]) -> Result<String, RunError> {
    let answer = ask::output(
        Command::new(program)
            .args(args)
            .env_clear()
            .envs(&ctx.vars)
            .current_dir(&ctx.cwd),
    )?;
    let text = answer.text();
    if answer.status.success() {
        Ok(text)
    } else {
        let shown = format!("{} {}", program.display(), args.join(" "));
        Err(RunError::Failed {
            command: shown.trim().to_string(),
            status: answer.status,
            output: text.trim().to_string(),
        })
    }
}

/// Runs `tool` from the context's PATH; `None` if it is not on PATH.
pub fn run_tool(ctx: &Context, tool: &str, args: &[&str]) -> Option<Result<String, RunError>> {
    let program = find_on_path(ctx.var_os(vars::PATH), tool)?;
    Some(run(ctx, &program, args))
}

/// The first line of a tool's answer, without the command line [`run`] puts first.
/// What a tool said, in one line for a message: colours and other escape sequences taken
/// out (a tool's output is not gpuenv's to print as is), and of a Python traceback only the
/// exception it ends with (ROCm's `rocm_agent_enumerator` prints one without a GPU).
fn first_line(text: &str) -> String {
    let text = anstream::adapter::strip_str(text).to_string();
    let text = match text.split_once("Traceback (most recent call last):") {
        Some((head, trace)) => {
            let raised = trace.lines().map(str::trim).rfind(|l| !l.is_empty());
            format!("{head}{}", raised.unwrap_or("a Python traceback"))
        }
        None => text,
    };
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    let line = line.unwrap_or("no output");
    let line = match line.strip_prefix('`').and_then(|l| l.split_once("` ")) {
        Some((_, rest)) => rest,
        None => line,
    };
    line.chars().take(160).collect()
}

/// The NVIDIA driver's version here: `/proc/driver/nvidia/version`, else `nvidia-smi` on
/// the context's PATH (within the probe deadline); `None` without a driver.
pub fn driver_version(ctx: &Context) -> Option<String> {
    if let Some(v) = driver::read_proc_version(&ctx.system_root()) {
        return Some(v);
    }
    let text = run_tool(ctx, "nvidia-smi", &[])?.ok()?;
    driver::parse_nvidia_smi(&text).map(|(v, _)| v)
}

/// This machine's GPUs, asked with the tools on the context's PATH.
pub fn native_archs(ctx: &Context) -> Native {
    let mut found = Native::default();
    match run_tool(
        ctx,
        "nvidia-smi",
        &["--query-gpu=compute_cap", "--format=csv,noheader"],
    ) {
        None => found.asked.push("nvidia-smi: not on PATH".into()),
        Some(Ok(text)) => {
            found.cuda = parse_compute_caps(&text);
            if found.cuda.is_empty() {
                found
                    .asked
                    .push(format!("nvidia-smi: {}", first_line(&text)));
            }
        }
        Some(Err(e)) => found
            .asked
            .push(format!("nvidia-smi: {}", first_line(&e.to_string()))),
    }
    for (tool, parse) in [
        ("rocminfo", parse_rocminfo as fn(&str) -> Vec<String>),
        ("rocm_agent_enumerator", parse_agents),
    ] {
        match run_tool(ctx, tool, &[]) {
            None => found.asked.push(format!("{tool}: not on PATH")),
            Some(Ok(text)) => {
                found.rocm = parse(&text);
                if !found.rocm.is_empty() {
                    break;
                }
                found.asked.push(format!("{tool}: no GPU agent listed"));
            }
            Some(Err(e)) => found
                .asked
                .push(format!("{tool}: {}", first_line(&e.to_string()))),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_caps_one_per_gpu_once_each() {
        assert_eq!(parse_compute_caps("8.0\n8.0\n9.0\n"), ["8.0", "9.0"]);
        assert!(parse_compute_caps("[N/A]\nNo devices were found\n").is_empty());
    }

    #[test]
    fn agents_without_the_cpu() {
        assert_eq!(parse_agents("gfx000\ngfx90a\ngfx90a\n"), ["gfx90a"]);
        assert!(parse_agents("gfx000\n").is_empty());
    }
}
