//! Reading a site's module files without running them: the toolkit roots they name through
//! `setenv`/`pushenv` of `CUDA_HOME`, `CUDA_PATH`, `ROCM_PATH`, `HIP_PATH` (every variable
//! of [`Kind::home_vars`]). Values built from string literals and variables set earlier in
//! the file (`local root = "…"` / `set root …`, `..`, `pathJoin`) are understood; anything
//! computed (a command, `os.getenv`, `[exec …]`) is reported with its file and line and
//! skipped, never evaluated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::store::toolchain::Kind;

/// A root a module file names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub kind: Kind,
    pub var: String,
    pub root: PathBuf,
    pub line: usize,
}

/// What one file gave: roots, and lines it could not read (as `line: why`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub named: Vec<Named>,
    pub skipped: Vec<(usize, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Lua,
    Tcl,
}

/// Lmod files end in `.lua`; Tcl module files start with `#%Module`. Anything else is not
/// a module file (`.version`, `.modulerc`, READMEs).
pub fn syntax_of(path: &Path, text: &str) -> Option<Syntax> {
    if path.extension().is_some_and(|e| e == "lua") {
        Some(Syntax::Lua)
    } else if text.starts_with("#%Module") {
        Some(Syntax::Tcl)
    } else {
        None
    }
}

fn kind_of(var: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| k.home_vars().contains(&var))
}

pub fn parse(text: &str, syntax: Syntax) -> Parsed {
    let mut vars: BTreeMap<String, Value> = BTreeMap::new();
    let mut out = Parsed::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let stmt = match syntax {
            Syntax::Lua => lua_statement(raw.trim(), &vars),
            Syntax::Tcl => tcl_statement(raw.trim(), &vars),
        };
        match stmt {
            Some(Stmt::Local(name, value)) => {
                vars.insert(name, value);
            }
            Some(Stmt::Setenv(var, value)) => {
                let Some(kind) = kind_of(&var) else { continue };
                match value {
                    Ok(v) if Path::new(&v).is_absolute() => out.named.push(Named {
                        kind,
                        var,
                        root: PathBuf::from(v),
                        line,
                    }),
                    Ok(v) => out
                        .skipped
                        .push((line, format!("{var} is set to `{v}`, not an absolute path"))),
                    Err(why) => out.skipped.push((line, format!("{var} {why}"))),
                }
            }
            None => {}
        }
    }
    out
}

enum Stmt {
    Local(String, Value),
    Setenv(String, Value),
}

/// A value that only running the module file would tell.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("is computed when the module loads, which gpuenv does not run")]
pub struct Computed;

/// A value as written in the file, or why it cannot be read without running it.
type Value = Result<String, Computed>;

fn lua_statement(s: &str, vars: &BTreeMap<String, Value>) -> Option<Stmt> {
    if let Some(rest) = s.strip_prefix("local ") {
        let (name, expr) = rest.split_once('=')?;
        let name = name.trim();
        if !is_ident(name) {
            return None;
        }
        return Some(Stmt::Local(name.to_string(), lua_expr(expr.trim(), vars)));
    }
    let args = ["setenv", "pushenv"].iter().find_map(|f| {
        let rest = s.strip_prefix(f)?.trim_start();
        let inner = rest.strip_prefix('(')?;
        let end = inner.rfind(')')?;
        Some(&inner[..end])
    })?;
    let (var, expr) = split_top_comma(args)?;
    let Ok(var) = lua_expr(var.trim(), vars) else {
        return None;
    };
    Some(Stmt::Setenv(var, lua_expr(expr.trim(), vars)))
}

/// `"a" .. b .. 'c'`, `pathJoin(a, "b")`, or a known local.
fn lua_expr(e: &str, vars: &BTreeMap<String, Value>) -> Value {
    if let Some(inner) = e
        .strip_prefix("pathJoin(")
        .and_then(|r| r.strip_suffix(')'))
    {
        let parts: Result<Vec<String>, Computed> = split_all_commas(inner)
            .iter()
            .map(|p| lua_expr(p.trim(), vars))
            .collect();
        return Ok(parts?.join("/").replace("//", "/"));
    }
    let mut out = String::new();
    for part in split_concat(e) {
        let part = part.trim();
        if let Some(lit) = lua_literal(part) {
            out += &lit;
        } else if is_ident(part) {
            match vars.get(part) {
                Some(Ok(v)) => out += v,
                Some(Err(_)) | None => return Err(Computed),
            }
        } else {
            return Err(Computed);
        }
    }
    Ok(out)
}

fn lua_literal(s: &str) -> Option<String> {
    let q = s.chars().next()?;
    if (q != '"' && q != '\'') || s.len() < 2 || !s.ends_with(q) {
        return None;
    }
    let body = &s[1..s.len() - 1];
    // Escapes other than \\ and \" / \' would need Lua to read: not a plain literal.
    if body.contains('\\') || body.contains(q) {
        return None;
    }
    Some(body.to_string())
}

/// The operands of Lua's `..`, outside string literals only: `"/sw/cuda..old"` is one.
fn split_concat(e: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quote) = (0, None);
    let bytes = e.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match (quote, bytes[i]) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, c @ (b'"' | b'\'')) => quote = Some(c),
            (None, b'.') if bytes.get(i + 1) == Some(&b'.') => {
                out.push(&e[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&e[start..]);
    out
}

fn split_top_comma(s: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, ',') if depth == 0 => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
    }
    None
}

fn split_all_commas(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some((a, b)) = split_top_comma(rest) {
        out.push(a);
        rest = b;
    }
    out.push(rest);
    out
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

fn tcl_statement(s: &str, vars: &BTreeMap<String, Value>) -> Option<Stmt> {
    let words = tcl_words(s)?;
    let (cmd, rest) = words.split_first()?;
    // Command and variable names are taken as written (a `$` in one is not a module file
    // gpuenv needs to understand).
    let text = |w: &Word| match w {
        Word::Literal(t) | Word::Subst(t) => t.clone(),
    };
    match (text(cmd).as_str(), rest) {
        ("set", [name, value]) => Some(Stmt::Local(text(name), tcl_subst(value, vars))),
        ("setenv" | "pushenv", [var, value]) => {
            Some(Stmt::Setenv(text(var), tcl_subst(value, vars)))
        }
        _ => None,
    }
}

/// A Tcl word before substitution.
enum Word {
    /// In braces: taken as written.
    Literal(String),
    /// Bare or quoted: its `$var` still need substituting.
    Subst(String),
}

fn tcl_words(s: &str) -> Option<Vec<Word>> {
    if s.starts_with('#') {
        return None;
    }
    let mut words = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        if c == ';' || c == '#' {
            break;
        }
        if c == '{' {
            chars.next();
            let mut depth = 1;
            let mut w = String::new();
            for c in chars.by_ref() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                w.push(c);
            }
            words.push(Word::Literal(w));
        } else if c == '"' {
            chars.next();
            let mut w = String::new();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                w.push(c);
            }
            words.push(Word::Subst(w));
        } else {
            // A command substitution `[…]` is one word, spaces and all.
            let mut w = String::new();
            let mut depth = 0;
            while let Some(&c) = chars.peek() {
                if depth == 0 && (c.is_whitespace() || c == ';') {
                    break;
                }
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                w.push(c);
                chars.next();
            }
            words.push(Word::Subst(w));
        }
    }
    Some(words)
}

/// Substitutes `$name` / `${name}` from variables set earlier; a command (`[…]`), a
/// backslash or an unknown variable (`$env(HOME)`) makes the value unknowable.
fn tcl_subst(word: &Word, vars: &BTreeMap<String, Value>) -> Value {
    let text = match word {
        Word::Literal(literal) => return Ok(literal.clone()),
        Word::Subst(text) => text,
    };
    if text.contains('[') || text.contains('\\') {
        return Err(Computed);
    }
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find('$') {
        out += &rest[..at];
        let after = &rest[at + 1..];
        let (name, tail) = if let Some(b) = after.strip_prefix('{') {
            let end = b.find('}').ok_or(Computed)?;
            (&b[..end], &b[end + 1..])
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if tail.starts_with('(') || tail.starts_with("::") {
            return Err(Computed);
        }
        match vars.get(name) {
            Some(Ok(v)) => out += v,
            _ => return Err(Computed),
        }
        rest = tail;
    }
    out += rest;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(p: &Parsed) -> Vec<(String, String, usize)> {
        p.named
            .iter()
            .map(|n| (n.var.clone(), n.root.display().to_string(), n.line))
            .collect()
    }

    #[test]
    fn lua_literals_locals_concatenation_and_pathjoin() {
        let text = r#"-- cuda module
local base = "/sw/cuda"
local root = base .. "/11.8"
setenv("CUDA_HOME", root)
pushenv('CUDA_PATH', pathJoin(base, "11.8"))
setenv("CUDA_VISIBLE_DEVICES", "0")
prepend_path("PATH", pathJoin(root, "bin"))
setenv("ROCM_PATH", os.getenv("HOME") .. "/rocm")
"#;
        let p = parse(text, Syntax::Lua);
        assert_eq!(
            roots(&p),
            [
                ("CUDA_HOME".into(), "/sw/cuda/11.8".into(), 4),
                ("CUDA_PATH".into(), "/sw/cuda/11.8".into(), 5)
            ]
        );
        assert_eq!(p.skipped.len(), 1, "{:?}", p.skipped);
        assert_eq!(p.skipped[0].0, 8);
    }

    #[test]
    fn a_dot_dot_inside_a_lua_string_is_text_not_concatenation() {
        let text = r#"local base = "/sw/cuda..old"
setenv("CUDA_HOME", base .. '/..x' .. "/y")
setenv("CUDA_PATH", "/sw/a" .. "..")
"#;
        let p = parse(text, Syntax::Lua);
        assert_eq!(
            roots(&p),
            [
                ("CUDA_HOME".into(), "/sw/cuda..old/..x/y".into(), 2),
                ("CUDA_PATH".into(), "/sw/a..".into(), 3)
            ]
        );
        assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    }

    #[test]
    fn tcl_set_braces_quotes_and_commands() {
        let text = "#%Module1.0\nset root /sw/rocm-6.2.4\nsetenv ROCM_PATH $root\nsetenv HIP_PATH \"${root}\"\nsetenv CUDA_HOME {/sw/cuda $literal}\nsetenv CUDA_PATH [exec /bin/sh -c {rm -rf ~}]\nsetenv CUDAToolkit_ROOT $::env(HOME)/cuda\n";
        let p = parse(text, Syntax::Tcl);
        assert_eq!(
            roots(&p),
            [
                ("ROCM_PATH".into(), "/sw/rocm-6.2.4".into(), 3),
                ("HIP_PATH".into(), "/sw/rocm-6.2.4".into(), 4),
                ("CUDA_HOME".into(), "/sw/cuda $literal".into(), 5)
            ]
        );
        let lines: Vec<usize> = p.skipped.iter().map(|s| s.0).collect();
        assert_eq!(lines, [6, 7]);
    }

    #[test]
    fn only_module_files_are_read() {
        assert_eq!(syntax_of(Path::new("a/11.8.lua"), ""), Some(Syntax::Lua));
        assert_eq!(
            syntax_of(Path::new("a/11.8"), "#%Module1.0\n"),
            Some(Syntax::Tcl)
        );
        assert_eq!(
            syntax_of(Path::new("a/.version"), "#%Module"),
            Some(Syntax::Tcl)
        );
        assert_eq!(syntax_of(Path::new("a/README"), "hello"), None);
    }
}
