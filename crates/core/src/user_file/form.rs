//! The form of a user's file that gpuenv keeps whatever it changes: a byte-order mark,
//! CRLF line endings, and for TOML every key the file had (checked on the parsed result),
//! plus [`merge`], which brings a document gpuenv renders whole (a lock, its settings) into
//! the user's copy without losing their comments, order or inline tables.

use toml_edit::{DocumentMut, Item, Table, Value};

const BOM: &str = "\u{feff}";

/// A file's text without its byte-order mark, and how its lines end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Form {
    pub bom: bool,
    pub crlf: bool,
}

impl Form {
    /// The form of `text`, and the text without the mark.
    pub fn of(text: &str) -> (Form, &str) {
        let body = text.strip_prefix(BOM);
        let form = Form {
            bom: body.is_some(),
            // A file whose lines end in CRLF: new lines get the same.
            crlf: text.contains("\r\n"),
        };
        (form, body.unwrap_or(text))
    }

    /// `body` (edited) in this form: the mark back, and every bare `\n` made `\r\n` in a
    /// CRLF file.
    pub fn apply(self, body: &str) -> String {
        let mut out = String::with_capacity(body.len() + 8);
        if self.bom {
            out.push_str(BOM);
        }
        if !self.crlf {
            out.push_str(body);
            return out;
        }
        let mut last = '\0';
        for c in body.chars() {
            if c == '\n' && last != '\r' {
                out.push('\r');
            }
            out.push(c);
            last = c;
        }
        out
    }
}

/// Every key path in `doc` (`tool.uv.sources.torch.index`, `tool.uv.index[0].url`), in
/// tables, inline tables and arrays of tables alike.
pub fn key_paths(doc: &DocumentMut) -> Vec<String> {
    let mut out = Vec::new();
    walk_table(doc.as_table(), "", &mut out);
    out
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn walk_table(t: &dyn toml_edit::TableLike, prefix: &str, out: &mut Vec<String>) {
    for (k, item) in t.iter() {
        let path = join(prefix, k);
        out.push(path.clone());
        walk_item(item, &path, out);
    }
}

fn walk_item(item: &Item, path: &str, out: &mut Vec<String>) {
    match item {
        Item::Table(t) => walk_table(t, path, out),
        Item::ArrayOfTables(a) => {
            for (i, t) in a.iter().enumerate() {
                let at = format!("{path}[{i}]");
                walk_table(t, &at, out);
            }
        }
        Item::Value(Value::InlineTable(t)) => walk_table(t, path, out),
        _ => {}
    }
}

/// `new` (rendered whole by gpuenv) written over `old` (the user's copy): a value that is
/// the same stays as the user wrote it (comments, order, spacing, inline or not), a changed
/// one is replaced keeping the comments around it, keys `new` lacks go and keys it adds
/// come at the end of their table.
pub fn merge(old: &mut DocumentMut, new: &DocumentMut) {
    merge_table(old.as_table_mut(), new.as_table());
}

/// `new` (a whole document gpuenv rendered) brought into `old` (the user's copy) by
/// [`merge`]; `new` itself when `old` is not TOML; `None` when `new` is not.
pub fn merged(old: &str, new: &str) -> Option<String> {
    let new_doc: DocumentMut = new.parse().ok()?;
    if old.trim().is_empty() {
        return Some(new.to_string());
    }
    let Ok(mut doc) = old.parse::<DocumentMut>() else {
        return Some(new.to_string());
    };
    merge(&mut doc, &new_doc);
    let out = doc.to_string();
    // The merged text must say exactly what gpuenv rendered; if not, the rendering wins.
    let same = |a: &str, b: &str| a.parse::<toml::Table>().ok() == b.parse::<toml::Table>().ok();
    Some(if same(&out, new) {
        out
    } else {
        new.to_string()
    })
}

fn merge_table(old: &mut dyn toml_edit::TableLike, new: &dyn toml_edit::TableLike) {
    let gone: Vec<String> = old
        .iter()
        .filter(|(k, _)| !new.contains_key(k))
        .map(|(k, _)| k.to_string())
        .collect();
    for k in gone {
        old.remove(&k);
    }
    for (k, item) in new.iter() {
        match old.get_mut(k) {
            Some(have) => merge_item(have, item),
            None => {
                old.insert(k, item.clone());
            }
        }
    }
}

fn merge_item(old: &mut Item, new: &Item) {
    match (old, new) {
        (Item::Table(o), Item::Table(n)) => merge_table(o, n),
        (Item::Value(Value::InlineTable(o)), Item::Table(n)) => merge_table(o, n),
        (Item::Value(Value::InlineTable(o)), Item::Value(Value::InlineTable(n))) => {
            merge_table(o, n)
        }
        (Item::Table(o), Item::Value(Value::InlineTable(n))) => merge_table(o, n),
        (Item::ArrayOfTables(o), Item::ArrayOfTables(n)) if o.len() == n.len() => {
            for (a, b) in o.iter_mut().zip(n.iter()) {
                merge_table(a, b);
            }
        }
        (Item::Value(o), Item::Value(n)) => {
            if o.to_string().trim() != n.to_string().trim() {
                let decor = o.decor().clone();
                *o = n.clone();
                *o.decor_mut() = decor;
            }
        }
        (o, n) => *o = n.clone(),
    }
}

/// The table `key` of `parent`, made if missing (as a dotted-key parent, not an empty
/// `[key]` header). An inline table the user wrote stays inline and is returned as such;
/// `None` when `key` holds something that is not a table (the caller refuses).
pub fn table_like<'a>(
    parent: &'a mut dyn toml_edit::TableLike,
    key: &str,
) -> Option<&'a mut dyn toml_edit::TableLike> {
    if !parent.contains_key(key) {
        let mut t = Table::new();
        t.set_implicit(true);
        parent.insert(key, Item::Table(t));
    }
    parent.get_mut(key)?.as_table_like_mut()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_and_crlf_come_back() {
        let (form, body) = Form::of("\u{feff}a = 1\r\n");
        assert_eq!(body, "a = 1\r\n");
        assert_eq!(form.apply("a = 1\r\nb = 2\n"), "\u{feff}a = 1\r\nb = 2\r\n");
        let (plain, body) = Form::of("a = 1\n");
        assert_eq!(plain.apply(body), "a = 1\n");
    }

    #[test]
    fn key_paths_reach_into_inline_tables_and_arrays_of_tables() {
        let doc: DocumentMut =
            "tool.uv = { sources = { torch = { index = \"x\" } } }\n[[a]]\nb = 1\n"
                .parse()
                .unwrap();
        let keys = key_paths(&doc);
        for k in ["tool.uv.sources.torch.index", "a[0].b"] {
            assert!(keys.contains(&k.to_string()), "{k}: {keys:?}");
        }
    }

    #[test]
    fn merge_keeps_what_did_not_change_as_the_user_wrote_it() {
        let mut old: DocumentMut =
            "# mine\nlock-version = 1 # v\n\n[[toolchain]]\nname = \"a\"\nroot = { x = 1 }\n"
                .parse()
                .unwrap();
        let new: DocumentMut =
            "lock-version = 1\n\n[[toolchain]]\nname = \"b\"\n\n[[toolchain]]\nname = \"c\"\n"
                .parse()
                .unwrap();
        merge(&mut old, &new);
        let text = old.to_string();
        assert!(text.starts_with("# mine\nlock-version = 1 # v\n"), "{text}");
        assert!(text.contains("name = \"c\""), "{text}");
        assert!(!text.contains("name = \"a\""), "{text}");
        let mut kept: DocumentMut = "a = { b = 1, c = 2 } # why\n".parse().unwrap();
        merge(&mut kept, &"[a]\nb = 1\nc = 3\n".parse().unwrap());
        assert_eq!(kept.to_string(), "a = { b = 1, c = 3 } # why\n");
    }
}
