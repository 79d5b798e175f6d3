//! The argument-kind trait every parameter type implements, the
//! description shared by every spec, and the simplest kind: `bool`.

use serde_json::{Map, Value};

use super::error::ArgError;

/// Description and units of an argument, shared by every spec.
#[derive(Debug, Clone, Copy, Default)]
pub struct Doc {
    /// What the argument means (server-authored).
    pub description: Option<&'static str>,
    /// The physical units of a number, shown to the model.
    pub units: Option<&'static str>,
    /// The request header the argument is mirrored in (`x-mcp-header`,
    /// SEP-2243: `Mcp-Param-{header}`), checked by the HTTP transport.
    pub header: Option<&'static str>,
}

impl Doc {
    /// No description, no units.
    pub const NONE: Doc = Doc {
        description: None,
        units: None,
        header: None,
    };

    pub(super) fn apply(&self, m: &mut Map<String, Value>) {
        let text = match (self.description, self.units) {
            (Some(d), Some(u)) => Some(format!("{d} (units: {u})")),
            (None, Some(u)) => Some(format!("Units: {u}.")),
            (Some(d), None) => Some(d.to_owned()),
            (None, None) => None,
        };
        if let Some(t) = text {
            m.insert("description".into(), Value::from(t));
        }
        if let Some(u) = self.units {
            m.insert("x-units".into(), Value::from(u));
        }
        if let Some(h) = self.header {
            m.insert("x-mcp-header".into(), Value::from(h));
        }
    }
}

/// One argument kind: how it is parsed, checked and described.
///
/// Implemented for the integer types, `f32`, `f64`, `bool`, `String`,
/// `Vec<T>` (of those, or of `Vec`s of those), `Option<T>`, (through
/// `#[derive(ToolEnum)]`) unit enums and (through
/// `#[derive(HardenedArgs)]`) records.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool argument kind",
    label = "no schema, parser or bounds for this type",
    note = "tool arguments are integers, f32/f64, bool, String, unit enums with `#[derive(Clone, Copy, ToolEnum)]`, records with `#[derive(HardenedArgs)]`, and Vec/Option of those"
)]
pub trait Arg: Sized {
    /// The declared bounds of this kind.
    type Spec: 'static;

    /// How a `check(..)` rule or a `cost` expression sees an argument of
    /// this kind: an enum (or an optional one) by value, the rest by
    /// reference (an optional record as `Option<&T>`).
    #[doc(hidden)]
    type Seen<'a>
    where
        Self: 'a;

    /// The argument as rules and costs see it.
    #[doc(hidden)]
    fn seen(&self) -> Self::Seen<'_>;

    /// Parses a raw JSON value, applying every check of `spec`.
    fn parse(value: &Value, spec: &Self::Spec, name: &'static str) -> Result<Self, ArgError>;

    /// Checks an already typed value (revalidation of direct calls).
    fn check(&self, spec: &Self::Spec, name: &'static str) -> Result<(), ArgError>;

    /// The JSON Schema of this argument.
    fn schema(spec: &Self::Spec) -> Map<String, Value>;

    /// The value used when the argument is absent, or `None` if it is required.
    fn absent(spec: &Self::Spec, name: &'static str) -> Option<Result<Self, ArgError>>;

    /// How many items the value holds, for an array (a row of an array of
    /// arrays, whose shape rule compares them); `None` for the rest.
    #[doc(hidden)]
    fn items(&self) -> Option<usize> {
        None
    }

    /// The titles of a choice's options, in the order of its tokens (an
    /// enum's variants' doc comments; a list or an option of an enum has
    /// its enum's): what a form shows for each option. Empty for the rest.
    #[doc(hidden)]
    fn titles() -> &'static [Option<&'static str>] {
        &[]
    }

    /// Checks the spec itself when the router is built: the default obeys
    /// the bounds, patterns compile. Returns a fixed description of the fault.
    fn self_test(spec: &Self::Spec) -> Result<(), &'static str> {
        match Self::absent(spec, "default") {
            Some(Err(_)) => Err("its default violates its own bounds"),
            _ => Ok(()),
        }
    }
}

/// A boolean argument: only `true` and `false`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BoolSpec {
    /// Value when absent.
    pub default: Option<bool>,
    /// Description.
    pub doc: Doc,
}

impl Arg for bool {
    type Spec = BoolSpec;
    type Seen<'a> = &'a Self;
    fn seen(&self) -> &Self {
        self
    }
    fn parse(value: &Value, _: &BoolSpec, name: &'static str) -> Result<Self, ArgError> {
        value.as_bool().ok_or(ArgError::wrong_type(name, "boolean"))
    }
    fn check(&self, _: &BoolSpec, _: &'static str) -> Result<(), ArgError> {
        Ok(())
    }
    fn schema(spec: &BoolSpec) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), Value::from("boolean"));
        if let Some(d) = spec.default {
            m.insert("default".into(), Value::from(d));
        }
        spec.doc.apply(&mut m);
        m
    }
    fn absent(spec: &BoolSpec, _: &'static str) -> Option<Result<Self, ArgError>> {
        spec.default.map(Ok)
    }
}
