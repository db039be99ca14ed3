//! Quoting a value so that the shell reads back exactly the same bytes. Values are bytes:
//! a path that is not UTF-8 comes back byte for byte too.

/// bash and zsh: single quotes, where nothing is special and every byte stands for itself;
/// a `'` closes, is escaped, reopens.
pub fn posix(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 2);
    out.push(b'\'');
    // Copied a run at a time between quotes (the hook quotes kilobytes at every run).
    let mut from = 0;
    for at in crate::byte_search::find_iter(b'\'', value) {
        out.extend_from_slice(&value[from..at]);
        out.extend_from_slice(b"'\\''");
        from = at + 1;
    }
    out.extend_from_slice(&value[from..]);
    out.push(b'\'');
    out
}

/// `value` as one word of a command a hint shows: as it is when a shell reads nothing in it
/// specially (paths and URLs mostly), else [`posix`]-quoted.
pub fn word(value: &str) -> String {
    let plain = !value.is_empty()
        && !value.starts_with('~')
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-:@%+=,~".contains(&b));
    if plain {
        value.to_string()
    } else {
        String::from_utf8_lossy(&posix(value.as_bytes())).into_owned()
    }
}

/// fish: single quotes, where only `\\` and `\'` are escapes. A byte that is not part of
/// UTF-8 text goes outside the quotes as `\xHH`, which fish reads as that raw byte in any
/// locale.
pub fn fish(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 2);
    out.push(b'\'');
    for chunk in value.utf8_chunks() {
        for b in chunk.valid().bytes() {
            if b == b'\'' || b == b'\\' {
                out.push(b'\\');
            }
            out.push(b);
        }
        if !chunk.invalid().is_empty() {
            out.push(b'\'');
            for b in chunk.invalid() {
                out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
            }
            out.push(b'\'');
        }
    }
    out.push(b'\'');
    out
}

/// dotenv: double quotes with `\\`, `\"`, `\n` escapes (python-dotenv, docker's
/// `--env-file` readers of the quoted form); `$` is escaped so no reader expands it. Other
/// bytes are written as they are.
pub fn dotenv(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 2);
    out.push(b'"');
    for &b in value {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'$' => out.extend_from_slice(b"\\$"),
            b => out.push(b),
        }
    }
    out.push(b'"');
    out
}

/// A Dockerfile `ENV` value: double quotes, in which Docker's word parser (default escape
/// `\\`) takes `\\"`, `\\\\` and `\\$` literally and expands `$NAME`. A newline cannot be held
/// (a Dockerfile instruction is one line) and a Dockerfile is UTF-8 text: both refused.
pub fn dockerfile(value: &[u8]) -> Result<String, Unquotable> {
    let text = std::str::from_utf8(value).map_err(|_| Unquotable::NotUtf8)?;
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\n' | '\r' => return Err(Unquotable::Newline),
            '"' | '\\' | '$' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(out)
}

/// A delimiter for GitHub's `NAME<<DELIM` form that occurs nowhere in `value` (the runner
/// ends the value at the first line equal to it).
pub fn heredoc_delimiter(value: &str) -> String {
    let base = "ghadelimiter_gpuenv";
    (0u64..)
        .map(|n| {
            if n == 0 {
                base.to_string()
            } else {
                format!("{base}_{n}")
            }
        })
        .find(|d| !value.contains(d.as_str()))
        .expect("a value is finite, so some delimiter is not in it")
}

/// Why a value cannot be written in a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unquotable {
    #[error("it has a newline, which the format cannot hold")]
    Newline,
    #[error("it has a carriage return, which GitHub's runner reads as a line end")]
    CarriageReturn,
    #[error("it is not UTF-8, which the format cannot hold")]
    NotUtf8,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn posix_quotes_single_quotes_only() {
        assert_eq!(s(posix(b"a b")), "'a b'");
        assert_eq!(s(posix(b"it's $HOME")), "'it'\\''s $HOME'");
        assert_eq!(s(posix(b"")), "''");
        assert_eq!(posix(b"caf\xe9"), b"'caf\xe9'");
    }

    #[test]
    fn a_word_is_quoted_only_when_a_shell_would_read_it_otherwise() {
        assert_eq!(word("/srv/m/rocm.toml"), "/srv/m/rocm.toml");
        assert_eq!(word("https://h/m.toml?a=1"), "'https://h/m.toml?a=1'");
        assert_eq!(word("/my dir/it's"), "'/my dir/it'\\''s'");
        assert_eq!(word("~x"), "'~x'");
        assert_eq!(word(""), "''");
    }

    #[test]
    fn fish_escapes_backslash_and_quote() {
        assert_eq!(s(fish(br"a\b'c")), r"'a\\b\'c'");
        assert_eq!(s(fish(b"$x")), "'$x'");
        assert_eq!(s(fish(b"/tmp/caf\xe9/bin")), r"'/tmp/caf'\xe9'/bin'");
    }

    #[test]
    fn dotenv_escapes_what_double_quotes_interpret() {
        assert_eq!(s(dotenv(b"a\"b\\c\n$d")), r#""a\"b\\c\n\$d""#);
    }

    #[test]
    fn dockerfile_escapes_what_docker_expands_and_refuses_what_it_cannot_hold() {
        assert_eq!(
            dockerfile(br#"a"b\c$d e=f 'g'"#).unwrap(),
            r#""a\"b\\c\$d e=f 'g'""#
        );
        assert_eq!(dockerfile(b"").unwrap(), r#""""#);
        assert_eq!(dockerfile(b"a\nb"), Err(Unquotable::Newline));
        assert_eq!(dockerfile(b"a\rb"), Err(Unquotable::Newline));
        assert_eq!(dockerfile(b"caf\xe9"), Err(Unquotable::NotUtf8));
    }

    #[test]
    fn a_heredoc_delimiter_is_never_inside_the_value() {
        assert_eq!(heredoc_delimiter("x"), "ghadelimiter_gpuenv");
        let hostile = "a\nghadelimiter_gpuenv\nghadelimiter_gpuenv_1\n";
        let d = heredoc_delimiter(hostile);
        assert!(!hostile.contains(&d), "{d}");
    }
}
