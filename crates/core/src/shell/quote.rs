//! Quoting a value so that the shell reads back exactly the same bytes.

/// bash and zsh: single quotes, where nothing is special; a `'` closes, is escaped, reopens.
pub fn posix(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// fish: single quotes, where only `\\` and `\'` are escapes.
pub fn fish(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// dotenv: double quotes with `\\`, `\"`, `\n` escapes (python-dotenv, docker's
/// `--env-file` readers of the quoted form); `$` is escaped so no reader expands it.
pub fn dotenv(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '$' => out.push_str("\\$"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_quotes_single_quotes_only() {
        assert_eq!(posix("a b"), "'a b'");
        assert_eq!(posix("it's $HOME"), "'it'\\''s $HOME'");
        assert_eq!(posix(""), "''");
    }

    #[test]
    fn fish_escapes_backslash_and_quote() {
        assert_eq!(fish(r"a\b'c"), r"'a\\b\'c'");
        assert_eq!(fish("$x"), "'$x'");
    }

    #[test]
    fn dotenv_escapes_what_double_quotes_interpret() {
        assert_eq!(dotenv("a\"b\\c\n$d"), r#""a\"b\\c\n\$d""#);
    }
}
