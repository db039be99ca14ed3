//! What a toolkit's own tree says, which wins over the data for that toolkit: the newest
//! GCC from `include/crt/host_config.h` (`#if __GNUC__ > 15`), and how to read the archs
//! `nvcc --list-gpu-arch` answers (asked by `store::toolchain::gpu_archs`, cached by the
//! binary's identity).

use std::path::{Path, PathBuf};

use crate::outside;
use crate::stamp::Stamp;

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
