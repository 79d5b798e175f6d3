//! Strings: lengths in Unicode scalar values, a named charset or a
//! pattern (searched, as in JSON Schema).

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::error::{ArgError, ArgErrorCode, Bound};
use super::kind::{Arg, Doc};

/// A named character set for string arguments (`#[bounded(charset = "…")]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Charset {
    /// `A-Z a-z 0-9`.
    Alnum,
    /// `A-Z a-z 0-9 _ . -` (identifiers, labels).
    Identifier,
    /// Printable ASCII, space included (`0x20..=0x7E`).
    Printable,
    /// Any character except control characters (Unicode `Cc`).
    Text,
}

impl Charset {
    /// The charset's name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Alnum => "alnum",
            Self::Identifier => "identifier",
            Self::Printable => "printable",
            Self::Text => "text",
        }
    }

    /// The equivalent JSON Schema `pattern` (ECMA-262 and Rust regex agree on it).
    pub const fn pattern(self) -> &'static str {
        match self {
            Self::Alnum => "^[A-Za-z0-9]*$",
            Self::Identifier => "^[A-Za-z0-9_.-]*$",
            Self::Printable => "^[\\x20-\\x7E]*$",
            Self::Text => "^[^\\x00-\\x1F\\x7F-\\x9F]*$",
        }
    }

    /// Whether `c` belongs to the set.
    #[inline]
    pub fn contains(self, c: char) -> bool {
        match self {
            Self::Alnum => c.is_ascii_alphanumeric(),
            Self::Identifier => c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'),
            Self::Printable => matches!(c, ' '..='~'),
            Self::Text => !c.is_control(),
        }
    }
}

/// A regular expression compiled on first use. JSON Schema `pattern`
/// semantics: searched, not anchored. Checked with `regex-lite`: the
/// macros admit only the syntax that Rust's `regex` (their parser),
/// `regex-lite` and ECMA-262 (the schema's readers) read alike, so the
/// pattern means one thing to all three (tested in
/// `macros/src/check/pattern/differential.rs`).
#[derive(Debug)]
pub struct Pattern {
    source: &'static str,
    compiled: OnceLock<Option<regex_lite::Regex>>,
}

impl Pattern {
    /// A pattern from its source text.
    pub const fn new(source: &'static str) -> Self {
        Self {
            source,
            compiled: OnceLock::new(),
        }
    }

    /// The source text, as advertised in the schema.
    pub const fn source(&self) -> &'static str {
        self.source
    }

    /// Compiles the pattern; `false` if it is not a valid regex.
    pub fn compiles(&self) -> bool {
        self.regex().is_some()
    }

    fn regex(&self) -> Option<&regex_lite::Regex> {
        self.compiled
            .get_or_init(|| regex_lite::Regex::new(self.source).ok())
            .as_ref()
    }

    /// Whether `s` matches. An invalid pattern matches nothing (fail closed);
    /// building the router reports it first.
    pub fn is_match(&self, s: &str) -> bool {
        self.regex().is_some_and(|r| r.is_match(s))
    }
}

/// Bounds of a string argument.
#[derive(Debug)]
pub struct StrSpec {
    /// Fewest characters.
    pub min_len: Option<usize>,
    /// Most characters.
    pub max_len: Option<usize>,
    /// A regex the string must match.
    pub pattern: Option<Pattern>,
    /// A named character set.
    pub charset: Option<Charset>,
    /// Value when absent.
    pub default: Option<&'static str>,
    /// Description.
    pub doc: Doc,
}

impl StrSpec {
    /// The patterns this spec uses, for checks when the router is built.
    pub fn pattern(&self) -> Option<&Pattern> {
        self.pattern.as_ref()
    }

    fn check_str(&self, s: &str, name: &'static str) -> Result<(), ArgError> {
        use ArgErrorCode as C;
        if self.min_len.is_some() || self.max_len.is_some() {
            // Count at most max_len + 1 characters: a huge string costs no more.
            let limit = self.max_len.map_or(usize::MAX, |m| m.saturating_add(1));
            let n = s.chars().take(limit).count();
            if let Some(m) = self.max_len
                && n > m
            {
                return Err(ArgError::new(C::TooLong, name, Some(Bound::Count(m))));
            }
            if let Some(m) = self.min_len
                && n < m
            {
                return Err(ArgError::new(C::TooShort, name, Some(Bound::Count(m))));
            }
        }
        if let Some(cs) = self.charset
            && !s.chars().all(|c| cs.contains(c))
        {
            return Err(ArgError::new(
                C::CharsetMismatch,
                name,
                Some(Bound::Text(cs.name())),
            ));
        }
        if let Some(p) = &self.pattern
            && !p.is_match(s)
        {
            return Err(ArgError::new(
                C::PatternMismatch,
                name,
                Some(Bound::Text(p.source)),
            ));
        }
        Ok(())
    }
}

impl Arg for String {
    type Spec = StrSpec;
    type Seen<'a> = &'a Self;
    fn seen(&self) -> &Self {
        self
    }
    fn parse(value: &Value, spec: &StrSpec, name: &'static str) -> Result<Self, ArgError> {
        let Value::String(s) = value else {
            return Err(ArgError::wrong_type(name, "string"));
        };
        spec.check_str(s, name)?;
        Ok(s.clone())
    }
    fn check(&self, spec: &StrSpec, name: &'static str) -> Result<(), ArgError> {
        spec.check_str(self, name)
    }
    fn schema(spec: &StrSpec) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), Value::from("string"));
        if let Some(v) = spec.min_len {
            m.insert("minLength".into(), Value::from(v));
        }
        if let Some(v) = spec.max_len {
            m.insert("maxLength".into(), Value::from(v));
        }
        match (spec.charset, &spec.pattern) {
            (Some(cs), Some(p)) => {
                m.insert("pattern".into(), Value::from(p.source));
                m.insert("allOf".into(), json!([{ "pattern": cs.pattern() }]));
            }
            (Some(cs), None) => {
                m.insert("pattern".into(), Value::from(cs.pattern()));
            }
            (None, Some(p)) => {
                m.insert("pattern".into(), Value::from(p.source));
            }
            (None, None) => {}
        }
        if let Some(d) = spec.default {
            m.insert("default".into(), Value::from(d));
        }
        spec.doc.apply(&mut m);
        m
    }
    fn absent(spec: &StrSpec, name: &'static str) -> Option<Result<Self, ArgError>> {
        spec.default
            .map(|d| spec.check_str(d, name).map(|()| d.to_owned()))
    }
    fn self_test(spec: &StrSpec) -> Result<(), &'static str> {
        if spec.pattern.as_ref().is_some_and(|p| !p.compiles()) {
            return Err("its pattern is not a valid regular expression");
        }
        match Self::absent(spec, "default") {
            Some(Err(_)) => Err("its default violates its own bounds"),
            _ => Ok(()),
        }
    }
}
