//! What `self update-data` learns from PyTorch's wheel index pages (`<base>/<index>/torch/`,
//! PEP 503): which torch releases each index holds wheels of, and for which platforms.
//! Only gaps are filled: a platform the row does not list, `torch-first` where it has none,
//! and `torch-last` where it has none and the index lacks the newest torch release another
//! index holds (PyTorch publishes a release's indexes together). Pure: the edge fetches.

use super::schema::{Checked, PLATFORM_KEYS};
use super::{release_name, TorchRelease};

/// The torch wheels a page lists for `index`: `(release, platform key)` per wheel file,
/// from names such as `torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl` (the `+`
/// may be written `%2B`). Wheels of another local version, other platforms and anything
/// that is not a wheel name are left out.
pub fn wheels(page: &str, index: &str) -> Vec<(TorchRelease, &'static str)> {
    let mut out = Vec::new();
    let tokens =
        page.split(|c: char| matches!(c, '"' | '\'' | '<' | '>' | '/' | '#') || c.is_whitespace());
    for token in tokens {
        let token = token.replace("%2B", "+").replace("%2b", "+");
        let Some(rest) = token.strip_prefix("torch-") else {
            continue;
        };
        let Some(stem) = rest.strip_suffix(".whl") else {
            continue;
        };
        let mut parts = stem.split('-');
        let (Some(version), Some(platform)) = (parts.next(), parts.next_back()) else {
            continue;
        };
        let Some((public, local)) = version.split_once('+') else {
            continue;
        };
        if local != index {
            continue;
        }
        let mut nums = public.split('.');
        let release = match (
            nums.next().and_then(|n| n.parse().ok()),
            nums.next().and_then(|n| n.parse().ok()),
        ) {
            (Some(a), Some(b)) => (a, b),
            _ => continue,
        };
        let key = if platform.contains("linux") && platform.ends_with("x86_64") {
            PLATFORM_KEYS[0]
        } else if platform.contains("linux") && platform.ends_with("aarch64") {
            PLATFORM_KEYS[1]
        } else {
            continue;
        };
        if !out.contains(&(release, key)) {
            out.push((release, key));
        }
    }
    out
}

/// An index's page: its name, the page's URL, the wheels it lists.
pub type Page = (String, String, Vec<(TorchRelease, &'static str)>);

/// Fills the gaps of the rows of the indexes in `pages` (`(index name, its page's URL, the
/// wheels it lists)`); what was added, in words.
pub fn add_pages(c: &mut Checked, pages: &[Page]) -> Vec<String> {
    let mut said = Vec::new();
    let newest = pages
        .iter()
        .flat_map(|(_, _, w)| w.iter().map(|(r, _)| *r))
        .max();
    for (name, url, wheels) in pages {
        if wheels.is_empty() {
            continue;
        }
        let first = wheels.iter().map(|(r, _)| *r).min();
        let last = wheels.iter().map(|(r, _)| *r).max();
        let cite = |source: &mut String, what: &str| {
            source.push_str(&format!("; {what}: torch wheels listed at {url}"));
        };
        if let Some(row) = c.torch.iter_mut().find(|t| &t.name == name) {
            for (_, key) in wheels {
                if !row.platforms.iter().any(|p| p == key) {
                    row.platforms.push(key.to_string());
                    cite(&mut row.source, &format!("platform {key}"));
                    said.push(format!("{name}: wheels for {key}"));
                }
            }
            fill_torch(
                &mut row.torch,
                first,
                last,
                newest,
                name,
                &mut row.source,
                url,
                &mut said,
            );
        } else if let Some(row) = c.rocm_torch.iter_mut().find(|t| &t.name == name) {
            fill_torch(
                &mut row.torch,
                first,
                last,
                newest,
                name,
                &mut row.source,
                url,
                &mut said,
            );
        }
    }
    said
}

#[allow(clippy::too_many_arguments)]
fn fill_torch(
    torch: &mut (Option<TorchRelease>, Option<TorchRelease>),
    first: Option<TorchRelease>,
    last: Option<TorchRelease>,
    newest: Option<TorchRelease>,
    name: &str,
    source: &mut String,
    url: &str,
    said: &mut Vec<String>,
) {
    if torch.0.is_none() {
        if let Some(f) = first.filter(|f| torch.1.is_none_or(|l| *f <= l)) {
            torch.0 = Some(f);
            source.push_str(&format!("; torch-first: torch wheels listed at {url}"));
            said.push(format!("{name}: torch from {}", release_name(f)));
        }
    }
    if torch.1.is_none() {
        if let (Some(l), Some(n)) = (last, newest) {
            if l < n && torch.0.is_none_or(|f| f <= l) {
                torch.1 = Some(l);
                source.push_str(&format!(
                    "; torch-last: torch wheels listed at {url} (none of torch {})",
                    release_name(n)
                ));
                said.push(format!("{name}: torch up to {}", release_name(l)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{schema, update, Facts};

    #[test]
    fn a_pep_503_page_gives_releases_and_platforms_of_its_own_wheels() {
        let page = r#"<html><body>
<a href="/whl/cu130/torch-2.9.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=ab">torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl</a>
<a href="/whl/cu130/torch-2.15.1%2Bcu130-cp313-cp313-manylinux_2_28_aarch64.whl">x</a>
<a href="/whl/cu130/torch-2.15.1%2Bcu128-cp313-cp313-manylinux_2_28_aarch64.whl">another index's</a>
<a href="/whl/cu130/torch-2.15.1%2Bcu130-cp313-cp313-win_amd64.whl">windows</a>
<a href="../torch-2.15.1%2Bcu130.tar.gz">not a wheel</a>
</body></html>"#;
        assert_eq!(
            wheels(page, "cu130"),
            [((2, 9), "linux-x86_64"), ((2, 15), "linux-sbsa")]
        );
    }

    #[test]
    fn only_gaps_are_filled_and_the_result_is_valid_data() {
        let mut c = update::to_checked(Facts::embedded());
        let pages = vec![
            (
                "cu124".to_string(),
                "http://mirror/cu124/torch/".to_string(),
                vec![((2, 4), "linux-x86_64"), ((2, 6), "linux-sbsa")],
            ),
            (
                "cu130".to_string(),
                "http://mirror/cu130/torch/".to_string(),
                vec![((2, 9), "linux-x86_64"), ((2, 15), "linux-x86_64")],
            ),
            (
                "cu132".to_string(),
                "http://mirror/cu132/torch/".to_string(),
                vec![((2, 12), "linux-x86_64"), ((2, 16), "linux-sbsa")],
            ),
        ];
        let said = add_pages(&mut c, &pages);
        assert_eq!(
            said,
            ["cu124: wheels for linux-sbsa", "cu130: torch up to 2.15"]
        );
        let cu130 = c.torch.iter().find(|t| t.name == "cu130").unwrap();
        assert_eq!(cu130.torch, (Some((2, 9)), Some((2, 15))));
        assert!(cu130.source.ends_with("(none of torch 2.16)"));
        // cu132's first release stays as recorded; the newest index gets no end.
        let cu132 = c.torch.iter().find(|t| t.name == "cu132").unwrap();
        assert_eq!(cu132.torch, (Some((2, 14)), None));
        assert!(schema::check(&update::render(&c)).is_ok());
    }
}
