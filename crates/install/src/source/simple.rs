//! The simple repository API of a Python package index: PEP 691 JSON, or PEP 503 HTML
//! from indexes that serve only that.

use crate::error::{Context as _, Result};
use reqwest::Url;

use crate::fetch::Page;
use crate::pathpart::{self, Sha256, UnsafeValue};
use gpuenv_core::diagnostic::Hinted;

/// A file the index lists for a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLink {
    pub filename: String,
    pub url: Url,
    pub sha256: Option<Sha256>,
    pub size: Option<u64>,
    pub yanked: bool,
}

fn sha256_of(hashes: Option<&serde_json::Value>) -> Option<&str> {
    hashes?.get("sha256")?.as_str()
}

/// The file name and digest of a link, checked before either can name a file.
fn checked(filename: String, sha256: Option<&str>) -> Result<(String, Option<Sha256>)> {
    let check = || -> Result<_, UnsafeValue> {
        pathpart::part("file name", &filename)?;
        sha256.map(Sha256::parse).transpose()
    };
    let sha256 = check().map_err(|e| {
        Hinted::new(format!("the link to {}", gpuenv_core::ui::value(&filename)))
            .hint(pathpart::SOURCE_HINT)
            .caused_by(e)
    })?;
    Ok((filename, sha256))
}

/// PEP 691: `{"files": [{"filename", "url", "hashes": {"sha256"}, "size", "yanked"}]}`.
pub fn parse_json(page: &Page) -> Result<Vec<FileLink>> {
    let v: serde_json::Value = serde_json::from_slice(&page.body)?;
    let files = v
        .get("files")
        .and_then(|f| f.as_array())
        .context("no `files` list")?;
    let mut out = Vec::new();
    for f in files {
        let (Some(filename), Some(url)) = (
            f.get("filename").and_then(|x| x.as_str()),
            f.get("url").and_then(|x| x.as_str()),
        ) else {
            continue;
        };
        let Ok(url) = page.url.join(url) else {
            continue;
        };
        let (filename, sha256) = checked(filename.to_string(), sha256_of(f.get("hashes")))?;
        out.push(FileLink {
            filename,
            url,
            sha256,
            size: f.get("size").and_then(|s| s.as_u64()),
            yanked: f
                .get("yanked")
                .is_some_and(|y| y.as_bool().unwrap_or(false) || y.is_string()),
        });
    }
    Ok(out)
}

/// PEP 503: `<a href="…/file.whl#sha256=…" data-yanked>file.whl</a>`.
pub fn parse_html(page: &Page) -> Result<Vec<FileLink>> {
    let html = page.text();
    let lower = html.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(start) = lower[at..].find("<a").map(|i| i + at) {
        let Some(tag_end) = lower[start..].find('>').map(|i| i + start) else {
            break;
        };
        let Some(close) = lower[tag_end..].find("</a>").map(|i| i + tag_end) else {
            break;
        };
        let tag = &html[start + 2..tag_end];
        let text = unescape(html[tag_end + 1..close].trim());
        at = close + 4;
        let Some(href) = attr(tag, "href") else {
            continue;
        };
        let Ok(mut url) = page.url.join(&unescape(&href)) else {
            continue;
        };
        let sha256 = url
            .fragment()
            .and_then(|f| f.strip_prefix("sha256="))
            .map(str::to_string);
        url.set_fragment(None);
        let filename = if text.is_empty() {
            url.path_segments()
                .and_then(|mut s| s.next_back().map(str::to_string))
                .unwrap_or_default()
        } else {
            text
        };
        let (filename, sha256) = checked(filename, sha256.as_deref())?;
        out.push(FileLink {
            filename,
            url,
            sha256,
            size: None,
            yanked: attr(tag, "data-yanked").is_some(),
        });
    }
    Ok(out)
}

/// The value of an HTML attribute (`""` for one without a value), if present.
fn attr(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(name).map(|i| i + from) {
        from = i + name.len();
        let before_ok = i == 0 || lower.as_bytes()[i - 1].is_ascii_whitespace();
        let rest = &tag[i + name.len()..];
        let after = rest.trim_start();
        if !before_ok {
            continue;
        }
        if let Some(v) = after.strip_prefix('=') {
            let v = v.trim_start();
            let value = match v.chars().next() {
                Some(q @ ('"' | '\'')) => v[1..].split(q).next().unwrap_or(""),
                _ => v.split(|c: char| c.is_whitespace()).next().unwrap_or(""),
            };
            return Some(value.to_string());
        }
        if rest.is_empty() || rest.starts_with(|c: char| c.is_whitespace() || c == '/') {
            return Some(String::new());
        }
    }
    None
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::one_line;

    fn page(url: &str, body: &str, content_type: &str) -> Page {
        Page {
            url: Url::parse(url).unwrap(),
            content_type: content_type.into(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn reads_pep_691_json() {
        let p = page(
            "https://pypi.example/simple/nvidia-cuda-nvcc/",
            r#"{"meta": {"api-version": "1.1"}, "name": "nvidia-cuda-nvcc", "files": [
              {"filename": "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
               "url": "../../files/a.whl", "hashes": {"sha256": "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"}, "size": 10, "yanked": false},
              {"filename": "old.whl", "url": "https://x.example/old.whl", "hashes": {}, "yanked": "broken"}]}"#,
            "application/vnd.pypi.simple.v1+json",
        );
        let files = parse_json(&p).unwrap();
        assert_eq!(files[0].url.as_str(), "https://pypi.example/files/a.whl");
        assert_eq!(
            files[0].sha256.as_ref().unwrap().as_str(),
            "abcdef0123456789".repeat(4)
        );
        assert_eq!(files[0].size, Some(10));
        assert!(!files[0].yanked);
        assert!(files[1].yanked && files[1].sha256.is_none());
    }

    #[test]
    fn reads_pep_503_html() {
        let html = "<!DOCTYPE html><html><body>\n<A HREF=\"../../pkgs/cuda_toolkit-13.0.2-py2.py3-none-any.whl#sha256={DEAD}\" data-requires-python=\"&gt;=3\">cuda_toolkit-13.0.2-py2.py3-none-any.whl</A><br/>\n<a data-yanked=\"\" href='/p/cuda_toolkit-13.0.1-py2.py3-none-any.whl'>cuda_toolkit-13.0.1-py2.py3-none-any.whl</a>\n</body></html>";
        let url = "https://mirror.example/simple/cuda-toolkit/";
        let p = page(url, &html.replace("{DEAD}", &"DE".repeat(32)), "text/html");
        let files = parse_html(&p).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(
            files[0].filename,
            "cuda_toolkit-13.0.2-py2.py3-none-any.whl"
        );
        assert_eq!(
            files[0].url.as_str(),
            "https://mirror.example/pkgs/cuda_toolkit-13.0.2-py2.py3-none-any.whl"
        );
        assert_eq!(files[0].sha256.as_ref().unwrap().as_str(), "de".repeat(32));
        assert!(!files[0].yanked);
        assert!(files[1].yanked);
        assert_eq!(
            files[1].url.as_str(),
            "https://mirror.example/p/cuda_toolkit-13.0.1-py2.py3-none-any.whl"
        );
    }

    #[test]
    fn a_page_naming_a_path_as_a_digest_or_file_is_refused() {
        let url = "https://mirror.example/simple/x/";
        let html = |href: &str| format!("<a href=\"{href}\">x.whl</a>");
        for bad in ["x.whl#sha256=../../victim", "x.whl#sha256=abc"] {
            let err = one_line(&parse_html(&page(url, &html(bad), "text/html")).unwrap_err());
            assert!(err.contains("not 64 hex digits"), "{err}");
        }
        let json = r#"{"files": [{"filename": "../../x.whl", "url": "x.whl", "hashes": {}}]}"#;
        let err = one_line(&parse_json(&page(url, json, "application/json")).unwrap_err());
        assert!(err.contains("file name `../../x.whl`"), "{err}");
    }
}
