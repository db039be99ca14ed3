//! The job and thread rule on made-up machines, and reading a faked /proc and cgroup.

use super::*;
use std::ffi::OsString;

fn machine(cores: u32, gb: u64) -> Machine {
    Machine {
        cores,
        memory: gb << 30,
        memory_from: "test".into(),
    }
}

fn args(s: &str) -> Vec<OsString> {
    s.split_whitespace().map(OsString::from).collect()
}

fn none() -> BuildSettings {
    BuildSettings::default()
}

#[test]
fn jobs_follow_the_cores_until_the_memory_runs_out() {
    let none = none();
    let jobs = |m: &Machine, t| jobs(Some(m), t, None, &none, &none).unwrap().value;
    // Plenty of memory: one job a core.
    assert_eq!(jobs(&machine(16, 512), 3), 16);
    // 64 cores, 64 GB, three archs: 48 GB / (1 + 3 × 2.25 GB) = 6 jobs.
    assert_eq!(jobs(&machine(64, 64), 3), 6);
    // Fewer archs, more jobs on the same machine.
    assert!(jobs(&machine(64, 64), 1) > jobs(&machine(64, 64), 3));
    // Never none, however small the machine.
    assert_eq!(jobs(&machine(8, 1), 3), 1);
}

#[test]
fn the_file_beats_the_settings_which_beat_the_site() {
    let m = machine(4, 64);
    let file = crate::project::parse(
        std::path::Path::new("/p/gpuenv.toml"),
        "[build]\njobs = 3\nnvcc-threads = 5\n",
    )
    .unwrap();
    let mine = BuildSettings {
        jobs: Some(2),
        nvcc_threads: Some(7),
        ..Default::default()
    };
    let site = BuildSettings {
        jobs: Some(9),
        ..Default::default()
    };
    let j = jobs(Some(&m), 2, Some(&file), &mine, &site).unwrap();
    assert_eq!((j.value, j.from.as_str()), (3, "/p/gpuenv.toml:2:8"));
    assert_eq!(jobs(None, 2, None, &mine, &site).unwrap().value, 2);
    assert_eq!(jobs(Some(&m), 2, None, &none(), &site).unwrap().value, 9);
    assert_eq!(jobs(None, 2, None, &none(), &none()), None);
    let inputs = ThreadInputs {
        nvcc_flags: [None, None],
        nvcc_threads: None,
        max_jobs: None,
        file: Some(&file),
        mine: &mine,
        site: &site,
    };
    let two =
        args("-c k.cu -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90");
    match threads(&two, &inputs, || Some(m.clone())) {
        Threads::Add(c) => assert_eq!(c.value, 5),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_users_threads_win_and_one_target_gets_none() {
    let m = machine(8, 256);
    let none = none();
    let mut inputs = ThreadInputs {
        nvcc_flags: [None, None],
        nvcc_threads: None,
        max_jobs: None,
        file: None,
        mine: &none,
        site: &none,
    };
    let three = "-c k.cu -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 -gencode arch=compute_90,code=[sm_90,compute_90]";
    let pick = |a: &str, i: &ThreadInputs| threads(&args(a), i, || Some(m.clone()));
    match pick(three, &inputs) {
        // sm_90 and its PTX are one cicc: three targets.
        Threads::Add(c) => assert_eq!(c.value, 3, "{c:?}"),
        other => panic!("{other:?}"),
    }
    for own in ["-t 2", "-t2", "-t=2", "--threads 2", "--threads=0"] {
        assert!(
            matches!(pick(&format!("{three} {own}"), &inputs), Threads::Given(_)),
            "{own}"
        );
    }
    // `-time` is another option.
    assert!(matches!(
        pick(&format!("{three} -time t.csv"), &inputs),
        Threads::Add(_)
    ));
    assert_eq!(pick("-c k.cu -arch=sm_90", &inputs), Threads::One);
    assert_eq!(pick("-c k.cu -arch=native", &inputs), Threads::One);
    assert_eq!(pick("-c k.cu", &inputs), Threads::One);
    inputs.nvcc_flags = [None, Some("-O2 --threads 4")];
    assert_eq!(
        pick(three, &inputs),
        Threads::Given("NVCC_APPEND_FLAGS".into())
    );
    inputs.nvcc_flags = [None, None];
    inputs.nvcc_threads = Some("2");
    match pick(three, &inputs) {
        Threads::Add(c) => assert_eq!((c.value, c.from.as_str()), (2, "NVCC_THREADS")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn threads_shrink_to_fit_the_jobs_running_beside() {
    let none = none();
    let mut inputs = ThreadInputs {
        nvcc_flags: [None, None],
        nvcc_threads: None,
        max_jobs: Some("8"),
        file: None,
        mine: &none,
        site: &none,
    };
    let three = args("-c k.cu -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 -gencode arch=compute_90,code=sm_90");
    // 8 jobs in 48 GB of budget: 6 GB each, room for two targets beside the host side.
    match threads(&three, &inputs, || Some(machine(16, 64))) {
        Threads::Add(c) => assert_eq!(c.value, 2, "{c:?}"),
        other => panic!("{other:?}"),
    }
    inputs.max_jobs = Some("64");
    assert_eq!(
        threads(&three, &inputs, || Some(machine(16, 64))),
        Threads::One
    );
    // Two cores: never more threads than cores.
    inputs.max_jobs = None;
    match threads(&three, &inputs, || Some(machine(2, 64))) {
        Threads::Add(c) => assert_eq!(c.value, 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn memory_is_read_from_meminfo_and_the_lowest_cgroup_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs_err::create_dir_all(root.join("proc/self")).unwrap();
    fs_err::write(
        root.join("proc/meminfo"),
        "MemTotal:       16384000 kB\nMemFree:  1 kB\n",
    )
    .unwrap();
    let m = Machine::read(root, 4).unwrap();
    assert_eq!(m.memory, 16384000 * 1024);
    fs_err::write(root.join("proc/self/cgroup"), "0::/a/b\n").unwrap();
    let cg = root.join("sys/fs/cgroup/a/b");
    fs_err::create_dir_all(&cg).unwrap();
    fs_err::write(cg.join("memory.max"), "max\n").unwrap();
    fs_err::write(root.join("sys/fs/cgroup/a/memory.max"), "4294967296\n").unwrap();
    let m = Machine::read(root, 4).unwrap();
    assert_eq!(m.memory, 4 << 30);
    assert!(m.memory_from.ends_with("a/memory.max"), "{}", m.memory_from);
    // A path climbing out of the mount is not followed.
    fs_err::write(root.join("proc/self/cgroup"), "0::/../../x\n").unwrap();
    assert_eq!(Machine::read(root, 4).unwrap().memory, 16384000 * 1024);
    fs_err::remove_file(root.join("proc/meminfo")).unwrap();
    assert_eq!(Machine::read(root, 4), None);
}
