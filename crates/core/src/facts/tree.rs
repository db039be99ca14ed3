//! What a toolkit's own tree says, which wins over the data for that toolkit: the newest
//! GCC from `include/crt/host_config.h` (`#if __GNUC__ > 15`), the archs from
//! `nvcc --list-gpu-arch` (run once per nvcc binary, cached by its identity).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::stamp::Stamp;
use crate::{fsutil, outside};

/// The header holding nvcc's host compiler checks, under a toolkit's include dir.
pub const HOST_CONFIG: &str = "crt/host_config.h";

/// The `N` of the first `#if __GNUC__ > N` (the "gcc versions later than N are not
/// supported" check).
pub fn gcc_max_in_host_config(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("#if")?.trim_start();
        let n = rest
            .strip_prefix("__GNUC__")?
            .trim_start()
            .strip_prefix('>')?;
        let n = n.trim();
        (!n.is_empty() && n.len() <= 2 && n.bytes().all(|b| b.is_ascii_digit()))
            .then(|| n.parse().ok())
            .flatten()
    })
}

/// The newest GCC major the toolkit whose headers are in `include_dir` accepts, if its
/// `host_config.h` says.
pub fn gcc_max(include_dir: &Path) -> Option<u64> {
    let bytes = outside::read(&include_dir.join(HOST_CONFIG), outside::Kind::Header).ok()?;
    gcc_max_in_host_config(&String::from_utf8_lossy(&bytes))
}

/// `nvcc --list-gpu-arch`: `compute_75` per line -> 75.
pub fn parse_gpu_arch_list(text: &str) -> Vec<u32> {
    let mut out: Vec<u32> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("compute_"))
        .filter_map(|n| n.parse().ok())
        .filter(|n| (10..=999).contains(n))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The cache file for one binary (nvcc, ptxas), named by its stamp, so a replaced binary is asked
/// again.
pub(crate) fn cache_file(cache_dir: &Path, nvcc: &Path) -> Option<PathBuf> {
    let s = Stamp::at(nvcc)?;
    let name = format!(
        "{:x}-{:x}-{:x}-{:x}-{:x}",
        s.dev, s.ino, s.size, s.mtime_ns, s.ctime_ns
    );
    Some(cache_dir.join(name))
}

/// The archs `nvcc` can build, from its own answer (cached under `cache_dir`); `None` when
/// it does not answer (10.x has no `--list-gpu-arch`).
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
    let out = Command::new(nvcc)
        .arg("--list-gpu-arch")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let archs = parse_gpu_arch_list(&text);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_gnu_check_of_host_config_h() {
        let text = "#if defined(__GNUC__)\n\n#if __GNUC__ > 15\n\n#error -- unsupported GNU version!\n#endif /* __GNUC__ > 15 */\n";
        assert_eq!(gcc_max_in_host_config(text), Some(15));
        assert_eq!(gcc_max_in_host_config("#if __GNUC__ > 1000\n"), None);
        assert_eq!(gcc_max_in_host_config("nothing here"), None);
    }

    #[test]
    fn reads_nvcc_list_gpu_arch() {
        assert_eq!(
            parse_gpu_arch_list("compute_75\ncompute_80\ncompute_110\ncompute_103\n"),
            [75, 80, 103, 110]
        );
        assert!(parse_gpu_arch_list("nvcc fatal : Unknown option").is_empty());
    }
}
