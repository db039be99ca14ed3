//! The archs a toolkit's `nvcc` can build, from its own `--list-gpu-arch` answer: asked once
//! per nvcc binary (through `ask`, with its deadline) and cached by the binary's identity.

use std::path::Path;
use std::process::Command;

use crate::facts::tree::{cache_file, parse_gpu_arch_list};
use crate::{ask, fsutil, outside};

/// The archs `nvcc` can build (cached under `cache_dir`); `None` when it does not answer
/// (10.x has no `--list-gpu-arch`), fails, or does not answer in time.
pub fn gpu_archs(nvcc: &Path, cache_dir: &Path) -> Option<Vec<u32>> {
    let cache = cache_file(cache_dir, nvcc);
    if let Some(text) = cache
        .as_ref()
        .and_then(|c| outside::read(c, outside::Kind::CacheEntry).ok())
    {
        let archs = parse_gpu_arch_list(&String::from_utf8_lossy(&text));
        if !archs.is_empty() {
            return Some(archs);
        }
    }
    let out = ask::output(Command::new(nvcc).arg("--list-gpu-arch")).ok()?;
    let archs = parse_gpu_arch_list(&String::from_utf8_lossy(&out.stdout));
    if !out.status.success() || archs.is_empty() {
        return None;
    }
    if let Some(c) = cache {
        let body: String = archs.iter().map(|a| format!("compute_{a}\n")).collect();
        // A cache that cannot be written only costs the next run another nvcc call.
        let _ = fs_err::create_dir_all(cache_dir)
            .and_then(|()| fsutil::write_atomic(&c, body.as_bytes()));
    }
    Some(archs)
}
