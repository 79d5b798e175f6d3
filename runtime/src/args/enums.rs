//! Unit enums accepted as one of fixed tokens (`#[derive(ToolEnum)]`).

use serde_json::{Map, Value};

use super::error::{ArgError, ArgErrorCode, Bound};
use super::kind::Doc;

/// A unit-variant enum accepted as one of fixed tokens. Derive it with
/// `#[derive(ToolEnum)]`; the tokens are the variant names in `snake_case`
/// unless renamed with `#[tool_enum(rename = "…")]`.
pub trait ToolEnum: Sized + Copy + 'static {
    /// Every accepted token, in declaration order.
    const TOKENS: &'static [&'static str];
    /// The enum's own documentation (its doc comment, with the derive).
    const DOC: Option<&'static str> = None;
    /// Each token's documentation (its variant's doc comment, with the
    /// derive), in the order of [`ToolEnum::TOKENS`].
    const TOKEN_DOCS: &'static [Option<&'static str>] = &[];
    /// The variant for a token.
    fn from_token(token: &str) -> Option<Self>;
    /// The token of a variant.
    fn token(self) -> &'static str;
}

/// A named type that may take a `default` or a `header`, both a token: an
/// enum, or an optional one. Required by the macros only where one of the
/// two is written on a parameter of a named type.
#[diagnostic::on_unimplemented(
    message = "`default` and `header` name a token, and `{Self}` has none",
    label = "not an enum of tokens",
    note = "only an enum's tokens can be a default or a header; a record (an argument struct) takes neither: an `Option<T>` lets the caller leave it out"
)]
pub trait TakesToken {
    /// Named by the macros (a path, so that the error is reported once,
    /// at the type).
    const TAKES_TOKEN: () = ();
}

impl<T: ToolEnum> TakesToken for T {}
impl<T: ToolEnum> TakesToken for Option<T> {}

/// Description and default of an argument of a named type: an enum
/// ([`ToolEnum`]) or a record (an argument struct taken as one argument).
#[derive(Debug, Clone, Copy, Default)]
pub struct NamedSpec {
    /// Token used when absent (an enum's; a record has none).
    pub default: Option<&'static str>,
    /// Description.
    pub doc: Doc,
}

/// `Arg::parse` for a [`ToolEnum`] (used by the derive).
pub fn enum_parse<E: ToolEnum>(value: &Value, name: &'static str) -> Result<E, ArgError> {
    let Value::String(s) = value else {
        return Err(ArgError::wrong_type(name, "string"));
    };
    E::from_token(s).ok_or(ArgError::new(
        ArgErrorCode::NotAllowed,
        name,
        Some(Bound::Tokens(E::TOKENS)),
    ))
}

/// `Arg::schema` for a [`ToolEnum`] (used by the derive).
///
/// The description is the argument's own (`#[bounded(description = ..)]`),
/// else the enum's doc comment, followed by each documented token and its
/// variant's doc comment: `Values: \`a\`: …; \`b\`: ….`
pub fn enum_schema<E: ToolEnum>(spec: &NamedSpec) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("string"));
    m.insert("enum".into(), Value::from(E::TOKENS.to_vec()));
    if let Some(d) = spec.default {
        m.insert("default".into(), Value::from(d));
    }
    spec.doc.apply(&mut m);
    let values: Vec<String> = E::TOKENS
        .iter()
        .zip(E::TOKEN_DOCS)
        .filter_map(|(t, d)| d.map(|d| format!("`{t}`: {}", d.trim_end_matches('.'))))
        .collect();
    let base = match m.get("description") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => E::DOC.map(str::to_owned),
    };
    let text = match (base, values.is_empty()) {
        (Some(b), true) => Some(b),
        (Some(b), false) => Some(format!("{b} Values: {}.", values.join("; "))),
        (None, false) => Some(format!("Values: {}.", values.join("; "))),
        (None, true) => None,
    };
    if let Some(t) = text {
        m.insert("description".into(), Value::from(t));
    }
    m
}

/// `Arg::absent` for a [`ToolEnum`] (used by the derive).
pub fn enum_absent<E: ToolEnum>(
    spec: &NamedSpec,
    name: &'static str,
) -> Option<Result<E, ArgError>> {
    spec.default.map(|d| enum_parse::<E>(&Value::from(d), name))
}

/// The schema of a [`ToolEnum`] in a tool's output
/// (`#[tool_enum(output)]`): a string, one of the tokens, described by the
/// enum's doc comment.
pub fn enum_output_schema<E: ToolEnum>() -> schemars::Schema {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("string"));
    m.insert("enum".into(), Value::from(E::TOKENS.to_vec()));
    if let Some(d) = E::DOC {
        m.insert("description".into(), Value::from(d));
    }
    schemars::Schema::from(m)
}
