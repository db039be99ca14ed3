//! Where PyTorch's wheel indexes live: `https://download.pytorch.org/whl`, or a site's
//! mirror of it (`GPUENV_TORCH_INDEX_URL`, else `[torch] index-url` in the user's settings,
//! else in the site config). Every index gpuenv names (`…/cu132`) is under it.

use std::sync::OnceLock;

/// PyTorch's own wheel indexes.
pub const DEFAULT: &str = "https://download.pytorch.org/whl";

static BASE: OnceLock<String> = OnceLock::new();

/// A base URL gpuenv will not name: it would end up in pip's and uv's configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{from} {}: {why}", crate::ui::printable(value))]
pub struct BadIndexUrl {
    /// What named it (`GPUENV_TORCH_INDEX_URL`, `[torch] index-url in …`).
    pub from: String,
    pub value: String,
    pub why: &'static str,
}

impl crate::diagnostic::Diagnostic for BadIndexUrl {
    fn hints(&self) -> Vec<String> {
        vec![format!(
            "name the directory holding the cuXYZ indexes, as `{DEFAULT}` does, over http or https and without a user name or password (pip and uv read credentials from netrc or keyring); fix or unset {}",
            self.from
        )]
    }
}

/// `value` as gpuenv will use it (no trailing `/`), or why not.
pub fn check(value: &str, from: &str) -> Result<String, BadIndexUrl> {
    let bad = |why| BadIndexUrl {
        from: from.to_string(),
        value: value.to_string(),
        why,
    };
    if value.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(bad(
            "it holds a space, a newline or another control character",
        ));
    }
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"))
        .ok_or_else(|| bad("it is not an http:// or https:// URL"))?;
    let host = rest.split('/').next().unwrap_or_default();
    if let Some((_, after)) = host.rsplit_once('@') {
        // The password is not repeated in the error.
        let scheme = &value[..value.len() - rest.len()];
        let path = &rest[host.len()..];
        return Err(BadIndexUrl {
            from: from.to_string(),
            value: format!("{scheme}***@{after}{path}"),
            why: "it names a user (a `user:password@` part), which would be exported to every process",
        });
    }
    if host.is_empty() {
        return Err(bad("it names no host"));
    }
    if value.contains(['?', '#']) {
        return Err(bad("it has a query or a fragment"));
    }
    Ok(value.trim_end_matches('/').to_string())
}

/// The base in effect for this process: set once by the edge that read the settings
/// (later calls change nothing).
pub fn set(base: String) {
    let _ = BASE.set(base);
}

pub fn base() -> &'static str {
    BASE.get().map(String::as_str).unwrap_or(DEFAULT)
}

/// The first of the variable, the user's setting and the site's that is set, checked.
pub fn choose(
    var: Option<&str>,
    settings: Option<&str>,
    site: Option<&str>,
) -> Result<String, BadIndexUrl> {
    let named = [
        (var, super::vars::GPUENV_TORCH_INDEX_URL),
        (settings, "[torch] index-url in gpuenv's settings.toml"),
        (site, "[torch] index-url in the site config"),
    ];
    match named
        .into_iter()
        .find_map(|(v, from)| Some((v.filter(|v| !v.is_empty())?, from)))
    {
        Some((v, from)) => check(v, from),
        None => Ok(DEFAULT.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_beats_the_settings_which_beat_the_site() {
        assert_eq!(choose(None, None, None).unwrap(), DEFAULT);
        assert_eq!(
            choose(Some("http://m/whl/"), Some("http://s"), Some("http://t")).unwrap(),
            "http://m/whl"
        );
        assert_eq!(
            choose(Some(""), None, Some("https://t/whl")).unwrap(),
            "https://t/whl"
        );
    }

    #[test]
    fn a_newline_a_user_or_another_scheme_is_refused() {
        for bad in [
            "https://m/whl\nx",
            "https://user:pw@m/whl",
            "file:///srv/whl",
            "https:///whl",
        ] {
            let e = check(bad, "X").unwrap_err();
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }
}
