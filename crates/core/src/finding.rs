//! A finding of a check (doctor's one per failure mode, audit's comparisons of a built
//! object): typed values, rendered to text or JSON by one function each.

use std::fmt::Write as _;

use owo_colors::OwoColorize;
use serde::Serialize;

use crate::ui::printable;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    /// The check cannot decide here (no driver, no torch, nothing to compare with).
    Skip,
    Warn,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Skip => "skip",
            Status::Warn => "warn",
            Status::Error => "error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The check: a failure mode (`FM-10`) or what audit compared (`kernel-image`).
    pub id: &'static str,
    /// The check's name after its id (`host-compiler`); empty when the id says it all.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub name: &'static str,
    pub status: Status,
    /// What the check saw, in one line.
    pub summary: String,
    /// Everything behind the summary: each problem, and what was looked at.
    pub details: Vec<String>,
    /// The exact command or setting that fixes it (one way out per line).
    pub hint: Option<String>,
    /// The section of the docs about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docs: Option<String>,
}

impl Finding {
    pub fn new(id: &'static str, status: Status, summary: impl Into<String>) -> Finding {
        Finding {
            id,
            name: "",
            status,
            summary: summary.into(),
            details: Vec::new(),
            hint: None,
            docs: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Finding {
        self.hint = Some(hint.into());
        self
    }
}

/// How many findings have each status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub error: usize,
    pub warn: usize,
    pub ok: usize,
    pub skip: usize,
}

impl Counts {
    pub fn of(findings: &[Finding]) -> Counts {
        let n = |s: Status| findings.iter().filter(|f| f.status == s).count();
        Counts {
            error: n(Status::Error),
            warn: n(Status::Warn),
            ok: n(Status::Ok),
            skip: n(Status::Skip),
        }
    }
}

/// The findings for people: a line each, details, hints and the docs under anything not
/// ok, then the counts. Styled; the caller's stream strips the styles where colour is off.
/// Findings quote PATH entries, file contents and tool output: shown without raw control
/// characters.
pub fn render_text(out: &mut String, findings: &[Finding]) {
    let p = |s: &str| printable(s).into_owned();
    for f in findings {
        let status = format!("{:<5}", f.status.as_str());
        let status = match f.status {
            Status::Ok => status.green().to_string(),
            Status::Skip => status.dimmed().to_string(),
            Status::Warn => status.yellow().bold().to_string(),
            Status::Error => status.red().bold().to_string(),
        };
        let name = if f.name.is_empty() {
            String::new()
        } else {
            format!(" {}", f.name)
        };
        let _ = writeln!(out, "{status} {}{name}: {}", f.id, p(&f.summary));
        if f.status >= Status::Warn {
            for d in &f.details {
                let _ = writeln!(out, "        {}", p(d));
            }
        }
        for h in f.hint.iter().flat_map(|h| h.lines()) {
            let _ = writeln!(out, "      {} {}", "hint:".cyan().bold(), p(h));
        }
        if let Some(docs) = f.docs.as_ref().filter(|_| f.status >= Status::Warn) {
            let _ = writeln!(out, "      {} {docs}", "see:".dimmed());
        }
    }
    let c = Counts::of(findings);
    let _ = writeln!(
        out,
        "{} error(s), {} warning(s), {} ok, {} skipped",
        c.error, c.warn, c.ok, c.skip
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rendering_for_named_and_unnamed_findings() {
        let mut doctor =
            Finding::new("FM-10", Status::Error, "gcc 14 is too new").hint("install g++-13");
        doctor.name = "host-compiler";
        doctor.details = vec!["seen: g++ 14".into()];
        doctor.docs = Some("https://example/docs#fm-10".into());
        let audit = Finding::new("ptx", Status::Ok, "has PTX compute_90");
        let mut out = String::new();
        render_text(&mut out, &[doctor.clone(), audit]);
        let plain =
            String::from_utf8(anstream::adapter::strip_bytes(out.as_bytes()).into_vec()).unwrap();
        assert_eq!(
            plain,
            "error FM-10 host-compiler: gcc 14 is too new\n        seen: g++ 14\n      hint: install g++-13\n      see: https://example/docs#fm-10\nok    ptx: has PTX compute_90\n1 error(s), 0 warning(s), 1 ok, 0 skipped\n"
        );
        let json = serde_json::to_value(&doctor).unwrap();
        assert_eq!(json["name"], "host-compiler");
        assert_eq!(json["status"], "error");
        let json = serde_json::to_value(Finding::new("gpus", Status::Skip, "none")).unwrap();
        assert!(
            json.get("name").is_none() && json.get("docs").is_none(),
            "{json}"
        );
    }
}
