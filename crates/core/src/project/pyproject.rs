//! A project's `pyproject.toml` and PyTorch's index: what `[[tool.uv.index]]` and
//! `[tool.uv.sources]` say about torch, whether that agrees with the pinned toolkit's
//! index, and the edit `gpuenv torch index --write-pyproject` makes (keeping comments,
//! order and everything else). Pure: the edge reads and writes the file.

use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

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
            message: e.message().trim().replace('\n', ": "),
        }
    })
}

/// The `[[tool.uv.index]]` entries: (name, url).
fn indexes(doc: &DocumentMut) -> Vec<(String, String)> {
    let Some(list) = doc
        .get("tool")
        .and_then(|t| t.get("uv"))
        .and_then(|u| u.get("index"))
        .and_then(Item::as_array_of_tables)
    else {
        return Vec::new();
    };
    list.iter()
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

/// `text` with an explicit `[[tool.uv.index]]` named `pytorch` at `url` (an existing one
/// is pointed there) and torch, torchvision and torchaudio routed to it in
/// `[tool.uv.sources]`; everything else kept as it was.
pub fn write_index(text: &str, url: &str) -> Result<String, NotToml> {
    let mut doc = parse(text)?;
    let tool = table_in(doc.as_table_mut(), "tool");
    let uv = table_in(tool, "uv");
    let list = uv
        .entry("index")
        .or_insert_with(|| Item::ArrayOfTables(Default::default()));
    let Some(list) = list.as_array_of_tables_mut() else {
        return Err(NotToml {
            line: 1,
            column: 1,
            message: "tool.uv.index is not an array of tables ([[tool.uv.index]])".into(),
        });
    };
    let existing = list
        .iter()
        .position(|t| t.get("name").and_then(Item::as_str) == Some(INDEX_NAME));
    match existing.and_then(|i| list.get_mut(i)) {
        Some(t) => {
            t["url"] = toml_edit::value(url);
        }
        None => {
            let mut t = Table::new();
            t["name"] = toml_edit::value(INDEX_NAME);
            t["url"] = toml_edit::value(url);
            // Only the packages routed here come from it (uv's advice for PyTorch).
            t["explicit"] = toml_edit::value(true);
            list.push(t);
        }
    }
    let sources = table_in(uv, "sources");
    for package in TORCH_PACKAGES {
        let mut inline = InlineTable::new();
        inline.insert("index", INDEX_NAME.into());
        sources.insert(package, Item::Value(Value::InlineTable(inline)));
    }
    Ok(doc.to_string())
}

/// The table `key` of `parent`, made (as a dotted-key parent, not an empty `[tool]`) if
/// missing; a value of another type there is replaced only if it is not a table.
fn table_in<'a>(parent: &'a mut Table, key: &str) -> &'a mut Table {
    let item = parent.entry(key).or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    if !item.is_table() {
        *item = Item::Table(Table::new());
    }
    item.as_table_mut().expect("made a table above")
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
    fn not_toml_is_named_with_its_line() {
        let e = write_index("[project\nname = 1\n", CU132).unwrap_err();
        assert_eq!(e.line, 1, "{e}");
    }
}
