//! `gpuenv show`: the active toolchains here, and why each is active.

use crate::cli::support;
use anyhow::Result;
use serde_json::json;

use gpuenv_core::build_cache;
use gpuenv_core::context::{vars, Context};
use gpuenv_core::diagnostic::Diagnostic;
use gpuenv_core::project::{self, ArchPolicy, PinValue, ProjectFile};
use gpuenv_core::store::{self, Problem};
use gpuenv_core::toolchain::{upstream, view};
use gpuenv_core::ui;

/// Show the active toolchains here, and why each is active
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Machine-readable output on stdout
    #[arg(long)]
    json: bool,
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let mut session = support::session(ctx)?;
        let active = match support::resolve_here(&mut session, &[], None) {
            Ok(active) => active,
            // A pin that is not installed still leaves the file's other settings to show.
            Err(e) => {
                let safe = &session.registry().safe_directories;
                if let Ok(Some(path)) = project::find(&ctx.cwd, safe).map(|h| h.path) {
                    if let Ok(file) = project::load(&path) {
                        self.unresolved(&file)?;
                    }
                }
                return Err(e);
            }
        };
        let (home, registry) = (session.home(), session.registry());
        let cache = build_cache::choose(
            ctx.var(vars::GPUENV_BUILD_CACHE),
            active.project.as_ref(),
            registry,
            &upstream::site_build(ctx),
        )?;
        let cache_program = build_cache::locate(&cache, ctx.var_os(vars::PATH));
        let archs = active.project.as_ref().and_then(archs_shown);
        // What is missing for the toolchains active here, and the shims they run through.
        let problems: Vec<Problem> = store::health(home, registry)
            .into_iter()
            .filter(|p| {
                p.name()
                    .is_none_or(|n| active.toolchains.iter().any(|t| t.name == n))
            })
            .collect();
        support::warn_problems(&problems);
        if self.json {
            let toolchains: Vec<_> = active
                .toolchains
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "kind": t.entry.kind,
                        "version": t.entry.version,
                        "root": t.entry.root,
                        "view": view::paths(home, &t.name, &t.entry).root,
                        "reason": t.reason.to_string(),
                        "components": support::made_of(&t.entry),
                        "problems": problems
                            .iter()
                            .filter(|p| p.name() == Some(&t.name))
                            .map(|p| p.to_string())
                            .collect::<Vec<_>>(),
                    })
                })
                .collect();
            let out = json!({
                "toolchains": toolchains,
                "toolchain_file": active.project.as_ref().map(|p| &p.path),
                // What the file sets that waits for `gpuenv trust`, and the nearer files
                // passed over as someone else's.
                "held_back": active.project.as_ref().map(|p| p.held_back()).unwrap_or_default(),
                "passed_over": active.passed_over.iter().map(|f| &f.path).collect::<Vec<_>>(),
                "build_cache": {
                    "cache": cache.cache.to_string(),
                    "from": cache.from,
                    "program": cache_program.as_ref().ok().cloned().flatten(),
                    "shared": cache.shared.as_ref().map(|(s, _)| s.to_string()),
                },
                "cuda_arch": active.project.as_ref().map(arch_pins).unwrap_or_default().0,
                "rocm_arch": active.project.as_ref().map(arch_pins).unwrap_or_default().1,
                "build_archs": archs.as_ref().map(|a| json!({
                    "policy": a.policy.name(),
                    "from": a.from,
                    "held_back": a.held_back.map(ArchPolicy::name),
                })),
                "host_compiler": active.host_compiler.as_ref().map(|c| json!({
                    "compiler": c.compiler(),
                    "choice": c.to_string(),
                    "problem": c.problem().map(|p| p.to_string()),
                })),
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
            return Ok(());
        }
        match &active.project {
            Some(p) if !p.held_back().is_empty() => println!(
                "toolchain file: {} (not trusted: {} not applied)",
                ui::shown(&p.path),
                p.held_back().join(", ")
            ),
            Some(p) => println!("toolchain file: {}", ui::shown(&p.path)),
            None => println!(
                "toolchain file: none (looked from {} up)",
                ui::shown(&ctx.cwd)
            ),
        }
        if active.toolchains.is_empty() {
            ui::info_with_hints(
                "no toolchain is active here",
                ["`gpuenv pin <spec>` pins one for this directory, `gpuenv default <spec>` sets one everywhere"],
            );
        }
        for t in &active.toolchains {
            println!("{}: {} ({})", t.entry.kind, t.name, t.reason);
        }
        for line in active.project.iter().flat_map(arch_pin_lines) {
            println!("{line}");
        }
        match cache_program {
            Ok(Some(program)) => println!(
                "build cache: {} ({}): nvcc and hipcc compile through {}",
                cache.cache,
                cache.from,
                program.display()
            ),
            Ok(None) => {}
            Err(warning) => ui::warn_with_hints(&warning, warning.hints()),
        }
        if let (Some((store, from)), true) = (&cache.shared, cache.cache.program().is_some()) {
            println!("shared build cache: {store} ({from})");
        }
        if let Some(a) = &archs {
            let held = match a.held_back {
                Some(written) => format!(
                    "; it sets \"{}\", applied once you `gpuenv trust` it",
                    written.name()
                ),
                None => String::new(),
            };
            println!(
                "build archs: {} ({}{held}): {}",
                a.policy.name(),
                a.from,
                a.policy.effect()
            );
        }
        if let Some(choice) = &active.host_compiler {
            println!("host compiler: {choice}");
            support::warn_host_compiler(&active);
        }
        Ok(())
    }
}

impl Args {
    /// What the toolchain file here says when a pin of it resolves to nothing: each pin,
    /// the arch pins and `[build] archs`; the error follows.
    fn unresolved(&self, file: &ProjectFile) -> Result<()> {
        let archs = archs_shown(file);
        if self.json {
            let pins: Vec<_> = file
                .pins
                .iter()
                .map(|p| json!({"kind": p.kind, "pin": pin_text(&p.value), "at": p.at.to_string()}))
                .collect();
            let (cuda, rocm) = arch_pins(file);
            let out = json!({
                "toolchains": [],
                "toolchain_file": file.path,
                "pins": pins,
                "cuda_arch": cuda,
                "rocm_arch": rocm,
                "build_archs": archs.as_ref().map(|a| json!({
                    "policy": a.policy.name(),
                    "from": a.from,
                    "held_back": a.held_back.map(ArchPolicy::name),
                })),
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
            return Ok(());
        }
        // Said to the person (stdout stays empty on an error), before the error itself.
        let mut lines = vec![format!("toolchain file: {}", file.path.display())];
        for p in &file.pins {
            lines.push(format!(
                "{}: {} (pinned at {}; not resolved here: see the error)",
                p.kind,
                pin_text(&p.value),
                p.at
            ));
        }
        lines.extend(arch_pin_lines(file));
        if let Some(a) = &archs {
            lines.push(format!(
                "build archs: {} ({}): {}",
                a.policy.name(),
                a.from,
                a.policy.effect()
            ));
        }
        for line in lines {
            ui::info(line);
        }
        Ok(())
    }
}

fn pin_text(value: &PinValue) -> String {
    match value {
        PinValue::Spec(s) => s.to_string(),
        PinValue::Torch => "torch".to_string(),
    }
}

/// The file's arch pins, as written: (cuda-arch, rocm-arch).
fn arch_pins(p: &ProjectFile) -> (Vec<String>, Vec<String>) {
    (
        p.cuda_arch.iter().map(ToString::to_string).collect(),
        p.rocm_arch.iter().map(ToString::to_string).collect(),
    )
}

/// `cuda-arch: 8.0, 9.0 (gpuenv.toml:3:13)`, and rocm-arch likewise, when pinned.
fn arch_pin_lines(p: &ProjectFile) -> Vec<String> {
    let (cuda, rocm) = arch_pins(p);
    [
        ("cuda-arch", cuda, p.cuda_arch_at.first()),
        ("rocm-arch", rocm, p.rocm_arch_at.first()),
    ]
    .into_iter()
    .filter_map(|(key, list, at)| {
        let at = at.filter(|_| !list.is_empty())?;
        Some(format!("{key}: {} ({at})", list.join(", ")))
    })
    .collect()
}

/// `[build] archs` as it applies to a toolchain file.
struct ArchsShown {
    policy: ArchPolicy,
    /// Where it is set, or "the default".
    from: String,
    /// What the file sets that waits for `gpuenv trust` (`add`), if anything.
    held_back: Option<ArchPolicy>,
}

/// `None` when the file pins no arch and sets no policy: there is nothing it acts on.
fn archs_shown(p: &ProjectFile) -> Option<ArchsShown> {
    let written = p.archs_written();
    if written.is_none() && p.cuda_arch.is_empty() && p.rocm_arch.is_empty() {
        return None;
    }
    let (policy, applied_at) = p.archs_policy();
    let held_back = written
        .filter(|(w, _)| applied_at.is_none() && *w != policy)
        .map(|(w, _)| w);
    let from = match written {
        Some((_, at)) => at.to_string(),
        None => "the default".to_string(),
    };
    Some(ArchsShown {
        policy,
        from,
        held_back,
    })
}
