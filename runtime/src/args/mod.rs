//! Strict tool arguments: raw JSON values → typed, bounded Rust values, and
//! the same bounds as JSON Schema fragments, from one declaration.
//!
//! Every argument kind implements [`Arg`]. Its `Spec` is the declared bounds
//! (built by the macros as a `static`); [`Arg::parse`], [`Arg::check`] and
//! [`Arg::schema`] all read the same spec, so the advertised schema and the
//! checks cannot disagree.
//!
//! Decisions, consistent with JSON Schema draft 2020-12:
//! - an integer field accepts a JSON number with a zero fractional part
//!   (`5.0`), because `"type": "integer"` accepts it; `5.5` is a wrong type;
//! - a float field accepts integers (`5`), because `"type": "number"` does;
//! - `null` is a wrong type everywhere (an `Option` argument is omitted, not
//!   null), booleans are never numbers, numeric strings are never numbers;
//! - string lengths count Unicode scalar values, as JSON Schema does;
//! - `pattern` is searched, not anchored, as in JSON Schema: write `^…$`.
//!
//! The public part is what a server author meets: the refusal
//! ([`ArgError`], its [`ArgErrorCode`] and [`Bound`]) and the two traits the
//! derives implement ([`HardenedArgs`], [`ToolEnum`]). The argument kinds
//! and their specs are support for generated code, reached through
//! `hardened_mcp::__private`.

pub(crate) mod container;
pub(crate) mod enums;
mod error;
pub(crate) mod kind;
pub(crate) mod lexeme;
pub(crate) mod number;
pub(crate) mod record;
pub(crate) mod text;

pub use enums::ToolEnum;
pub use error::{ArgError, ArgErrorCode, Bound};
/// The argument-kind trait, visible here (hidden) so that the compiler's
/// "`Mesh` is not a tool argument kind" names it `Arg`, not by its module.
#[doc(hidden)]
pub use kind::Arg;

/// The pattern of run handles of any valid prefix (`runs::RunHandle::pattern`
/// is this one): here, below the run root, so that a `RunDir` parameter's
/// spec exists with or without the `runs` feature, whose gate is then the
/// one error.
pub(crate) const RUN_HANDLE_PATTERN: &str = "^[a-z][a-z0-9]{0,15}_[A-Za-z0-9_-]{22,80}$";

use serde_json::Value;

/// An argument struct: a group of a tool's arguments, declared as one
/// struct with `#[derive(HardenedArgs)]` and taken as `#[args] a: T`,
/// alone (the whole argument object) or beside other parameters and
/// groups (its keys among theirs, each key declared once). The derive of
/// the same name implements it; its methods are for the generated route.
pub trait HardenedArgs: Sized {
    /// The argument names, as declared.
    const KEYS: &'static [&'static str];
    /// Strictly parses the argument object (unknown keys refused).
    fn parse(object: &serde_json::Map<String, Value>) -> Result<Self, ArgError>;
    /// Parses this struct's keys of a larger argument object, leaving the
    /// others to the tool that takes it beside other arguments (which
    /// refuses the keys no argument declares).
    /// The derive reads its keys in place; this default parses a copy of
    /// them.
    #[doc(hidden)]
    fn parse_part(object: &serde_json::Map<String, Value>) -> Result<Self, ArgError> {
        let own: serde_json::Map<String, Value> = object
            .iter()
            .filter(|(k, _)| Self::KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Self::parse(&own)
    }
    /// Revalidates every field against its declared bounds.
    fn validate(&self) -> Result<(), ArgError>;
    /// Adds every field to an input schema.
    #[doc(hidden)]
    fn schema(into: crate::schema::InputSchema) -> crate::schema::InputSchema;
    /// Collects the startup faults of the field specs.
    #[doc(hidden)]
    fn spec_faults(faults: &mut Vec<(&'static str, &'static str)>);
}

#[cfg(test)]
mod tests;
