//! The chooser against the answers a person reading PyTorch's release matrix, its per-platform
//! arch lists and NVIDIA's driver tables would give, GPU by GPU, pin by pin.

use super::torch_choose::{choose, NoIndex, Rule};
use super::torch_index::{Machine, Toolkit, TorchWanted};
use super::{Facts, Platform};
use crate::diagnostic::Diagnostic;

/// A GPU as the table names it: its platform and what the chooser is told.
struct Gpu {
    name: &'static str,
    platform: Platform,
    cc: Option<u32>,
    gfx: Option<&'static str>,
}

const H100: Gpu = Gpu {
    name: "H100/H200",
    platform: Platform::LinuxX86_64,
    cc: Some(90),
    gfx: None,
};
const B200: Gpu = Gpu {
    name: "B200",
    platform: Platform::LinuxX86_64,
    cc: Some(100),
    gfx: None,
};
const RTX50: Gpu = Gpu {
    name: "RTX 50xx",
    platform: Platform::LinuxX86_64,
    cc: Some(120),
    gfx: None,
};
const RTX20: Gpu = Gpu {
    name: "RTX 20xx",
    platform: Platform::LinuxX86_64,
    cc: Some(75),
    gfx: None,
};
const P100: Gpu = Gpu {
    name: "P100",
    platform: Platform::LinuxX86_64,
    cc: Some(60),
    gfx: None,
};
const GH200: Gpu = Gpu {
    name: "GH200",
    platform: Platform::LinuxSbsa,
    cc: Some(90),
    gfx: None,
};
const ORIN: Gpu = Gpu {
    name: "Jetson Orin (JetPack 6)",
    platform: Platform::JetPack6,
    cc: Some(87),
    gfx: None,
};
const THOR: Gpu = Gpu {
    name: "Jetson Thor",
    platform: Platform::JetPack7,
    cc: Some(110),
    gfx: None,
};
const MI300: Gpu = Gpu {
    name: "MI300",
    platform: Platform::LinuxX86_64,
    cc: None,
    gfx: Some("gfx942"),
};

/// The pin: `cuda-13.2`, `rocm-7.2`, or none.
fn machine(gpu: &Gpu, pin: &str, torch: Option<(u64, u64)>, driver: Option<&str>) -> Machine {
    let release = |s: &str| super::schema::parse_release(s).unwrap();
    Machine {
        toolkit: match pin.split_once('-') {
            Some(("cuda", v)) => Some(Toolkit::Cuda(release(v))),
            Some(("rocm", v)) => Some(Toolkit::Rocm(release(v))),
            _ => None,
        },
        torch: torch.map(TorchWanted::exactly).unwrap_or_default(),
        platform: gpu.platform,
        driver: driver.map(str::to_string),
        gpus: gpu.cc.into_iter().collect(),
        amd_gpus: gpu.gfx.into_iter().map(str::to_string).collect(),
    }
}

/// Expected: `Ok(index)` or `Err((rules, words every hint line together must hold))`.
type Want = Result<&'static str, (&'static [Rule], &'static [&'static str])>;

/// GPU, pin, torch release wanted, driver, expected.
type Row = (
    &'static Gpu,
    &'static str,
    Option<(u64, u64)>,
    Option<&'static str>,
    Want,
);

fn table() -> Vec<Row> {
    let d580 = Some("580.65.06");
    vec![
        (&H100, "cuda-13.2", None, None, Ok("cu132")),
        (&H100, "cuda-13.2", None, d580, Ok("cu132")),
        (&H100, "cuda-13.2", Some((2, 15)), d580, Ok("cu132")),
        (&H100, "cuda-13.0", None, d580, Ok("cu130")),
        (&H100, "cuda-12.8", Some((2, 11)), None, Ok("cu128")),
        (
            &H100,
            "cuda-12.8",
            Some((2, 15)),
            None,
            Err((&[Rule::Torch], &["torch 2.7–2.11", "cuda-13.2"])),
        ),
        (&H100, "cuda-12.6", None, None, Ok("cu126")),
        (&H100, "", None, d580, Ok("cu132")),
        // The driver is the reason: a newer driver, or the toolkit this driver runs.
        (
            &H100,
            "cuda-13.2",
            None,
            Some("550.54.14"),
            Err((&[Rule::Driver], &["driver to 580.65.06", "cuda-12.6"])),
        ),
        (&B200, "cuda-13.2", None, d580, Ok("cu132")),
        (&B200, "cuda-12.8", None, None, Ok("cu128")),
        (
            &B200,
            "cuda-12.6",
            None,
            None,
            Err((&[Rule::Gpu], &["cuda-13.2"])),
        ),
        (&RTX50, "cuda-13.0", None, d580, Ok("cu130")),
        (&RTX50, "cuda-12.8", None, None, Ok("cu128")),
        (
            &RTX50,
            "cuda-12.6",
            None,
            None,
            Err((&[Rule::Gpu], &["cuda-13.2"])),
        ),
        (&RTX20, "cuda-13.2", None, d580, Ok("cu132")),
        (&RTX20, "cuda-12.6", Some((2, 14)), None, Ok("cu126")),
        // Pascal: CUDA 13 builds no sm_60; 12.6 with torch at most 2.14 does.
        (
            &P100,
            "cuda-13.2",
            None,
            d580,
            Err((&[Rule::Gpu], &["cuda-12.6", "2.14"])),
        ),
        (
            &P100,
            "cuda-13.0",
            Some((2, 15)),
            d580,
            Err((&[Rule::Gpu], &["cuda-12.6", "2.14"])),
        ),
        (&P100, "cuda-12.6", None, d580, Ok("cu126")),
        (
            &P100,
            "cuda-12.6",
            Some((2, 15)),
            d580,
            Err((&[Rule::Torch], &["torch 2.6–2.14"])),
        ),
        (&P100, "", None, d580, Ok("cu126")),
        (&GH200, "cuda-13.2", None, d580, Ok("cu132")),
        (&GH200, "cuda-12.6", None, None, Ok("cu126")),
        // Its aarch64 arch list is not in the data: said as not known, never the driver.
        (
            &GH200,
            "cuda-12.8",
            None,
            d580,
            Err((&[Rule::Unknown], &["update-data"])),
        ),
        (&ORIN, "cuda-12.6", None, None, Ok("jp6/cu126")),
        (&ORIN, "", None, None, Ok("jp6/cu126")),
        (
            &ORIN,
            "cuda-13.0",
            None,
            None,
            Err((&[Rule::Platform], &["cuda-12.6", "jp6/cu126"])),
        ),
        (&THOR, "cuda-13.0", None, d580, Ok("cu130")),
        (&THOR, "cuda-13.2", Some((2, 15)), d580, Ok("cu132")),
        (
            &THOR,
            "cuda-12.6",
            None,
            None,
            Err((&[Rule::Gpu], &["cuda-13.2"])),
        ),
        (&MI300, "rocm-7.2", Some((2, 13)), None, Ok("rocm7.2")),
        (&MI300, "rocm-7.14", None, None, Ok("rocm7.14")),
        (&MI300, "", None, None, Ok("rocm7.14")),
        (
            &MI300,
            "rocm-7.2",
            Some((2, 14)),
            None,
            Err((&[Rule::Torch], &["rocm-7.14"])),
        ),
    ]
}

#[test]
fn every_gpu_pin_and_torch_release_gets_the_answer_of_pytorchs_own_tables() {
    let facts = Facts::embedded();
    for (gpu, pin, torch, driver, want) in table() {
        let m = machine(gpu, pin, torch, driver);
        let got = choose(facts, &m);
        let row = format!("{} pin {pin:?} torch {torch:?} driver {driver:?}", gpu.name);
        match (want, got) {
            (Ok(name), Ok(pick)) => assert_eq!(pick.index.name(), name, "{row}: {:?}", pick.why),
            (Err((rules, words)), Err(no)) => {
                let hints = no.hints().join("\n");
                assert_eq!(no.rules(), rules, "{row}: {no} / {hints}");
                for w in words {
                    assert!(hints.contains(w), "{row}: hints lack {w:?}: {no} / {hints}");
                }
                // A newer driver is offered only when the driver is the reason.
                if !rules.contains(&Rule::Driver) {
                    assert!(!hints.contains("driver"), "{row}: {hints}");
                }
            }
            (want, got) => panic!("{row}: wanted {want:?}, got {got:?}"),
        }
    }
}

#[test]
fn a_13_x_pin_on_a_pascal_gpu_names_the_toolkit_and_torch_that_work() {
    let m = machine(&P100, "cuda-13.2", None, None);
    let Err(no @ NoIndex::Excluded { .. }) = choose(Facts::embedded(), &m) else {
        panic!("a P100 with CUDA 13.2 must be refused");
    };
    let text = format!("{no} {}", no.hints().join(" "));
    assert!(text.contains("compute capability 6.0"), "{text}");
    assert!(
        text.contains("`gpuenv pin cuda-12.6`") && text.contains("torch 2.6–2.14"),
        "{text}"
    );
}

fn pick(
    toolkit: Option<(u64, u64)>,
    driver: Option<&str>,
    gpus: &[u32],
) -> Result<&'static str, NoIndex> {
    choose(
        Facts::embedded(),
        &Machine {
            toolkit: toolkit.map(Toolkit::Cuda),
            driver: driver.map(str::to_string),
            gpus: gpus.to_vec(),
            platform: Platform::LinuxX86_64,
            ..Default::default()
        },
    )
    .map(|p| p.index.name())
}

#[test]
fn the_toolkit_decides_the_index() {
    assert_eq!(pick(Some((12, 4)), None, &[]).unwrap(), "cu124");
    assert_eq!(
        pick(Some((13, 2)), Some("580.65.06"), &[]).unwrap(),
        "cu132"
    );
}

#[test]
fn a_toolkit_pytorch_builds_no_wheels_for_is_said_with_one_that_fits() {
    let e = pick(Some((13, 1)), None, &[]).unwrap_err();
    assert!(
        e.to_string().contains("no wheel index for CUDA 13.1"),
        "{e}"
    );
    let hints = crate::diagnostic::Diagnostic::hints(&e).join("\n");
    assert!(hints.contains("gpuenv pin cuda-13.2"), "{hints}");
    let e = pick(Some((14, 0)), None, &[]).unwrap_err();
    assert!(e.to_string().contains("not known to this gpuenv"), "{e}");
}

#[test]
fn without_a_toolkit_the_driver_and_the_gpus_decide_unlike_uv() {
    // uv picks by driver alone: a 580 driver gets a CUDA 13 index even for a Pascal
    // GPU (6.1), whose kernels CUDA 13 wheels no longer carry.
    assert_eq!(pick(None, Some("580.65.06"), &[]).unwrap(), "cu132");
    assert_eq!(pick(None, Some("580.65.06"), &[120]).unwrap(), "cu132");
    assert_eq!(pick(None, Some("580.65.06"), &[61]).unwrap(), "cu126");
    assert_eq!(pick(None, Some("535.104.05"), &[90]).unwrap(), "cu129");
    assert_eq!(pick(None, Some("520.61.05"), &[]).unwrap(), "cu118");
    let e = pick(Some((12, 8)), None, &[61]).unwrap_err();
    assert!(
        e.to_string()
            .contains("cu128 wheels carry no kernels for compute capability 6.1"),
        "{e}"
    );
}
