//! A project's `pyproject.toml` and PyTorch's index: what `[[tool.uv.index]]` and
//! `[tool.uv.sources]` say about torch, whether that agrees with the pinned toolkit's
//! index, and the edit `gpuenv torch index --write-pyproject` makes (keeping comments,
//! order and everything else). Pure: the edge reads and writes the file.

use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

use crate::user_file::form;

/// The index gpuenv writes and the packages it routes there.
pub const INDEX_NAME: &str = "pytorch";
pub const TORCH_PACKAGES: &[&str] = &["torch", "torchvision", "torchaudio"];

#[derive(Debug, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct NotToml {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

fn parse(text: &str) -> Result<DocumentMut, NotToml> {
    text.parse::<DocumentMut>().map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| crate::fsutil::line_col(text, s.start))
            .unwrap_or((1, 1));
        NotToml {
            line,
            column,
            message: crate::ui::toml_message(e.message()),
        }
    })
}

/// The `[[tool.uv.index]]` entries (or the same written inline): (name, url).
fn indexes(doc: &DocumentMut) -> Vec<(String, String)> {
    let Some(item) = doc
        .get("tool")
        .and_then(|t| t.get("uv"))
        .and_then(|u| u.get("index"))
    else {
        return Vec::new();
    };
    let tables: Vec<&dyn toml_edit::TableLike> = match item {
        Item::ArrayOfTables(list) => list.iter().map(|t| t as _).collect(),
        Item::Value(Value::Array(list)) => list
            .iter()
            .filter_map(|v| v.as_inline_table().map(|t| t as _))
            .collect(),
        _ => Vec::new(),
    };
    tables
        .into_iter()
        .filter_map(|t| {
            let url = t.get("url")?.as_str()?.to_string();
            let name = t
                .get("name")
                .and_then(Item::as_str)
                .unwrap_or("")
                .to_string();
            Some((name, url))
        })
        .collect()
}

/// The requirements on torch in `[project] dependencies` (`torch>=2.9,<2.12`), as written.
pub fn torch_requirements(text: &str) -> Result<Vec<String>, NotToml> {
    let doc = parse(text)?;
    let Some(deps) = doc
        .get("project")
        .and_then(|p| p.get("dependencies"))
        .and_then(Item::as_array)
    else {
        return Ok(Vec::new());
    };
    Ok(deps
        .iter()
        .filter_map(|d| d.as_str())
        .filter(|d| {
            let name_end = d
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
                .unwrap_or(d.len());
            d[..name_end].eq_ignore_ascii_case("torch")
        })
        .map(str::to_string)
        .collect())
}

/// The index `[tool.uv.sources]` routes `package` to, if any.
fn source_index(doc: &DocumentMut, package: &str) -> Option<String> {
    let entry = doc.get("tool")?.get("uv")?.get("sources")?.get(package)?;
    let index = match entry {
        Item::Value(Value::InlineTable(t)) => t.get("index")?.as_str()?.to_string(),
        Item::Table(t) => t.get("index")?.as_str()?.to_string(),
        _ => return None,
    };
    Some(index)
}

/// Where the file sends torch that is not `want` (the pinned toolkit's index), in words:
/// a source naming an index whose URL differs, or a PyTorch CUDA index (`…/cuXYZ`) listed
/// that is not `want`. Empty when it agrees or says nothing about torch.
pub fn disagreements(text: &str, want: &str) -> Result<Vec<String>, NotToml> {
    let doc = parse(text)?;
    let listed = indexes(&doc);
    let mut out = Vec::new();
    for package in TORCH_PACKAGES {
        let Some(name) = source_index(&doc, package) else {
            continue;
        };
        match listed.iter().find(|(n, _)| *n == name) {
            Some((_, url)) if url.trim_end_matches('/') != want => out.push(format!(
                "[tool.uv.sources] sends {package} to the index `{name}` ({url}), not {want}"
            )),
            _ => {}
        }
    }
    for (name, url) in &listed {
        let last = url.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        let cuda_index = last.starts_with("cu") && last[2..].chars().all(|c| c.is_ascii_digit());
        if cuda_index && url.trim_end_matches('/') != want && !out.iter().any(|o| o.contains(url)) {
            out.push(format!(
                "[[tool.uv.index]] `{name}` is {url}, not the pinned toolkit's {want}"
            ));
        }
    }
    Ok(out)
}

/// The URL of the index gpuenv writes (`[[tool.uv.index]]` named `pytorch`) when it is a
/// PyTorch CUDA index (`…/cuXYZ`): the one `pin` moves with the project's CUDA. `None` for a
/// file without it, or whose `pytorch` index is something else (a mirror of the user's).
pub fn written_index(text: &str) -> Result<Option<String>, NotToml> {
    let doc = parse(text)?;
    Ok(indexes(&doc)
        .into_iter()
        .find(|(name, _)| name == INDEX_NAME)
        .map(|(_, url)| url)
        .filter(|url| {
            let last = url.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            last.len() > 2
                && last.starts_with("cu")
                && last[2..].chars().all(|c| c.is_ascii_digit())
        }))
}

/// `text` with an explicit `[[tool.uv.index]]` named `pytorch` at `url` (an existing one
/// is pointed there) and torch, torchvision and torchaudio routed to it in
/// `[tool.uv.sources]`; everything else kept as it was. Tables the user wrote inline stay
/// inline and keep their other keys; a source of theirs keeps its other keys (a marker).
pub fn write_index(text: &str, url: &str) -> Result<String, NotToml> {
    let mut doc = parse(text)?;
    let refuse = |message: String| NotToml {
        line: 1,
        column: 1,
        message,
    };
    let not_table = |key: &str| refuse(format!("`{key}` is not a table"));
    let tool = form::table_like(doc.as_table_mut(), "tool").ok_or_else(|| not_table("tool"))?;
    let uv = form::table_like(tool, "uv").ok_or_else(|| not_table("tool.uv"))?;
    if !uv.contains_key("index") {
        uv.insert("index", Item::ArrayOfTables(Default::default()));
    }
    let entry = uv.get_mut("index").expect("inserted above");
    if let Some(list) = entry.as_array_of_tables_mut() {
        let existing = list
            .iter()
            .position(|t| t.get("name").and_then(Item::as_str) == Some(INDEX_NAME));
        match existing.and_then(|i| list.get_mut(i)) {
            Some(t) => t["url"] = toml_edit::value(url),
            None => list.push(new_index(url)),
        }
    } else if let Some(list) = entry.as_array_mut() {
        // `index = [{ name = …, url = … }]`: the same list, written inline.
        let existing = list.iter_mut().find_map(|v| {
            v.as_inline_table_mut()
                .filter(|t| t.get("name").and_then(Value::as_str) == Some(INDEX_NAME))
        });
        match existing {
            Some(t) => {
                t.insert("url", url.into());
            }
            None => list.push(new_index(url).into_inline_table()),
        }
    } else {
        return Err(refuse(
            "tool.uv.index is neither [[tool.uv.index]] tables nor a list of them".into(),
        ));
    }
    let sources = form::table_like(uv, "sources").ok_or_else(|| not_table("tool.uv.sources"))?;
    for package in TORCH_PACKAGES {
        match sources.get_mut(package) {
            Some(item) => match item.as_table_like_mut() {
                Some(source) => {
                    source.insert("index", toml_edit::value(INDEX_NAME));
                }
                None => {
                    return Err(refuse(format!(
                        "tool.uv.sources.{package} lists several sources; gpuenv does not choose among them"
                    )))
                }
            },
            None => {
                let mut inline = InlineTable::new();
                inline.insert("index", INDEX_NAME.into());
                sources.insert(package, Item::Value(Value::InlineTable(inline)));
            }
        }
    }
    Ok(doc.to_string())
}

fn new_index(url: &str) -> Table {
    let mut t = Table::new();
    t["name"] = toml_edit::value(INDEX_NAME);
    t["url"] = toml_edit::value(url);
    // Only the packages routed here come from it (uv's advice for PyTorch).
    t["explicit"] = toml_edit::value(true);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    const CU132: &str = "https://download.pytorch.org/whl/cu132";

    #[test]
    fn writing_keeps_comments_and_agrees_after() {
        let text =
            "# my project\n[project]\nname = \"app\" # the name\ndependencies = [\"torch\"]\n";
        let out = write_index(text, CU132).unwrap();
        assert!(
            out.starts_with("# my project\n[project]\nname = \"app\" # the name\n"),
            "{out}"
        );
        assert!(out.contains("[[tool.uv.index]]\nname = \"pytorch\"\nurl = \"https://download.pytorch.org/whl/cu132\"\nexplicit = true\n"), "{out}");
        assert!(out.contains("torch = { index = \"pytorch\" }"), "{out}");
        assert!(disagreements(&out, CU132).unwrap().is_empty());
        let moved = disagreements(&out, "https://download.pytorch.org/whl/cu130").unwrap();
        assert_eq!(moved.len(), 3, "{moved:?}");
        // Written again for the new pin: one index, pointed there.
        let again = write_index(&out, "https://download.pytorch.org/whl/cu130").unwrap();
        assert_eq!(again.matches("[[tool.uv.index]]").count(), 1, "{again}");
        assert!(
            disagreements(&again, "https://download.pytorch.org/whl/cu130")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn inline_tables_stay_inline_and_keep_their_keys() {
        let text = "# my uv settings\ntool.uv = { sources = { corp = { index = \"corp\" }, torch = { index = \"old\", marker = \"sys_platform == 'linux'\" } }, index = [{ name = \"corp\", url = \"https://corp/simple\" }] }\n";
        let out = write_index(text, CU132).unwrap();
        assert!(out.starts_with("# my uv settings\ntool.uv = {"), "{out}");
        let doc: DocumentMut = out.parse().unwrap();
        let uv = &doc["tool"]["uv"];
        assert_eq!(uv["sources"]["corp"]["index"].as_str(), Some("corp"));
        assert_eq!(uv["sources"]["torch"]["index"].as_str(), Some("pytorch"));
        assert!(uv["sources"]["torch"]["marker"].as_str().is_some(), "{out}");
        assert_eq!(uv["index"].as_array().unwrap().len(), 2, "{out}");
        assert!(disagreements(&out, CU132).unwrap().is_empty(), "{out}");
        assert!(!out.contains("[tool"), "{out}");
    }

    #[test]
    fn not_toml_is_named_with_its_line() {
        let e = write_index("[project\nname = 1\n", CU132).unwrap_err();
        assert_eq!(e.line, 1, "{e}");
    }

    #[test]
    fn the_index_gpuenv_wrote_is_its_pytorch_cuda_index_only() {
        let text = "[project]\nname = \"p\"\n\n[[tool.uv.index]]\nname = \"pytorch\"\nurl = \"https://download.pytorch.org/whl/cu130\"\n";
        assert_eq!(
            written_index(text).unwrap().as_deref(),
            Some("https://download.pytorch.org/whl/cu130")
        );
        let mirror =
            "[[tool.uv.index]]\nname = \"pytorch\"\nurl = \"https://mirror.example/torch\"\n";
        assert_eq!(written_index(mirror).unwrap(), None);
        assert_eq!(written_index("[project]\n").unwrap(), None);
    }
}
