//! The checked model: what `check` makes of the parsed attributes and
//! signatures, and all that `expand` reads. A value of these types has
//! passed every rule.

use syn::{Expr, Ident, Type};

use crate::parse::{Annotations, Check, Kind};

/// A named character set of `#[bounded(charset = "…")]`, one variant per
/// variant of the runtime's `Charset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    Alnum,
    Identifier,
    Printable,
    Text,
}

impl Charset {
    /// Every charset with the name an attribute gives it.
    pub const ALL: [(&'static str, Charset); 4] = [
        ("alnum", Charset::Alnum),
        ("identifier", Charset::Identifier),
        ("printable", Charset::Printable),
        ("text", Charset::Text),
    ];

    /// The charset called `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
    }

    /// Every name, for the "known charsets" help.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|(n, _)| *n).collect()
    }

    /// The runtime variant's name.
    pub fn variant(self) -> &'static str {
        match self {
            Charset::Alnum => "Alnum",
            Charset::Identifier => "Identifier",
            Charset::Printable => "Printable",
            Charset::Text => "Text",
        }
    }
}

/// A `pattern` that parses and reads the same in Rust's `regex` and in
/// ECMA-262 (made by `check::pattern` only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(String);

impl Pattern {
    /// Wraps a pattern the checks accepted.
    pub(crate) fn checked(source: String) -> Self {
        Self(source)
    }

    /// The source text, as advertised and compiled.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A numeric literal read from an attribute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// A literal default value.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultLit {
    Num(Num),
    Bool(bool),
    Str(String),
}

/// The checked bounds of one argument.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    pub min: Option<Num>,
    pub max: Option<Num>,
    pub exclusive_min: Option<Num>,
    pub exclusive_max: Option<Num>,
    pub default: Option<DefaultLit>,
    pub min_len: Option<usize>,
    pub max_len: Option<usize>,
    pub max_items: Option<usize>,
    pub min_items: Option<usize>,
    /// An array of arrays: rows all as long as the first.
    pub rectangular: bool,
    /// An array of arrays: each row's `(min_items, max_items)`.
    pub rows: Option<(Option<usize>, usize)>,
    /// An array of arrays: most items in all the rows together.
    pub max_total: Option<usize>,
    /// The array parameter this one has as many items as.
    pub same_len_as: Option<Ident>,
    /// The array parameter each row of this one has as many items as.
    pub rows_same_len_as: Option<Ident>,
    pub pattern: Option<Pattern>,
    pub charset: Option<Charset>,
    pub units: Option<String>,
    pub description: Option<String>,
    /// The `x-mcp-header` name (SEP-2243).
    pub header: Option<String>,
}

/// One checked parameter.
#[derive(Debug)]
pub struct ArgModel {
    pub ident: Ident,
    pub ty: Type,
    pub kind: Kind,
    pub spec: Spec,
}

impl ArgModel {
    /// The key of this argument in the JSON object.
    pub fn key(&self) -> String {
        let s = self.ident.to_string();
        s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
    }
}

/// `confirm_above` / `confirm`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Confirm {
    Never,
    Above(f64),
    Always,
}

/// One checked tool, ready to expand.
#[derive(Debug)]
pub struct ToolModel {
    pub ident: Ident,
    pub name: String,
    pub description: String,
    pub max_cost: f64,
    pub units: String,
    pub cost: Expr,
    pub checks: Vec<Check>,
    pub timeout_s: Option<f64>,
    pub concurrency: Option<usize>,
    pub scopes: Vec<String>,
    /// `task`: whether it is required, and where it was written (the span
    /// of the `jobs` gate).
    pub task: Option<crate::parse::TaskAttr>,
    /// When the person approves a call.
    pub confirm: Confirm,
    /// Client capabilities every call needs (`elicitation`, `sampling`,
    /// `roots`).
    pub asks: Vec<String>,
    pub annotations: Option<Annotations>,
    pub params: Vec<ArgModel>,
    pub output: Type,
    pub is_async: bool,
}
