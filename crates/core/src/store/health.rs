//! What in the store is not as the registry says: a root that is gone, a tree missing its
//! compiler or main header, a view or the shims dir lost; each with the command that fixes it.

use std::path::PathBuf;

use crate::store::home::Home;
use crate::store::toolchain::registry::{Broken, Entry, Registry, Source};
use crate::store::toolchain::view;

/// Something in the store that is not as the registry says, with the command that fixes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    RootMissing {
        name: String,
        root: PathBuf,
        source: Source,
    },
    /// The root is there but a file it needs is gone (often a link into a deleted venv).
    TreeBroken {
        name: String,
        broken: Broken,
        source: Source,
    },
    ViewMissing {
        name: String,
        view: PathBuf,
    },
    ShimsMissing {
        dir: PathBuf,
    },
}

impl Problem {
    /// The toolchain it concerns; none for the shims dir.
    pub fn name(&self) -> Option<&str> {
        match self {
            Problem::RootMissing { name, .. }
            | Problem::TreeBroken { name, .. }
            | Problem::ViewMissing { name, .. } => Some(name),
            Problem::ShimsMissing { .. } => None,
        }
    }

    /// A few words for a table cell.
    pub fn short(&self) -> &'static str {
        match self {
            Problem::RootMissing { .. } => "root missing",
            Problem::TreeBroken { .. } => "broken",
            Problem::ViewMissing { .. } => "view missing",
            Problem::ShimsMissing { .. } => "shims missing",
        }
    }

    pub fn hint(&self) -> String {
        match self {
            Problem::RootMissing {
                name,
                source: Source::Installed,
                ..
            } => format!("`gpuenv install {name}` installs it again; `gpuenv uninstall {name}` forgets it"),
            Problem::RootMissing { name, root, .. } => format!(
                "put the tree back at {} and run `gpuenv reshim`, or forget it with `gpuenv unlink {name}`",
                root.display()
            ),
            Problem::TreeBroken {
                name,
                broken,
                source,
            } => match (broken.python_env(), source) {
                // A toolkit made by `gpuenv install torch` for that environment.
                (Some(env), _) => format!(
                    "`gpuenv uninstall {name}`, then `gpuenv install torch` with the new Python environment active; or recreate {} with the same Python and torch",
                    env.display()
                ),
                (None, Source::Installed) => {
                    format!("`gpuenv uninstall {name}`, then install it again")
                }
                (None, _) => format!(
                    "put {} back, or forget the toolchain with `gpuenv unlink {name}`",
                    broken.path.display()
                ),
            },
            Problem::ViewMissing { .. } | Problem::ShimsMissing { .. } => {
                "`gpuenv reshim` makes it again".to_string()
            }
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::RootMissing { name, root, .. } => {
                write!(f, "the root of {name}, {}, is gone", root.display())
            }
            Problem::TreeBroken { name, broken, .. } => write!(f, "{name} is broken: {broken}"),
            Problem::ViewMissing { name, view } => {
                write!(f, "the view of {name}, {}, is missing", view.display())
            }
            Problem::ShimsMissing { dir } => {
                write!(f, "the shims dir {} is missing", dir.display())
            }
        }
    }
}

/// What is wrong with a toolchain's own tree, as this machine sees it: its root is gone, or
/// a file it needs is.
pub fn tree_problem(name: &str, entry: &Entry) -> Option<Problem> {
    if !entry.root.is_dir() {
        return Some(Problem::RootMissing {
            name: name.to_string(),
            root: entry.root.clone(),
            source: entry.source,
        });
    }
    entry.broken().map(|broken| Problem::TreeBroken {
        name: name.to_string(),
        broken,
        source: entry.source,
    })
}

/// An active toolchain whose tree is not usable on this node: a TaskProlog refuses the
/// task's environment rather than point it at a toolkit that is not there.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{name} cannot be used on {node}: {problem}")]
pub struct NotOnThisNode {
    pub name: String,
    /// As a message says it: `node gpu07`, or `this node`.
    pub node: String,
    pub problem: Problem,
}

impl crate::diagnostic::Diagnostic for NotOnThisNode {
    fn hints(&self) -> Vec<String> {
        vec![
            "a toolkit must be at the same path on every node a job runs on (a shared file system, or the same install on each node); `gpuenv doctor --all-nodes` in an allocation compares the nodes".into(),
            self.problem.hint(),
        ]
    }
}

/// What is missing in the store: roots, needed files and views of registered toolchains,
/// the shims dir.
pub fn health(home: &Home, registry: &Registry) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (name, entry) in &registry.toolchains {
        if let Some(p) = tree_problem(name, entry) {
            let gone = matches!(p, Problem::RootMissing { .. });
            problems.push(p);
            if gone {
                continue;
            }
        }
        if !view::exists(home, name) {
            problems.push(Problem::ViewMissing {
                name: name.to_string(),
                view: home.view(name),
            });
        }
    }
    if !registry.toolchains.is_empty() && !home.shims().is_dir() {
        problems.push(Problem::ShimsMissing { dir: home.shims() });
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broken(target: Option<&str>) -> Broken {
        Broken {
            path: "/g/toolchains/cuda-13.0.2-torch/include/cuda_runtime.h".into(),
            target: target.map(PathBuf::from),
        }
    }

    #[test]
    fn a_broken_tree_is_fixed_by_what_made_it() {
        let hint = |broken: Broken, source: Source| {
            let name = "cuda-13.0.2-torch".to_string();
            Problem::TreeBroken {
                name,
                broken,
                source,
            }
            .hint()
        };
        let into_venv = broken(Some(
            "/w/venv/lib/python3.12/site-packages/nvidia/cu13/include/cuda_runtime.h",
        ));
        assert_eq!(
            hint(into_venv, Source::Installed),
            "`gpuenv uninstall cuda-13.0.2-torch`, then `gpuenv install torch` with the new Python environment active; or recreate /w/venv with the same Python and torch"
        );
        assert_eq!(
            hint(broken(None), Source::Installed),
            "`gpuenv uninstall cuda-13.0.2-torch`, then install it again"
        );
        assert!(
            hint(broken(Some("/elsewhere/cuda_runtime.h")), Source::Linked)
                .ends_with("or forget the toolchain with `gpuenv unlink cuda-13.0.2-torch`")
        );
    }
}
