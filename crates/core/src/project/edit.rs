//! `gpuenv pin`'s change to a toolchain file, keeping comments, order and everything else.

use crate::store::toolchain::Spec;

/// What `gpuenv pin` sets.
#[derive(Debug, Clone, Default)]
pub struct PinEdit {
    pub specs: Vec<Spec>,
    /// Kinds pinned to the active Python's torch: `cuda = "torch"`.
    pub torch: Vec<crate::store::toolchain::Kind>,
    pub cuda_arch: Option<Vec<String>>,
    pub rocm_arch: Option<Vec<String>>,
}

/// Applies `edit` to the text of a toolchain file (empty for a new one), keeping comments,
/// order and everything it does not touch.
pub fn edit(text: &str, edit: &PinEdit) -> Result<String, toml_edit::TomlError> {
    let mut doc: toml_edit::DocumentMut = text.parse()?;
    let table = doc
        .entry("toolchain")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    let table = table
        .as_table_like_mut()
        .expect("[toolchain] is validated as a table before editing");
    for spec in &edit.specs {
        let value = match &spec.label {
            Some(_) => spec.to_string(),
            None => spec.version.to_string(),
        };
        set_keeping_decor(table, spec.kind.as_str(), toml_edit::value(value));
    }
    for kind in &edit.torch {
        set_keeping_decor(table, kind.as_str(), toml_edit::value("torch"));
    }
    for (key, list) in [
        ("cuda-arch", &edit.cuda_arch),
        ("rocm-arch", &edit.rocm_arch),
    ] {
        if let Some(list) = list {
            let array: toml_edit::Array = list.iter().map(String::as_str).collect();
            set_keeping_decor(table, key, toml_edit::value(array));
        }
    }
    Ok(doc.to_string())
}

fn set_keeping_decor(table: &mut dyn toml_edit::TableLike, key: &str, new: toml_edit::Item) {
    match table.get_mut(key) {
        Some(item) => {
            let decor = item.as_value().map(|v| v.decor().clone());
            *item = new;
            if let (Some(decor), Some(v)) = (decor, item.as_value_mut()) {
                *v.decor_mut() = decor;
            }
        }
        None => {
            table.insert(key, new);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_keeps_comments_and_order() {
        let before = "# my project\n[toolchain]\ncuda = \"11.8\" # old one\nrocm = \"6.2\"\n\n[env]\nA = \"1\"\n";
        let after = edit(
            before,
            &PinEdit {
                specs: vec!["cuda-12.4".parse().unwrap()],
                cuda_arch: Some(vec!["8.0".into(), "9.0+PTX".into()]),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            after,
            "# my project\n[toolchain]\ncuda = \"12.4\" # old one\nrocm = \"6.2\"\ncuda-arch = [\"8.0\", \"9.0+PTX\"]\n\n[env]\nA = \"1\"\n"
        );
        let fresh = edit(
            "",
            &PinEdit {
                specs: vec!["cuda-11.3-conda".parse().unwrap()],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(fresh, "[toolchain]\ncuda = \"cuda-11.3-conda\"\n");
    }
}
