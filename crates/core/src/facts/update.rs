//! A new copy of the data from the one in effect plus what was learnt: minimum drivers
//! from NVIDIA's redist manifests, GCC limits and archs from toolkits installed here. Only
//! gaps are filled (a row's value stays as it is); each value added names where it came
//! from in the row's `source`. Pure: the edge fetches, runs nvcc and writes the file.

use std::fmt::Write as _;

use super::schema::{
    self, Checked, CheckedNvccBuild, CheckedRelease, CheckedRocmTorch, CheckedTorch,
};
use super::{release_name, Facts};

/// The copy in effect, owned, to add to.
pub fn to_checked(f: &Facts) -> Checked {
    Checked {
        date: f.date.to_string(),
        minor_compat: f
            .minor_compat
            .iter()
            .map(|m| (m.major, m.driver.to_string(), m.source.to_string()))
            .collect(),
        releases: f
            .releases
            .iter()
            .map(|r| CheckedRelease {
                release: r.release,
                driver: r.driver.map(str::to_string),
                gcc: r.gcc.map(|g| (g.min, g.max)),
                archs: r.archs.map(<[u32]>::to_vec),
                source: r.source.to_string(),
            })
            .collect(),
        nvcc_builds: f
            .nvcc_builds
            .iter()
            .map(|b| CheckedNvccBuild {
                release: b.release,
                nvcc: b.nvcc,
                source: b.source.to_string(),
            })
            .collect(),
        torch: f
            .torch
            .iter()
            .map(|t| CheckedTorch {
                name: t.name.to_string(),
                cuda: t.cuda,
                url: t.host_url.map(str::to_string),
                platforms: t.platforms.iter().map(|p| p.key().to_string()).collect(),
                archs: t.archs.map(<[(u32, bool)]>::to_vec),
                sbsa_archs: t.sbsa_archs.map(<[(u32, bool)]>::to_vec),
                torch: t.torch,
                source: t.source.to_string(),
            })
            .collect(),
        rocm_torch: f
            .rocm_torch
            .iter()
            .map(|t| CheckedRocmTorch {
                name: t.name.to_string(),
                rocm: t.rocm,
                gfx: t.gfx.map(|g| g.iter().map(|s| s.to_string()).collect()),
                torch: t.torch,
                source: t.source.to_string(),
            })
            .collect(),
    }
}

fn row(c: &mut Checked, release: (u64, u64)) -> &mut CheckedRelease {
    let i = match c.releases.iter().position(|r| r.release == release) {
        Some(i) => i,
        None => {
            c.releases.push(CheckedRelease {
                release,
                driver: None,
                gcc: None,
                archs: None,
                source: String::new(),
            });
            c.releases.sort_by_key(|r| r.release);
            c.releases
                .iter()
                .position(|r| r.release == release)
                .expect("just added")
        }
    };
    &mut c.releases[i]
}

fn cite(r: &mut CheckedRelease, what: &str) {
    if !r.source.is_empty() {
        r.source.push_str("; ");
    }
    r.source.push_str(what);
}

/// Adds a release's minimum driver if its row has none; what was added, in words.
pub fn add_driver(
    c: &mut Checked,
    release: (u64, u64),
    driver: &str,
    from: &str,
) -> Option<String> {
    let has = c
        .releases
        .iter()
        .any(|r| r.release == release && r.driver.is_some());
    if !schema::valid_driver(driver) || has {
        return None;
    }
    let r = row(c, release);
    r.driver = Some(driver.to_string());
    cite(r, &format!("driver: nvidia_driver in {from}"));
    Some(format!(
        "CUDA {}: minimum driver {driver}",
        release_name(release)
    ))
}

/// `[13, 0, 2]` -> `13.0.2`.
fn dotted(v: [u64; 3]) -> String {
    format!("{}.{}.{}", v[0], v[1], v[2])
}

/// Adds the nvcc build a release ships (a redist manifest's `cuda_nvcc.version`) if the data
/// has no row for the release; what was added, in words. A build that is not three numbers
/// of the release's major.minor is not added.
pub fn add_nvcc_build(
    c: &mut Checked,
    release: [u64; 3],
    nvcc: &str,
    from: &str,
) -> Option<String> {
    let nvcc = schema::parse_full(nvcc).filter(|n| n[..2] == release[..2])?;
    if c.nvcc_builds.iter().any(|b| b.release == release) {
        return None;
    }
    c.nvcc_builds.push(CheckedNvccBuild {
        release,
        nvcc,
        source: format!("nvcc: cuda_nvcc in {from}"),
    });
    c.nvcc_builds.sort_by_key(|b| b.release);
    Some(format!("CUDA {}: nvcc {}", dotted(release), dotted(nvcc)))
}

/// Adds what a toolkit's own tree says where the row has nothing.
pub fn add_tree(
    c: &mut Checked,
    release: (u64, u64),
    gcc_max: Option<u64>,
    archs: Option<Vec<u32>>,
    root: &str,
) -> Vec<String> {
    let mut said = Vec::new();
    let have = c.releases.iter().find(|r| r.release == release);
    let gcc_max = gcc_max
        .filter(|m| (1..=99).contains(m))
        .filter(|_| have.is_none_or(|r| r.gcc.is_none()));
    let archs = archs
        .filter(|a| !a.is_empty() && a.iter().all(|n| (10..=999).contains(n)))
        .filter(|_| have.is_none_or(|r| r.archs.is_none()));
    if let Some(max) = gcc_max {
        let r = row(c, release);
        r.gcc = Some((None, max));
        cite(r, &format!("gcc-max: include/crt/host_config.h of {root}"));
        said.push(format!("CUDA {}: gcc <= {max}", release_name(release)));
    }
    if let Some(archs) = archs {
        let shown: Vec<String> = archs.iter().map(|a| format!("sm_{a}")).collect();
        said.push(format!(
            "CUDA {}: archs {}",
            release_name(release),
            shown.join(" ")
        ));
        let r = row(c, release);
        r.archs = Some(archs);
        cite(r, &format!("archs: nvcc --list-gpu-arch of {root}"));
    }
    said
}

/// The text of a facts file (checked by the caller with [`schema::check`] before writing).
pub fn render(c: &Checked) -> String {
    let mut s = String::from(
        "# gpuenv's data on CUDA releases and PyTorch's wheel indexes, written by\n# `gpuenv self update-data`. See docs/compat-data.md in gpuenv's repository.\n\n",
    );
    let q = |t: &str| format!("{t:?}");
    let _ = writeln!(s, "format = {}\ndate = {}\n", schema::FORMAT, q(&c.date));
    for (major, driver, source) in &c.minor_compat {
        let _ = writeln!(
            s,
            "[[minor-compat]]\nmajor = {major}\ndriver = {}\nsource = {}\n",
            q(driver),
            q(source)
        );
    }
    for r in &c.releases {
        let _ = writeln!(s, "[[release]]\ncuda = {}", q(&release_name(r.release)));
        if let Some(d) = &r.driver {
            let _ = writeln!(s, "driver = {}", q(d));
        }
        if let Some((min, max)) = r.gcc {
            if let Some(min) = min {
                let _ = writeln!(s, "gcc-min = {min}");
            }
            let _ = writeln!(s, "gcc-max = {max}");
        }
        if let Some(a) = &r.archs {
            let _ = writeln!(s, "archs = {a:?}");
        }
        let _ = writeln!(s, "source = {}\n", q(&r.source));
    }
    for b in &c.nvcc_builds {
        let _ = writeln!(
            s,
            "[[nvcc-build]]\nrelease = {}\nnvcc = {}\nsource = {}\n",
            q(&dotted(b.release)),
            q(&dotted(b.nvcc)),
            q(&b.source)
        );
    }
    let archs = |a: &[(u32, bool)]| -> String {
        let shown: Vec<String> = a
            .iter()
            .map(|(cc, ptx)| {
                format!(
                    "\"{}.{}{}\"",
                    cc / 10,
                    cc % 10,
                    if *ptx { "+PTX" } else { "" }
                )
            })
            .collect();
        format!("[{}]", shown.join(", "))
    };
    let torch = |s: &mut String, (first, last): schema::TorchRange| {
        if let Some(f) = first {
            let _ = writeln!(s, "torch-first = {}", q(&release_name(f)));
        }
        if let Some(l) = last {
            let _ = writeln!(s, "torch-last = {}", q(&release_name(l)));
        }
    };
    for t in &c.torch {
        let _ = writeln!(
            s,
            "[[torch-index]]\nname = {}\ncuda = {}",
            q(&t.name),
            q(&release_name(t.cuda))
        );
        if let Some(u) = &t.url {
            let _ = writeln!(s, "url = {}", q(u));
        }
        let platforms: Vec<String> = t.platforms.iter().map(|p| q(p)).collect();
        let _ = writeln!(s, "platforms = [{}]", platforms.join(", "));
        if let Some(a) = &t.archs {
            let _ = writeln!(s, "archs = {}", archs(a));
        }
        if let Some(a) = &t.sbsa_archs {
            let _ = writeln!(s, "sbsa-archs = {}", archs(a));
        }
        torch(&mut s, t.torch);
        let _ = writeln!(s, "source = {}\n", q(&t.source));
    }
    for t in &c.rocm_torch {
        let _ = writeln!(
            s,
            "[[torch-rocm-index]]\nname = {}\nrocm = {}",
            q(&t.name),
            q(&release_name(t.rocm))
        );
        if let Some(g) = &t.gfx {
            let shown: Vec<String> = g.iter().map(|x| q(x)).collect();
            let _ = writeln!(s, "gfx = [{}]", shown.join(", "));
        }
        torch(&mut s, t.torch);
        let _ = writeln!(s, "source = {}\n", q(&t.source));
    }
    s
}

/// `YYYY-MM-DD` of a Unix time (UTC), for the copy's date.
pub fn date_of(unix_secs: u64) -> String {
    // Howard Hinnant's days-to-civil algorithm.
    let z = (unix_secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_written_back_reads_as_the_same_data() {
        let c = to_checked(Facts::embedded());
        assert_eq!(schema::check(&render(&c)).unwrap(), c);
    }

    #[test]
    fn gaps_are_filled_and_filled_rows_stay() {
        let mut c = to_checked(Facts::embedded());
        let url = "https://mirror/redistrib_13.9.0.json";
        assert!(add_driver(&mut c, (13, 9), "595.40.01", url).is_some());
        assert_eq!(add_driver(&mut c, (13, 2), "595.40.01", url), None);
        assert_eq!(add_driver(&mut c, (12, 4), "1.2.3", url), None);
        assert_eq!(add_driver(&mut c, (12, 4), "999.1.1", url), None);
        let r = c.releases.iter().find(|r| r.release == (13, 9)).unwrap();
        assert_eq!(r.driver.as_deref(), Some("595.40.01"));
        assert!(r
            .source
            .ends_with(&format!("driver: nvidia_driver in {url}")));
        let said = add_tree(&mut c, (13, 9), Some(17), Some(vec![80, 90]), "/opt/x");
        assert_eq!(said.len(), 2);
        let url = "https://mirror/redistrib_13.9.1.json";
        assert_eq!(
            add_nvcc_build(&mut c, [13, 9, 1], "13.9.40", url).as_deref(),
            Some("CUDA 13.9.1: nvcc 13.9.40")
        );
        // A row that is there stays; a build of another minor, or not a build, is not added.
        assert_eq!(add_nvcc_build(&mut c, [13, 0, 2], "13.0.99", url), None);
        assert_eq!(add_nvcc_build(&mut c, [13, 9, 2], "13.8.40", url), None);
        assert_eq!(add_nvcc_build(&mut c, [13, 9, 2], "../13.9.4", url), None);
        assert!(schema::check(&render(&c)).is_ok());
    }

    #[test]
    fn dates_are_utc_calendar_days() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(1_796_342_400), "2026-12-04");
        assert_eq!(date_of(951_782_400), "2000-02-29");
    }
}
