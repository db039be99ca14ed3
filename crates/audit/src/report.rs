//! The audit of one object as people and machines read it: two renderings of the same
//! typed report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use gpuenv_core::finding::Counts;
use serde::Serialize;

use gpuenv_core::ui::printable;

use crate::compare::{Finding, Source, Status, Want};
use crate::fatbin::ImageKind;
use crate::runtime::{classify, Runtime};
use crate::Object;

#[derive(Debug, Clone)]
pub struct Report {
    pub file: PathBuf,
    pub object: Object,
    pub compared: Vec<Want>,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn count(&self, status: Status) -> usize {
        self.findings.iter().filter(|f| f.status == status).count()
    }

    pub fn has_errors(&self) -> bool {
        self.count(Status::Error) > 0
    }
}

/// `SASS sm_80, sm_90; PTX compute_90 (ISA 9.0)`.
fn cuda_line(object: &Object) -> String {
    let names = |kind| -> Vec<String> {
        object
            .cuda
            .iter()
            .filter(|i| i.kind == kind)
            .map(|i| match (i.kind, i.ptx_isa) {
                (ImageKind::Ptx, Some((major, minor))) => {
                    format!("{} (ISA {major}.{minor})", i.arch.compute())
                }
                _ => i.arch.to_string(),
            })
            .collect()
    };
    let (sass, ptx) = (names(ImageKind::Sass), names(ImageKind::Ptx));
    let mut parts = Vec::new();
    if !sass.is_empty() {
        parts.push(format!("SASS {}", sass.join(", ")));
    }
    if !ptx.is_empty() {
        parts.push(format!("PTX {}", ptx.join(", ")));
    }
    parts.join("; ")
}

/// The report for people: what the object holds and needs, then one line per finding.
pub fn render_text(report: &Report) -> String {
    let p = |s: &str| printable(s).into_owned();
    let o = &report.object;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "gpuenv audit: {} ({})",
        p(&report.file.to_string_lossy()),
        o.kind.describe()
    );
    if !o.cuda.is_empty() {
        let _ = writeln!(out, "  CUDA code: {}", cuda_line(o));
    }
    if !o.hip.is_empty() {
        let names: Vec<String> = o.hip.iter().map(ToString::to_string).collect();
        let _ = writeln!(out, "  HIP code:  {}", p(&names.join(", ")));
    }
    let gpu_libs: Vec<String> = o
        .needed
        .iter()
        .filter_map(|n| classify(n).map(|r| format!("{} ({})", p(n), r.describe())))
        .collect();
    if !gpu_libs.is_empty() {
        let _ = writeln!(out, "  needs:     {}", gpu_libs.join(", "));
    }
    if o.static_cudart {
        let _ = writeln!(
            out,
            "  needs:     no CUDA runtime library (linked in statically)"
        );
    }
    gpuenv_core::finding::render_text(&mut out, &report.findings);
    out
}

/// The report for machines: the same facts and findings as typed data, in a stable order.
pub fn render_json(report: &Report) -> String {
    #[derive(Serialize)]
    struct CudaImage {
        kind: ImageKind,
        arch: String,
        compressed: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        ptx_isa: Option<String>,
    }
    #[derive(Serialize)]
    struct Needed<'a> {
        soname: &'a str,
        runtime: Option<Runtime>,
    }
    #[derive(Serialize)]
    struct Compared<'a> {
        arch: String,
        source: &'a Source,
    }
    #[derive(Serialize)]
    struct Json<'a> {
        schema: &'static str,
        command: &'static str,
        file: &'a Path,
        kind: crate::ObjectKind,
        cuda: Vec<CudaImage>,
        hip: Vec<String>,
        hip_compressed_bundles: usize,
        needed: Vec<Needed<'a>>,
        static_cudart: bool,
        compared: Vec<Compared<'a>>,
        findings: &'a [Finding],
        summary: Counts,
    }
    let o = &report.object;
    let json = Json {
        schema: gpuenv_core::report_schema::VERSION,
        command: "audit",
        file: &report.file,
        kind: o.kind,
        cuda: o
            .cuda
            .iter()
            .map(|i| CudaImage {
                kind: i.kind,
                arch: match i.kind {
                    ImageKind::Sass => i.arch.to_string(),
                    ImageKind::Ptx => i.arch.compute(),
                },
                compressed: i.compressed,
                ptx_isa: i.ptx_isa.map(|(a, b)| format!("{a}.{b}")),
            })
            .collect(),
        hip: o.hip.iter().map(ToString::to_string).collect(),
        hip_compressed_bundles: o.hip_compressed,
        needed: o
            .needed
            .iter()
            .map(|n| Needed {
                soname: n,
                runtime: classify(n),
            })
            .collect(),
        static_cudart: o.static_cudart,
        compared: report
            .compared
            .iter()
            .map(|w| Compared {
                arch: w.arch.to_string(),
                source: &w.source,
            })
            .collect(),
        findings: &report.findings,
        summary: Counts::of(&report.findings),
    };
    let mut out = serde_json::to_string_pretty(&json).expect("the report always serializes");
    out.push('\n');
    out
}
