//! This machine's GPUs as arch pins (`gpuenv pin --arch native`): NVIDIA's compute
//! capabilities from `nvidia-smi`, AMD's gfx names from `rocminfo` (else
//! `rocm_agent_enumerator`), each tool run with a timeout.

use super::machine::Machine;
use super::rocm::parse_rocminfo;
use gpuenv_core::facts::arch::{CudaArch, RocmTarget};

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

/// The first line of a tool's answer, without the command line `Machine::run` puts first.
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

pub fn native_archs(m: &Machine) -> Native {
    let mut found = Native::default();
    match m.run_tool(
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
        match m.run_tool(tool, &[]) {
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
