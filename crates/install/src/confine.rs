//! Where a path inside a tree being built really leads once the tree's own links are
//! followed, the way the kernel would follow them, and whether it stays inside. Links are
//! read and resolved here by hand, never followed by the OS, so a chain such as
//! `up -> ..`, `u1 -> up/..`, `u2 -> u1/..` is seen for what it is, across every archive
//! placed into the tree so far.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Links followed before giving up, as Linux's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Outside {
    #[error("`{link}` points to the absolute path `{target}`")]
    Absolute { link: String, target: String },
    #[error("it climbs above the root{}", via.as_ref().map(|l| format!(" through the link `{l}`")).unwrap_or_default())]
    Above { via: Option<String> },
    #[error("it goes through more than {MAX_LINKS} links")]
    TooManyLinks,
    #[error("the link `{0}` cannot be read")]
    Unreadable(String),
}

/// A step of a path: `..` or a name (`.` is dropped).
enum Step {
    Up,
    Name(OsString),
}

fn steps(p: &Path) -> impl Iterator<Item = Step> + '_ {
    p.components().filter_map(|c| match c {
        Component::ParentDir => Some(Step::Up),
        Component::Normal(n) => Some(Step::Name(n.to_os_string())),
        _ => None,
    })
}

/// Where `path`, taken from the directory `from` (relative to `root`, holding no links),
/// leads inside `root`: a relative path none of whose parts is a link, or why it leaves.
/// Parts that do not exist yet are taken as they are written.
pub fn resolve(root: &Path, from: &Path, path: &Path) -> Result<PathBuf, Outside> {
    if path.is_absolute() {
        return Err(Outside::Absolute {
            link: from.display().to_string(),
            target: path.display().to_string(),
        });
    }
    let mut at: Vec<OsString> = steps(from)
        .filter_map(|s| match s {
            Step::Name(n) => Some(n),
            Step::Up => None,
        })
        .collect();
    let mut todo: VecDeque<Step> = steps(path).collect();
    let mut via: Option<PathBuf> = None;
    let mut hops = 0;
    while let Some(step) = todo.pop_front() {
        let name = match step {
            Step::Up => {
                if at.pop().is_none() {
                    return Err(Outside::Above {
                        via: via.map(|v| v.display().to_string()),
                    });
                }
                continue;
            }
            Step::Name(name) => name,
        };
        at.push(name);
        let here: PathBuf = at.iter().collect();
        let full = root.join(&here);
        if !fs_err::symlink_metadata(&full).is_ok_and(|m| m.is_symlink()) {
            continue;
        }
        hops += 1;
        if hops > MAX_LINKS {
            return Err(Outside::TooManyLinks);
        }
        let target = fs_err::read_link(&full)
            .map_err(|_| Outside::Unreadable(here.display().to_string()))?;
        if target.is_absolute() {
            return Err(Outside::Absolute {
                link: here.display().to_string(),
                target: target.display().to_string(),
            });
        }
        // The link's target takes its place, from the link's directory.
        at.pop();
        for s in steps(&target).collect::<Vec<_>>().into_iter().rev() {
            todo.push_front(s);
        }
        // The first link the path goes through is the one to name.
        via.get_or_insert(here);
    }
    Ok(at.iter().collect())
}

/// Every link in `root` (relative path, target) that leads outside it, with why; the first
/// found. Directories are walked without following links.
pub fn check_tree(root: &Path) -> std::io::Result<Option<(PathBuf, PathBuf, Outside)>> {
    let mut first = None;
    crate::seal::walk(root, &mut |rel, path, kind| {
        if first.is_none() && kind.is_symlink() {
            let target = fs_err::read_link(path)?;
            let dir = rel.parent().unwrap_or(Path::new(""));
            if let Err(why) = resolve(root, dir, &target) {
                first = Some((rel.to_path_buf(), target, why));
            }
        }
        Ok(())
    })?;
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree(links: &[(&str, &str)]) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(t.path().join("pkg/a/real")).unwrap();
        for (at, to) in links {
            symlink(to, t.path().join(at)).unwrap();
        }
        t
    }

    #[test]
    fn links_inside_the_tree_resolve_to_real_paths() {
        let t = tree(&[("pkg/a/up", ".."), ("pkg/lib", "a/real")]);
        let r = |from: &str, p: &str| resolve(t.path(), Path::new(from), Path::new(p));
        assert_eq!(r("pkg/a", "up/lib/x"), Ok(PathBuf::from("pkg/a/real/x")));
        assert_eq!(r("pkg", "../pkg/./lib"), Ok(PathBuf::from("pkg/a/real")));
        assert_eq!(
            r("pkg", "not/yet/there"),
            Ok(PathBuf::from("pkg/not/yet/there"))
        );
        assert_eq!(r("", "pkg/a/up/.."), Ok(PathBuf::new()));
    }

    #[test]
    fn a_chain_of_innocent_looking_links_climbs_out() {
        let mut links = vec![("pkg/a/up".to_string(), "..".to_string())];
        links.push(("pkg/a/u1".into(), "up/..".into()));
        for i in 2..=12 {
            links.push((format!("pkg/a/u{i}"), format!("u{}/..", i - 1)));
        }
        let pairs: Vec<(&str, &str)> = links
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let t = tree(&pairs);
        assert_eq!(
            resolve(t.path(), Path::new("pkg/a"), Path::new("u1")),
            Ok(PathBuf::new())
        );
        let err = resolve(t.path(), Path::new("pkg"), Path::new("a/u12/victim")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it climbs above the root through the link `pkg/a/u12`"
        );
        let (link, _, _) = check_tree(t.path()).unwrap().unwrap();
        assert!(
            link.to_str().unwrap().starts_with("pkg/a/u"),
            "{}",
            link.display()
        );
    }

    #[test]
    fn absolute_links_and_loops_are_outside() {
        let t = tree(&[("pkg/abs", "/etc"), ("pkg/l1", "l2"), ("pkg/l2", "l1")]);
        let r = |p: &str| resolve(t.path(), Path::new("pkg"), Path::new(p)).unwrap_err();
        assert!(matches!(r("abs/passwd"), Outside::Absolute { .. }));
        assert_eq!(r("l1"), Outside::TooManyLinks);
        assert!(matches!(r("/x"), Outside::Absolute { .. }));
    }
}
