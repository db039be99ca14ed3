//! The unit tests of `compare.rs`.
use super::*;
use crate::ObjectKind;

fn image(kind: ImageKind, arch: &str) -> Image {
    let a = CudaArch::parse_any(arch).unwrap();
    Image {
        kind,
        arch: ImageArch::new(a.sm(), a.suffix),
        compressed: false,
        ptx_isa: None,
    }
}

/// What `-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]` builds.
fn built() -> Object {
    Object {
        kind: ObjectKind::Shared,
        cuda: vec![
            image(ImageKind::Sass, "sm_80"),
            image(ImageKind::Sass, "sm_90"),
            image(ImageKind::Ptx, "sm_90"),
        ],
        hip: Vec::new(),
        hip_compressed: 0,
        needed: vec!["libcudart.so.13".into()],
        static_cudart: false,
    }
}

fn pin(arch: &str, line: usize) -> Want {
    Want {
        arch: Arch::Cuda(CudaArch::parse(arch).unwrap()),
        source: Source::Pin {
            file: "/p/gpuenv.toml".into(),
            line,
        },
    }
}

fn statuses(f: &[Finding]) -> Vec<(&'static str, Status)> {
    f.iter().map(|f| (f.id, f.status)).collect()
}

#[test]
fn a_pinned_arch_without_sass_or_ptx_is_no_kernel_image() {
    let inputs = Inputs {
        wants: vec![pin("8.0", 3), pin("8.6", 3), pin("7.5", 3)],
        ..Inputs::default()
    };
    let found = compare(&built(), &inputs);
    assert_eq!(
        statuses(&found),
        [
            ("kernel-image", Status::Ok),
            ("kernel-image", Status::Ok),
            ("kernel-image", Status::Error),
            ("gpus", Status::Skip),
        ]
    );
    assert_eq!(
        found[1].summary,
        "sm_86 (pinned in gpuenv.toml:3): runs SASS sm_80"
    );
    assert_eq!(found[2].summary, "no kernel image for sm_75 (pinned in gpuenv.toml:3): it has SASS sm_80, sm_90 and PTX compute_90");
}

#[test]
fn a_newer_gpu_runs_the_ptx_with_a_warning_and_plus_ptx_wants_its_own() {
    let gpu = Want {
        arch: Arch::Cuda(CudaArch::new(12, 0)),
        source: Source::Gpu {
            tool: "nvidia-smi".into(),
        },
    };
    let inputs = Inputs {
        wants: vec![gpu, pin("8.0+PTX", 4)],
        gpus_found: true,
        ..Inputs::default()
    };
    let found = compare(&built(), &inputs);
    assert_eq!(
        statuses(&found),
        [
            ("kernel-image", Status::Warn),
            ("kernel-image", Status::Ok),
            ("ptx", Status::Warn)
        ]
    );
    assert!(found[0].summary.contains("compute_90 PTX"), "{found:?}");
}

#[test]
fn arch_specific_sass_runs_on_its_gpu_only() {
    let mut o = built();
    o.cuda = vec![image(ImageKind::Sass, "sm_90a")];
    let inputs = Inputs {
        wants: vec![pin("9.0", 2), pin("10.0", 2)],
        ..Inputs::default()
    };
    let found = compare(&o, &inputs);
    assert_eq!(found[0].status, Status::Ok);
    assert_eq!(found[1].status, Status::Error);
}

#[test]
fn the_runtime_against_the_active_toolchain_and_torch() {
    let mut o = built();
    o.needed = vec!["libcudart.so.12".into(), "libc10_cuda.so".into()];
    let inputs = Inputs {
        active: vec![ActiveToolchain {
            name: "cuda-13.0.2".into(),
            kind: ToolKind::Cuda,
            major: 13,
        }],
        torch_cuda: Some("13.2".into()),
        gpus_found: true,
        ..Inputs::default()
    };
    let found = compare(&o, &inputs);
    assert_eq!(
        statuses(&found),
        [
            ("kernel-image", Status::Skip),
            ("runtime", Status::Warn),
            ("runtime", Status::Warn)
        ]
    );
    assert!(
        found[1]
            .summary
            .contains("libcudart.so.12 (the CUDA 12 runtime)"),
        "{found:?}"
    );
}

#[test]
fn gfx_targets_against_rocm_pins() {
    let mut o = built();
    o.cuda.clear();
    o.hip = vec![
        GfxTarget::parse("gfx90a").unwrap(),
        GfxTarget::parse("gfx940").unwrap(),
    ];
    let want = |t: &str| Want {
        arch: Arch::Rocm(GfxTarget::parse(t).unwrap()),
        source: Source::Var {
            name: "PYTORCH_ROCM_ARCH".into(),
        },
    };
    let inputs = Inputs {
        wants: vec![want("gfx90a:xnack-"), want("gfx942"), pin("9.0", 1)],
        gpus_found: true,
        ..Inputs::default()
    };
    let found = compare(&o, &inputs);
    assert_eq!(
        statuses(&found),
        [("code-object", Status::Ok), ("code-object", Status::Error)]
    );
    assert_eq!(
        found[1].summary,
        "no code object for gfx942 (in PYTORCH_ROCM_ARCH): it has gfx90a, gfx940"
    );
    // A ROCm of AMD's wheels with gfx90a's device wheel only.
    let inputs = Inputs {
        rocm_device_wheels: Some(("rocm-7.14.0".into(), vec!["gfx90a".into()])),
        ..inputs
    };
    let found = compare(&o, &inputs);
    assert_eq!(
        statuses(&found),
        [
            ("code-object", Status::Ok),
            ("code-object", Status::Error),
            ("device-wheels", Status::Warn)
        ]
    );
    assert!(found[2].summary.starts_with("gfx942 (in PYTORCH_ROCM_ARCH): the active rocm-7.14.0 carries no device wheel for it (it has gfx90a)"), "{}", found[2].summary);
}
