//! FM-13: a registered toolchain whose tree no longer works: its root is gone (a linked
//! tree moved or deleted), or a file it needs is (a toolkit made by `gpuenv install torch`
//! links into a venv that was deleted).

use super::{Check, Finding, Inputs, Notes, Status};
use gpuenv_core::store::{self, Problem};

pub const CHECK: Check = Check {
    id: "FM-13",
    name: "broken-toolchain",
};

/// Whether a store problem is about the toolchain's own tree (this check) rather than
/// what gpuenv exports for it (the `active-set` finding).
pub fn is_about_the_tree(p: &Problem) -> bool {
    matches!(p, Problem::RootMissing { .. } | Problem::TreeBroken { .. })
}

/// An error for a toolchain active here, a warning for one that only sits in the registry.
pub fn run(inputs: &Inputs) -> Finding {
    let registered = inputs.registry.toolchains.len();
    if registered == 0 {
        return CHECK.skip("no toolchain is registered");
    }
    let mut notes = Notes::default();
    for p in store::health(&inputs.home, &inputs.registry) {
        if !is_about_the_tree(&p) {
            continue;
        }
        let active = p
            .name()
            .is_some_and(|n| inputs.active.toolchains.iter().any(|t| t.name == n));
        let status = if active { Status::Error } else { Status::Warn };
        notes.problem(status, p.to_string());
        notes.hint(p.hint());
    }
    let summary = match registered {
        1 => "the one registered toolchain has its compiler and headers".to_string(),
        n => format!("all {n} registered toolchains have their compiler and headers"),
    };
    notes.finish(CHECK, summary)
}
