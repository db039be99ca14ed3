//! `gpuenv cache size|prune`: the download cache keeps every archive and its unpacked tree
//! (so reinstalls and `--offline` need no network), which is about three times the download.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::Result;
use indicatif::HumanBytes;

use gpuenv_core::context::Context;
use gpuenv_core::ui;
use gpuenv_install::cache::{self, Cache};
use gpuenv_install::pathpart::Sha256;

/// Show or free the space the download cache takes
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Installed toolchains never lose files to a prune: their files are hard links or copies.\n\nExamples:\n  gpuenv cache size\n  gpuenv cache prune          # unpacked trees and partial downloads; archives stay for --offline\n  gpuenv cache prune --all    # everything"
)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// How much the cache takes, per part, and how much of it installed toolchains share
    Size,
    /// Remove the unpacked trees and partial downloads (with --all: the archives and index
    /// pages too)
    Prune {
        /// Also the archives and index pages: the next install downloads again
        #[arg(long)]
        all: bool,
    },
}

/// The parts of the cache, as `cache.rs` lays it out; `locks/` is never touched.
const PARTS: [(&str, &str); 4] = [
    ("archives", "verified archives"),
    ("unpacked", "their unpacked trees"),
    ("partial", "unfinished downloads"),
    ("meta", "index pages and manifests"),
];

/// Bytes under a directory, each inode once, and how many of them are also linked from
/// outside the cache (an installed toolchain's hard links), which removing does not free.
#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    bytes: u64,
    shared: u64,
    files: u64,
}

fn usage(dir: &Path, seen: &mut HashSet<(u64, u64)>, out: &mut Usage) {
    let Ok(rd) = fs_err::read_dir(dir) else {
        return;
    };
    for entry in rd.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if meta.is_dir() {
            usage(&entry.path(), seen, out);
        } else if meta.is_file() && seen.insert((meta.dev(), meta.ino())) {
            out.bytes += meta.len();
            out.files += 1;
            if meta.nlink() > 1 {
                out.shared += meta.len();
            }
        }
    }
}

impl Args {
    pub fn run(self, ctx: &Context) -> Result<()> {
        let home = ctx.gpuenv_home()?;
        let cache = super::install::cache(ctx, &home);
        match self.action {
            Action::Size => size(&cache),
            Action::Prune { all } => prune(&cache, all),
        }
    }
}

fn size(cache: &Cache) -> Result<()> {
    let mut seen = HashSet::new();
    let parts: Vec<(&str, &str, Usage)> = PARTS
        .iter()
        .map(|(part, what)| {
            let mut u = Usage::default();
            usage(&cache.root.join(part), &mut seen, &mut u);
            (*part, *what, u)
        })
        .collect();
    let total: u64 = parts.iter().map(|(_, _, u)| u.bytes).sum();
    let shared: u64 = parts.iter().map(|(_, _, u)| u.shared).sum();
    println!("{}: {}", cache.root.display(), HumanBytes(total));
    for (part, what, u) in &parts {
        let note = if u.shared > 0 {
            format!(
                ", {} of it shared with installed toolchains",
                HumanBytes(u.shared)
            )
        } else {
            String::new()
        };
        println!(
            "  {part:<9} {:>10}  {what} ({} files{note})",
            HumanBytes(u.bytes).to_string(),
            u.files
        );
    }
    ui::info(format!(
        "`gpuenv cache prune` frees up to {} (the unpacked trees and partial downloads); `--all` frees up to {}",
        HumanBytes(parts[1..3].iter().map(|(_, _, u)| u.bytes - u.shared).sum()),
        HumanBytes(total - shared)
    ));
    Ok(())
}

fn prune(cache: &Cache, all: bool) -> Result<()> {
    let parts: &[&str] = if all {
        &["unpacked", "partial", "archives", "meta"]
    } else {
        &["unpacked", "partial"]
    };
    let mut freed = Usage::default();
    let mut seen = HashSet::new();
    for part in parts {
        let dir = cache.root.join(part);
        let Ok(rd) = fs_err::read_dir(&dir) else {
            continue;
        };
        for entry in rd.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            // An install working on this archive holds its lock: wait for it, then remove.
            // `<sha256>`, `<sha256>.seal`, `.tmp-<sha256>@…`: the archive's lock guards each.
            let key = name
                .trim_start_matches(".tmp-")
                .split(['@', '.', '-'])
                .next()
                .and_then(|k| Sha256::parse(k).ok());
            let _lock = match (*part, key) {
                ("meta", _) | (_, None) => None,
                (_, Some(key)) => Some(cache::lock(&cache.lock_path(&key), || {
                    ui::info(format!("waiting for an install that uses {name}"))
                })?),
            };
            let mut u = Usage::default();
            if path.is_dir() {
                usage(&path, &mut seen, &mut u);
                let doomed = dir.join(format!(".prune-{}-{name}", std::process::id()));
                fs_err::rename(&path, &doomed)?;
                fs_err::remove_dir_all(&doomed)?;
            } else {
                usage_of_file(&path, &mut seen, &mut u);
                fs_err::remove_file(&path)?;
            }
            freed.bytes += u.bytes - u.shared;
            freed.files += u.files;
        }
    }
    ui::info(format!(
        "removed {} files from {} ({} freed; files installed toolchains share stay on disk with them)",
        freed.files,
        cache.root.display(),
        HumanBytes(freed.bytes)
    ));
    Ok(())
}

fn usage_of_file(path: &Path, seen: &mut HashSet<(u64, u64)>, out: &mut Usage) {
    if let Ok(meta) = path.symlink_metadata() {
        if meta.is_file() && seen.insert((meta.dev(), meta.ino())) {
            out.bytes += meta.len();
            out.files += 1;
            if meta.nlink() > 1 {
                out.shared += meta.len();
            }
        }
    }
}
