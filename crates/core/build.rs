//! Turns the facts file (`src/facts/cuda.toml`) into Rust statics, so that the proxy, which
//! starts for every nvcc call, never parses TOML for the data it was built with. The file is
//! checked here with the same rules as a copy read at run time: a bad row fails the build.

#[allow(dead_code)]
#[path = "src/facts/schema.rs"]
mod schema;

use std::fmt::Write as _;

// A build script's errors only fail the build: std::fs is fine (fs-err is no build-dependency).
#[allow(clippy::disallowed_methods)]
fn main() {
    let path = "src/facts/cuda.toml";
    println!("cargo:rerun-if-changed={path}");
    println!("cargo:rerun-if-changed=src/facts/schema.rs");
    let text = std::fs::read_to_string(path).expect("reading src/facts/cuda.toml");
    let facts = match schema::check(&text) {
        Ok(f) => f,
        Err(e) => panic!("{path}:{}: {}", e.line, e.message),
    };
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("facts.rs");
    std::fs::write(out, render(&facts)).expect("writing facts.rs");
}

/// The `Platform` variant of a key the schema accepted.
fn variant(key: &str) -> &'static str {
    match key {
        "linux-x86_64" => "Platform::LinuxX86_64",
        "linux-sbsa" => "Platform::LinuxSbsa",
        "jetpack6" => "Platform::JetPack6",
        "jetpack7" => "Platform::JetPack7",
        other => panic!("platform key {other:?} the schema should have refused"),
    }
}

fn render(f: &schema::Checked) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "pub static EMBEDDED: Facts = Facts {{");
    let _ = writeln!(s, "    date: {:?},", f.date);
    let _ = writeln!(s, "    minor_compat: &[");
    for (major, driver, source) in &f.minor_compat {
        let _ = writeln!(
            s,
            "        MinorCompat {{ major: {major}, driver: {driver:?}, source: {source:?} }},"
        );
    }
    let _ = writeln!(s, "    ],\n    releases: &[");
    for r in &f.releases {
        let gcc = match r.gcc {
            Some((min, max)) => format!("Some(GccRange {{ min: {min:?}, max: {max} }})"),
            None => "None".into(),
        };
        let archs = match &r.archs {
            Some(a) => format!("Some(&{a:?})"),
            None => "None".into(),
        };
        let _ = writeln!(
            s,
            "        ReleaseFacts {{ release: {:?}, driver: {:?}, gcc: {gcc}, archs: {archs}, source: {:?} }},",
            r.release, r.driver, r.source
        );
    }
    let _ = writeln!(s, "    ],\n    nvcc_builds: &[");
    for b in &f.nvcc_builds {
        let _ = writeln!(
            s,
            "        NvccBuild {{ release: {:?}, nvcc: {:?}, source: {:?} }},",
            b.release, b.nvcc, b.source
        );
    }
    let _ = writeln!(s, "    ],\n    torch: &[");
    for t in &f.torch {
        let archs = match &t.archs {
            Some(a) => format!("Some(&{a:?})"),
            None => "None".into(),
        };
        let sbsa = match &t.sbsa_archs {
            Some(a) => format!("Some(&{a:?})"),
            None => "None".into(),
        };
        let platforms: Vec<&str> = t.platforms.iter().map(|k| variant(k)).collect();
        let _ = writeln!(
            s,
            "        TorchIndex {{ name: {:?}, cuda: {:?}, host_url: {:?}, platforms: &[{}], archs: {archs}, sbsa_archs: {sbsa}, torch: {:?}, source: {:?} }},",
            t.name, t.cuda, t.url, platforms.join(", "), t.torch, t.source
        );
    }
    let _ = writeln!(s, "    ],\n    rocm_torch: &[");
    for t in &f.rocm_torch {
        let _ = writeln!(
            s,
            "        RocmTorchIndex {{ name: {:?}, rocm: {:?}, gfx: {}, torch: {:?}, source: {:?} }},",
            t.name,
            t.rocm,
            t.gfx.as_ref().map_or("None".into(), |g| format!("Some(&{g:?})")),
            t.torch,
            t.source
        );
    }
    let _ = writeln!(s, "    ],\n}};");
    s
}
