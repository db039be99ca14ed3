//! After a pin moves a project's CUDA: the CMake build trees in it (at most two levels
//! down) configured for another toolkit, said at once. A tree whose nvcc is gpuenv's is
//! refused at its next compile anyway; one configured outside gpuenv with a real nvcc path
//! never reaches the proxy, so this is the one moment gpuenv can say it, before the build
//! mixes that toolkit with the pinned one's environment.

use gpuenv_core::context::Context;
use gpuenv_core::diagnostic::Diagnostic as _;
use gpuenv_core::stale;
use gpuenv_core::toolchain::Kind;
use gpuenv_core::ui;

const DEPTH: usize = 2;

/// Warns of each build tree under the current directory that the CUDA toolkit active here
/// (after the pin) makes stale. Says nothing when nothing resolves.
pub fn warn(ctx: &Context) {
    let Ok(mut session) = super::session(ctx) else {
        return;
    };
    let Ok(active) = super::resolve_here_kinds(&mut session, &[], &[Kind::Cuda], None) else {
        return;
    };
    let Some(t) = active
        .toolchains
        .iter()
        .find(|t| t.entry.kind == Kind::Cuda)
    else {
        return;
    };
    let known = stale::Toolchains {
        home: session.home(),
        registry: session.registry(),
    };
    for tree in stale::find::cmake_trees(&ctx.cwd, DEPTH) {
        let Some(recorded) = stale::find::recorded(&tree, &[tree.as_path()]) else {
            continue;
        };
        let Some(mut found) = stale::compare(&recorded, t, &t.reason.to_string(), &known) else {
            continue;
        };
        found.source_dir = stale::find::source_dir(&tree);
        found.generator = stale::find::generator(&tree);
        let then = match &found.direct {
            Some(nvcc) => format!(
                "its builds run {} themselves, not through gpuenv, so nothing refuses them: they would mix that toolkit with {}'s headers and libraries",
                ui::printable(nvcc),
                t.name
            ),
            None => "its next compile is refused until it is configured afresh".to_string(),
        };
        let hints = found.hints().into_iter().take(1);
        ui::warn_with_hints(format!("{found}; {then}"), hints);
    }
}
