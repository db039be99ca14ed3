//! The one chooser of PyTorch's wheel index: every index is judged against each input (the
//! pinned toolkit, the torch releases wanted, the platform, the driver, the GPUs); the newest
//! index nothing rules out is the answer, else a refusal that names the input that rules the
//! toolkit's index out and the fix that helps (a newer driver only when the driver is why).
//! Data gpuenv does not have is said as not known, never as a driver or GPU problem.

use super::lookup::{driver_key, major_floor};
use super::torch_index::{covers, releases_text, Chosen, Machine, Toolkit, TorchWanted};
use super::{release_name, Fact, Facts, Platform, TorchRelease, Unknown};

mod judge;
use judge::{cc_text, judge_cuda, judge_rocm, rocm_family};

/// Which input rules an index out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// Built for another toolkit release than the pinned one.
    Toolkit,
    /// Carries none of the torch releases wanted.
    Torch,
    /// Has no wheels for this platform.
    Platform,
    /// Needs a newer driver.
    Driver,
    /// Its wheels carry no kernels for a GPU here.
    Gpu,
    /// gpuenv's data does not say.
    Unknown,
}

impl Rule {
    /// The word `--json` uses.
    pub fn key(self) -> &'static str {
        match self {
            Rule::Toolkit => "toolkit",
            Rule::Torch => "torch",
            Rule::Platform => "platform",
            Rule::Driver => "driver",
            Rule::Gpu => "gpu",
            Rule::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub index: Chosen,
    /// Why this one, and what was set aside, in words.
    pub why: Vec<String>,
}

/// Why no index fits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoIndex {
    #[error(transparent)]
    Unknown(#[from] Unknown),
    #[error("PyTorch publishes no wheel index for {toolkit} in gpuenv's data from {date} (it has {have})")]
    ForToolkit {
        /// `CUDA 13.1`.
        toolkit: String,
        have: String,
        date: &'static str,
        fixes: Vec<String>,
    },
    #[error("{}", lines.join("; "))]
    Excluded {
        lines: Vec<String>,
        /// The inputs that rule the answer out, most decisive first.
        rules: Vec<Rule>,
        fixes: Vec<String>,
    },
}

impl NoIndex {
    /// The inputs that rule it out.
    pub fn rules(&self) -> Vec<Rule> {
        match self {
            NoIndex::Unknown(_) => vec![Rule::Unknown],
            NoIndex::ForToolkit { .. } => vec![Rule::Toolkit],
            NoIndex::Excluded { rules, .. } => rules.clone(),
        }
    }
}

impl crate::diagnostic::Diagnostic for NoIndex {
    fn hints(&self) -> Vec<String> {
        match self {
            NoIndex::Unknown(u) => crate::diagnostic::Diagnostic::hints(u),
            NoIndex::ForToolkit { fixes, .. } | NoIndex::Excluded { fixes, .. } => fixes.clone(),
        }
    }
}

/// One index and what rules it out.
struct Judged {
    index: Chosen,
    /// For ordering: newest toolkit release first.
    release: (u64, u64),
    reasons: Vec<(Rule, String)>,
}

fn judged(facts: &Facts, m: &Machine) -> Vec<Judged> {
    let mut all: Vec<Judged> = if rocm_family(m) {
        facts
            .rocm_torch
            .iter()
            .map(|i| Judged {
                index: Chosen::Rocm(i),
                release: i.rocm,
                reasons: judge_rocm(facts, i, m),
            })
            .collect()
    } else {
        facts
            .torch
            .iter()
            .map(|i| Judged {
                index: Chosen::Cuda(i),
                release: i.cuda,
                reasons: judge_cuda(facts, i, m),
            })
            .collect()
    };
    // Newest first; of one release, PyTorch's own index before another host's.
    all.sort_by_key(|j| {
        (
            std::cmp::Reverse(j.release),
            matches!(j.index, Chosen::Cuda(i) if i.host_url.is_some()),
        )
    });
    all
}

/// The toolkit's release and kind word, for messages and the fix.
fn toolkit_words(tk: Toolkit) -> ((u64, u64), &'static str, &'static str) {
    match tk {
        Toolkit::Cuda(r) => (r, "CUDA", "cuda"),
        Toolkit::Rocm(r) => (r, "ROCm", "rocm"),
    }
}

/// The index for `m`: the newest that nothing rules out.
pub fn choose(facts: &Facts, m: &Machine) -> Result<Pick, NoIndex> {
    let all = judged(facts, m);
    if let Some(tk) = m.toolkit {
        let (release, _, _) = toolkit_words(tk);
        let newest = all.iter().map(|j| j.release).max();
        if newest.is_some_and(|n| release > n) {
            return Err(NoIndex::Unknown(Unknown {
                release: release_name(release),
                fact: Fact::TorchIndex,
                last: newest.map(release_name).unwrap_or_default(),
                date: facts.date,
            }));
        }
    }
    if let Some(j) = all.iter().find(|j| j.reasons.is_empty()) {
        return Ok(Pick {
            index: j.index,
            why: why(m, j, &all),
        });
    }
    Err(refusal(facts, m, &all))
}

fn why(m: &Machine, chosen: &Judged, all: &[Judged]) -> Vec<String> {
    let mut why = Vec::new();
    match m.toolkit {
        Some(tk) => {
            let (r, kind, _) = toolkit_words(tk);
            why.push(format!(
                "built for {kind} {}, the active toolkit's release (the guard compares major.minor)",
                release_name(r)
            ));
        }
        None => why.push("the newest index that fits (no toolkit is active here)".into()),
    }
    why.push(format!("has wheels for {}", m.platform));
    if !m.torch.is_any() {
        why.push(format!(
            "carries {} ({})",
            m.torch,
            chosen.index.torch_releases()
        ));
    }
    if let Some(d) = &m.driver {
        if matches!(chosen.index, Chosen::Cuda(_)) {
            why.push(format!("runs on driver {d}"));
        }
    }
    let gpus: Vec<String> = m
        .gpus
        .iter()
        .map(|c| cc_text(*c))
        .chain(m.amd_gpus.iter().cloned())
        .collect();
    if !gpus.is_empty() {
        why.push(format!("its wheels carry kernels for {}", gpus.join(", ")));
    }
    // Only what would have been chosen instead is worth saying.
    for j in all.iter().filter(|j| j.release > chosen.release) {
        for (rule, line) in &j.reasons {
            if *rule != Rule::Toolkit {
                why.push(format!("newer, set aside: {line}"));
            }
        }
    }
    why
}

/// The refusal: what rules out the index the toolkit asks for (or every index, with no
/// toolkit), and the fixes that help.
fn refusal(facts: &Facts, m: &Machine, all: &[Judged]) -> NoIndex {
    let not_toolkit = |j: &&Judged| j.reasons.iter().all(|(r, _)| *r != Rule::Toolkit);
    let targets: Vec<&Judged> = all.iter().filter(not_toolkit).collect();
    // Of the toolkit's indexes, those for other platforms (the Jetson one on a server) say
    // nothing when one for this platform is there.
    let here: Vec<&Judged> = targets
        .iter()
        .copied()
        .filter(|j| j.reasons.iter().all(|(r, _)| *r != Rule::Platform))
        .collect();
    let targets = if here.is_empty() { targets } else { here };
    // What would work if the toolkit (and the torch release) changed.
    let fits_machine = |j: &&Judged| {
        j.reasons
            .iter()
            .all(|(r, _)| matches!(r, Rule::Toolkit | Rule::Torch))
    };
    // Of those, the one carrying the newest torch, then the newest toolkit.
    let alternative = all.iter().filter(fits_machine).max_by_key(|j| {
        let last = match j.index {
            Chosen::Cuda(i) => i.torch.1,
            Chosen::Rocm(i) => i.torch.1,
        };
        (last.unwrap_or((u64::MAX, 0)), j.release)
    });
    let mut fixes = Vec::new();
    let alt_fix = |j: &Judged| -> String {
        let (tool, release) = match j.index {
            Chosen::Cuda(i) => ("cuda", i.cuda),
            Chosen::Rocm(i) => ("rocm", i.rocm),
        };
        let pin = format!("{tool}-{}", release_name(release));
        let mut s = if m.toolkit.is_some() {
            format!(
                "pin {pin} (`gpuenv pin {pin}`): {} has wheels that fit this machine",
                j.index.name()
            )
        } else {
            format!("{} has wheels that fit this machine", j.index.name())
        };
        // Which torch releases it carries is part of the fix (cu126 ends at 2.14).
        s.push_str(&format!(" ({})", j.index.torch_releases()));
        s
    };
    if targets.is_empty() {
        let (release, kind, tool) =
            toolkit_words(m.toolkit.expect("with no toolkit every index is a target"));
        // The releases next to it that PyTorch builds for, of the same major.
        let same_major = |j: &&Judged| j.release.0 == release.0 && fits_machine(j);
        let below = all
            .iter()
            .filter(same_major)
            .filter(|j| j.release < release)
            .map(|j| j.release)
            .max();
        let above = all
            .iter()
            .filter(same_major)
            .filter(|j| j.release > release)
            .map(|j| j.release)
            .min();
        let near: Vec<String> = [below, above]
            .into_iter()
            .flatten()
            .map(|r| format!("{tool}-{}", release_name(r)))
            .collect();
        if !near.is_empty() {
            fixes.push(format!(
                "pin a release PyTorch builds wheels for, next to it: {}",
                near.join(" or ")
            ));
        }
        if let Some(j) = alternative {
            let fix = alt_fix(j);
            fixes.push(if fixes.is_empty() {
                fix
            } else {
                format!("or {fix}")
            });
        } else if fixes.is_empty() {
            fixes.push(
                "pin a toolkit release PyTorch builds wheels for (`gpuenv torch index --list`)"
                    .into(),
            );
        }
        return NoIndex::ForToolkit {
            toolkit: format!("{kind} {}", release_name(release)),
            have: all
                .iter()
                .map(|j| j.index.name())
                .collect::<Vec<_>>()
                .join(", "),
            date: facts.date,
            fixes,
        };
    }
    let mut lines = Vec::new();
    let mut rules = Vec::new();
    for j in &targets {
        for (rule, line) in &j.reasons {
            if !lines.contains(line) {
                lines.push(line.clone());
            }
            if !rules.contains(rule) {
                rules.push(*rule);
            }
        }
    }
    rules.sort();
    // The fixes for the toolkit's own index: another torch release, a newer driver: each only
    // when it is the whole reason.
    let own = targets[0];
    let only = |allowed: &[Rule]| own.reasons.iter().all(|(r, _)| allowed.contains(r));
    if only(&[Rule::Torch]) {
        fixes.push(format!(
            "ask for a torch release {} carries ({})",
            own.index.name(),
            own.index.torch_releases()
        ));
    }
    let has_driver = own.reasons.iter().any(|(r, _)| *r == Rule::Driver);
    if has_driver && only(&[Rule::Driver, Rule::Torch]) {
        if let Chosen::Cuda(i) = own.index {
            if let Some(f) = major_floor(facts, i.cuda.0) {
                fixes.push(format!("update the NVIDIA driver to {f} or newer"));
            }
        }
    }
    if let Some(j) = alternative.filter(|j| !std::ptr::eq(*j, own)) {
        let fix = alt_fix(j);
        fixes.push(if fixes.is_empty() {
            fix
        } else {
            format!("or {fix}")
        });
    }
    if rules.contains(&Rule::Unknown) {
        fixes.push(format!(
            "gpuenv's data (from {}) does not say; run `{}` for newer data",
            facts.date,
            super::REFRESH
        ));
    }
    if fixes.is_empty() {
        fixes.push(
            "no index in gpuenv's data fits this machine; `gpuenv torch index --list` shows every index, its platforms, archs and torch releases".into(),
        );
    }
    NoIndex::Excluded {
        lines,
        rules,
        fixes,
    }
}
