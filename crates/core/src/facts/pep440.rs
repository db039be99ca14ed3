//! As much of Python packaging's version, specifier, requirement and marker syntax as
//! NVIDIA's metapackages use: `nvidia-cublas==13.1.0.3.*; (sys_platform == 'linux' or
//! sys_platform == 'win32') and extra == 'cublas'`, `nvidia-nvjitlink<14,>=13.5.37; …`.

use std::cmp::Ordering;
use std::fmt;

/// A PEP 440 version: the release numbers and whether it is a pre-, post- or dev release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyVersion {
    pub release: Vec<u64>,
    /// dev < pre (a, b, rc) < final < post.
    phase: (u8, u64),
    text: String,
}

impl PyVersion {
    pub fn parse(s: &str) -> Option<PyVersion> {
        let text = s.trim().to_string();
        let s = text.trim_start_matches(['v', 'V']);
        let s = s.split('+').next()?; // local versions compare as their public part
        let end = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (nums, suffix) = s.split_at(end);
        let nums = nums.trim_end_matches('.');
        let release: Vec<u64> = nums
            .split('.')
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        let suffix = suffix
            .trim_start_matches(['.', '-', '_'])
            .to_ascii_lowercase();
        let number = |p: &str| -> Option<u64> {
            let d = p.trim_start_matches(['.', '-', '_']);
            if d.is_empty() {
                Some(0)
            } else {
                d.parse().ok()
            }
        };
        let phase = if suffix.is_empty() {
            (3, 0)
        } else if let Some(r) = suffix.strip_prefix("dev") {
            (0, number(r)?)
        } else if let Some(r) = suffix
            .strip_prefix("rc")
            .or_else(|| suffix.strip_prefix('c'))
        {
            (2, 200 + number(r)?)
        } else if let Some(r) = suffix.strip_prefix("post") {
            (4, number(r)?)
        } else if let Some(r) = suffix.strip_prefix('b') {
            (2, 100 + number(r)?)
        } else if let Some(r) = suffix.strip_prefix('a') {
            (2, number(r)?)
        } else {
            return None;
        };
        Some(PyVersion {
            release,
            phase,
            text,
        })
    }

    pub fn is_prerelease(&self) -> bool {
        self.phase.0 < 3
    }

    /// The release without trailing zeros beyond three numbers (`13.4.1.0` is `13.4.1`).
    pub fn short_release(&self) -> Vec<u64> {
        let mut r = self.release.clone();
        while r.len() > 3 && r.last() == Some(&0) {
            r.pop();
        }
        r
    }

    fn padded(&self, n: usize) -> Vec<u64> {
        let mut r = self.release.clone();
        r.resize(n.max(r.len()), 0);
        r
    }
}

impl Ord for PyVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.release.len().max(other.release.len());
        self.padded(n)
            .cmp(&other.padded(n))
            .then(self.phase.cmp(&other.phase))
    }
}

impl PartialOrd for PyVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for PyVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A comma-separated version specifier such as `==13.0.88.*` or `<14,>=13.5.37`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Specifier {
    clauses: Vec<(String, String)>,
}

impl Specifier {
    pub fn parse(s: &str) -> Option<Specifier> {
        let mut clauses = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let op_len = part
                .find(|c: char| !matches!(c, '=' | '<' | '>' | '!' | '~'))
                .unwrap_or(part.len());
            let (op, v) = part.split_at(op_len);
            if !matches!(op, "==" | "!=" | "<=" | ">=" | "<" | ">" | "~=" | "===") {
                return None;
            }
            clauses.push((op.to_string(), v.trim().to_string()));
        }
        Some(Specifier { clauses })
    }

    /// Its `(operator, version)` clauses.
    pub fn clauses(&self) -> &[(String, String)] {
        &self.clauses
    }

    pub fn and(&mut self, other: &Specifier) {
        self.clauses.extend(other.clauses.iter().cloned());
    }

    pub fn contains(&self, v: &PyVersion) -> bool {
        self.clauses.iter().all(|(op, want)| clause(op, want, v))
    }
}

impl fmt::Display for Specifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .clauses
            .iter()
            .map(|(o, v)| format!("{o}{v}"))
            .collect();
        f.write_str(&parts.join(","))
    }
}

fn clause(op: &str, want: &str, v: &PyVersion) -> bool {
    if let Some(prefix) = want.strip_suffix(".*") {
        let Some(p) = PyVersion::parse(prefix) else {
            return false;
        };
        let matches = v.padded(p.release.len())[..p.release.len()] == p.release[..];
        return if op == "!=" {
            !matches
        } else {
            op == "==" && matches
        };
    }
    let Some(w) = PyVersion::parse(want) else {
        return false;
    };
    match op {
        "==" | "===" => v.cmp(&w) == Ordering::Equal,
        "!=" => v.cmp(&w) != Ordering::Equal,
        "<=" => v <= &w,
        ">=" => v >= &w,
        "<" => v < &w,
        ">" => v > &w,
        "~=" => {
            let n = w.release.len().saturating_sub(1).max(1);
            v >= &w && v.padded(n)[..n] == w.padded(n)[..n]
        }
        _ => false,
    }
}

/// One `Requires-Dist` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub name: String,
    /// The extras asked for (`cuda-toolkit[cublas,nvjitlink]`), normalized.
    pub extras: Vec<String>,
    pub specifier: Specifier,
    pub marker: Option<String>,
}

impl Requirement {
    pub fn parse(line: &str) -> Option<Requirement> {
        let (req, marker) = match line.split_once(';') {
            Some((r, m)) => (r.trim(), Some(m.trim().to_string())),
            None => (line.trim(), None),
        };
        let end = req
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(req.len());
        let (name, mut rest) = req.split_at(end);
        if name.is_empty() {
            return None;
        }
        rest = rest.trim();
        let mut extras = Vec::new();
        if rest.starts_with('[') {
            let close = rest.find(']')?;
            extras = rest[1..close]
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(normalize)
                .collect();
            rest = &rest[close + 1..];
        }
        let rest = rest.trim().trim_start_matches('(').trim_end_matches(')');
        Some(Requirement {
            name: normalize(name),
            extras,
            specifier: Specifier::parse(rest)?,
            marker,
        })
    }

    /// Applies on Linux on this machine's architecture when `extra` is asked for.
    pub fn applies(&self, extra: &str) -> bool {
        self.marker
            .as_deref()
            .is_none_or(|m| eval_marker(m, extra).unwrap_or(false))
    }
}

/// PEP 503's normal form of a project name.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut dash = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            dash = true;
        } else {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Open,
    Close,
    And,
    Or,
    Word(String),
    Str(String),
    Op(String),
}

fn tokens(s: &str) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' {
            out.push(Tok::Open);
            i += 1;
        } else if c == ')' {
            out.push(Tok::Close);
            i += 1;
        } else if c == '\'' || c == '"' {
            let end = s[i + 1..].find(c)? + i + 1;
            out.push(Tok::Str(s[i + 1..end].to_string()));
            i = end + 1;
        } else if "=!<>~".contains(c) {
            let end = s[i..]
                .find(|ch: char| !"=!<>~".contains(ch))
                .map_or(s.len(), |e| e + i);
            out.push(Tok::Op(s[i..end].to_string()));
            i = end;
        } else {
            let end = s[i..]
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '.'))
                .map_or(s.len(), |e| e + i);
            if end == i {
                return None;
            }
            let w = &s[i..end];
            out.push(match w {
                "and" => Tok::And,
                "or" => Tok::Or,
                _ => Tok::Word(w.to_string()),
            });
            i = end;
        }
    }
    Some(out)
}

/// Evaluates an environment marker for Linux on this machine with `extra` asked for.
pub fn eval_marker(marker: &str, extra: &str) -> Option<bool> {
    let toks = tokens(marker)?;
    let mut p = Parser {
        toks,
        pos: 0,
        extra,
    };
    let v = p.or()?;
    (p.pos == p.toks.len()).then_some(v)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    extra: &'a str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn or(&mut self) -> Option<bool> {
        let mut v = self.and()?;
        while self.peek() == Some(&Tok::Or) {
            self.pos += 1;
            v |= self.and()?;
        }
        Some(v)
    }
    fn and(&mut self) -> Option<bool> {
        let mut v = self.atom()?;
        while self.peek() == Some(&Tok::And) {
            self.pos += 1;
            v &= self.atom()?;
        }
        Some(v)
    }
    fn atom(&mut self) -> Option<bool> {
        if self.peek() == Some(&Tok::Open) {
            self.pos += 1;
            let v = self.or()?;
            (self.next()? == Tok::Close).then_some(v)
        } else {
            let l = self.value()?;
            let op = match self.next()? {
                Tok::Op(o) => o,
                Tok::Word(w) if w == "in" => "in".into(),
                Tok::Word(w) if w == "not" => match self.next()? {
                    Tok::Word(i) if i == "in" => "not in".into(),
                    _ => return None,
                },
                _ => return None,
            };
            let r = self.value()?;
            Some(match op.as_str() {
                "==" | "===" => l == r,
                "!=" => l != r,
                "in" => r.contains(&l),
                "not in" => !r.contains(&l),
                _ => {
                    let (a, b) = (PyVersion::parse(&l)?, PyVersion::parse(&r)?);
                    clause(&op, &b.to_string(), &a)
                }
            })
        }
    }
    fn value(&mut self) -> Option<String> {
        match self.next()? {
            Tok::Str(s) => Some(s),
            Tok::Word(w) => Some(match w.as_str() {
                "extra" => normalize(self.extra),
                "sys_platform" => "linux".into(),
                "platform_system" => "Linux".into(),
                "os_name" => "posix".into(),
                "platform_machine" => std::env::consts::ARCH.into(),
                "implementation_name" => "cpython".into(),
                "platform_python_implementation" => "CPython".into(),
                // No Python is involved; a recent one is what NVIDIA's wheels assume.
                "python_version" => "3.12".into(),
                "python_full_version" => "3.12.0".into(),
                _ => String::new(),
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> PyVersion {
        PyVersion::parse(s).unwrap()
    }

    #[test]
    fn versions_order_like_pep_440() {
        assert!(v("13.0.88") < v("13.0.96"));
        assert!(v("13.4.0rc1") < v("13.4.0"));
        assert!(v("13.4.0.dev1") < v("13.4.0rc1"));
        assert!(v("13.4.0") < v("13.4.0.post1"));
        assert_eq!(v("13.4.1.0").cmp(&v("13.4.1")), Ordering::Equal);
        assert_eq!(v("13.4.1.0").short_release(), [13, 4, 1]);
        assert!(v("13.4.0rc1").is_prerelease());
        assert!(PyVersion::parse("abc").is_none());
    }

    #[test]
    fn specifiers_match_prefixes_and_ranges() {
        let s = |t: &str| Specifier::parse(t).unwrap();
        assert!(s("==13.0.88.*").contains(&v("13.0.88")));
        assert!(s("==13.0.88.*").contains(&v("13.0.88.1")));
        assert!(!s("==13.0.88.*").contains(&v("13.0.880")));
        assert!(s("<14,>=13.5.37").contains(&v("13.6.0")));
        assert!(!s("<14,>=13.5.37").contains(&v("14.0")));
        assert!(s("~=13.5").contains(&v("13.9")));
        assert!(!s("~=13.5.1").contains(&v("13.6")));
        assert!(s("").contains(&v("1")));
    }

    #[test]
    fn parses_nvidias_requirement_lines() {
        let r = Requirement::parse("nvidia-cuda-nvcc==13.0.88.*; (sys_platform == 'linux' or sys_platform == 'win32') and extra == 'nvcc'").unwrap();
        assert_eq!(r.name, "nvidia-cuda-nvcc");
        assert!(r.applies("nvcc"));
        assert!(!r.applies("cublas"));
        let r = Requirement::parse("nvidia-nvjitlink<14,>=13.5.37; (sys_platform == 'linux' and platform_machine == 'aarch64' or sys_platform == 'linux' and platform_machine == 'x86_64' or sys_platform == 'win32' and platform_machine == 'AMD64') and extra == 'cufft'").unwrap();
        assert_eq!(r.specifier.to_string(), "<14,>=13.5.37");
        assert!(r.applies("cufft"));
        let r = Requirement::parse("nvidia-cudla==13.5.25.*; (sys_platform == 'linux' and platform_machine == 'aarch64') and extra == 'cudla'").unwrap();
        assert_eq!(r.applies("cudla"), std::env::consts::ARCH == "aarch64");
        let r = Requirement::parse("Foo.Bar[x] (>=1.0)").unwrap();
        assert_eq!(
            (r.name.as_str(), r.specifier.to_string().as_str()),
            ("foo-bar", ">=1.0")
        );
        assert!(r.applies("anything"));
        assert_eq!(normalize("nvidia_cuda.NVCC"), "nvidia-cuda-nvcc");
    }
}
