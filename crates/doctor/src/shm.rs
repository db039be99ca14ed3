//! FM-09: NCCL and DataLoader workers need shared memory; a container's `/dev/shm` is
//! Docker's 64 MiB unless it was started with `--shm-size` or `--ipc=host`. The size is
//! read from `/proc/mounts` (`size=65536k`), so a fixture tree can stand in for it.

use super::{Check, Finding, Inputs, Machine, Notes, Status};

pub const CHECK: Check = Check {
    id: "FM-09",
    name: "shm-too-small",
};

const MIB: u64 = 1024 * 1024;
const WARN_BELOW: u64 = 1024 * MIB;
const ERROR_BELOW: u64 = 256 * MIB;

/// Why this looks like a container, if it does.
pub fn container(m: &Machine) -> Option<String> {
    for marker in ["/.dockerenv", "/run/.containerenv"] {
        if m.file(marker).exists() {
            return Some(format!("{marker} exists"));
        }
    }
    if let Some(c) = m.var("container") {
        return Some(format!("container={c}"));
    }
    let cgroup = m.read("/proc/1/cgroup")?;
    ["docker", "kubepods", "containerd", "libpod", "lxc"]
        .iter()
        .find(|w| cgroup.contains(*w))
        .map(|w| format!("/proc/1/cgroup mentions {w}"))
}

/// A tmpfs `size=` option in bytes: `65536k`, `16g`, `1073741824`.
pub fn parse_size(opt: &str) -> Option<u64> {
    let (digits, unit) = match opt.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => opt.split_at(i),
        None => (opt, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1024,
        "m" => MIB,
        "g" => 1024 * MIB,
        "t" => 1024 * 1024 * MIB,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// `/dev/shm`'s mount options from `/proc/mounts`: `Some(None)` when mounted without a size.
pub fn shm_size(mounts: &str) -> Option<Option<u64>> {
    let line = mounts
        .lines()
        .rev()
        .find(|l| l.split_whitespace().nth(1) == Some("/dev/shm"))?;
    let opts = line.split_whitespace().nth(3).unwrap_or("");
    Some(
        opts.split(',')
            .find_map(|o| o.strip_prefix("size="))
            .and_then(parse_size),
    )
}

fn human(bytes: u64) -> String {
    if bytes >= 1024 * MIB {
        format!("{:.1} GiB", bytes as f64 / (1024 * MIB) as f64)
    } else {
        format!("{} MiB", bytes / MIB)
    }
}

pub fn run(inputs: &Inputs) -> Finding {
    let m = &inputs.machine;
    let Some(why) = container(m) else {
        return CHECK.skip("not in a container (no /.dockerenv, /run/.containerenv or container cgroup): /dev/shm is the host's",
        );
    };
    let Some(size) = m.read("/proc/mounts").as_deref().and_then(shm_size) else {
        return CHECK.skip("in a container, but /proc/mounts has no /dev/shm to size");
    };
    let mut notes = Notes::default();
    notes.seen(format!("in a container: {why}"));
    let Some(bytes) = size else {
        return notes.finish(
            CHECK,
            "/dev/shm has no size limit (tmpfs default: half of RAM)",
        );
    };
    let status = if bytes < ERROR_BELOW {
        Status::Error
    } else if bytes < WARN_BELOW {
        Status::Warn
    } else {
        return notes.finish(
            CHECK,
            format!("/dev/shm is {} in this container", human(bytes)),
        );
    };
    notes.problem(
        status,
        format!(
            "/dev/shm is only {} in this container: NCCL init and DataLoader workers hang or fail (Docker's default is 64 MiB)",
            human(bytes)
        ),
    );
    notes.hint("start the container with --shm-size=16g (or --ipc=host); on Kubernetes mount an emptyDir with medium: Memory at /dev/shm");
    notes.finish(CHECK, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_default_shm_from_proc_mounts() {
        let mounts = "overlay / overlay rw,relatime 0 0\nshm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n";
        assert_eq!(shm_size(mounts), Some(Some(64 * MIB)));
        assert_eq!(
            shm_size("tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n"),
            Some(None)
        );
        assert_eq!(shm_size("proc /proc proc rw 0 0\n"), None);
        assert_eq!(parse_size("16g"), Some(16 * 1024 * MIB));
        assert_eq!(parse_size("12x"), None);
    }
}
